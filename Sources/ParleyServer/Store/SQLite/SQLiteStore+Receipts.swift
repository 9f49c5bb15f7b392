import Foundation
import GRDB
import ParleyProtocol

/// A watermark move queued for group commit: reads and deliveries of many members share a
/// transaction (one fsync), as sends do; a busy group's readers made one transaction each.
enum WatermarkJob: Sendable {
    case read(conversationId: EntityID, userId: EntityID, upToSeq: Int64?, messageIds: [EntityID]?)
    case delivered(conversationId: EntityID, userId: EntityID, upToSeq: Int64)
}

extension SQLiteStore {
    /// Submits the move to the watermark group commit, where receipts share a transaction
    /// (see ``apply(_:in:)``).
    public func markRead(conversationId: EntityID, userId: EntityID, upToSeq: Int64?, messageIds: [EntityID]?) async throws -> WatermarkChange {
        try await watermarks.submit(.read(conversationId: conversationId, userId: userId, upToSeq: upToSeq, messageIds: messageIds))
    }

    /// Submits the move to the watermark group commit, as a read is.
    public func markDelivered(conversationId: EntityID, userId: EntityID, upToSeq: Int64) async throws -> WatermarkChange {
        try await watermarks.submit(.delivered(conversationId: conversationId, userId: userId, upToSeq: upToSeq))
    }

    /// One watermark move inside a batch (see ``commitBatch(_:writer:_:)``).
    static func apply(_ job: WatermarkJob, in db: Database) throws -> WatermarkChange {
        switch job {
        case .read(let conversationId, let userId, let upToSeq, let messageIds):
            return try read(db, conversationId, userId, upToSeq: upToSeq, messageIds: messageIds)
        case .delivered(let conversationId, let userId, let upToSeq):
            let id = conversationId.description
        guard try SQLiteRows.isParticipant(db, id, userId) else { throw APIError.notFound("Conversation") }
        return try Self.raise(db, id, userId, read: nil, delivered: try Self.clamped(db, id, upToSeq))
        }
    }

    private static func read(
        _ db: Database, _ conversationId: EntityID, _ userId: EntityID, upToSeq: Int64?, messageIds: [EntityID]?
    ) throws -> WatermarkChange {
        let id = conversationId.description
        guard try SQLiteRows.isParticipant(db, id, userId) else { throw APIError.notFound("Conversation") }
        let target: Int64
        if let upToSeq {
            target = try Self.clamped(db, id, upToSeq)
        } else if let messageIds, !messageIds.isEmpty {
            let placeholders = Array(repeating: "?", count: messageIds.count).joined(separator: ",")
            guard let highest = try Int64.fetchOne(
                db, sql: "SELECT MAX(seq) FROM messages WHERE conversation_id = ? AND id IN (\(placeholders))",
                arguments: StatementArguments([id] + messageIds.map(\.description)))
            else { throw APIError.invalid("None of messageIds is a message of this conversation") }
            target = highest
        } else {
            throw APIError.invalid("A read needs upToSeq or messageIds")
        }
        return try Self.raise(db, id, userId, read: target, delivered: target)
    }

    private static func clamped(_ db: Database, _ id: String, _ upToSeq: Int64) throws -> Int64 {
        guard upToSeq >= 0 else { throw APIError.invalid("upToSeq must not be negative") }
        let lastSeq = try Int64.fetchOne(db.cachedStatement(sql: "SELECT last_seq FROM conversations WHERE id = ?"), arguments: [id]) ?? 0
        return min(upToSeq, lastSeq)
    }

    /// Moves watermarks up only; delivered is kept at or above read.
    private static func raise(_ db: Database, _ id: String, _ userId: EntityID, read: Int64?, delivered: Int64) throws -> WatermarkChange {
        let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT read_seq, delivered_seq FROM participants WHERE conversation_id = ? AND user_id = ?"),
            arguments: [id, userId.description])!
        let oldRead: Int64 = row["read_seq"], oldDelivered: Int64 = row["delivered_seq"]
        let newRead = max(oldRead, read ?? oldRead)
        let newDelivered = max(oldDelivered, delivered, newRead)
        let changed = newRead != oldRead || newDelivered != oldDelivered
        if changed {
            try db.cachedStatement(
                sql: "UPDATE participants SET read_seq = ?, delivered_seq = ? WHERE conversation_id = ? AND user_id = ?"
            ).execute(arguments: [newRead, newDelivered, id, userId.description])
        }
        // The read moved: the member's unread base is taken again (what is left above the new
        // watermark, usually nothing when they read to the end).
        if newRead != oldRead {
            try SQLiteRows.rebase(db, id, userId)
            // The member's own view (readSeq, unread) changed: the list sync must say so.
            try db.cachedStatement(
                sql: "UPDATE participants SET view_changed_at = \(SQLiteRows.nowMilliseconds) WHERE conversation_id = ? AND user_id = ?"
            ).execute(arguments: [id, userId.description])
        }
        let unread = try SQLiteRows.unreadCount(db, id, userId)
        return WatermarkChange(
            member: Member(userId: userId, readSeq: newRead, deliveredSeq: newDelivered), unreadCount: unread,
            changed: changed, participantIds: try SQLiteRows.participantIds(db, id))
    }
}
