import Foundation
import Logging
import ParleyProtocol
import PostgresNIO

/// v1.2's large groups: members paged, readers of a message paged, receipt counts.
extension PostgresStore {
    public func participants(conversationId: EntityID, viewer: EntityID, after: EntityID?, limit: Int) async throws -> ParticipantsPage {
        let logger = self.logger
        return try await read { c in
            let id = conversationId.uuid
            guard try await PostgresRows.isParticipant(c, id, viewer.uuid, logger) else { throw APIError.notFound("Conversation") }
            let rows = try await c.all(
                """
                SELECT user_id, read_seq, delivered_seq FROM participants
                WHERE conversation_id = \(id) AND (\(after?.uuid)::uuid IS NULL OR user_id > \(after?.uuid))
                ORDER BY user_id LIMIT \(limit + 1)
                """, logger)
            let members = try rows.prefix(limit).map { row in
                let (user, read, delivered) = try row.decode((UUID, Int64, Int64).self)
                return Member(userId: EntityID(user), readSeq: read, deliveredSeq: delivered)
            }
            return ParticipantsPage(participants: members, hasMore: rows.count > limit)
        }
    }

    public func readers(
        conversationId: EntityID, messageId: EntityID, viewer: EntityID, after: EntityID?, limit: Int
    ) async throws -> ReadersPage {
        let logger = self.logger
        return try await read { c in
            let id = conversationId.uuid
            guard try await PostgresRows.isParticipant(c, id, viewer.uuid, logger) else { throw APIError.notFound("Conversation") }
            guard let seq = try await c.first(
                "SELECT seq FROM messages WHERE id = \(messageId.uuid) AND conversation_id = \(id)", logger
            )?.decode(Int64.self) else { throw APIError.notFound("Message") }
            let ids = try await c.all(
                """
                SELECT user_id FROM participants
                WHERE conversation_id = \(id) AND read_seq >= \(seq) AND (\(after?.uuid)::uuid IS NULL OR user_id > \(after?.uuid))
                ORDER BY user_id LIMIT \(limit + 1)
                """, logger
            ).map { EntityID(try $0.decode(UUID.self)) }
            return ReadersPage(userIds: Array(ids.prefix(limit)), hasMore: ids.count > limit)
        }
    }

    public func receiptSummary(conversationId: EntityID) async throws -> ReceiptSummaryEvent {
        let logger = self.logger
        return try await read { c in
            let id = conversationId.uuid
            let row = try await c.first(
                """
                WITH newest AS (SELECT COALESCE(MAX(seq), 0) AS seq FROM messages WHERE conversation_id = \(id))
                SELECT newest.seq,
                       (SELECT COUNT(*) FROM participants WHERE conversation_id = \(id) AND read_seq >= newest.seq),
                       (SELECT COUNT(*) FROM participants WHERE conversation_id = \(id) AND delivered_seq >= newest.seq)
                FROM newest
                """, logger)
            guard let row else { return ReceiptSummaryEvent(conversationId: conversationId, seq: 0, readCount: 0, deliveredCount: 0) }
            let (seq, read, delivered) = try row.decode((Int64, Int64, Int64).self)
            return ReceiptSummaryEvent(conversationId: conversationId, seq: seq, readCount: Int(read), deliveredCount: Int(delivered))
        }
    }
}
