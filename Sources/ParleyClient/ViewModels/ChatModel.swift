import Foundation
import Observation
import ParleyProtocol

/// The chat screen: messages with their delivery state, sending, resending, paging back.
@MainActor @Observable
public final class ChatModel {
    /// The conversation shown.
    public let conversationId: EntityID
    /// Ascending by seq; temporary messages last, in send order.
    public private(set) var messages: [LocalMessage] = []
    /// The connection banner.
    public private(set) var connection: ConnectionState = .disconnected
    /// A sync is catching up (the banner says "Syncing…").
    public private(set) var isSyncing = false
    /// Whether older messages may exist (on the server or further back in the cache).
    public private(set) var canLoadOlder = false
    /// The read watermark the chat was opened with when it had unread messages: the timeline's
    /// "New messages" line goes above the first message past it, and screens open there. It
    /// stays while the chat is open (reading does not move it).
    public private(set) var unreadAfter: Int64?
    /// The last error to show, if any.
    public internal(set) var lastError: String?
    /// Pinned messages, newest pin first: the pinned bar shows the first.
    public internal(set) var pinned: [LocalMessage] = []
    /// "Alice is typing…", or nil.
    public private(set) var typingLine: String?
    /// Upload progress (0...1) of messages still being prepared, by ``LocalMessage/id``.
    public private(set) var uploadProgress: [String: Double] = [:]
    /// Download progress (0...1) of attachments being fetched, by ``LocalMessage/id``; gone once
    /// the bytes are there.
    public private(set) var downloadProgress: [String: Double] = [:]

    let client: ChatClient
    let names: @Sendable (EntityID) -> String?
    /// The actions on messages; the app may replace or wrap any of them.
    private let service: any MessageServicing
    @ObservationIgnored private var observation: Task<Void, Never>?
    @ObservationIgnored private var downloading: Set<String> = []
    /// The oldest seq in the window: reloads keep everything from here to the newest.
    @ObservationIgnored private var windowStart: Int64?
    /// Each reload takes the next ticket; a reload whose ticket is older than what is already
    /// shown (a later reload's, or a send shown at once) is dropped instead of showing an older
    /// state. A later reload always shows, so an awaited action's own reload shows its result.
    @ObservationIgnored private var generation = 0
    @ObservationIgnored private var shownGeneration = 0
    /// The server answered an older page with nothing: the conversation's start is shown.
    @ObservationIgnored private var reachedStart = false
    /// An older page is on its way (a screen may show a spinner at the top).
    public private(set) var isLoadingOlder = false
    /// A reload is waiting out ``coalescing`` (the changes meanwhile ride along).
    @ObservationIgnored private var reloadPending = false
    /// Reloads from the database so far (tests count them).
    @ObservationIgnored private(set) var reloads = 0

    /// Changes to the conversation within this long are shown together (seed 004: 0.1 s): a
    /// burst of fifty incoming messages is one reload of the window, not fifty.
    public nonisolated static let coalescing: Duration = .milliseconds(100)

    /// A model for one conversation; `names` resolves user ids to display names.
    public init(
        client: ChatClient, conversationId: EntityID, names: @escaping @Sendable (EntityID) -> String? = { _ in nil },
        service: (any MessageServicing)? = nil
    ) {
        self.client = client
        self.conversationId = conversationId
        self.names = names
        self.service = service ?? MessageService(client: client)
    }

    /// Shows the cache at once (or the first page from the server), then follows changes.
    public func start() async {
        let changes = await client.changes()
        connection = await client.connectionState
        if let row = try? await client.database.conversation(conversationId), row.unreadCount > 0 {
            unreadAfter = row.readSeq
        }
        await client.focus(conversationId)
        do {
            show(await client.presented(try await client.openConversation(conversationId)))
        } catch {
            lastError = ClientError.readable(error)
        }
        observation = Task { [weak self] in
            for await change in changes {
                guard let self else { return }
                switch change {
                case .messages(let id) where id == self.conversationId: self.scheduleReload()
                case .typing(let id) where id == self.conversationId: await self.refreshTyping()
                case .progress(let id, let messageId, let fraction) where id == self.conversationId:
                    self.uploadProgress[messageId] = max(self.uploadProgress[messageId] ?? 0, fraction)
                case .connection(let state): self.connection = state
                case .syncing(let running): self.isSyncing = running
                default: break
                }
            }
        }
    }

    /// Stops following changes (and tells the server the conversation is no longer on screen).
    public func stop() {
        observation?.cancel()
        observation = nil
        let client = self.client, id = conversationId
        Task {
            if await client.focusedConversation == id { await client.focus(nil) }
        }
    }

