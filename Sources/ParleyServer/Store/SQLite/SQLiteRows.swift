import Foundation
import GRDB
import ParleyProtocol

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
            role: (row["role"] as String?).flatMap(UserRole.init(rawValue:)))
    }

    static func id(_ text: String?) throws -> EntityID {
        guard let text, let id = EntityID(text) else {
            throw APIError(.internal, "Corrupt id in the database")
        }
        return id
    }

    static func isParticipant(_ db: Database, _ conversationId: String, _ userId: EntityID) throws -> Bool {
        try Bool.fetchOne(
            db, sql: "SELECT 1 FROM participants WHERE conversation_id = ? AND user_id = ?",
            arguments: [conversationId, userId.description]) ?? false
    }

    static func participantIds(_ db: Database, _ conversationId: String) throws -> [EntityID] {
        try String.fetchAll(
            db, sql: "SELECT user_id FROM participants WHERE conversation_id = ? ORDER BY joined_at, user_id",
            arguments: [conversationId]
        ).map { try id($0) }
    }

    /// Other senders' messages above `readSeq`, not deleted and not system: the contract's unread count.
    static func unreadCount(_ db: Database, _ conversationId: String, _ userId: EntityID, readSeq: Int64) throws -> Int {
        try Int.fetchOne(
            db,
            sql: """
                SELECT COUNT(*) FROM messages WHERE conversation_id = ? AND seq > ? AND sender_id != ?
                AND deleted_at IS NULL AND type != 'system'
                """,
            arguments: [conversationId, readSeq, userId.description]) ?? 0
    }

    /// Takes the conversation's next seq for a change to an existing message (no new activity).
    static func nextSeq(_ db: Database, _ conversationId: String) throws -> Int64 {
        guard let seq = try Int64.fetchOne(
            db, sql: "UPDATE conversations SET last_seq = last_seq + 1 WHERE id = ? RETURNING last_seq", arguments: [conversationId])
        else { throw APIError.notFound("Conversation") }
        return seq
    }

    /// Takes the conversation's next seq and stores the message with it, in the caller's transaction.
    static func insertMessage(_ db: Database, _ draft: MessageDraft) throws -> Message {
        let now = draft.now.millisecondsSince1970
        guard let seq = try Int64.fetchOne(
            db, sql: "UPDATE conversations SET last_seq = last_seq + 1, last_activity_at = ? WHERE id = ? RETURNING last_seq",
            arguments: [now, draft.conversationId.description])
        else { throw APIError.notFound("Conversation") }
        let message = Message(
            id: EntityID(), conversationId: draft.conversationId, seq: seq, updatedSeq: seq,
            senderId: draft.senderId, clientMessageId: draft.clientMessageId, type: draft.type,
            text: draft.text, replyToId: draft.replyToId,
            attachment: try draft.attachmentId.flatMap { try attachments(db, ids: [$0.description])[$0.description]?.wire },
            metadata: draft.metadata, createdAt: draft.now.wholeMilliseconds, forwardedFromId: draft.forwardedFromId)
        let metadataJSON = try draft.metadata.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        try db.execute(
            sql: """
                INSERT INTO messages (id, conversation_id, seq, updated_seq, sender_id, client_message_id,
                                      type, text, reply_to_id, attachment_id, metadata_json, created_at, forwarded_from_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                message.id.description, message.conversationId.description, seq, seq,
                message.senderId.description, message.clientMessageId, message.type.rawValue,
                message.text, message.replyToId?.description, draft.attachmentId?.description,
                metadataJSON, now, draft.forwardedFromId?.description,
            ])
        return message
    }

    /// Messages matching a condition, with their reactions, in the order asked.
    ///
    /// With `limitPlaceholder`, the last argument is the row limit.
    static func messages(
        _ db: Database, where condition: String, arguments: StatementArguments,
        order: String = "seq ASC", limitPlaceholder: Bool = false
    ) throws -> [Message] {
        let sql = "SELECT * FROM messages WHERE \(condition) ORDER BY \(order)" + (limitPlaceholder ? " LIMIT ?" : "")
        let rows = try Row.fetchAll(db, sql: sql, arguments: arguments)
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
                forwardedFromId: (row["forwarded_from_id"] as String?).flatMap(EntityID.init))
        }
    }

    /// Reactions of the given messages: message id → emoji → users, oldest reaction first.
    static func reactions(_ db: Database, messageIds: [String]) throws -> [String: [String: [EntityID]]] {
        var result: [String: [String: [EntityID]]] = [:]
        // Chunked to stay under SQLite's bound-parameter limit.
        for chunk in stride(from: 0, to: messageIds.count, by: 500).map({ messageIds[$0..<min($0 + 500, messageIds.count)] }) {
            let placeholders = Array(repeating: "?", count: chunk.count).joined(separator: ",")
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT message_id, emoji, user_id FROM reactions WHERE message_id IN (\(placeholders)) ORDER BY created_at, user_id",
                arguments: StatementArguments(Array(chunk)))
            for row in rows {
                result[row["message_id"], default: [:]][row["emoji"], default: []].append(try id(row["user_id"]))
            }
        }
        return result
    }
}
