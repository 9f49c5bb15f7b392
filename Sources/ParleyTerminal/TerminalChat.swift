import Foundation
import ParleyClient
import ParleyProtocol
import Synchronization

/// `parley chat`: a full-screen terminal client on the SDK. It works like an app: the list and
/// the chat come from the local database at once, messages sent offline wait in the outbox,
/// and the screen follows the SDK's models.
@MainActor
public final class TerminalChat {
    /// A signed-in user and their tokens.
    public struct Session: Sendable {
        /// The bearer token for the server.
        public var token: String
        /// The signed-in user.
        public var user: User
        /// Renews the sign-in (nil from a server or profile before refresh tokens).
        public var refreshToken: String?
        /// When `token` expires.
        public var expiresAt: Date?
        /// A session of a token and its user.
        public init(token: String, user: User, refreshToken: String? = nil, expiresAt: Date? = nil) {
            self.token = token
            self.user = user
            self.refreshToken = refreshToken
            self.expiresAt = expiresAt
        }
    }

    /// Where the client keeps things and how it tells the caller about sign-in and sign-out.
    public struct Configuration: Sendable {
        /// The server's base URL.
        public var serverURL: URL
        /// The folder of the SDK's database files (cache and outbox), one per user.
        public var databaseDirectory: String
        /// Called with the new session after a sign-in or registration succeeds.
        public var onSignedIn: @Sendable (Session) -> Void
        /// Called when the user logs out.
        public var onSignedOut: @Sendable () -> Void
        /// Extra certificate authorities for an `https` server (`--ca-file`).
        public var trust: ServerTrust?
        /// Where renewed tokens are saved before they are used (the profile); nil keeps them
        /// in memory only.
        public var credentialStorage: (any CredentialStorage)?
        /// Whether a message in another conversation rings the terminal's bell.
        public var bell = true

        /// A configuration of these values.
        public init(
            serverURL: URL, databaseDirectory: String, trust: ServerTrust? = nil, credentialStorage: (any CredentialStorage)? = nil,
            onSignedIn: @escaping @Sendable (Session) -> Void, onSignedOut: @escaping @Sendable () -> Void
        ) {
            self.serverURL = serverURL
            self.credentialStorage = credentialStorage
            self.trust = trust
            self.databaseDirectory = databaseDirectory
            self.onSignedIn = onSignedIn
            self.onSignedOut = onSignedOut
        }
    }

    let configuration: Configuration
    let device: TerminalDevice
    /// Unread counts by conversation at the last frame (nil before the list first loaded).
    var lastUnread: [EntityID: Int]?
    /// A chat just opened: scroll to its "New messages" line when the timeline has one.
    var scrollToUnreadPending = false
    var screen = ChatScreen()
    var parser = KeyParser()
    var session: Session?
    var client: ChatClient?
    var api: ParleyAPI?
    var list: ConversationListModel?
    var chat: ChatModel?
    /// The open chat's window is being trimmed (``markVisible(_:)``).
    var trimming = false
    /// The thread open over the chat: its replies replace the timeline, lines reply in it.
    var thread: ThreadModel?
    var directory: DirectoryModel?
    let names = NameBook()
    var typingByConversation: [EntityID: String] = [:]
    var login: LoginFlow?
    /// The message being replied to or edited from the input line.
    var replyingTo: LocalMessage?
    var editing: LocalMessage?
    var quitting = false
    private var lastVisibleId: String?
    private var observation: Task<Void, Never>?

    /// A client that starts with `session`, or at the sign-in screen when it is nil.
    public init(configuration: Configuration, session: Session?) {
        self.configuration = configuration
        self.session = session
        device = TerminalDevice()
    }

