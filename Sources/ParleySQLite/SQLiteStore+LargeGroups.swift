import Foundation
import GRDB
import ParleyProtocol
import ParleyStorage

/// Large groups: receipt counts (members and readers are paged by `ReadRules`).
extension SQLiteStore {
    /// One read: the highest message seq (0 when none), then how many members' read and
    /// delivered watermarks reach it.
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

/// The conversation list: paged, and changes since a token.
extension SQLiteStore {
    /// One read: ids after the cursor (one more tells whether a next page exists), then each
    /// one's full view.
    public func conversations(viewer: EntityID, limit: Int, before: ListCursor?) async throws -> (page: [Conversation], next: ListCursor?) {
        try await writer.read { db in
            let rows = try Row.fetchAll(
                db.cachedStatement(sql: """
                    SELECT c.id, c.last_activity_at FROM conversations c JOIN participants p ON p.conversation_id = c.id
                    WHERE p.user_id = ?1 AND (?2 IS NULL OR c.last_activity_at < ?2 OR (c.last_activity_at = ?2 AND c.id > ?3))
                    ORDER BY c.last_activity_at DESC, c.id LIMIT ?4
                    """),
                arguments: [viewer.description, before?.lastActivityMs, before?.id.description ?? "", limit + 1])
            let page = try rows.prefix(limit).compactMap { try Self.view(db, id: $0["id"], viewer: viewer) }
            guard rows.count > limit, let last = rows.prefix(limit).last else { return (page, nil) }
            return (page, ListCursor(lastActivityMs: last["last_activity_at"], id: try SQLiteRows.id(last["id"])))
        }
    }

    /// One read: conversations whose row (`changed_at`) or the viewer's row (`view_changed_at`)
    /// changed after `since`, and the viewer's departures after it.
    public func conversationChanges(viewer: EntityID, since: Int64) async throws -> (changed: [Conversation], removedIds: [EntityID]) {
        try await writer.read { db in
            let ids = try String.fetchAll(
                db.cachedStatement(sql: """
                    SELECT c.id FROM conversations c JOIN participants p ON p.conversation_id = c.id
                    WHERE p.user_id = ?1 AND (c.changed_at > ?2 OR p.view_changed_at > ?2)
                    ORDER BY c.last_activity_at DESC, c.id
                    """),
                arguments: [viewer.description, since])
            let removed = try String.fetchAll(
                db.cachedStatement(sql: "SELECT conversation_id FROM departures WHERE user_id = ? AND left_at > ? ORDER BY conversation_id"),
                arguments: [viewer.description, since])
            return (try ids.compactMap { try Self.view(db, id: $0, viewer: viewer) }, try removed.map { try SQLiteRows.id($0) })
        }
    }

    /// SQLite's clock (`julianday('now')`) in milliseconds since 1970, as the change stamps use.
    public func clockMilliseconds() async throws -> Int64 {
        try await writer.read { db in try Int64.fetchOne(db, sql: "SELECT \(SQLiteRows.nowMilliseconds)") ?? 0 }
    }
}
