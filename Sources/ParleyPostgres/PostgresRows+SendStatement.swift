import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

extension PostgresRows {
    /// Locks the conversations of a batch in one round trip, in id order (the order every
    /// batch takes them in, so two batches never wait on each other in a cycle); returns the
    /// ids that exist.
    static func lockConversations(_ c: PostgresConnection, _ ids: [UUID], _ logger: Logger) async throws -> Set<UUID> {
        try await c.checkedExecute(LockConversations(ids: ids), logger).reduce(into: Set<UUID>()) { $0.insert($1) }
    }

    /// `SELECT … ORDER BY id FOR UPDATE` of several conversations, prepared once per connection.
    struct LockConversations: PostgresPreparedStatement {
        static let name = "parley_lock_conversations"
        static let sql = "SELECT id FROM conversations WHERE id = ANY($1) ORDER BY id FOR UPDATE"
        static let bindingDataTypes: [PostgresDataType] = [.uuidArray]
        typealias Row = UUID
        let ids: [UUID]

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(ids)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> UUID { try row.decode(UUID.self) }
    }

    /// `SELECT … FOR UPDATE` of one conversation, prepared once per connection.
    struct LockConversation: PostgresPreparedStatement {
        static let name = "parley_lock_conversation"
        static let sql = "SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE"
        static let bindingDataTypes: [PostgresDataType] = [.uuid]
        typealias Row = Int32
        let id: UUID

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(id)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Int32 { try row.decode(Int32.self) }
    }

    /// The send statement, prepared once per connection (PostgreSQL parsed and planned the
    /// five-part statement on every send before): members, a retry's original, the next seq,
    /// the insert and the sender's own count, in one round trip.
    struct InsertMessage: PostgresPreparedStatement {
        static let name = "parley_insert_message"
        static let sql = """
            WITH member AS (
                SELECT array_agg(user_id ORDER BY joined_at, user_id) AS ids FROM participants
                WHERE conversation_id = $1
            ),
            existing AS (
                SELECT id FROM messages WHERE sender_id = $2 AND client_message_id = $3
            ),
            blocked AS (
                SELECT EXISTS (
                    SELECT 1 FROM blocks b JOIN participants p ON p.user_id = b.blocker_id AND p.conversation_id = $1
                    WHERE b.blocked_id = $2 AND EXISTS (SELECT 1 FROM conversations c WHERE c.id = $1 AND c.type = 'direct')
                ) AS yes
            ),
            next AS (
                UPDATE conversations SET last_seq = last_seq + 1,
                    last_activity_at = CASE WHEN $15::uuid IS NULL THEN $4 ELSE last_activity_at END, countable = countable + $5,
                    changed_at = (extract(epoch from clock_timestamp()) * 1000)::bigint
                WHERE id = $1 AND NOT $6
                AND (NOT $7 OR (
                    EXISTS (SELECT 1 FROM participants WHERE conversation_id = $1 AND user_id = $2)
                    AND NOT EXISTS (SELECT 1 FROM existing) AND NOT (SELECT yes FROM blocked)))
                RETURNING last_seq
            ),
            inserted AS (
                INSERT INTO messages (id, conversation_id, seq, updated_seq, sender_id, client_message_id, type, text,
                                      reply_to_id, attachment_id, metadata_json, created_at, forwarded_from_id,
                                      thread_root_id, mentions_json)
                SELECT $8, $1, next.last_seq, next.last_seq, $2, $3, $9, $10, $11, $12, $13, $4, $14, $15, $16
                FROM next
                ON CONFLICT (sender_id, client_message_id) DO NOTHING
                RETURNING seq
            ),
            own AS (
                UPDATE participants SET own_countable = own_countable + 1
                WHERE conversation_id = $1 AND $5 = 1
                AND user_id = ANY(ARRAY[$2::uuid] || ARRAY(SELECT blocker_id FROM blocks WHERE blocked_id = $2))
                AND EXISTS (SELECT 1 FROM inserted)
                RETURNING 1
            )
            SELECT (SELECT ids FROM member), (SELECT id FROM existing), (SELECT seq FROM inserted), (SELECT last_seq FROM next),
                (SELECT yes FROM blocked)
            """
        static let bindingDataTypes: [PostgresDataType] = [
            .uuid, .uuid, .text, .int8, .int8, .bool, .bool, .uuid, .text, .text, .uuid, .uuid, .text, .uuid, .uuid, .text,
        ]
        typealias Row = ([UUID]?, UUID?, Int64?, Int64?, Bool)

