import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

extension PostgresConnection {
    /// Runs a query and returns every row (always read to the end, so the connection is free after).
    func all(_ query: PostgresQuery, _ logger: Logger) async throws -> [PostgresRow] {
        try await checkedQuery(query, logger).collect()
    }

    /// Runs a query, unless the connection has closed: PostgresNIO (1.33) loses a statement
    /// written to a connection whose channel has already closed (the write never reaches its
    /// handler, so nothing ever answers it), and a write transaction caught by a PostgreSQL
    /// restart between two statements then waits forever, holding its conversations' lane.
    /// Seen as a node that stopped committing for good after `pg_ctl restart -m fast`.
    package func checkedQuery(_ query: PostgresQuery, _ logger: Logger) async throws -> PostgresRowSequence {
        guard !isClosed else { throw ConnectionClosed() }
        WriteTally.current?.note(query)
        return try await self.query(query, logger: logger)
    }

    /// Executes a prepared statement, unless the connection has closed (see ``checkedQuery(_:_:)``).
    func checkedExecute<Statement: PostgresPreparedStatement, Row>(
        _ statement: Statement, _ logger: Logger
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, Row> where Row == Statement.Row {
        guard !isClosed else { throw ConnectionClosed() }
        WriteTally.current?.noteWrite()
        return try await execute(statement, logger: logger)
    }
}

/// A statement was not sent: its connection to PostgreSQL had closed (the server restarted or
/// went away). Storage trouble: the write is answered `503 unavailable` and tried again.
public struct ConnectionClosed: Error, CustomStringConvertible {
    public var description: String { "The connection to PostgreSQL closed before the statement was sent" }
}

extension PostgresConnection {
    /// Runs a query and returns its first row.
    func first(_ query: PostgresQuery, _ logger: Logger) async throws -> PostgresRow? {
        try await all(query, logger).first
    }

    /// Runs a statement whose rows do not matter.
    func run(_ query: PostgresQuery, _ logger: Logger) async throws {
        _ = try await all(query, logger)
    }

    /// Runs `body` between BEGIN and COMMIT on this connection; rolls back when it throws.
    ///
    /// Hand-written rather than PostgresNIO's `withTransaction` so the body's own errors
    /// (`ChatError`) come out unwrapped.
    nonisolated(nonsending) func inTransaction<T: Sendable>(
        _ begin: PostgresQuery = "BEGIN", logger: Logger, _ body: (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await run(begin, logger)
        let result: T
        do {
            result = try await body(self)
        } catch {
            // A failed rollback leaves a broken connection, which the pool then closes.
            try? await run("ROLLBACK", logger)
            throw error
        }
        try await run("COMMIT", logger)
        return result
    }
}

/// Row mapping and the queries the PostgreSQL store's transactions share.
enum PostgresRows {
    /// The columns of a message with its attachment (joined) and reactions (aggregated in order),
    /// so one statement reads whole messages. Callers append `WHERE`, `ORDER BY` and `LIMIT`.
    static let messageSelect = """
        SELECT m.id, m.conversation_id, m.seq, m.updated_seq, m.sender_id, m.client_message_id, m.type,
               m.text, m.reply_to_id, m.metadata_json, m.created_at, m.edited_at, m.deleted_at,
               m.forwarded_from_id, m.attachment_id, m.thread_root_id, m.thread_reply_count, m.thread_last_reply_at,
               m.thread_last_reply_seq, m.mentions_json, m.pinned_at, m.pinned_by, m.preview_json, m.deleted_by,
               a.id AS a_id, a.name AS a_name, a.content_type AS a_content_type, a.size AS a_size,
               a.width AS a_width, a.height AS a_height,
               r.emojis AS r_emojis, r.users AS r_users
        FROM messages m
        LEFT JOIN attachments a ON a.id = m.attachment_id
        LEFT JOIN LATERAL (
            SELECT array_agg(emoji ORDER BY created_at, user_id) AS emojis,
                   array_agg(user_id ORDER BY created_at, user_id) AS users
            FROM reactions WHERE message_id = m.id
        ) r ON true
        """

    /// The columns of a user row.
    static let userColumns = "id, organization_id, email, display_name, last_seen_at, role, avatar_id"

