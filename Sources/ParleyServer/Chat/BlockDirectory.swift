import Foundation
import ParleyProtocol
import Synchronization
import ParleyStorage

/// Who blocks whom, kept in memory so typing, presence, push and the `senderBlocked`
/// marks cost no database read per event: each user's relations are read from the store once,
/// and a block or unblock makes the two users' entries be read again, on the node that stored
/// it at once and on every other node when the cluster record (`B`) arrives.
///
/// The store stays the truth for what must hold (a blocked user's send in a direct
/// conversation is refused by the store); this directory decides only who is told what.
public final class BlockDirectory: Sendable {
    private struct State {
        var entries: [EntityID: BlockRelations] = [:]
        /// Moves on each change: a read that began before one is not kept.
        var generation = 0
    }

    private let state = Mutex(State())
    private let store: any ParleyStore

    /// A directory over `store`.
    public init(store: any ParleyStore) { self.store = store }

    /// Whom the user blocks and who blocks them; empty when the store cannot answer now (the
    /// next event asks again).
    public func relations(of userId: EntityID) async -> BlockRelations {
        let (known, generation) = state.withLock { ($0.entries[userId], $0.generation) }
        if let known { return known }
        guard let loaded = try? await store.blockRelations(of: userId) else { return BlockRelations() }
        state.withLock { state in
            if state.generation == generation { state.entries[userId] = loaded }
        }
        return loaded
    }

    /// The users who block `userId`.
    public func blockers(of userId: EntityID) async -> Set<EntityID> {
        await relations(of: userId).blockedBy
    }

    /// The users `userId` blocks.
    public func blocked(by userId: EntityID) async -> Set<EntityID> {
        await relations(of: userId).blocks
    }

    /// A block between the two started or ended (here, or on another node): their relations
    /// are read again on next use.
    public func changed(blocker: EntityID, blocked: EntityID) {
        state.withLock { state in
            state.entries[blocker] = nil
            state.entries[blocked] = nil
            state.generation += 1
        }
    }

    /// The messages as `viewer` sees them: those of senders the viewer blocks marked `senderBlocked`.
    public func marked(_ messages: [Message], for viewer: EntityID) async -> [Message] {
        let blocked = await blocked(by: viewer)
        return Self.marked(messages, blocked: blocked)
    }

    /// One message as `viewer` sees it.
    public func marked(_ message: Message, for viewer: EntityID) async -> Message {
        Self.marked([message], blocked: await blocked(by: viewer))[0]
    }

    /// The messages with those of `blocked` senders marked.
    static func marked(_ messages: [Message], blocked: Set<EntityID>) -> [Message] {
        guard !blocked.isEmpty else { return messages }
        return messages.map { message in
            guard blocked.contains(message.senderId), message.type != .system else { return message }
            var marked = message
            marked.senderBlocked = true
            return marked
        }
    }

    /// A conversation view as `viewer` sees it: its last message marked if its sender is blocked.
    public func marked(_ conversation: Conversation, for viewer: EntityID) async -> Conversation {
        guard conversation.lastMessage != nil else { return conversation }
        return Self.marked(conversation, blocked: await blocked(by: viewer))
    }

    /// A conversation view with its last message marked if `blocked` has its sender.
    static func marked(_ conversation: Conversation, blocked: Set<EntityID>) -> Conversation {
        guard let last = conversation.lastMessage, !blocked.isEmpty else { return conversation }
        var view = conversation
        view.lastMessage = marked([last], blocked: blocked)[0]
        return view
    }
}
