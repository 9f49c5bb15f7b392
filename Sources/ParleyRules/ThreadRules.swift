import Foundation
import ParleyProtocol
import ParleyStorage

/// Reading a thread; replying in one is a send (see ``SendRules``).
///
/// - Only a participant reads a thread; to anyone else the conversation does not exist.
/// - The root is a message of this conversation that is not itself a reply; any other id is
///   `not_found`. A root without replies answers an empty page.
public enum ThreadRules {
    /// The root as it is now and a page of its replies, paged like history.
    public static func page(
        of rootId: EntityID, in conversationId: EntityID, for viewer: EntityID, before: Int64?, after: Int64?, limit: Int,
        in tx: any StoreTransaction
    ) async throws -> ThreadPage {
        try await ReadRules.requireParticipant(viewer, of: conversationId, in: tx)
        guard let root = try await tx.message(rootId), root.conversationId == conversationId, root.threadRootId == nil else {
            throw ChatError.notFound("Thread")
        }
        let page = try await tx.threadPage(of: rootId, before: before, after: after, limit: limit)
        return ThreadPage(root: root, messages: page.messages, hasMore: page.hasMore)
    }
}

/// Who a new message notifies by push, once it is stored.
///
/// - Never its sender, never a system message's audience.
/// - A thread reply: the thread's members only.
/// - A muted conversation: nobody, except those the message mentions.
public enum NotifyRules {
    /// The participants to notify of `message`, out of `participants`.
    public static func recipients(
        of message: Message, among participants: [EntityID], now: Date, in tx: any StoreTransaction
    ) async throws -> [EntityID] {
        guard message.type != .system else { return [] }
        var candidates = participants.filter { $0 != message.senderId }
        if let root = message.threadRootId {
            let members = Set(try await tx.threadMemberIds(of: root))
            candidates = candidates.filter(members.contains)
        }
        guard !candidates.isEmpty else { return [] }
        let muted = try await tx.mutedMemberIds(of: message.conversationId, at: now)
        let mentioned = Set(message.mentions ?? [])
        return candidates.filter { !muted.contains($0) || mentioned.contains($0) }
    }
}