    /// "Retry now" for messages shown as not sent: sends the outbox at once, reconnecting
    /// if the connection is down.
    public func retryNow() async {
        await client.retryNow()
        await reload()
    }

    /// Call on every keystroke in the input field.
    public func userIsTyping() async {
        await client.userIsTyping(in: conversationId)
    }

    /// Call with the messages on screen: the highest one is marked read (batched, 0.5 s).
    public func messagesBecameVisible(_ visible: [LocalMessage]) async {
        guard let highest = visible.compactMap(\.seq).max() else { return }
        await client.markRead(conversationId, upTo: highest)
    }

    private func refreshTyping() async {
        let users = await client.typingUsers(in: conversationId)
        typingLine = TypingIndicators.line(for: users.map { names($0) ?? ParleyStrings.text("who.someone") })
    }

    /// Sends a text (a reply when `replyingTo` is a stored message); it appears at once with `.sending`.
    public func send(_ text: String, replyingTo: LocalMessage? = nil, mentions: [EntityID] = []) async {
        do {
            await client.userSent(in: conversationId)
            let trimmed = Limits.trimmed(text)
            guard !trimmed.isEmpty, trimmed.count <= Limits.maxTextCharacters else {
                lastError = "A message is 1–\(Limits.maxTextCharacters) characters"
                return
            }
            let pending = try await service.send(
                SendMessageRequest(
                    clientMessageId: "", text: trimmed, replyToId: replyingTo?.serverId,
                    mentions: mentions.isEmpty ? nil : Array(mentions.prefix(Limits.maxMentions))),
                in: conversationId, context: [:])
            lastError = nil
            // On screen now; the next reload (when the outbox or an event changes it) keeps the
            // same identity, so the row updates in place.
            if !messages.contains(where: { $0.id == pending.id }) {
                generation += 1
                shownGeneration = generation
                messages.append(pending)
            }
        } catch {
            lastError = ClientError.readable(error)
        }
    }

    /// Sends a failed message again.
    public func resend(_ message: LocalMessage) async {
        await perform { try await self.service.resend(message) }
    }

    /// Copies a file the user just picked into the SDK's storage while it is still readable
    /// (call it inside the picker's callback, with the security scope open) and returns the
    /// copy to pass to ``send(file:contentType:type:caption:)``; nil (and ``lastError``) when it
    /// cannot be read.
    public func keepFile(_ picked: URL) -> URL? {
        do {
            return try client.keepFileForSending(picked)
        } catch {
            lastError = ClientError.readable(error)
            return nil
        }
    }

    /// Sends a file (uploaded by the outbox's `AttachmentUpload` preparation, if installed).
    /// The SDK copies it when the message is queued, so the original may go right after.
    public func send(file: URL, contentType: String, type: MessageType, caption: String = "") async {
        await perform {
            _ = try await self.service.send(
                SendMessageRequest(clientMessageId: "", text: caption, type: type), in: self.conversationId,
                context: ["file": file.path, "contentType": contentType, "name": file.lastPathComponent])
        }
    }

    /// Copies a message into another conversation.
    public func forward(_ message: LocalMessage, to conversationId: EntityID) async {
        await perform { _ = try await self.service.forward(message, to: conversationId) }
    }

    /// Deletes one's own message for everyone.
    public func revoke(_ message: LocalMessage) async {
        await perform { try await self.service.revoke(message) }
    }

    /// A message's attachment, through the media cache (downloaded once, then from memory or
    /// disk), with ``downloadProgress`` moving while it downloads. Nil (and ``lastError``) when
    /// it cannot be had.
    public func attachmentData(for message: LocalMessage) async -> Data? {
        guard let attachment = message.attachment else { return nil }
        let id = message.id
        downloading.insert(id)
        defer {
            downloading.remove(id)
            downloadProgress[id] = nil
        }
        do {
            return try await client.media.data(for: attachment) { fraction in
                Task { @MainActor [weak self] in
                    // A late report after the download ended shows nothing.
                    guard let self, fraction < 1, self.downloading.contains(id) else { return }
                    self.downloadProgress[id] = max(self.downloadProgress[id] ?? 0, fraction)
                }
            }
        } catch {
            lastError = ClientError.readable(error)
            return nil
        }
    }

    /// Writes a message's attachment or text to a file.
    public func save(_ message: LocalMessage, to file: URL) async {
        await perform { try await self.service.save(message, to: file) }
    }

    /// Changes the text of one's own message (the server's answer is applied when it comes).
    public func edit(_ message: LocalMessage, text: String) async {
        await perform { try await self.service.edit(message, text: text) }
    }

