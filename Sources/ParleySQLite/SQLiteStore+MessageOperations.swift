import Foundation
import GRDB
import ParleyProtocol
import ParleyStorage

extension SQLiteStore {
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
                WHERE messages_fts MATCH ? AND \(ChatSQL.searchable)
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
