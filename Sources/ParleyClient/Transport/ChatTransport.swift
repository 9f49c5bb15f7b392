import Foundation
import ParleyProtocol

/// What the SDK needs from the network. The live transport is REST plus one WebSocket; tests
/// wrap it to drop, duplicate and delay frames and cut connections.
public protocol ChatTransport: Sendable {
    /// The user's conversations.
    func conversations() async throws -> [Conversation]
    /// The conversation list for a sync: what changed since `token` when there is one (and
    /// the server still answers from it), else the whole list; with the token for next time.
    func conversationList(changedSince token: String?) async throws -> ConversationListSync
    /// An older page of the conversation list: `before` is the previous page's
    /// `nextBefore`.
    func conversationPage(before: String, limit: Int) async throws -> ConversationsResponse
    /// One conversation.
    func conversation(_ id: EntityID) async throws -> Conversation
    /// A history page.
    func messages(_ id: EntityID, before: Int64?, limit: Int) async throws -> MessagesPage
    /// A catch-up page.
    func changes(_ id: EntityID, since: Int64, limit: Int) async throws -> ChangesPage
    /// Sends over HTTP (the fallback while the WebSocket is down).
    func send(_ request: SendMessageRequest, to conversationId: EntityID) async throws -> Message
    /// Opens a WebSocket and waits for `hello`.
    func openRealtime() async throws -> any RealtimeChannel
    /// Uses a new token for every request and connection from now on.
    func updateToken(_ token: String)
    /// When the current token expires, if the transport can tell.
    var tokenExpiresAt: Date? { get }
    /// Exchanges the current token for a fresh one (`POST /auth/refresh`), uses it from now on
    /// and returns it.
    func renewToken() async throws -> String
    /// The sign-in's tokens when the transport renews them itself (nil: it does not say).
    var credentials: SessionCredentials? { get }
    /// A read receipt over HTTP.
    func markRead(_ conversationId: EntityID, upToSeq: Int64) async throws -> ReadResponse
    /// A delivery receipt over HTTP.
    func markDelivered(_ conversationId: EntityID, upToSeq: Int64) async throws
    /// The organization's directory.
    func users() async throws -> [User]
    /// Deletes (revokes) one of the user's messages.
    func deleteMessage(_ messageId: EntityID, in conversationId: EntityID) async throws -> Message
    /// Edits, reacts to or takes back a reaction on a message; answers the message as changed.
    func change(_ edit: MessageChange, of messageId: EntityID, in conversationId: EntityID) async throws -> Message
    /// Full-text search over the user's conversations (or one of them).
    func search(_ query: String, in conversationId: EntityID?, limit: Int?, offset: Int?) async throws -> SearchResponse
    /// Downloads an attachment by its `url`.
    func download(_ url: String) async throws -> Data
    /// Downloads `range` of an attachment (all when nil) with its checksum, for the media cache.
    func download(_ url: String, range: ClosedRange<Int64>?) async throws -> DownloadedPart
    /// Registers this device's APNs token for the user.
    func registerDevice(token: String, environment: PushEnvironment) async throws
    /// Logs out on the server: stops push to `deviceToken` (every device of the user when nil).
    func logout(deviceToken: String?) async throws
    /// A thread's root and a page of its replies.
    func thread(_ rootId: EntityID, in conversationId: EntityID, before: Int64?, limit: Int) async throws -> ThreadPage
    /// Pins (`pinned`) or unpins a message; answers it as changed.
    func setPinned(_ pinned: Bool, _ messageId: EntityID, in conversationId: EntityID) async throws -> Message
    /// Mutes or unmutes a conversation for the user on every device.
    func setMuted(_ muted: Bool, until: Date?, in conversationId: EntityID) async throws -> ConversationSettings
    /// Blocks (`blocked`) or unblocks a user for the caller.
    func setBlocked(_ blocked: Bool, user: EntityID) async throws
    /// Reports a message, a user or both to the organization's admins; the report's id.
    func report(messageId: EntityID?, userId: EntityID?, reason: String) async throws -> EntityID
    /// Downloads the caller's data as a ZIP into `file`, with progress; its size.
    func exportData(to file: URL, progress: @Sendable (Int64) -> Void) async throws -> Int64
    /// Changes the caller's display name or picture; answers the caller as changed.
    func updateProfile(_ change: UpdateProfileRequest) async throws -> User
    /// Uploads an image the caller may then make their picture.
    func uploadPicture(file: URL, contentType: String) async throws -> Attachment
}

