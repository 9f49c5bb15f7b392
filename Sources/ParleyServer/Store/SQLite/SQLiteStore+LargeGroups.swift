import Foundation
import GRDB
import ParleyProtocol

/// v1.2's large groups: members paged, readers of a message paged, receipt counts.
extension SQLiteStore {
    public func participants(conversationId: EntityID, viewer: EntityID, after: EntityID?, limit: Int) async throws -> ParticipantsPage {
        try await writer.read { db in
            let id = conversationId.description
            guard try SQLiteRows.isParticipant(db, id, viewer) else { throw APIError.notFound("Conversation") }
            let rows = try Row.fetchAll(
                db.cachedStatement(sql: """
                    SELECT user_id, read_seq, delivered_seq FROM participants
                    WHERE conversation_id = ? AND user_id > ? ORDER BY user_id LIMIT ?
                    """),
                arguments: [id, after?.description ?? "", limit + 1])
            let members = try rows.prefix(limit).map {
                Member(userId: try SQLiteRows.id($0["user_id"]), readSeq: $0["read_seq"], deliveredSeq: $0["delivered_seq"])
            }
            return ParticipantsPage(participants: members, hasMore: rows.count > limit)
        }
    }

    public func readers(
        conversationId: EntityID, messageId: EntityID, viewer: EntityID, after: EntityID?, limit: Int
    ) async throws -> ReadersPage {
        try await writer.read { db in
            let id = conversationId.description
            guard try SQLiteRows.isParticipant(db, id, viewer) else { throw APIError.notFound("Conversation") }
            guard let seq = try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT seq FROM messages WHERE id = ? AND conversation_id = ?"),
                arguments: [messageId.description, id])
            else { throw APIError.notFound("Message") }
            let ids = try String.fetchAll(
                db.cachedStatement(sql: """
                    SELECT user_id FROM participants
                    WHERE conversation_id = ? AND read_seq >= ? AND user_id > ? ORDER BY user_id LIMIT ?
                    """),
                arguments: [id, seq, after?.description ?? "", limit + 1])
            return ReadersPage(userIds: try ids.prefix(limit).map { try SQLiteRows.id($0) }, hasMore: ids.count > limit)
        }
    }

    public func receiptSummary(conversationId: EntityID) async throws -> ReceiptSummaryEvent {
        try await writer.read { db in
            let id = conversationId.description
            let seq = try Int64.fetchOne(
                db.cachedStatement(sql: "SELECT MAX(seq) FROM messages WHERE conversation_id = ?"), arguments: [id]) ?? 0
            let row = try Row.fetchOne(
                db.cachedStatement(sql: """
                    SELECT COALESCE(SUM(read_seq >= ?1), 0) AS read, COALESCE(SUM(delivered_seq >= ?1), 0) AS delivered
                    FROM participants WHERE conversation_id = ?2
                    """),
                arguments: [seq, id])
            return ReceiptSummaryEvent(
                conversationId: conversationId, seq: seq, readCount: row?["read"] ?? 0, deliveredCount: row?["delivered"] ?? 0)
        }
    }
}
