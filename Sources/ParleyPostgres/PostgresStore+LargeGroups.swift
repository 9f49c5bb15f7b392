import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

/// Large groups: receipt counts (members and readers are paged by `ReadRules`).
extension PostgresStore {
    /// One statement: the highest message seq (0 when none) and how many members' read and
    /// delivered watermarks reach it.
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

/// The conversation list: paged, and changes since a token.
extension PostgresStore {
    /// One snapshot: ids after the cursor (one more tells whether a next page exists), then
    /// their views together.
    public func conversations(viewer: EntityID, limit: Int, before: ListCursor?) async throws -> (page: [Conversation], next: ListCursor?) {
        let logger = self.logger
        return try await read { c in
            let rows = try await c.all(
                """
                SELECT c.id, c.last_activity_at FROM conversations c JOIN participants p ON p.conversation_id = c.id
                WHERE p.user_id = \(viewer.uuid)
                AND (\(before?.lastActivityMs)::bigint IS NULL OR c.last_activity_at < \(before?.lastActivityMs)
                     OR (c.last_activity_at = \(before?.lastActivityMs) AND c.id > \(before?.id.uuid)))
                ORDER BY c.last_activity_at DESC, c.id LIMIT \(limit + 1)
                """, logger
            ).map { try $0.decode((UUID, Int64).self) }
            let kept = Array(rows.prefix(limit))
            let page = try await PostgresRows.views(c, ids: kept.map(\.0), viewer: viewer.uuid, logger)
            guard rows.count > limit, let last = kept.last else { return (page, nil) }
            return (page, ListCursor(lastActivityMs: last.1, id: EntityID(last.0)))
        }
    }

    /// One snapshot: conversations whose row (`changed_at`) or the viewer's row
    /// (`view_changed_at`) changed after `since`, and the viewer's departures after it.
    public func conversationChanges(viewer: EntityID, since: Int64) async throws -> (changed: [Conversation], removedIds: [EntityID]) {
        let logger = self.logger
        return try await read { c in
            let ids = try await c.all(
                """
                SELECT c.id FROM conversations c JOIN participants p ON p.conversation_id = c.id
                WHERE p.user_id = \(viewer.uuid) AND (c.changed_at > \(since) OR p.view_changed_at > \(since))
                ORDER BY c.last_activity_at DESC, c.id
                """, logger
            ).map { try $0.decode(UUID.self) }
            let removed = try await c.all(
                "SELECT conversation_id FROM departures WHERE user_id = \(viewer.uuid) AND left_at > \(since) ORDER BY conversation_id",
                logger
            ).map { EntityID(try $0.decode(UUID.self)) }
            return (try await PostgresRows.views(c, ids: ids, viewer: viewer.uuid, logger), removed)
        }
    }

    /// The database's clock (`clock_timestamp()`) in milliseconds since 1970, as the change
    /// stamps use.
    public func clockMilliseconds() async throws -> Int64 {
        let logger = self.logger
        return try await single { c in
            try await c.first("SELECT \(unescaped: PostgresRows.nowMilliseconds)", logger)?.decode(Int64.self) ?? 0
        }
    }
}