/// One open WebSocket, as the SDK uses it.
public protocol RealtimeChannel: Sendable {
    /// Server events in arrival order; finishes when the connection ends.
    var events: AsyncStream<ServerEvent> { get }
    /// Sends a message; returns it as stored.
    func sendMessage(_ request: SendMessageRequest) async throws -> Message
    /// A round trip.
    func ping() async throws
    /// A read receipt.
    func read(_ request: ReadRequest) async throws -> ReadResponse
    /// A command whose reply carries nothing (`typing`, `delivered`, `focus`).
    func perform(_ command: ClientCommand) async throws
    /// Closes the connection.
    func close() async
    /// The server's `storeId` from `hello` (nil from a server that sends none): which copy of
    /// the data it serves.
    var storeId: String? { get async }
}

extension RealtimeChannel {
    /// No store identity: the client keeps its cache as it is.
    public var storeId: String? { get async { nil } }
}

extension RealtimeConnection: RealtimeChannel {}

extension ChatTransport {
    /// By default a transport has no threads to read.
    public func thread(_ rootId: EntityID, in conversationId: EntityID, before: Int64?, limit: Int) async throws -> ThreadPage {
        throw ClientError(kind: .server, code: .notFound, message: "This server has no threads")
    }

    /// By default a transport cannot pin.
    public func setPinned(_ pinned: Bool, _ messageId: EntityID, in conversationId: EntityID) async throws -> Message {
        throw ClientError(kind: .server, code: .notFound, message: "This server has no pins")
    }

    /// By default a transport cannot mute.
    public func setMuted(_ muted: Bool, until: Date?, in conversationId: EntityID) async throws -> ConversationSettings {
        throw ClientError(kind: .server, code: .notFound, message: "This server cannot mute")
    }

    /// By default a transport cannot block.
    public func setBlocked(_ blocked: Bool, user: EntityID) async throws {
        throw ClientError(kind: .server, code: .notFound, message: "This server cannot block")
    }

    /// By default a transport cannot change a profile.
    public func updateProfile(_ change: UpdateProfileRequest) async throws -> User {
        throw ClientError(kind: .server, code: .notFound, message: "This server cannot change profiles")
    }

    /// By default a transport cannot upload a picture.
    public func uploadPicture(file: URL, contentType: String) async throws -> Attachment {
        throw ClientError(kind: .server, code: .notFound, message: "This server takes no pictures")
    }

    /// By default a transport takes no reports.
    public func report(messageId: EntityID?, userId: EntityID?, reason: String) async throws -> EntityID {
        throw ClientError(kind: .server, code: .notFound, message: "This server takes no reports")
    }

    /// By default a transport has no export.
    public func exportData(to file: URL, progress: @Sendable (Int64) -> Void) async throws -> Int64 {
        throw ClientError(kind: .server, code: .notFound, message: "This server has no export")
    }

    /// No credentials of its own: the client renews through ``renewToken()``.
    public var credentials: SessionCredentials? { nil }

    /// For transports that only fetch whole files: the whole file, cut to the range.
    public func download(_ url: String, range: ClosedRange<Int64>?) async throws -> DownloadedPart {
        let data = try await download(url)
        guard let range else { return DownloadedPart(data: data, etag: nil) }
        let lower = Int(min(range.lowerBound, Int64(data.count))), upper = Int(min(range.upperBound + 1, Int64(data.count)))
        return DownloadedPart(data: data.subdata(in: lower..<upper), etag: nil)
    }
}

/// A change to an existing message.
public enum MessageChange: Sendable, Equatable {
    /// New text for one's own message.
    case edit(String)
    /// Adds one's reaction with this emoji.
    case react(String)
    /// Takes one's reaction with this emoji back.
    case unreact(String)
}

/// What a list sync brought.
public enum ConversationListSync: Sendable {
    /// The whole list (the token could not be answered from, or a server without pages).
    case all([Conversation], token: String?)
    /// A new device's first sync: the newest page only; older pages are fetched as the user
    /// scrolls (``ChatClient/loadMoreConversations(limit:)``) from `nextBefore`.
    case firstPage([Conversation], token: String?, nextBefore: String?)
    /// Only what changed since the token, and the conversations the user left.
    case changes([Conversation], removed: [EntityID], token: String)
}

extension ChatTransport {
    /// By default no sync: the whole list every time.
    public func conversationList(changedSince token: String?) async throws -> ConversationListSync {
        .all(try await conversations(), token: nil)
    }

