import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

extension PostgresStore {
    /// A `tsquery` (see ``tsQuery(_:)``) on the messages' search vector, joined to the viewer's
    /// participant rows; deleted and system messages are left out.
    public func search(_ query: String, viewer: EntityID, conversationId: EntityID?, limit: Int, offset: Int) async throws -> SearchResponse {
        guard let match = Self.tsQuery(query) else { return SearchResponse(results: []) }
        let logger = self.logger
        return try await read { c in
            // The GIN index finds the matches; the viewer's participant rows keep them to their
            // conversations (and so to their organization).
            let rows = try await c.all(
                """
                SELECT m.id, m.text, ts_headline('simple', m.text, q, 'StartSel=[, StopSel=], MaxWords=12, MinWords=11')
                FROM messages m
                JOIN participants p ON p.conversation_id = m.conversation_id AND p.user_id = \(viewer.uuid)
                CROSS JOIN to_tsquery('simple', \(match)) AS q
                WHERE m.search_vector @@ q AND \(unescaped: ChatSQL.searchable)
                AND (\(conversationId?.uuid)::uuid IS NULL OR m.conversation_id = \(conversationId?.uuid))
                ORDER BY m.created_at DESC, m.seq DESC
                LIMIT \(limit + 1) OFFSET \(offset)
                """, logger)
            let page = try rows.prefix(limit).map {
                let (id, text, headline) = try $0.decode((UUID, String, String).self)
                return (id, Self.snippet(headline, of: text))
            }
            let messages = page.isEmpty ? [] : try await c.all(
                "\(unescaped: PostgresRows.messageSelect) WHERE m.id = ANY(\(page.map(\.0)))", logger
            ).map(PostgresRows.message)
            let byId = Dictionary(uniqueKeysWithValues: messages.map { ($0.id.uuid, $0) })
            let results = page.compactMap { id, snippet -> SearchResult? in
                guard let message = byId[id] else { return nil }
                return SearchResult(conversationId: message.conversationId, seq: message.seq, message: message, snippet: snippet)
            }
            return SearchResponse(results: results, nextOffset: rows.count > limit ? offset + limit : nil)
        }
    }

    /// A headline as FTS5's `snippet()` shows it: "…" where the text goes on before or after.
    ///
    /// `ts_headline` cuts a long text to about 12 words around the matches (marked `[` `]`) but
    /// does not say it did; comparing letters and digits only (the marks and spacing aside)
    /// tells whether the excerpt starts or ends where the text does.
    static func snippet(_ headline: String, of text: String) -> String {
        func letters(_ string: String) -> String {
            String(String.UnicodeScalarView(string.unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) }))
        }
        let whole = letters(text), part = letters(headline)
        guard !part.isEmpty else { return headline }
        return (whole.hasPrefix(part) ? "" : "…") + headline + (whole.hasSuffix(part) ? "" : "…")
    }

    /// The user's words as a `tsquery` that cannot be a syntax error: each word a quoted lexeme
    /// (AND), the last one a prefix, so "hel wor" finds "hello world" (as the SQLite store's FTS5
    /// query does). The text is bound as a parameter, never spliced into SQL.
    static func tsQuery(_ text: String) -> String? {
        let words = text.split(whereSeparator: { $0.isWhitespace }).prefix(16).map(String.init).filter { !$0.isEmpty }
        guard !words.isEmpty else { return nil }
        return words.enumerated().map { index, word in
            let quoted = "'" + word.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "''") + "'"
            return index == words.count - 1 ? quoted + ":*" : quoted
        }.joined(separator: " & ")
    }
}
