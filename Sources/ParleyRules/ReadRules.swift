import Foundation
import ParleyProtocol
import ParleyStorage

/// Who may read what of a conversation: its history, its changes since a seq, its members and
/// who has read a message. Run in one read transaction of the store.
///
/// - Only a participant reads a conversation; to anyone else (another organization, a former
///   member, someone never in it) it does not exist: `not_found`, the same answer as for a
///   conversation that does not exist, so nothing can be learnt by probing ids.
/// - Who read a message is asked of a message of this conversation; any other id is
///   `not_found`.
/// - Pages are bounded by the caller's `limit` (the routes clamp it to the contract's limits).
public enum ReadRules {
    /// A page of history: the newest before `before` (or the newest of all), or with `after`
    /// the oldest after it; oldest first. Thread replies only `includingThreads`.
    public static func history(
        of conversationId: EntityID, for viewer: EntityID, before: Int64?, after: Int64?, limit: Int,
        includingThreads: Bool = false, in tx: any StoreTransaction
    ) async throws -> MessagesPage {
        try await requireParticipant(viewer, of: conversationId, in: tx)
        return try await tx.messagePage(in: conversationId, before: before, after: after, limit: limit, includingThreads: includingThreads)
    }

    /// The catch-up feed: what changed after `since` (new, edited, deleted, reacted), with the
    /// conversation's counter read in the same snapshot, so a client that reaches `lastSeq`
    /// has everything up to it.
    public static func changes(
        of conversationId: EntityID, for viewer: EntityID, since: Int64, limit: Int, in tx: any StoreTransaction
    ) async throws -> ChangesPage {
        try await requireParticipant(viewer, of: conversationId, in: tx)
        let lastSeq = try await tx.lastSeq(of: conversationId) ?? 0
        let page = try await tx.changedMessages(in: conversationId, since: since, limit: limit)
        return ChangesPage(messages: page.messages, lastSeq: lastSeq, hasMore: page.hasMore)
    }

    /// A page of the members and their watermarks (a large group's conversation leaves them out).
    public static func members(
        of conversationId: EntityID, for viewer: EntityID, after: EntityID?, limit: Int, in tx: any StoreTransaction
    ) async throws -> ParticipantsPage {
        try await requireParticipant(viewer, of: conversationId, in: tx)
        return try await tx.memberPage(of: conversationId, after: after, limit: limit)
    }

    /// A page of the members who have read a message (their read watermark reaches its seq).
    public static func readers(
        of messageId: EntityID, in conversationId: EntityID, for viewer: EntityID, after: EntityID?, limit: Int, in tx: any StoreTransaction
    ) async throws -> ReadersPage {
        try await requireParticipant(viewer, of: conversationId, in: tx)
        guard let message = try await tx.message(messageId), message.conversationId == conversationId else {
            throw ChatError.notFound("Message")
        }
        return try await tx.readerPage(in: conversationId, reaching: message.seq, after: after, limit: limit)
    }

    /// Only a participant reads a conversation; to anyone else it does not exist.
    static func requireParticipant(_ viewer: EntityID, of conversationId: EntityID, in tx: any StoreTransaction) async throws {
        guard try await tx.isParticipant(viewer, of: conversationId) else { throw ChatError.notFound("Conversation") }
    }
}