    /// By default no paging: there are no older pages (the whole list came at once).
    public func conversationPage(before: String, limit: Int) async throws -> ConversationsResponse {
        ConversationsResponse(conversations: [], hasMore: false)
    }
}

/// The real network: ``ParleyAPI`` and ``RealtimeConnection``.
public struct LiveTransport: ChatTransport {
    /// The REST client. Its ``SessionCredentials`` are shared by copies of this transport, so
    /// a renewed token reaches them all.
    public let api: ParleyAPI

    /// The sign-in's tokens, renewed as they expire.
    public var credentials: SessionCredentials? { tokens }
    private let tokens: SessionCredentials

    /// A transport for a server URL and a token; `trust` adds certificate authorities for an
    /// `https` server whose certificate the system does not know (REST and WebSocket alike).
    public init(serverURL: URL, token: String, trust: ServerTrust? = nil) {
        self.init(serverURL: serverURL, credentials: SessionCredentials(SessionTokens(token: token)), trust: trust)
    }

    /// A transport for a sign-in whose tokens renew themselves (access tokens live minutes).
    public init(serverURL: URL, credentials: SessionCredentials, trust: ServerTrust? = nil) {
        api = ParleyAPI(baseURL: serverURL, credentials: credentials, trust: trust)
        tokens = credentials
    }

    /// Uses this access token from now on (every copy of this transport), keeping the refresh token.
    public func updateToken(_ token: String) {
        var current = tokens.tokens
        current.token = token
        current.expiresAt = nil
        tokens.replace(current)
    }

    /// When the current access token expires, when it says.
    public var tokenExpiresAt: Date? { tokens.tokens.accessExpiry }

    /// Renews the sign-in (by its refresh token when it has one), uses the new tokens from now
    /// on and returns the access token.
    public func renewToken() async throws -> String {
        try await tokens.renew(using: api).token
    }

    /// Every page of the conversation list over REST.
    public func conversations() async throws -> [Conversation] { try await api.conversations() }

    /// The changes since `token` over REST. Without a token (a new device), the newest page
    /// only; when the server refuses the token (409 or 400), every page, so the device's cache
    /// is replaced by the whole list.
    public func conversationList(changedSince token: String?) async throws -> ConversationListSync {
        guard let token else {
            let first = try await api.conversationsPage(limit: Self.firstPageSize)
            return .firstPage(first.conversations, token: first.syncToken, nextBefore: first.hasMore == true ? first.nextBefore : nil)
        }
        do {
            let changes = try await api.conversationChanges(since: token)
            return .changes(changes.conversations, removed: changes.removedIds, token: changes.syncToken)
        } catch let error as ClientError where error.code == .conflict || error.code == .invalidRequest {
            // The server cannot answer from this token (too old, or another server's): the
            // whole list again.
        }
        let list = try await api.allConversations()
        return .all(list.conversations, token: list.syncToken)
    }

    /// Conversations a new device's first sync brings (a screenful or two); the rest page in.
    public static let firstPageSize = 50

    /// An older page of the list over REST.
    public func conversationPage(before: String, limit: Int) async throws -> ConversationsResponse {
        try await api.conversationsPage(limit: limit, before: before)
    }

