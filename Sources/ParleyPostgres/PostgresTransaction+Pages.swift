import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

/// ``StoreTransaction``'s read-only pages over PostgreSQL (one more row is fetched to tell
/// whether more follow).
extension PostgresTransaction {
    func messagePage(in conversationId: EntityID, before: Int64?, after: Int64?, limit: Int, includingThreads: Bool) async throws -> MessagesPage {
        // Without `after` the page is the newest before the anchor; with it, the oldest after it.
        let ascending = after != nil
        let rows = try await connection.all(
            """
            \(unescaped: PostgresRows.messageSelect)
            WHERE m.conversation_id = \(conversationId.uuid) AND (\(includingThreads) OR m.thread_root_id IS NULL)
            AND (\(after)::bigint IS NULL OR m.seq > \(after)) AND (\(before)::bigint IS NULL OR m.seq < \(before))
            ORDER BY m.seq \(unescaped: ascending ? "ASC" : "DESC") LIMIT \(limit + 1)
            """, logger)
        return try Self.page(rows, ascending: ascending, limit: limit)
    }

    func threadPage(of rootId: EntityID, before: Int64?, after: Int64?, limit: Int) async throws -> MessagesPage {
        let ascending = after != nil
        let rows = try await connection.all(
            """
            \(unescaped: PostgresRows.messageSelect)
            WHERE m.thread_root_id = \(rootId.uuid)
            AND (\(after)::bigint IS NULL OR m.seq > \(after)) AND (\(before)::bigint IS NULL OR m.seq < \(before))
            ORDER BY m.seq \(unescaped: ascending ? "ASC" : "DESC") LIMIT \(limit + 1)
            """, logger)
        return try Self.page(rows, ascending: ascending, limit: limit)
    }

    /// A page from `limit + 1` rows read in the direction asked, oldest first.
    private static func page(_ rows: [PostgresRow], ascending: Bool, limit: Int) throws -> MessagesPage {
        var page = try rows.prefix(limit).map(PostgresRows.message)
        if !ascending { page.reverse() }
        return MessagesPage(messages: page, hasMore: rows.count > limit)
    }

    func changedMessages(in conversationId: EntityID, since: Int64, limit: Int) async throws -> (messages: [Message], hasMore: Bool) {
        let page = try await connection.all(
            """
            \(unescaped: PostgresRows.messageSelect)
            WHERE m.conversation_id = \(conversationId.uuid) AND m.updated_seq > \(since)
            ORDER BY m.updated_seq ASC LIMIT \(limit + 1)
            """, logger
        ).map(PostgresRows.message)
        return (Array(page.prefix(limit)), page.count > limit)
    }

    func memberPage(of conversationId: EntityID, after: EntityID?, limit: Int) async throws -> ParticipantsPage {
        let rows = try await connection.all(
            """
            SELECT user_id, read_seq, delivered_seq FROM participants
            WHERE conversation_id = \(conversationId.uuid) AND (\(after?.uuid)::uuid IS NULL OR user_id > \(after?.uuid))
            ORDER BY user_id LIMIT \(limit + 1)
            """, logger)
        let members = try rows.prefix(limit).map { row in
            let (user, read, delivered) = try row.decode((UUID, Int64, Int64).self)
            return Member(userId: EntityID(user), readSeq: read, deliveredSeq: delivered)
        }
        return ParticipantsPage(participants: members, hasMore: rows.count > limit)
    }

    func readerPage(in conversationId: EntityID, reaching seq: Int64, after: EntityID?, limit: Int) async throws -> ReadersPage {
        let ids = try await connection.all(
            """
            SELECT user_id FROM participants
            WHERE conversation_id = \(conversationId.uuid) AND read_seq >= \(seq) AND (\(after?.uuid)::uuid IS NULL OR user_id > \(after?.uuid))
            ORDER BY user_id LIMIT \(limit + 1)
            """, logger
        ).map { EntityID(try $0.decode(UUID.self)) }
        return ReadersPage(userIds: Array(ids.prefix(limit)), hasMore: ids.count > limit)
    }
}
