import Foundation
import Logging
import ParleyProtocol
import PostgresNIO

extension PostgresStore {
    /// One transaction under the member's row lock: the target is `upToSeq` (clamped) or the
    /// highest seq among `messageIds`; the watermarks only rise.
    public func markRead(conversationId: EntityID, userId: EntityID, upToSeq: Int64?, messageIds: [EntityID]?) async throws -> WatermarkChange {
        let logger = self.logger
        return try await write { c in
            let id = conversationId.uuid
            let current = try await Self.lockMember(c, id, userId, logger)
            let target: Int64
            if let upToSeq {
                target = try Self.clamped(upToSeq, lastSeq: current.lastSeq)
            } else if let messageIds, !messageIds.isEmpty {
                guard let highest = try await c.first(
                    "SELECT max(seq) FROM messages WHERE conversation_id = \(id) AND id = ANY(\(messageIds.map(\.uuid)))", logger
                )?.decode(Int64?.self)
                else { throw APIError.invalid("None of messageIds is a message of this conversation") }
                target = highest
            } else {
                throw APIError.invalid("A read needs upToSeq or messageIds")
            }
            return try await Self.raise(c, id, userId, current, read: target, delivered: target, logger)
        }
    }

    /// One transaction under the member's row lock; the target is clamped to the last seq.
    public func markDelivered(conversationId: EntityID, userId: EntityID, upToSeq: Int64) async throws -> WatermarkChange {
        let logger = self.logger
        return try await write { c in
            let current = try await Self.lockMember(c, conversationId.uuid, userId, logger)
            return try await Self.raise(
                c, conversationId.uuid, userId, current, read: nil,
                delivered: try Self.clamped(upToSeq, lastSeq: current.lastSeq), logger)
        }
    }

    private struct MemberRow { var read: Int64, delivered: Int64, lastSeq: Int64 }

    /// Locks the member's row (two receipts of one member apply one after the other, so a
    /// watermark never goes back) and reads it with the conversation's counter.
    private static func lockMember(_ c: PostgresConnection, _ id: UUID, _ userId: EntityID, _ logger: Logger) async throws -> MemberRow {
        // The conversation first (shared), in the order sends lock (conversation, then the
        // sender's member row): no send commits between a read's count and its counters.
        try await c.run("SELECT 1 FROM conversations WHERE id = \(id) FOR SHARE", logger)
        guard let row = try await c.first(
            """
            SELECT p.read_seq, p.delivered_seq, c.last_seq
            FROM participants p JOIN conversations c ON c.id = p.conversation_id
            WHERE p.conversation_id = \(id) AND p.user_id = \(userId.uuid)
            FOR UPDATE OF p
            """, logger)
        else { throw APIError.notFound("Conversation") }
        let (read, delivered, lastSeq) = try row.decode((Int64, Int64, Int64).self)
        return MemberRow(read: read, delivered: delivered, lastSeq: lastSeq)
    }

    private static func clamped(_ upToSeq: Int64, lastSeq: Int64) throws -> Int64 {
        guard upToSeq >= 0 else { throw APIError.invalid("upToSeq must not be negative") }
        return min(upToSeq, lastSeq)
    }

    /// Moves watermarks up only; delivered is kept at or above read.
    private static func raise(
        _ c: PostgresConnection, _ id: UUID, _ userId: EntityID, _ old: MemberRow, read: Int64?, delivered: Int64, _ logger: Logger
    ) async throws -> WatermarkChange {
        let newRead = max(old.read, read ?? old.read)
        let newDelivered = max(old.delivered, delivered, newRead)
        let changed = newRead != old.read || newDelivered != old.delivered
        if changed {
            try await c.run(
                """
                UPDATE participants SET read_seq = \(newRead), delivered_seq = \(newDelivered)
                WHERE conversation_id = \(id) AND user_id = \(userId.uuid)
                """, logger)
        }
        // The read moved: the member's unread base is taken again (what is left above the new
        // watermark, usually nothing when they read to the end).
        if newRead != old.read {
            try await PostgresRows.rebase(c, id, [userId.uuid], logger)
            // The member's own view (readSeq, unread) changed: the list sync must say so.
            try await c.run(
                """
                UPDATE participants SET view_changed_at = \(unescaped: PostgresRows.nowMilliseconds)
                WHERE conversation_id = \(id) AND user_id = \(userId.uuid)
                """, logger)
        }
        let row = try await c.first(
            """
            SELECT (SELECT \(unescaped: PostgresRows.unreadExpression) FROM participants p JOIN conversations c ON c.id = p.conversation_id
                    WHERE p.conversation_id = \(id) AND p.user_id = \(userId.uuid)),
                   (SELECT array_agg(user_id ORDER BY joined_at, user_id) FROM participants WHERE conversation_id = \(id))
            """, logger)!
        let (unread, participants) = try row.decode((Int, [UUID]?).self)
        return WatermarkChange(
            member: Member(userId: userId, readSeq: newRead, deliveredSeq: newDelivered), unreadCount: unread,
            changed: changed, participantIds: (participants ?? []).map(EntityID.init))
    }
}
