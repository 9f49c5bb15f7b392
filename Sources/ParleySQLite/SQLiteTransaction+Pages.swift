import Foundation
import GRDB
import ParleyProtocol
import ParleyStorage

/// ``StoreTransaction``'s read-only pages over SQLite (one more row is fetched to tell
/// whether more follow).
extension SQLiteTransaction {
    func messagePage(in conversationId: EntityID, before: Int64?, after: Int64?, limit: Int, includingThreads: Bool) async throws -> MessagesPage {
        var conditions = includingThreads ? ["conversation_id = ?"] : ["conversation_id = ? AND thread_root_id IS NULL"]
        return try page(conditions: &conditions, arguments: [conversationId.description], before: before, after: after, limit: limit)
    }

    func threadPage(of rootId: EntityID, before: Int64?, after: Int64?, limit: Int) async throws -> MessagesPage {
        var conditions = ["thread_root_id = ?"]
        return try page(conditions: &conditions, arguments: [rootId.description], before: before, after: after, limit: limit)
    }

    private func page(
        conditions: inout [String], arguments: StatementArguments, before: Int64?, after: Int64?, limit: Int
    ) throws -> MessagesPage {
        var arguments = arguments
        if let after { conditions.append("seq > ?"); arguments += [after] }
        if let before { conditions.append("seq < ?"); arguments += [before] }
        // Without `after` the page is the newest before the anchor; with it, the oldest after it.
        let ascending = after != nil
        arguments += [limit + 1]
        var page = try SQLiteRows.messages(
            db, where: conditions.joined(separator: " AND "), arguments: arguments,
            order: ascending ? "seq ASC" : "seq DESC", limitPlaceholder: true)
        let hasMore = page.count > limit
        page = Array(page.prefix(limit))
        if !ascending { page.reverse() }
        return MessagesPage(messages: page, hasMore: hasMore)
    }

    func changedMessages(in conversationId: EntityID, since: Int64, limit: Int) async throws -> (messages: [Message], hasMore: Bool) {
        let page = try SQLiteRows.messages(
            db, where: "conversation_id = ? AND updated_seq > ?", arguments: [conversationId.description, since, limit + 1],
            order: "updated_seq ASC", limitPlaceholder: true)
        return (Array(page.prefix(limit)), page.count > limit)
    }

    func memberPage(of conversationId: EntityID, after: EntityID?, limit: Int) async throws -> ParticipantsPage {
        let rows = try Row.fetchAll(
            db.cachedStatement(sql: """
                SELECT user_id, read_seq, delivered_seq FROM participants
                WHERE conversation_id = ? AND user_id > ? ORDER BY user_id LIMIT ?
                """),
            arguments: [conversationId.description, after?.description ?? "", limit + 1])
        let members = try rows.prefix(limit).map {
            Member(userId: try SQLiteRows.id($0["user_id"]), readSeq: $0["read_seq"], deliveredSeq: $0["delivered_seq"])
        }
        return ParticipantsPage(participants: members, hasMore: rows.count > limit)
    }

    func readerPage(in conversationId: EntityID, reaching seq: Int64, after: EntityID?, limit: Int) async throws -> ReadersPage {
        let ids = try String.fetchAll(
            db.cachedStatement(sql: """
                SELECT user_id FROM participants
                WHERE conversation_id = ? AND read_seq >= ? AND user_id > ? ORDER BY user_id LIMIT ?
                """),
            arguments: [conversationId.description, seq, after?.description ?? "", limit + 1])
        return ReadersPage(userIds: try ids.prefix(limit).map { try SQLiteRows.id($0) }, hasMore: ids.count > limit)
    }
}
