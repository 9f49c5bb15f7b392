import Foundation
import GRDB
import ParleyProtocol
import ParleyStorage

/// Row mapping and the small queries the SQLite store's transactions share.
enum SQLiteRows {
    static func user(_ row: Row) throws -> User {
        User(
            id: try id(row["id"]),
            organizationId: try id(row["organization_id"]),
            email: row["email"],
            displayName: row["display_name"],
            isOnline: false,
            lastSeenAt: (row["last_seen_at"] as Int64?).map(Date.init(millisecondsSince1970:)),
            role: (row["role"] as String?).flatMap(UserRole.init(rawValue:)),
            avatarUrl: (row["avatar_id"] as String?).flatMap(EntityID.init).map(Attachment.path(of:)))
    }

    static func id(_ text: String?) throws -> EntityID {
        guard let text, let id = EntityID(text) else {
            throw ChatError(.internal, "Corrupt id in the database")
        }
        return id
    }

    static func isParticipant(_ db: Database, _ conversationId: String, _ userId: EntityID) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM participants WHERE conversation_id = ? AND user_id = ?"),
            arguments: [conversationId, userId.description]) ?? false
    }

    static func participantIds(_ db: Database, _ conversationId: String) throws -> [EntityID] {
        try String.fetchAll(
            db.cachedStatement(sql: "SELECT user_id FROM participants WHERE conversation_id = ? ORDER BY joined_at, user_id"),
            arguments: [conversationId]
        ).map { try id($0) }
    }

    /// The columns of a member's own part of a view (unread, mentions, mute, read seq), from `p` and `c`.
    static let ownColumns = "\(ChatSQL.unreadCount) AS unread, p.mention_unread, p.muted, p.muted_until, p.read_seq"

    /// A member's own part of a conversation view, read with ``ownColumns``.
    static func own(_ row: Row, now: Date = Date()) -> OwnView {
        let until = (row["muted_until"] as Int64?).map(Date.init(millisecondsSince1970:))
        let muted = (row["muted"] as Bool? ?? false) && (until.map { $0 > now } ?? true)
        return OwnView(
            unread: row["unread"] ?? 0, mentions: row["mention_unread"] ?? 0, muted: muted, mutedUntil: muted ? until : nil,
            readSeq: row["read_seq"] ?? 0)
    }

    /// One member's own view of a conversation, in O(1); nil when they are not in it.
    static func own(_ db: Database, _ conversationId: String, _ userId: EntityID) throws -> OwnView? {
        try Row.fetchOne(
            db.cachedStatement(sql: """
                SELECT \(ownColumns) FROM participants p JOIN conversations c ON c.id = p.conversation_id
                WHERE p.conversation_id = ? AND p.user_id = ?
                """),
            arguments: [conversationId, userId.description]
        ).map { own($0) }
    }

    /// One member's unread count, in O(1).
    static func unreadCount(_ db: Database, _ conversationId: String, _ userId: EntityID) throws -> Int {
        try Int.fetchOne(
            db.cachedStatement(sql: """
                SELECT \(ChatSQL.unreadCount) FROM participants p JOIN conversations c ON c.id = p.conversation_id
                WHERE p.conversation_id = ? AND p.user_id = ?
                """),
            arguments: [conversationId, userId.description]) ?? 0
    }

    /// Takes a member's base now: counts their unread messages above `read_seq` (a read usually
    /// leaves few or none) and records the counters it was taken against. Runs when the
    /// watermark moves and when a member joins.
    static func rebase(_ db: Database, _ conversationId: String, _ userId: EntityID) throws {
        try db.cachedStatement(sql: rebaseSQL).execute(arguments: [conversationId, userId.description])
    }

    /// ``rebase(_:_:_:)``'s statement: the counts are ``ChatSQL``'s, for the row being updated.
    private static let rebaseSQL = """
            UPDATE participants SET
                unread_base = (\(ChatSQL.unreadMessages(member: "participants.user_id", conversation: "participants.conversation_id", readSeq: "participants.read_seq"))),
                countable_at_base = (SELECT c.countable FROM conversations c WHERE c.id = participants.conversation_id),
                own_at_base = own_countable,
                base_seq = (SELECT c.last_seq FROM conversations c WHERE c.id = participants.conversation_id),
                thread_unread = (\(ChatSQL.unreadThreadReplies(member: "participants.user_id", conversation: "participants.conversation_id", readSeq: "participants.read_seq"))),
                mention_unread = (\(ChatSQL.unreadMentions(member: "participants.user_id", conversation: "participants.conversation_id", readSeq: "participants.read_seq")))
            WHERE conversation_id = ? AND user_id = ?
            """

    /// A countable message was deleted: the counters lose it, and so do the bases that had
    /// counted it (members whose base was taken after it was sent), O(members), deletes only.
    static func uncount(_ db: Database, _ message: Message) throws {
        guard message.type != .system else { return }
        let id = message.conversationId.description, sender = message.senderId.description
        if !(message.mentions ?? []).isEmpty {
            // O(mentioned): those it still counted for (above their watermark) lose it.
            try db.execute(
                sql: """
                    UPDATE participants SET mention_unread = mention_unread - 1
                    WHERE conversation_id = ? AND read_seq < ?
                    AND user_id IN (SELECT user_id FROM mentions WHERE message_id = ?)
                    AND user_id NOT IN (SELECT blocker_id FROM blocks WHERE blocked_id = ?)
                    """,
                arguments: [id, message.seq, message.id.description, sender])
        }
        if let root = message.threadRootId {
            // A reply counted for the thread's members only (O(thread members)).
            try db.execute(
                sql: """
                    UPDATE participants SET thread_unread = thread_unread - 1
                    WHERE conversation_id = ?1 AND read_seq < ?2 AND user_id != ?3
                    AND user_id IN (SELECT user_id FROM thread_members WHERE root_id = ?4)
                    AND user_id NOT IN (SELECT blocker_id FROM blocks WHERE blocked_id = ?3)
                    """,
                arguments: [id, message.seq, sender, root.description])
            return
        }
        try db.execute(sql: "UPDATE conversations SET countable = countable - 1 WHERE id = ?", arguments: [id])
        // A member who blocks the sender counted the message as their own (never unread).
        let blocker = ChatSQL.blocks("participants.user_id", "?1")
        try db.execute(
            sql: """
                UPDATE participants SET
                    own_countable = own_countable - (user_id = ?1 OR \(blocker)),
                    countable_at_base = countable_at_base - (?2 <= base_seq),
                    unread_base = unread_base - (?2 <= base_seq AND ?2 > read_seq AND user_id != ?1 AND NOT \(blocker)),
                    own_at_base = own_at_base - (?2 <= base_seq AND (user_id = ?1 OR \(blocker)))
                WHERE conversation_id = ?3
                """,
            arguments: [sender, message.seq, id])
    }

    /// The database's clock in milliseconds, as SQL: list changes are stamped and compared on
    /// it alone, whatever the clock a request was given.
    static let nowMilliseconds = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)"

    /// Takes the conversation's next seq for a change to an existing message (no new activity).
    static func nextSeq(_ db: Database, _ conversationId: String) throws -> Int64 {
        guard let seq = try Int64.fetchOne(
            db.cachedStatement(
                sql: "UPDATE conversations SET last_seq = last_seq + 1, changed_at = \(nowMilliseconds) WHERE id = ? RETURNING last_seq"),
            arguments: [conversationId])
        else { throw ChatError.notFound("Conversation") }
        return seq
    }

    /// Takes the conversation's next seq and stores the message with it, in the caller's transaction.
    static func insertMessage(_ db: Database, _ draft: MessageDraft) throws -> Message {
        let now = draft.now.millisecondsSince1970
        let inThread = draft.threadRootId != nil
        // A thread reply is counted for the thread's members below, not for the conversation.
        let countable = draft.type == .system || inThread ? 0 : 1
        guard let seq = try Int64.fetchOne(
            db.cachedStatement(
                sql: """
                    UPDATE conversations SET last_seq = last_seq + 1,
                        last_activity_at = CASE WHEN ?2 THEN last_activity_at ELSE ?1 END, countable = countable + ?3,
                        changed_at = \(nowMilliseconds)
                    WHERE id = ?4 RETURNING last_seq
                    """),
            arguments: [now, inThread, countable, draft.conversationId.description])
        else { throw ChatError.notFound("Conversation") }
        if countable == 1 {
            // The sender's own messages are never unread to them, and a blocked sender's are
            // never unread to those who block them: both count it as their own.
            // Two statements, each one index lookup: an OR of the two made SQLite read every
            // member's row of the conversation on every send.
            try db.cachedStatement(
                sql: "UPDATE participants SET own_countable = own_countable + 1 WHERE conversation_id = ? AND user_id = ?"
            ).execute(arguments: [draft.conversationId.description, draft.senderId.description])
            try db.cachedStatement(
                sql: """
                    UPDATE participants SET own_countable = own_countable + 1 WHERE conversation_id = ?1
                    AND user_id IN (SELECT blocker_id FROM blocks WHERE blocked_id = ?2)
                    """
            ).execute(arguments: [draft.conversationId.description, draft.senderId.description])
        }
        let message = Message(
            id: EntityID.timeOrdered(at: draft.now), conversationId: draft.conversationId, seq: seq, updatedSeq: seq,
            senderId: draft.senderId, clientMessageId: draft.clientMessageId, type: draft.type,
            text: draft.text, replyToId: draft.replyToId,
            attachment: try draft.attachmentId.flatMap { try attachments(db, ids: [$0.description])[$0.description]?.wire },
            metadata: draft.metadata, createdAt: draft.now.wholeMilliseconds, forwardedFromId: draft.forwardedFromId,
            threadRootId: draft.threadRootId, mentions: draft.mentions.isEmpty ? nil : draft.mentions)
        let metadataJSON = try draft.metadata.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        try db.cachedStatement(
            sql: """
                INSERT INTO messages (id, conversation_id, seq, updated_seq, sender_id, client_message_id,
                                      type, text, reply_to_id, attachment_id, metadata_json, created_at, forwarded_from_id,
                                      thread_root_id, mentions_json)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(
            arguments: [
                message.id.description, message.conversationId.description, seq, seq,
                message.senderId.description, message.clientMessageId, message.type.rawValue,
                message.text, message.replyToId?.description, draft.attachmentId?.description,
                metadataJSON, now, draft.forwardedFromId?.description, draft.threadRootId?.description,
                StoreRows.idList(draft.mentions),
            ])
        try countMentionsAndReply(db, message)
        return message
    }

    /// A new message's mentions and thread reply in its members' own counts: O(mentioned +
    /// thread members), never O(conversation members).
    static func countMentionsAndReply(_ db: Database, _ message: Message) throws {
        let conversation = message.conversationId.description, sender = message.senderId.description
        for user in message.mentions ?? [] where user != message.senderId {
            try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO mentions (message_id, user_id, conversation_id, seq) VALUES (?, ?, ?, ?)"
            ).execute(arguments: [message.id.description, user.description, conversation, message.seq])
            try db.cachedStatement(
                sql: """
                    UPDATE participants SET mention_unread = mention_unread + 1 WHERE conversation_id = ?1 AND user_id = ?2
                    AND NOT EXISTS (SELECT 1 FROM blocks WHERE blocker_id = ?2 AND blocked_id = ?3)
                    """
            ).execute(arguments: [conversation, user.description, sender])
        }
        if let root = message.threadRootId {
            try db.cachedStatement(
                sql: """
                    UPDATE participants SET thread_unread = thread_unread + 1
                    WHERE conversation_id = ?1 AND user_id != ?2
                    AND user_id IN (SELECT user_id FROM thread_members WHERE root_id = ?3)
                    AND user_id NOT IN (SELECT blocker_id FROM blocks WHERE blocked_id = ?2)
                    """
            ).execute(arguments: [conversation, sender, root.description])
        }
    }

    /// Messages matching a condition, with their reactions, in the order asked.
    ///
    /// With `limitPlaceholder`, the last argument is the row limit.
    static func messages(
        _ db: Database, where condition: String, arguments: StatementArguments,
        order: String = "seq ASC", limitPlaceholder: Bool = false
    ) throws -> [Message] {
        let sql = "SELECT * FROM messages WHERE \(condition) ORDER BY \(order)" + (limitPlaceholder ? " LIMIT ?" : "")
        // The conditions and orders are a fixed set written in this file's callers, so every
        // variant is compiled once per connection and reused.
        let rows = try Row.fetchAll(db.cachedStatement(sql: sql), arguments: arguments)
        guard !rows.isEmpty else { return [] }
        let reactions = try self.reactions(db, messageIds: rows.map { $0["id"] as String })
        let attachments = try self.attachments(db, ids: rows.compactMap { $0["attachment_id"] as String? })
        return try rows.map { row in
            let id: String = row["id"]
            let metadata: [String: String]? = try (row["metadata_json"] as String?).map {
                try JSONDecoder().decode([String: String].self, from: Data($0.utf8))
            }
            return Message(
                id: try self.id(id), conversationId: try self.id(row["conversation_id"]),
                seq: row["seq"], updatedSeq: row["updated_seq"], senderId: try self.id(row["sender_id"]),
                clientMessageId: row["client_message_id"],
                type: MessageType(rawValue: row["type"]) ?? .text, text: row["text"],
                replyToId: try (row["reply_to_id"] as String?).map { try self.id($0) },
                attachment: (row["attachment_id"] as String?).flatMap { attachments[$0]?.wire },
                metadata: metadata, reactions: reactions[id] ?? [:],
                createdAt: Date(millisecondsSince1970: row["created_at"]),
                editedAt: (row["edited_at"] as Int64?).map(Date.init(millisecondsSince1970:)),
                deletedAt: (row["deleted_at"] as Int64?).map(Date.init(millisecondsSince1970:)),
                forwardedFromId: (row["forwarded_from_id"] as String?).flatMap(EntityID.init),
                threadRootId: (row["thread_root_id"] as String?).flatMap(EntityID.init),
                thread: StoreRows.thread(replies: row["thread_reply_count"], at: row["thread_last_reply_at"], seq: row["thread_last_reply_seq"]),
                mentions: try (row["mentions_json"] as String?).map { try JSONDecoder().decode([EntityID].self, from: Data($0.utf8)) },
                pinnedAt: (row["pinned_at"] as Int64?).map(Date.init(millisecondsSince1970:)),
                pinnedBy: (row["pinned_by"] as String?).flatMap(EntityID.init),
                preview: try (row["preview_json"] as String?).map { try JSONDecoder().decode(LinkPreview.self, from: Data($0.utf8)) },
                deletedBy: (row["deleted_by"] as String?).flatMap(EntityID.init))
        }
    }

    /// Reactions of the given messages: message id → emoji → users, oldest reaction first.
    static func reactions(_ db: Database, messageIds: [String]) throws -> [String: [String: [EntityID]]] {
        var result: [String: [String: [EntityID]]] = [:]
        guard !messageIds.isEmpty else { return result }
        // The ids as one JSON array: one statement, compiled once per connection, for any
        // number of ids (a list of placeholders compiled a statement per view).
        let list = "[\"" + messageIds.joined(separator: "\",\"") + "\"]"  // ids are UUIDs: nothing to escape
        let rows = try Row.fetchCursor(
            db.cachedStatement(sql: """
                SELECT message_id, emoji, user_id FROM reactions
                WHERE message_id IN (SELECT value FROM json_each(?)) ORDER BY created_at, user_id
                """),
            arguments: [list])
        while let row = try rows.next() {
            result[row[0], default: [:]][row[1], default: []].append(try id(row[2]))
        }
        return result
    }
}