        let conversationId: UUID, sender: UUID, clientMessageId: String, now: Int64, countable: Int64
        let checkOnly: Bool, guarded: Bool, id: UUID, type: String, text: String
        let replyToId: UUID?, attachmentId: UUID?, metadataJSON: String?, forwardedFromId: UUID?
        let threadRootId: UUID?, mentionsJSON: String?

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 16)
            bindings.append(conversationId)
            bindings.append(sender)
            bindings.append(clientMessageId)
            bindings.append(now)
            bindings.append(countable)
            bindings.append(checkOnly)
            bindings.append(guarded)
            bindings.append(id)
            bindings.append(type)
            bindings.append(text)
            bindings.append(replyToId)
            bindings.append(attachmentId)
            bindings.append(metadataJSON)
            bindings.append(forwardedFromId)
            bindings.append(threadRootId)
            bindings.append(mentionsJSON)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }

    /// What ``insertMessage(_:_:guarded:_:)`` found and did.
    struct Insertion {
        /// The stored message; nil when nothing was stored.
        var message: Message?
        /// The conversation's participants (as the statement saw them).
        var participantIds: [EntityID]
        /// The message already stored under the draft's `(senderId, clientMessageId)`, if any.
        var existingId: UUID?
        /// True when the seq was taken but the insert met a concurrent retry's original: the
        /// caller must roll back so the seq is not burnt.
        var lostRace: Bool
        /// True when the conversation is direct and its other member blocks the sender.
        var blocked = false
    }

    /// Takes the conversation's next seq and stores the message with it, in the caller's
    /// transaction, in one statement: the counter's `UPDATE ... RETURNING last_seq` and the
    /// insert that uses it, `ON CONFLICT (sender_id, client_message_id) DO NOTHING`.
    ///
    /// With `guarded`, the same statement first checks that the sender is a participant and
    /// that no message has the draft's clientMessageId, and writes nothing otherwise (a send's
    /// whole check-and-insert in one round trip); with `checkOnly` it only reads (participants
    /// and the existing message). The caller must hold the conversation's row lock from an
    /// earlier statement, so this statement's snapshot sees every earlier writer.
    static func insertMessage(
        _ c: PostgresConnection, _ draft: MessageDraft, guarded: Bool, checkOnly: Bool = false, _ logger: Logger
    ) async throws -> Insertion {
        let now = draft.now.millisecondsSince1970
        let id = EntityID.timeOrdered(at: draft.now)  // in index order (see EntityID.timeOrdered)
        let metadataJSON = try draft.metadata.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
        let conversationId = draft.conversationId.uuid
        let sender = draft.senderId.uuid
        // Counted for unread (not system, not a thread reply: counted for the thread's members
        // after); the sender's own count goes up with it.
        let countable: Int64 = draft.type == .system || draft.threadRootId != nil ? 0 : 1
        let statement = InsertMessage(
            conversationId: conversationId, sender: sender, clientMessageId: draft.clientMessageId, now: now,
            countable: countable, checkOnly: checkOnly, guarded: guarded, id: id.uuid, type: draft.type.rawValue,
            text: draft.text, replyToId: draft.replyToId?.uuid, attachmentId: draft.attachmentId?.uuid,
            metadataJSON: metadataJSON, forwardedFromId: draft.forwardedFromId?.uuid, threadRootId: draft.threadRootId?.uuid,
            mentionsJSON: StoreRows.idList(draft.mentions))
        // Read to the end (one row), so the connection is free for the next statement.
        let rows = try await c.checkedExecute(statement, logger).reduce(into: [InsertMessage.Row]()) { $0.append($1) }
        guard let row = rows.first else { throw ChatError(.internal, "The send statement returned no row") }
        let (members, existingId, insertedSeq, takenSeq, blocked) = row
        var insertion = Insertion(
            message: nil, participantIds: (members ?? []).map(EntityID.init), existingId: existingId,
            lostRace: takenSeq != nil && insertedSeq == nil, blocked: blocked)
        guard let seq = insertedSeq else { return insertion }
        var attachment: Attachment?
        if let attachmentId = draft.attachmentId {
            attachment = try await attachments(c, ids: [attachmentId.uuid], logger)[attachmentId]?.wire
        }
        insertion.message = Message(
            id: id, conversationId: draft.conversationId, seq: seq, updatedSeq: seq,
            senderId: draft.senderId, clientMessageId: draft.clientMessageId, type: draft.type,
            text: draft.text, replyToId: draft.replyToId, attachment: attachment,
            metadata: draft.metadata, createdAt: draft.now.wholeMilliseconds, forwardedFromId: draft.forwardedFromId,
            threadRootId: draft.threadRootId, mentions: draft.mentions.isEmpty ? nil : draft.mentions)
        if let message = insertion.message, !draft.mentions.isEmpty || draft.threadRootId != nil {
            try await countMentionsAndReply(c, message, logger)
        }
        return insertion
    }

    /// A new message's mentions and thread reply in its members' own counts (see
    /// SQLiteRows.countMentionsAndReply): O(mentioned + thread members).
    static func countMentionsAndReply(_ c: PostgresConnection, _ message: Message, _ logger: Logger) async throws {
        let conversation = message.conversationId.uuid, sender = message.senderId.uuid
        let mentioned = (message.mentions ?? []).filter { $0 != message.senderId }.map(\.uuid)
        if !mentioned.isEmpty {
            try await c.run(
                """
                INSERT INTO mentions (message_id, user_id, conversation_id, seq)
                SELECT \(message.id.uuid), u, \(conversation), \(message.seq) FROM unnest(\(mentioned)::uuid[]) AS u
                ON CONFLICT DO NOTHING
                """, logger)
            try await c.run(
                """
                UPDATE participants SET mention_unread = mention_unread + 1
                WHERE conversation_id = \(conversation) AND user_id = ANY(\(mentioned))
                AND user_id NOT IN (SELECT blocker_id FROM blocks WHERE blocked_id = \(sender))
                """, logger)
        }
        if let root = message.threadRootId {
            try await c.run(
                """
                UPDATE participants SET thread_unread = thread_unread + 1
                WHERE conversation_id = \(conversation) AND user_id <> \(sender)
                AND user_id IN (SELECT user_id FROM thread_members WHERE root_id = \(root.uuid))
                AND user_id NOT IN (SELECT blocker_id FROM blocks WHERE blocked_id = \(sender))
                """, logger)
        }
    }
}
