import Foundation
import Observation
import ParleyProtocol

/// One row of the conversation list.
public struct ConversationRow: Sendable, Equatable, Identifiable {
    /// The conversation the row shows.
    public var conversation: Conversation
    /// The group's name, or the other people's names.
    public var title: String
    /// The conversation's id.
    public var id: EntityID { conversation.id }
    /// The conversation's unread count.
    public var unreadCount: Int { conversation.unreadCount }
    /// The text of the conversation's last message; nil when it has none.
    public var lastMessageText: String? { conversation.lastMessage?.text }

    /// A row for a conversation and its title (previews and tests build rows this way).
    public init(conversation: Conversation, title: String) {
        self.conversation = conversation
        self.title = title
    }
}

/// The conversation list screen: cached rows at once, kept current by the client.
@MainActor @Observable
public final class ConversationListModel {
    /// Newest activity first.
    public private(set) var rows: [ConversationRow] = []
    /// The connection banner.
    public private(set) var connection: ConnectionState = .disconnected
    /// A sync is catching up (after a connect): the banner says "Syncing…".
    public private(set) var isSyncing = false
    /// Messages of this device waiting in the outbox (the banner counts them).
    public private(set) var outboxCount = 0
    /// The banner's text (offline, connecting, syncing, with what waits to send); nil for none.
    public var banner: String? {
        ChatPresentation.banner(connection, syncing: isSyncing, outboxCount: outboxCount, retryHint: retryHint)
    }
    /// How the banner tells a person to retry once the client gave up: the terminal sets
    /// "/retry"; nil (a screen with a retry button) names nothing.
    public var retryHint: String?
    /// True on a first run while the server's list is on its way (show "Loading…" rather than
    /// "no conversations"); see ``ChatClient/waitForFirstSync()``.
    public private(set) var isLoading = false
    /// "Ada is typing…" by conversation, for the rows' previews.
    public private(set) var typing: [EntityID: String] = [:]
    /// The server has older conversations than ``rows`` (a new device brings the newest page
    /// first): call ``loadMore()`` when the user scrolls to the end.
    public private(set) var hasMore = false
    /// True while ``loadMore()`` fetches a page.
    public private(set) var isLoadingMore = false
    /// The sum of unread counts (the app badge).
    public var totalUnread: Int { rows.reduce(0) { $0 + $1.unreadCount } }

    private let client: ChatClient
    private let customNames: (@Sendable (EntityID) -> String?)?
    /// Display names from the client's cached directory (used when the app gives no `names`).
    @ObservationIgnored private var directory: [EntityID: String] = [:]
    @ObservationIgnored private var askedServerForNames = false
    @ObservationIgnored private var observation: Task<Void, Never>?

    /// A model over a client. `names` resolves user ids to display names; without it, names
    /// come from the client's cached directory, fetched once when someone in a row is unknown.
    public init(client: ChatClient, names: (@Sendable (EntityID) -> String?)? = nil) {
        self.client = client
        customNames = names
    }

    private func names(_ id: EntityID) -> String? { customNames?(id) ?? directory[id] }

    /// Shows the cache at once, then follows the client's changes until `stop()`.
    ///
    /// On a device's first run (nothing cached, the client connecting) it returns once the
    /// first sync has brought the list, so `rows` holds the server's conversations; offline it
    /// returns at once with what the cache has.
    public func start() async {
        let changes = await client.changes()
        await reload()
        if rows.isEmpty, !(await client.hasSynchronizedList()) {
            isLoading = true
            await client.waitForFirstSync()
            isLoading = false
            await reload()
        }
        connection = await client.connectionState
        isSyncing = await client.isSyncing
        observation = Task { [weak self] in
            for await change in changes {
                guard let self else { return }
                switch change {
                case .conversations: await self.reload()
                case .connection(let state): self.connection = state
                case .syncing(let running): self.isSyncing = running
                case .typing(let id): await self.refreshTyping(id)
                case .directory: if self.customNames == nil { await self.reload() }
                case .messages, .progress, .signInRequired, .tokenRenewed: break
                }
            }
        }
    }

    /// Brings the next older page of conversations (the user reached the end of the list);
    /// does nothing when there is none or one is on its way. Offline, the rows stay as they are
    /// and ``hasMore`` stays true, so scrolling there again tries again.
    public func loadMore() async {
        guard hasMore, !isLoadingMore else { return }
        isLoadingMore = true
        defer { isLoadingMore = false }
        _ = try? await client.loadMoreConversations()
        await reload()
    }

    /// Stops following changes.
    public func stop() {
        observation?.cancel()
        observation = nil
    }

    private func refreshTyping(_ id: EntityID) async {
        let users = await client.typingUsers(in: id)
        typing[id] = ChatPresentation.typingLine(users.map { names($0) ?? ParleyStrings.text("who.someone") })
    }

    /// Reads the rows from the local database.
    public func reload() async {
        guard let conversations = try? await client.database.conversations() else { return }
        outboxCount = (try? await client.database.outboxCounts().queued) ?? outboxCount
        hasMore = await client.hasMoreConversations()
        let me = client.userId
        if customNames == nil {
            let unknown = conversations.contains { $0.name == nil && $0.participantIds.contains { $0 != me && directory[$0] == nil } }
            if unknown {
                if let users = try? await client.database.users() {
                    directory = Dictionary(users.map { ($0.id, $0.displayName) }, uniquingKeysWith: { $1 })
                }
                let stillUnknown = conversations.contains { $0.name == nil && $0.participantIds.contains { $0 != me && directory[$0] == nil } }
                if stillUnknown, !askedServerForNames {
                    // Once: someone new joins later arrives with the directory's next refresh.
                    askedServerForNames = true
                    if (try? await client.refreshDirectory()) != nil, let users = try? await client.database.users() {
                        directory = Dictionary(users.map { ($0.id, $0.displayName) }, uniquingKeysWith: { $1 })
                    }
                }
            }
        }
        rows = conversations.map { conversation in
            ConversationRow(conversation: conversation, title: ChatPresentation.title(conversation, me: me, names: names))
        }
    }
}