    /// Runs until the user quits; returns the exit status.
    public func run() async -> Int32 {
        // The SDK's texts (banner, "New messages", typing, system lines) in the environment's language.
        ParleyStrings.locale = Self.localLanguage(environment: ProcessInfo.processInfo.environment) ?? Locale(identifier: "en")
        device.enter()
        defer { device.leave() }
        if let session { await start(session) } else { beginLogin() }
        let ticker = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(40))
                self?.refresh()
            }
        }
        // A resized window is drawn again at once, whole: the terminal reflowed what was on it
        // (and the 40 ms ticker may already have drawn at the new size, only the lines it
        // thought had changed), so nothing drawn before can be trusted.
        let resizing = Task { [weak self, resizes = device.resizes] in
            for await _ in resizes {
                self?.device.invalidate()
                self?.refresh()
            }
        }
        refresh()
        for await bytes in device.input {
            for key in parser.feed(bytes) {
                await handle(key)
                if quitting { break }
            }
            if quitting { break }
            refresh()
        }
        ticker.cancel()
        resizing.cancel()
        await stopClient()
        return 0
    }

    // MARK: Session

    func start(_ session: Session) async {
        self.session = session
        let credentials = SessionCredentials(
            SessionTokens(token: session.token, refreshToken: session.refreshToken, expiresAt: session.expiresAt),
            storage: configuration.credentialStorage)
        let api = ParleyAPI(baseURL: configuration.serverURL, credentials: credentials, trust: configuration.trust)
        self.api = api
        let client: ChatClient
        do {
            let path = (configuration.databaseDirectory as NSString).appendingPathComponent("chat-\(session.user.id).sqlite")
            client = ChatClient(
                transport: LiveTransport(serverURL: configuration.serverURL, credentials: credentials, trust: configuration.trust),
                database: try LocalDatabase.open(path: path), userId: session.user.id,
                hooks: MessageHooks(preparations: [AttachmentUpload(api: api)]),
                mediaDirectory: URL(fileURLWithPath: path + "-media", isDirectory: true),
                outboxFilesDirectory: URL(fileURLWithPath: path + "-outbox", isDirectory: true))
        } catch {
            screen.status = TerminalStrings.text("Cannot open the local database: {error}", ["error": "\(error)"])
            return
        }
        self.client = client
        try? await client.database.store(users: [session.user])
        names.set([session.user])
        screen.account = "\(session.user.displayName) <\(session.user.email)>"
        let directory = DirectoryModel(client: client)
        self.directory = directory
        let list = ConversationListModel(client: client, names: names.lookup)
        list.retryHint = "/retry"
        self.list = list
        await client.start()
        await list.start()
        screen.focus = .list
        let changes = await client.changes()
        observation = Task { [weak self] in
            for await change in changes {
                guard let self else { return }
                switch change {
                case .typing(let id): await self.refreshTyping(id)
                case .signInRequired: self.screen.status = TerminalStrings.text("The server refused the session: /logout and sign in again")
                default: break
                }
            }
        }
        Task {
            await directory.start()
            self.names.set(directory.users)
        }
    }

    func stopClient() async {
        observation?.cancel()
        chat?.stop()
        list?.stop()
        directory?.stop()
        await client?.stop()
        chat = nil
        list = nil
        client = nil
    }

    private func refreshTyping(_ id: EntityID) async {
        guard let client else { return }
        let users = await client.typingUsers(in: id)
        typingByConversation[id] = TypingIndicators.line(for: users.map { names.lookup($0) ?? TerminalStrings.text("Someone") })
    }

    // MARK: Frames

    /// Rebuilds the screen from the models and draws what changed.
    func refresh() {
        if let directory { names.set(directory.users) }
        // The user's own name as the directory has it now (renamed here or on another device).
        if let me = session?.user, let mine = directory?.users.first(where: { $0.id == me.id }) {
            screen.account = "\(mine.displayName) <\(me.email)>"
        }
        if let list {
            let me = session?.user.id
            let users = Dictionary((directory?.users ?? []).map { ($0.id, $0) }, uniquingKeysWith: { $1 })
            screen.rows = list.rows.map { row in
                let peer = row.conversation.type == .direct ? row.conversation.participantIds.first { $0 != me } : nil
                // Titled now, not when the list was loaded: names that came since replace "Someone".
                return ChatScreen.Row(
                    id: row.id, title: ChatPresentation.title(row.conversation, me: me ?? EntityID(), names: names.lookup),
                    preview: ChatPresentation.preview(row.conversation, me: me ?? EntityID(), names: names.lookup),
                    unread: row.unreadCount, online: peer.map { users[$0]?.isOnline ?? false },
                    typing: typingByConversation[row.id] ?? nil, mentioned: row.conversation.mentionCount > 0, muted: row.conversation.muted)
            }
            screen.selectedRow = min(screen.selectedRow, max(0, screen.rows.count - 1))
            screen.banner = list.banner
            // A muted conversation rings only for a new mention (its mention count stands in).
            let unread = Dictionary(
                list.rows.map { ($0.id, $0.conversation.muted ? $0.conversation.mentionCount : $0.unreadCount) }, uniquingKeysWith: { $1 })
            if configuration.bell, ChatPresentation.shouldRing(previousUnread: lastUnread, currentUnread: unread, open: chat?.conversationId) {
                device.bell()
            }
            lastUnread = list.rows.isEmpty && lastUnread == nil ? nil : unread
        }
        if let chat, let me = session?.user.id {
            screen.timeline = thread.map { thread in
                // In the thread itself the root's "n replies" line says nothing new.
                ChatPresentation.timeline(threadMessages(thread), me: me, names: names.lookup, calendar: Self.calendar).map { item in
                    guard case .message(var message) = item else { return item }
                    message.threadLine = nil
                    return .message(message)
                }
            }
                ?? ChatPresentation.timeline(chat.messages, me: me, names: names.lookup, calendar: Self.calendar, unreadAfter: chat.unreadAfter)
            screen.pinnedLine = thread == nil ? ChatPresentation.pinnedLine(chat.pinned, me: me, names: names.lookup) : nil
            // Opened with unread messages: at the "New messages" line, once it is there.
            if scrollToUnreadPending {
                let (width, height) = device.size()
                if screen.scrollToUnread(width: width, height: height) { scrollToUnreadPending = false }
            }
            screen.typingLine = chat.typingLine
            if let thread {
                let count = thread.replies.count
                let root = ChatPresentation.firstLine(thread.root?.text ?? "…", max: 40)
                screen.chatTitle = TerminalStrings.text("Thread · {text}", ["text": root])
                screen.chatSubtitle = switch count {
                case 0: TerminalStrings.text("0 replies · Esc goes back")
                case 1: TerminalStrings.text("1 reply · Esc goes back")
                default: TerminalStrings.text("{count} replies · Esc goes back", ["count": "\(count)"])
                }
            } else if let row = list?.rows.first(where: { $0.id == chat.conversationId }) {
                screen.chatTitle = ChatPresentation.title(row.conversation, me: me, names: names.lookup)
                    + (row.conversation.muted ? " 🔕" : "")
                let users = Dictionary((directory?.users ?? []).map { ($0.id, $0) }, uniquingKeysWith: { $1 })
                screen.chatSubtitle = ChatPresentation.subtitle(row.conversation, me: me, users: users, calendar: Self.calendar)
            }
            if let error = chat.lastError, screen.status == nil { screen.status = error }
            markVisible(chat)
        }
        let (width, height) = device.size()
        device.draw(screen.render(width: width, height: height), cursor: screen.cursor(width: width, height: height), width: width, height: height)
    }

    /// Messages on screen are read: the newest visible one is reported once (batched by the SDK).
    private func markVisible(_ chat: ChatModel) {
        // In a thread its replies are what is on screen (a reply's seq reads what is below it).
        let shown = thread.map(threadMessages) ?? chat.messages
        guard screen.scroll == 0, screen.overlay == nil else { return }
        // At the newest of a long chat: the pages scrolled back through go (PgUp brings them
        // back from the cache), as in the web client and SwiftUI.
        if thread == nil, !trimming, chat.messages.count > 300 {
            trimming = true
            Task {
                await chat.trimWindowIfLong()
                trimming = false
            }
        }
        guard let newest = shown.last(where: \.isConfirmed), newest.id != lastVisibleId else { return }
        lastVisibleId = newest.id
        let visible = Array(shown.suffix(30))
        Task { await chat.messagesBecameVisible(visible) }
    }

}

/// Display names by user id, readable from any thread (the SDK's models ask off the main actor).
final class NameBook: Sendable {
    private let names = Mutex<[EntityID: String]>([:])

    func set(_ users: [User]) {
        names.withLock { names in for user in users { names[user.id] = user.displayName } }
    }

    var lookup: @Sendable (EntityID) -> String? {
        { [self] id in self.names.withLock { $0[id] } }
    }
}
