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
    /// Whether older messages may exist (on the server or further back in the cache).
    public private(set) var canLoadOlder = true
    /// The last error to show, if any.
    public private(set) var lastError: String?

    private let client: ChatClient
    @ObservationIgnored private var observation: Task<Void, Never>?
    /// The oldest seq in the window: reloads keep everything from here to the newest.
    @ObservationIgnored private var windowStart: Int64?

    /// A model for one conversation.
    public init(client: ChatClient, conversationId: EntityID) {
        self.client = client
        self.conversationId = conversationId
    }

    /// Shows the cache at once (or the first page from the server), then follows changes.
    public func start() async {
        let changes = await client.changes()
        connection = await client.connectionState
        do {
            show(try await client.openConversation(conversationId))
        } catch {
            lastError = "\(error)"
        }
        observation = Task { [weak self] in
            for await change in changes {
                guard let self else { return }
                switch change {
                case .messages(let id) where id == self.conversationId: await self.reload()
                case .connection(let state): self.connection = state
                default: break
                }
            }
        }
    }

    /// Stops following changes.
    public func stop() {
        observation?.cancel()
        observation = nil
    }

    /// Sends a text; it appears at once with `.sending`.
    public func send(_ text: String) async {
        do {
            try await client.send(text: text, in: conversationId)
            lastError = nil
            await reload()
        } catch {
            lastError = "\(error)"
        }
    }

    /// Sends a failed message again.
    public func resend(_ message: LocalMessage) async {
        try? await client.resend(clientMessageId: message.clientMessageId, in: conversationId)
        await reload()
    }

    /// Drops a failed message.
    public func discard(_ message: LocalMessage) async {
        try? await client.discard(clientMessageId: message.clientMessageId, in: conversationId)
        await reload()
    }

    /// Prepends the page before the oldest shown message.
    public func loadOlder(limit: Int = 50) async {
        guard let oldest = messages.first(where: \.isConfirmed)?.seq else { return }
        do {
            let older = try await client.loadOlder(conversationId, before: oldest, limit: limit)
            canLoadOlder = !older.isEmpty
            if let first = older.first?.seq { windowStart = first }
            await reload()
        } catch {
            lastError = "\(error)"
        }
    }

    /// Reads the window from the local database (ordered there by seq: no sort in memory).
    public func reload() async {
        guard let fresh = try? await client.database.messages(
            in: conversationId, viewer: client.userId, from: windowStart, limit: windowStart == nil ? 50 : Int.max / 2)
        else { return }
        show(fresh)
    }

    private func show(_ fresh: [LocalMessage]) {
        if windowStart == nil { windowStart = fresh.first(where: \.isConfirmed)?.seq }
        if fresh != messages { messages = fresh }
    }
}