    /// Adds the user's reaction to a message.
    public func react(_ message: LocalMessage, emoji: String) async {
        await perform { try await self.service.react(message, emoji: emoji) }
    }

    /// Takes the user's reaction back.
    public func unreact(_ message: LocalMessage, emoji: String) async {
        await perform { try await self.service.unreact(message, emoji: emoji) }
    }

    /// Searches this conversation's messages on the server.
    public func search(_ query: String) async -> [SearchResult] {
        do {
            let results = try await service.search(query, in: conversationId)
            lastError = nil
            return results
        } catch {
            lastError = ClientError.readable(error)
            return []
        }
    }

    /// Hides a message on this device.
    public func deleteForMe(_ message: LocalMessage) async {
        await perform { try await self.service.deleteForMe(message) }
    }

    private func perform(_ action: @escaping () async throws -> Void) async {
        do {
            try await action()
            lastError = nil
        } catch {
            lastError = ClientError.readable(error)
        }
        await reload()
    }

    /// Drops a failed message.
    public func discard(_ message: LocalMessage) async {
        try? await client.discard(clientMessageId: message.clientMessageId, in: conversationId)
        await reload()
    }

    /// Prepends the page before the oldest shown message.
    public func loadOlder(limit: Int = 50) async {
        // The top of the list can appear twice before the page arrives (a bounce, a redraw):
        // one page at a time, so it is neither asked for nor inserted twice.
        guard !isLoadingOlder, let oldest = messages.first(where: \.isConfirmed)?.seq else { return }
        isLoadingOlder = true
        defer { isLoadingOlder = false }
        do {
            let older = try await client.loadOlder(conversationId, before: oldest, limit: limit)
            if older.isEmpty { reachedStart = true }
            if let first = older.first?.seq { windowStart = first }
            await reload()
        } catch {
            lastError = ClientError.readable(error)
        }
    }

    /// A change arrived: the window is read again after ``coalescing``, once for everything
    /// that changes meanwhile (on the client's clock, so tests move it).
    private func scheduleReload() {
        guard !reloadPending else { return }
        reloadPending = true
        let sleep = client.environment.sleep
        Task { [weak self] in
            try? await sleep(Self.coalescing)
            guard let self else { return }
            self.reloadPending = false
            await self.reload()
        }
    }

    /// Lets the oldest messages go so at most `keeping` stay in the window (the screen calls
    /// it while the newest is on screen: a long chat read to its end does not hold every page
    /// it was scrolled through). They come back with ``loadOlder(limit:)``, from the cache.
    public func trimWindow(keeping: Int = 200) async {
        let confirmed = messages.filter(\.isConfirmed)
        guard keeping > 0, confirmed.count > keeping, let start = confirmed[confirmed.count - keeping].seq else { return }
        windowStart = start
        reachedStart = false
        await reload()
    }

    /// ``trimWindow(keeping:)`` once the window holds more than `most` messages: what a screen
    /// calls while the newest is on it, so a long chat read to its end lets its old pages go
    /// without being trimmed again at every new message.
    public func trimWindowIfLong(most: Int = 300, keeping: Int = 200) async {
        guard messages.count > max(most, keeping) else { return }
        await trimWindow(keeping: keeping)
    }

    /// Reads the window from the local database (ordered there by seq: no sort in memory).
    public func reload() async {
        reloads += 1
        generation += 1
        let mine = generation
        guard let fresh = try? await client.database.messages(
            in: conversationId, viewer: client.userId, from: windowStart, limit: windowStart == nil ? 50 : Int.max / 2)
        else { return }
        let presented = await client.presented(fresh)
        let pins = (try? await client.pinnedMessages(in: conversationId)) ?? pinned
        guard mine > shownGeneration else { return }
        shownGeneration = mine
        show(presented)
        if pins != pinned { pinned = pins }
    }

    private func show(_ fresh: [LocalMessage]) {
        // Progress is only for messages still on their way.
        let pending = Set(fresh.filter { $0.delivery == .sending || $0.delivery == .notSent }.map(\.id))
        if uploadProgress.keys.contains(where: { !pending.contains($0) }) {
            uploadProgress = uploadProgress.filter { pending.contains($0.key) }
        }
        if windowStart == nil { windowStart = fresh.first(where: \.isConfirmed)?.seq }
        if fresh != messages { messages = fresh }
        // Older messages exist only above a first one whose seq is past 1 (an empty chat, or
        // one showing its first message, has none; a page stays possible once some arrive).
        let olderExist = !reachedStart && (fresh.first(where: \.isConfirmed)?.seq ?? 1) > 1
        if canLoadOlder != olderExist { canLoadOlder = olderExist }
    }
}
