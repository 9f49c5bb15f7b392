import Foundation
import ParleyProtocol
import ParleyStorage

/// How read and delivered watermarks move: run inside the store's transaction (see
/// ``StoreTransaction``).
///
/// - Only a participant has watermarks; to anyone else the conversation does not exist.
/// - A read goes up to `upToSeq`, or to the highest seq among `messageIds` (which must name
///   messages of the conversation); a delivery goes up to `upToSeq`. Neither is negative, and
///   both are clamped to the conversation's last seq.
/// - Watermarks only rise: a receipt below them changes nothing. Delivered is never below read.
/// - A read that moves takes the member's unread count again; the answer says the last seq the
///   count was taken at (the conversation is locked, so no change comes in between).
public enum ReceiptRules {
    /// Raises the user's read watermark (and delivered with it).
    public static func markRead(
        conversationId: EntityID, userId: EntityID, upToSeq: Int64?, messageIds: [EntityID]?, in tx: any StoreTransaction
    ) async throws -> WatermarkChange {
        guard let current = try await tx.lockWatermarks(of: userId, in: conversationId) else {
            throw ChatError.notFound("Conversation")
        }
        let target: Int64
        if let upToSeq {
            target = try clamped(upToSeq, lastSeq: current.lastSeq)
        } else if let messageIds, !messageIds.isEmpty {
            guard let highest = try await tx.highestSeq(of: messageIds, in: conversationId) else {
                throw ChatError.invalid("None of messageIds is a message of this conversation")
            }
            target = highest
        } else {
            throw ChatError.invalid("A read needs upToSeq or messageIds")
        }
        return try await raise(current.member, read: target, delivered: target, lastSeq: current.lastSeq, in: conversationId, tx)
    }

    /// Raises the user's delivered watermark.
    public static func markDelivered(
        conversationId: EntityID, userId: EntityID, upToSeq: Int64, in tx: any StoreTransaction
    ) async throws -> WatermarkChange {
        guard let current = try await tx.lockWatermarks(of: userId, in: conversationId) else {
            throw ChatError.notFound("Conversation")
        }
        return try await raise(
            current.member, read: nil, delivered: try clamped(upToSeq, lastSeq: current.lastSeq), lastSeq: current.lastSeq,
            in: conversationId, tx)
    }

    private static func clamped(_ upToSeq: Int64, lastSeq: Int64) throws -> Int64 {
        guard upToSeq >= 0 else { throw ChatError.invalid("upToSeq must not be negative") }
        return min(upToSeq, lastSeq)
    }

    /// Moves watermarks up only; delivered is kept at or above read. The count is taken in the
    /// same transaction, with the conversation locked, so it is the count at `lastSeq`.
    private static func raise(
        _ old: Member, read: Int64?, delivered: Int64, lastSeq: Int64, in conversationId: EntityID, _ tx: any StoreTransaction
    ) async throws -> WatermarkChange {
        let newRead = max(old.readSeq, read ?? old.readSeq)
        let newDelivered = max(old.deliveredSeq, delivered, newRead)
        let moved = Member(userId: old.userId, readSeq: newRead, deliveredSeq: newDelivered)
        let changed = moved != old
        if changed { try await tx.setWatermarks(moved, in: conversationId) }
        if newRead != old.readSeq { try await tx.readMoved(for: old.userId, in: conversationId) }
        let (unread, participants) = try await tx.unreadCountAndParticipants(of: old.userId, in: conversationId)
        return WatermarkChange(member: moved, unreadCount: unread, changed: changed, participantIds: participants, lastSeq: lastSeq)
    }
}