    /// One conversation over REST.
    public func conversation(_ id: EntityID) async throws -> Conversation { try await api.conversation(id) }
    /// A history page over REST.
    /// A thread page over REST.
    public func thread(_ rootId: EntityID, in conversationId: EntityID, before: Int64?, limit: Int) async throws -> ThreadPage {
        try await api.thread(rootId, in: conversationId, before: before, limit: limit)
    }
    /// A pin or an unpin over REST.
    public func setPinned(_ pinned: Bool, _ messageId: EntityID, in conversationId: EntityID) async throws -> Message {
        pinned ? try await api.pin(messageId, in: conversationId) : try await api.unpin(messageId, in: conversationId)
    }
    /// A mute over REST.
    public func setMuted(_ muted: Bool, until: Date?, in conversationId: EntityID) async throws -> ConversationSettings {
        try await api.setMuted(muted, until: until, in: conversationId)
    }
    /// A history page over REST, thread replies included.
    public func messages(_ id: EntityID, before: Int64?, limit: Int) async throws -> MessagesPage {
        // Thread replies too: the cache keeps every seq, so its pages have no holes.
        try await api.messagesIncludingThreads(id, before: before, limit: limit)
    }
    /// A catch-up page over REST.
    public func changes(_ id: EntityID, since: Int64, limit: Int) async throws -> ChangesPage {
        try await api.changes(id, since: since, limit: limit)
    }
    /// Sends over REST (see ``ChatTransport``).
    public func send(_ request: SendMessageRequest, to conversationId: EntityID) async throws -> Message {
        try await api.send(request, to: conversationId)
    }
    /// A read receipt over REST.
    public func markRead(_ conversationId: EntityID, upToSeq: Int64) async throws -> ReadResponse {
        try await api.markRead(conversationId, upToSeq: upToSeq)
    }
    /// A delivery receipt over REST; the watermarks in the answer are dropped.
    public func markDelivered(_ conversationId: EntityID, upToSeq: Int64) async throws {
        _ = try await api.markDelivered(conversationId, upToSeq: upToSeq)
    }
    /// The organization's directory over REST.
    public func users() async throws -> [User] { try await api.users() }
    /// Deletes one of the user's messages over REST; answers the tombstone.
    public func deleteMessage(_ messageId: EntityID, in conversationId: EntityID) async throws -> Message {
        try await api.deleteMessage(messageId, in: conversationId)
    }
    /// Downloads a whole attachment over REST.
    public func download(_ url: String) async throws -> Data { try await api.download(url) }
    /// Downloads `range` (all when nil) with a `Range` request, with the ETag as the checksum.
    public func download(_ url: String, range: ClosedRange<Int64>?) async throws -> DownloadedPart {
        try await api.download(url, range: range)
    }

    /// Edits, reacts or takes a reaction back over REST; answers the message as changed.
    public func change(_ edit: MessageChange, of messageId: EntityID, in conversationId: EntityID) async throws -> Message {
        switch edit {
        case .edit(let text): try await api.editMessage(messageId, in: conversationId, text: text)
        case .react(let emoji): try await api.react(messageId, in: conversationId, emoji: emoji)
        case .unreact(let emoji): try await api.unreact(messageId, in: conversationId, emoji: emoji)
        }
    }

    /// Full-text search over REST.
    public func search(_ query: String, in conversationId: EntityID?, limit: Int?, offset: Int?) async throws -> SearchResponse {
        try await api.search(query, in: conversationId, limit: limit, offset: offset)
    }
    /// Registers the APNs token over REST.
    public func registerDevice(token: String, environment: PushEnvironment) async throws {
        try await api.registerDevice(token: token, environment: environment)
    }
    /// Logs out over REST (`POST /auth/logout`).
    public func logout(deviceToken: String?) async throws { try await api.logout(deviceToken: deviceToken) }
    /// Opens a ``RealtimeConnection`` with the current token and waits for its `hello`.
    public func openRealtime() async throws -> any RealtimeChannel {
        let token = try await tokens.validToken(using: api)
        let connection = RealtimeConnection(serverURL: api.baseURL, token: token, trust: api.trust)
        _ = try await connection.connect()
        return connection
    }

    /// Blocks or unblocks through the REST API.
    public func setBlocked(_ blocked: Bool, user: EntityID) async throws {
        if blocked { try await api.block(user) } else { try await api.unblock(user) }
    }

    /// Changes the profile through the REST API.
    public func updateProfile(_ change: UpdateProfileRequest) async throws -> User { try await api.updateProfile(change) }

    /// Uploads a picture in one request (a picture is small; no resumable upload).
    public func uploadPicture(file: URL, contentType: String) async throws -> Attachment {
        try await api.upload(file: file, name: file.lastPathComponent, contentType: contentType)
    }

    /// Reports through the REST API.
    public func report(messageId: EntityID?, userId: EntityID?, reason: String) async throws -> EntityID {
        try await api.report(messageId: messageId, userId: userId, reason: reason)
    }

    /// Streams the export to a file.
    public func exportData(to file: URL, progress: @Sendable (Int64) -> Void) async throws -> Int64 {
        try await api.exportData(to: file, progress: progress)
    }
}

/// What the SDK reads from its own token: only the expiry, to renew in time (the server
/// verifies the signature; the client never trusts a token's other claims).
enum TokenClaims {
    /// The `exp` claim of a JWT, if it has one.
    static func expiry(of token: String) -> Date? { date("exp", of: token) }

    /// The `iat` claim of a JWT, if it has one.
    static func issuedAt(of token: String) -> Date? { date("iat", of: token) }

    private static func date(_ claim: String, of token: String) -> Date? {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64),
            let claims = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let seconds = (claims[claim] as? NSNumber)?.doubleValue
        else { return nil }
        return Date(timeIntervalSince1970: seconds)
    }
}