    /// ``userColumns`` of the table aliased `alias`.
    static func userColumns(of alias: String) -> String {
        userColumns.split(separator: ",").map { "\(alias)." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
    }

    /// The user in ``userColumns``, which start after the row's first `skipping` columns.
    static func user(_ row: PostgresRow, skipping: Int) throws -> User {
        let r = row.makeRandomAccess()
        let (id, organizationId, email, displayName, lastSeen, role, avatar) = (
            try r[skipping].decode(UUID.self), try r[skipping + 1].decode(UUID.self), try r[skipping + 2].decode(String.self),
            try r[skipping + 3].decode(String.self), try r[skipping + 4].decode(Int64?.self), try r[skipping + 5].decode(String.self),
            try r[skipping + 6].decode(UUID?.self))
        return User(
            id: EntityID(id), organizationId: EntityID(organizationId), email: email, displayName: displayName,
            isOnline: false, lastSeenAt: lastSeen.map(Date.init(millisecondsSince1970:)), role: UserRole(rawValue: role),
            avatarUrl: avatar.map { Attachment.path(of: EntityID($0)) })
    }

    static func user(_ row: PostgresRow) throws -> User { try user(row, skipping: 0) }

    static func message(_ row: PostgresRow) throws -> Message {
        let r = row.makeRandomAccess()
        var reactions: [String: [EntityID]] = [:]
        if let emojis = try r["r_emojis"].decode([String]?.self), let users = try r["r_users"].decode([UUID]?.self) {
            for (emoji, user) in zip(emojis, users) { reactions[emoji, default: []].append(EntityID(user)) }
        }
        var attachment: Attachment?
        if let attachmentId = try r["a_id"].decode(UUID?.self) {
            attachment = Attachment(
                id: EntityID(attachmentId), name: try r["a_name"].decode(String.self),
                contentType: try r["a_content_type"].decode(String.self), size: try r["a_size"].decode(Int64.self),
                url: Attachment.path(of: EntityID(attachmentId)),
                width: try r["a_width"].decode(Int?.self), height: try r["a_height"].decode(Int?.self))
        }
        let metadata = try r["metadata_json"].decode(String?.self).map {
            try JSONDecoder().decode([String: String].self, from: Data($0.utf8))
        }
        return Message(
            id: EntityID(try r["id"].decode(UUID.self)), conversationId: EntityID(try r["conversation_id"].decode(UUID.self)),
            seq: try r["seq"].decode(Int64.self), updatedSeq: try r["updated_seq"].decode(Int64.self),
            senderId: EntityID(try r["sender_id"].decode(UUID.self)),
            clientMessageId: try r["client_message_id"].decode(String.self),
            type: MessageType(rawValue: try r["type"].decode(String.self)) ?? .text, text: try r["text"].decode(String.self),
            replyToId: try r["reply_to_id"].decode(UUID?.self).map(EntityID.init),
            attachment: attachment, metadata: metadata, reactions: reactions,
            createdAt: Date(millisecondsSince1970: try r["created_at"].decode(Int64.self)),
            editedAt: try r["edited_at"].decode(Int64?.self).map(Date.init(millisecondsSince1970:)),
            deletedAt: try r["deleted_at"].decode(Int64?.self).map(Date.init(millisecondsSince1970:)),
            forwardedFromId: try r["forwarded_from_id"].decode(UUID?.self).map(EntityID.init),
            threadRootId: try r["thread_root_id"].decode(UUID?.self).map(EntityID.init),
            thread: StoreRows.thread(
                replies: try r["thread_reply_count"].decode(Int64.self), at: try r["thread_last_reply_at"].decode(Int64?.self),
                seq: try r["thread_last_reply_seq"].decode(Int64?.self)),
            mentions: try r["mentions_json"].decode(String?.self).map { try JSONDecoder().decode([EntityID].self, from: Data($0.utf8)) },
            pinnedAt: try r["pinned_at"].decode(Int64?.self).map(Date.init(millisecondsSince1970:)),
            pinnedBy: try r["pinned_by"].decode(UUID?.self).map(EntityID.init),
            preview: try r["preview_json"].decode(String?.self).map { try JSONDecoder().decode(LinkPreview.self, from: Data($0.utf8)) },
            deletedBy: try r["deleted_by"].decode(UUID?.self).map(EntityID.init))
    }

    /// One whole message by id.
    static func message(_ c: PostgresConnection, id: UUID, _ logger: Logger) async throws -> Message? {
        try await c.first("\(unescaped: messageSelect) WHERE m.id = \(id)", logger).map(message)
    }

    static func isParticipant(_ c: PostgresConnection, _ conversationId: UUID, _ userId: UUID, _ logger: Logger) async throws -> Bool {
        try await c.first(
            "SELECT 1 FROM participants WHERE conversation_id = \(conversationId) AND user_id = \(userId)", logger) != nil
    }

    static func participantIds(_ c: PostgresConnection, _ conversationId: UUID, _ logger: Logger) async throws -> [EntityID] {
        try await c.all(
            "SELECT user_id FROM participants WHERE conversation_id = \(conversationId) ORDER BY joined_at, user_id", logger
        ).map { EntityID(try $0.decode(UUID.self)) }
    }

    /// A member's own part of a view from `p` and `c` (see SQLiteRows.ownColumns).
    static let ownColumns = "\(ChatSQL.unreadCount)::bigint AS unread, p.mention_unread, p.muted, p.muted_until, p.read_seq"

    /// A member's own part of a view, read with ``ownColumns`` starting at column `at`.
    static func own(_ row: PostgresRow, at start: Int = 0, now: Date = Date()) throws -> OwnView {
        let r = row.makeRandomAccess()
        let until = try r[start + 3].decode(Int64?.self).map(Date.init(millisecondsSince1970:))
        let muted = try r[start + 2].decode(Bool.self) && (until.map { $0 > now } ?? true)
        return OwnView(
            unread: Int(try r[start].decode(Int64.self)), mentions: Int(try r[start + 1].decode(Int64.self)), muted: muted,
            mutedUntil: muted ? until : nil, readSeq: try r[start + 4].decode(Int64.self))
    }

    /// Takes the bases of these members now (a read moved their watermark, or they joined): one
    /// statement, so the count and the counters come from one snapshot. Callers hold the
    /// conversation's row lock (sends take it too), so no send lands in between.
    static func rebase(_ c: PostgresConnection, _ conversationId: UUID, _ userIds: [UUID], _ logger: Logger) async throws {
        try await c.run(
            """
            UPDATE participants p SET
                unread_base = (\(unescaped: ChatSQL.unreadMessages(member: "p.user_id", conversation: "p.conversation_id", readSeq: "p.read_seq"))),
                countable_at_base = c.countable, own_at_base = p.own_countable, base_seq = c.last_seq,
                thread_unread = (\(unescaped: ChatSQL.unreadThreadReplies(member: "p.user_id", conversation: "p.conversation_id", readSeq: "p.read_seq"))),
                mention_unread = (\(unescaped: ChatSQL.unreadMentions(member: "p.user_id", conversation: "p.conversation_id", readSeq: "p.read_seq")))
            FROM conversations c
            WHERE c.id = p.conversation_id AND p.conversation_id = \(conversationId) AND p.user_id = ANY(\(userIds))
            """, logger)
    }

    /// A countable message was deleted: the counters lose it, and so do the bases that had
    /// counted it (O(members), deletes only).
    static func uncount(_ c: PostgresConnection, _ message: Message, _ logger: Logger) async throws {
        guard message.type != .system else { return }
        let id = message.conversationId.uuid, sender = message.senderId.uuid, seq = message.seq
        if !(message.mentions ?? []).isEmpty {
            try await c.run(
                """
                UPDATE participants SET mention_unread = mention_unread - 1
                WHERE conversation_id = \(id) AND read_seq < \(seq)
                AND user_id IN (SELECT user_id FROM mentions WHERE message_id = \(message.id.uuid))
                AND user_id NOT IN (SELECT blocker_id FROM blocks WHERE blocked_id = \(sender))
                """, logger)
        }
        if let root = message.threadRootId {
            try await c.run(
                """
                UPDATE participants SET thread_unread = thread_unread - 1
                WHERE conversation_id = \(id) AND read_seq < \(seq) AND user_id <> \(sender)
                AND user_id IN (SELECT user_id FROM thread_members WHERE root_id = \(root.uuid))
                AND user_id NOT IN (SELECT blocker_id FROM blocks WHERE blocked_id = \(sender))
                """, logger)
            return
        }
        try await c.run("UPDATE conversations SET countable = countable - 1 WHERE id = \(id)", logger)
        // A member who blocks the sender counted the message as their own (never unread).
        let blocksSender = "SELECT 1 FROM blocks k WHERE k.blocker_id = p.user_id AND k.blocked_id = '\(sender.uuidString.lowercased())'"
        try await c.run(
            """
            UPDATE participants p SET
                own_countable = p.own_countable
                    - (CASE WHEN p.user_id = \(sender) OR EXISTS (\(unescaped: blocksSender)) THEN 1 ELSE 0 END),
                countable_at_base = p.countable_at_base - (CASE WHEN \(seq) <= p.base_seq THEN 1 ELSE 0 END),
                unread_base = p.unread_base
                    - (CASE WHEN \(seq) <= p.base_seq AND \(seq) > p.read_seq AND p.user_id <> \(sender)
                       AND NOT EXISTS (\(unescaped: blocksSender)) THEN 1 ELSE 0 END),
                own_at_base = p.own_at_base
                    - (CASE WHEN \(seq) <= p.base_seq AND (p.user_id = \(sender) OR EXISTS (\(unescaped: blocksSender)))
                       THEN 1 ELSE 0 END)
            WHERE p.conversation_id = \(id)
            """, logger)
    }

    /// Takes the conversation's next seq for a change to an existing message (no new activity).
    static func nextSeq(_ c: PostgresConnection, _ conversationId: UUID, _ logger: Logger) async throws -> Int64 {
        guard let row = try await c.first(
            "UPDATE conversations SET last_seq = last_seq + 1, changed_at = \(unescaped: nowMilliseconds) WHERE id = \(conversationId) RETURNING last_seq",
            logger)
        else { throw ChatError.notFound("Conversation") }
        return try row.decode(Int64.self)
    }

    /// Locks the conversation's row until the transaction ends: every writer of one conversation
    /// takes it first, so they run one after the other like SQLite's single writer. False when
    /// the conversation does not exist.
    static func lockConversation(_ c: PostgresConnection, _ conversationId: UUID, _ logger: Logger) async throws -> Bool {
        try await c.checkedExecute(LockConversation(id: conversationId), logger).reduce(false) { _, _ in true }
    }

    /// The database's clock in milliseconds, as SQL: list changes are stamped and compared on
    /// it alone (one clock for every node).
    static let nowMilliseconds = "(extract(epoch from clock_timestamp()) * 1000)::bigint"

}
