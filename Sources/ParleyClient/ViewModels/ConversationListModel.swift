import Foundation
import Observation
import ParleyProtocol

/// One row of the conversation list.
public struct ConversationRow: Sendable, Equatable, Identifiable {
    public var conversation: Conversation
    /// The group's name, or the other people's names.
    public var title: String
    public var id: EntityID { conversation.id }
    public var unreadCount: Int { conversation.unreadCount }
    public var lastMessageText: String? { conversation.lastMessage?.text }
}

/// The conversation list screen: cached rows at once, kept current by the client.
@MainActor @Observable
public final class ConversationListModel {
    /// Newest activity first.
    public private(set) var rows: [ConversationRow] = []
    /// The connection banner.
    public private(set) var connection: ConnectionState = .disconnected
    /// The sum of unread counts (the app badge).
    public var totalUnread: Int { rows.reduce(0) { $0 + $1.unreadCount } }

    private let client: ChatClient
    private let names: @Sendable (EntityID) -> String?
    @ObservationIgnored private var observation: Task<Void, Never>?

    /// A model over a client; `names` resolves user ids to display names.
    public init(client: ChatClient, names: @escaping @Sendable (EntityID) -> String? = { _ in nil }) {
        self.client = client
        self.names = names
    }

    /// Shows the cache at once, then follows the client's changes until `stop()`.
    public func start() async {
        await reload()
        let changes = await client.changes()
        connection = await client.connectionState
        observation = Task { [weak self] in
            for await change in changes {
                guard let self else { return }
                switch change {
                case .conversations: await self.reload()
                case .connection(let state): self.connection = state
                case .messages, .typing, .directory, .progress, .signInRequired, .tokenRenewed: break
                }
            }
        }
    }

    /// Stops following changes.
    public func stop() {
        observation?.cancel()
        observation = nil
    }

    /// Reads the rows from the local database.
    public func reload() async {
        guard let conversations = try? await client.database.conversations() else { return }
        let me = client.userId
        rows = conversations.map { conversation in
            let title = conversation.name ?? conversation.participantIds.filter { $0 != me }
                .map { names($0) ?? "Someone" }.joined(separator: ", ")
            return ConversationRow(conversation: conversation, title: title.isEmpty ? "Just you" : title)
        }
    }
}
