import Foundation
import GRDB
import ParleyProtocol

extension SQLiteStore {
    /// One write transaction: checks participation and the message, then updates it with the
    /// conversation's next seq; nothing is written when nothing changes.
    public func change(_ edit: MessageEdit, messageId: EntityID, in conversationId: EntityID, by userId: EntityID, now: Date) async throws -> MessageChange {
        try await writer.write { db in
            let id = conversationId.description
            guard try SQLiteRows.isParticipant(db, id, userId),
                let message = try SQLiteRows.messages(
                    db, where: "id = ? AND conversation_id = ?", arguments: [messageId.description, id]).first
            else { throw APIError.notFound("Message") }
            let participants = try SQLiteRows.participantIds(db, id)
            func unchanged() -> MessageChange { MessageChange(message: message, changed: false, participantIds: participants) }
            guard message.type != .system else { throw APIError.invalid("System messages cannot be changed") }
            let ms = now.millisecondsSince1970
            switch edit {
            case .text(let text):
                guard message.senderId == userId else { throw APIError(.forbidden, "Only the sender can edit a message") }
                guard message.deletedAt == nil else { throw APIError.invalid("A deleted message cannot be edited") }
                guard text != message.text else { return unchanged() }
                let seq = try SQLiteRows.nextSeq(db, id)
                try db.execute(
                    sql: "UPDATE messages SET text = ?, edited_at = ?, updated_seq = ? WHERE id = ?",
                    arguments: [text, ms, seq, messageId.description])
            case .delete:
                guard message.senderId == userId else { throw APIError(.forbidden, "Only the sender can delete a message") }
                guard message.deletedAt == nil else { return unchanged() }
                let seq = try SQLiteRows.nextSeq(db, id)
                try db.execute(
                    sql: """
                        UPDATE messages SET text = '', metadata_json = NULL, attachment_id = NULL, deleted_at = ?, updated_seq = ?
                        WHERE id = ?
                        """,
                    arguments: [ms, seq, messageId.description])
                try db.execute(sql: "DELETE FROM reactions WHERE message_id = ?", arguments: [messageId.description])
                try SQLiteRows.uncount(db, message)
            case .reaction(let emoji, let add):
                guard message.deletedAt == nil else { throw APIError.invalid("A deleted message cannot be reacted to") }
                if add {
                    try db.execute(
                        sql: "INSERT OR IGNORE INTO reactions (message_id, emoji, user_id, created_at) VALUES (?, ?, ?, ?)",
                        arguments: [messageId.description, emoji, userId.description, ms])
                } else {
                    try db.execute(
                        sql: "DELETE FROM reactions WHERE message_id = ? AND emoji = ? AND user_id = ?",
                        arguments: [messageId.description, emoji, userId.description])
                }
                guard db.changesCount > 0 else { return unchanged() }
                let seq = try SQLiteRows.nextSeq(db, id)
                try db.execute(sql: "UPDATE messages SET updated_seq = ? WHERE id = ?", arguments: [seq, messageId.description])
            }
            let updated = try SQLiteRows.messages(db, where: "id = ?", arguments: [messageId.description])[0]
            return MessageChange(message: updated, changed: true, participantIds: participants)
        }
    }

    /// An FTS5 match (see ``ftsQuery(_:)``) joined to the viewer's participant rows, leaving out
    /// deleted and system messages; a query without words finds nothing.
    public func search(_ query: String, viewer: EntityID, conversationId: EntityID?, limit: Int, offset: Int) async throws -> SearchResponse {
        guard let match = Self.ftsQuery(query) else { return SearchResponse(results: []) }
        return try await writer.read { db in
            var sql = """
                SELECT m.id, snippet(messages_fts, 0, '[', ']', '…', 12) AS snippet
                FROM messages_fts
                JOIN messages m ON m.rowid = messages_fts.rowid
                JOIN participants p ON p.conversation_id = m.conversation_id AND p.user_id = ?
                WHERE messages_fts MATCH ? AND m.deleted_at IS NULL AND m.type != 'system'
                """
            var arguments: StatementArguments = [viewer.description, match]
            if let conversationId {
                sql += " AND m.conversation_id = ?"
                arguments += [conversationId.description]
            }
            sql += " ORDER BY m.created_at DESC, m.seq DESC LIMIT ? OFFSET ?"
            arguments += [limit + 1, offset]
            let rows = try Row.fetchAll(db, sql: sql, arguments: arguments)
            let page = rows.prefix(limit)
            let ids = page.map { $0["id"] as String }
            let messages = try ids.isEmpty ? [] : SQLiteRows.messages(
                db, where: "id IN (\(Array(repeating: "?", count: ids.count).joined(separator: ",")))",
                arguments: StatementArguments(ids))
            let byId = Dictionary(uniqueKeysWithValues: messages.map { ($0.id.description, $0) })
            let results = page.compactMap { row -> SearchResult? in
                guard let message = byId[row["id"] as String] else { return nil }
                return SearchResult(conversationId: message.conversationId, seq: message.seq, message: message, snippet: row["snippet"])
            }
            return SearchResponse(results: results, nextOffset: rows.count > limit ? offset + limit : nil)
        }
    }

    /// The user's words as an FTS5 query that cannot be a syntax error: each word quoted (AND),
    /// the last one a prefix, so "hel wor" finds "hello world".
    static func ftsQuery(_ text: String) -> String? {
        let words = text.split(whereSeparator: { $0.isWhitespace }).prefix(16)
            .map { String($0).replacingOccurrences(of: "\"", with: "\"\"") }
            .filter { !$0.isEmpty }
        guard !words.isEmpty else { return nil }
        return words.enumerated().map { index, word in
            index == words.count - 1 ? "\"\(word)\"*" : "\"\(word)\""
        }.joined(separator: " ")
    }
}
