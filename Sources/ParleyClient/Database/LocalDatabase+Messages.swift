import Foundation
import GRDB
import ParleyProtocol

extension LocalDatabase {
    /// Writes a temporary message and its outbox entry in one transaction: the screen shows it
    /// at once, and it survives a crash before it is sent.
    ///
    /// - Parameters:
    ///   - preparations: names of the preparations to run, in order, before it is sent.
    ///   - context: durable scratch for them (e.g. the local file to upload).
    public func enqueue(
        _ request: SendMessageRequest, in conversationId: EntityID, senderId: EntityID, now: Date,
        preparations: [String] = [], context: [String: String] = [:]
    ) async throws -> LocalMessage {
        var pending = request
        pending.conversationId = conversationId
        let message = LocalMessage(pending: pending, conversationId: conversationId, senderId: senderId, createdAt: now)
        let requestJSON = String(decoding: try WireCoding.makeEncoder().encode(pending), as: UTF8.self)
        let preparationsJSON = String(decoding: try JSONEncoder().encode(preparations), as: UTF8.self)
        let contextJSON = String(decoding: try JSONEncoder().encode(context), as: UTF8.self)
        try await writer.write { db in
            try db.execute(
                sql: """
                    INSERT INTO outbox (client_message_id, conversation_id, sender_id, request, queued_at, preparations, context)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    request.clientMessageId, conversationId.description, senderId.description, requestJSON,
                    now.millisecondsSince1970, preparationsJSON, contextJSON,
                ])
            try Self.insertTemporary(db, message, order: db.lastInsertedRowID)
        }
        return message
    }

    static func insertTemporary(_ db: Database, _ message: LocalMessage, order: Int64, state: String = "sending", failure: String? = nil) throws {
        try db.execute(
            sql: """
                INSERT INTO messages (sender_id, client_message_id, conversation_id, type, text, reply_to_id, extras,
                                      created_at, state, failure, local_order, thread_root_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (sender_id, client_message_id) DO NOTHING
                """,
            arguments: [
                message.senderId.description, message.clientMessageId, message.conversationId.description,
                message.type.rawValue, message.text, message.replyToId?.description,
                try extrasJSON(MessageExtras(pending: message)),
                message.createdAt.millisecondsSince1970, state, failure, order, message.threadRootId?.description,
            ])
    }

    /// Re-creates the temporary rows of the outbox's entries (after a cache rebuild).
    static func restoreTemporaryMessages(_ db: Database) throws {
        let rows = try Row.fetchAll(db, sql: "SELECT * FROM outbox ORDER BY position")
        let decoder = WireCoding.makeDecoder()
        for row in rows {
            guard let request = try? decoder.decode(SendMessageRequest.self, from: Data((row["request"] as String).utf8)),
                let conversationId = EntityID(row["conversation_id"] as String), let senderId = EntityID(row["sender_id"] as String)
            else { continue }
            let message = LocalMessage(
                pending: request, conversationId: conversationId, senderId: senderId,
                createdAt: Date(millisecondsSince1970: row["queued_at"]))
            let failed = (row["state"] as String) == "failed"
            try insertTemporary(db, message, order: row["position"], state: failed ? "failed" : "sending", failure: row["failure"])
        }
    }

    /// Applies server messages: the newer `updatedSeq` wins, the same one twice is a no-op, and a
    /// temporary message is replaced by its stored copy (and leaves the outbox).
    public func apply(_ messages: [Message]) async throws {
        guard !messages.isEmpty else { return }
        try await writer.write { db in
            for message in messages { try Self.upsert(db, message) }
        }
    }

    static func upsert(_ db: Database, _ message: Message) throws {
        let extras = MessageExtras(message)
        try db.cachedStatement(
            sql: """
                INSERT INTO messages (sender_id, client_message_id, conversation_id, id, seq, updated_seq, type, text,
                                      reply_to_id, extras, created_at, edited_at, deleted_at, state, thread_root_id, pinned_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'confirmed', ?, ?)
                ON CONFLICT (sender_id, client_message_id) DO UPDATE SET
                    conversation_id = excluded.conversation_id, id = excluded.id, seq = excluded.seq,
                    updated_seq = excluded.updated_seq, type = excluded.type, text = excluded.text,
                    reply_to_id = excluded.reply_to_id, extras = excluded.extras, created_at = excluded.created_at,
                    edited_at = excluded.edited_at, deleted_at = excluded.deleted_at, state = 'confirmed', failure = NULL,
                    pinned_at = excluded.pinned_at
                WHERE messages.updated_seq IS NULL OR messages.updated_seq < excluded.updated_seq
                """
        ).execute(
            arguments: [
                message.senderId.description, message.clientMessageId, message.conversationId.description,
                message.id.description, message.seq, message.updatedSeq, message.type.rawValue, message.text,
                message.replyToId?.description, try extrasJSON(extras), message.createdAt.millisecondsSince1970,
                message.editedAt?.millisecondsSince1970, message.deletedAt?.millisecondsSince1970,
                message.threadRootId?.description, message.pinnedAt?.millisecondsSince1970,
            ])
        // The outbox entry goes in the same transaction that stores the copy (a no-op upsert
        // means the copy was already stored, and its entry with it).
        if db.changesCount > 0 {
            try db.cachedStatement(sql: "DELETE FROM outbox WHERE client_message_id = ? AND sender_id = ?")
                .execute(arguments: [message.clientMessageId, message.senderId.description])
        }
    }

    static func extrasJSON(_ extras: MessageExtras) throws -> String? {
        extras.isEmpty ? nil : String(decoding: try JSONEncoder().encode(extras), as: UTF8.self)
    }

    /// A conversation's messages for `viewer`, ascending: the newest `limit` stored ones below
    /// `before` (all when nil) and from `from` on, then, on the newest page, the temporary ones in
    /// send order (after every stored one). The conversation's timeline leaves thread replies
    /// out; with `thread`, that thread's replies only.
    public func messages(
        in conversationId: EntityID, viewer: EntityID, before: Int64? = nil, from: Int64? = nil, limit: Int = 50,
        thread: EntityID? = nil
    ) async throws -> [LocalMessage] {
        try await writer.read { db in
            let members = try Self.storedConversation(db, conversationId)?.members ?? []
            let scope = thread == nil ? "thread_root_id IS NULL" : "thread_root_id = ?"
            var sql = "SELECT \(RowReader.columns) FROM messages WHERE conversation_id = ? AND \(scope) AND state = 'confirmed' AND \(Self.notHidden)"
            var arguments: StatementArguments = [conversationId.description]
            if let thread { arguments += [thread.description] }
            if let before { sql += " AND seq < ?"; arguments += [before] }
            if let from { sql += " AND seq >= ?"; arguments += [from] }
            sql += " ORDER BY seq DESC LIMIT ?"
            arguments += [limit]
            var rows = try Row.fetchAll(db, sql: sql, arguments: arguments).reversed() as [Row]
            if before == nil {
                var pendingArguments: StatementArguments = [conversationId.description]
                if let thread { pendingArguments += [thread.description] }
                rows += try Row.fetchAll(
                    db,
                    sql: "SELECT \(RowReader.columns) FROM messages WHERE conversation_id = ? AND \(scope) AND state != 'confirmed' AND \(Self.notHidden) ORDER BY local_order",
                    arguments: pendingArguments)
            }
            var reader = RowReader(conversationId: conversationId, viewer: viewer, members: members)
            return try rows.map { try reader.message($0) }
        }
    }

    /// Excludes messages hidden on this device.
    static let notHidden = """
        NOT EXISTS (SELECT 1 FROM hidden_messages h WHERE h.sender_id = messages.sender_id AND h.client_message_id = messages.client_message_id)
        """

    /// One message by the sender and temp id.
    public func message(senderId: EntityID, clientMessageId: String, viewer: EntityID) async throws -> LocalMessage? {
        try await writer.read { db in
            guard let row = try Row.fetchOne(
                db, sql: "SELECT \(RowReader.columns) FROM messages WHERE sender_id = ? AND client_message_id = ?",
                arguments: [senderId.description, clientMessageId])
            else { return nil }
            let conversationId = try Self.id(row["conversation_id"])
            let members = try Self.storedConversation(db, conversationId)?.members ?? []
            var reader = RowReader(conversationId: conversationId, viewer: viewer, members: members)
            return try reader.message(row)
        }
    }

    /// One stored message by the server's id.
    public func message(serverId: EntityID, viewer: EntityID) async throws -> LocalMessage? {
        try await writer.read { db in
            guard let row = try Row.fetchOne(
                db, sql: "SELECT \(RowReader.columns) FROM messages WHERE id = ?", arguments: [serverId.description])
            else { return nil }
            let conversationId = try Self.id(row["conversation_id"])
            let members = try Self.storedConversation(db, conversationId)?.members ?? []
            var reader = RowReader(conversationId: conversationId, viewer: viewer, members: members)
            return try reader.message(row)
        }
    }

    /// The lowest stored seq of a conversation (the cache's lower edge), if any.
    public func oldestStoredSeq(in conversationId: EntityID) async throws -> Int64? {
        try await writer.read { db in
            try Int64.fetchOne(
                db, sql: "SELECT MIN(seq) FROM messages WHERE conversation_id = ? AND state = 'confirmed'",
                arguments: [conversationId.description])
        }
    }

    /// Maps rows of one conversation, reusing what is the same for every row.
    struct RowReader {
        /// The columns every message query selects, in the order `message(_:)` reads them by
        /// index (reading by name costs a lookup per column per row).
        static let columns = "sender_id, client_message_id, conversation_id, id, seq, updated_seq, type, text, reply_to_id, extras, created_at, edited_at, deleted_at, state, failure"
        let conversationId: EntityID
        let watermarks: Watermarks
        var senders: [String: EntityID] = [:]

        init(conversationId: EntityID, viewer: EntityID, members: [Member]) {
            self.conversationId = conversationId
            watermarks = Watermarks(viewer: viewer, members: members)
        }

        mutating func message(_ row: Row) throws -> LocalMessage {
            let senderText: String = row[0]
            let senderId: EntityID
            if let known = senders[senderText] {
                senderId = known
            } else {
                senderId = try LocalDatabase.id(senderText)
                senders[senderText] = senderId
            }
            let seq: Int64? = row[4]
            let state: String = row[13]
            let delivery: Delivery = switch state {
            case "sending": .sending
            case "failed": .failed(reason: row[14] ?? "refused by the server")
            default: watermarks.delivery(seq: seq ?? 0, senderId: senderId)
            }
            let extras = try (row[9] as String?).map { try JSONDecoder().decode(MessageExtras.self, from: Data($0.utf8)) }
            return LocalMessage(
                senderId: senderId, clientMessageId: row[1], conversationId: conversationId,
                serverId: (row[3] as String?).flatMap(EntityID.init), seq: seq, updatedSeq: row[5],
                type: MessageType(rawValue: row[6]) ?? .text, text: row[7],
                replyToId: (row[8] as String?).flatMap(EntityID.init), extras: extras,
                createdAt: Date(millisecondsSince1970: row[10]),
                editedAt: (row[11] as Int64?).map(Date.init(millisecondsSince1970:)),
                deletedAt: (row[12] as Int64?).map(Date.init(millisecondsSince1970:)), delivery: delivery)
        }
    }

    static func id(_ text: String?) throws -> EntityID {
        guard let text, let id = EntityID(text) else { throw DatabaseError(message: "corrupt id in the local database") }
        return id
    }

    /// Keeps the newest `maxMessagesPerConversation` stored messages per conversation and none
    /// older than `maxAge`; temporary and failed messages are never dropped, and conversations
    /// in `sparing` (the one on screen) are left whole.
    public func trim(now: Date, sparing: Set<EntityID> = []) async throws {
        let cutoff = now.addingTimeInterval(-retention.maxAge.seconds).millisecondsSince1970
        let keep = retention.maxMessagesPerConversation
        try await writer.write { db in
            let ids = try String.fetchAll(db, sql: "SELECT DISTINCT conversation_id FROM messages")
            for id in ids where !sparing.contains(where: { $0.description == id }) {
                try db.execute(
                    sql: "DELETE FROM messages WHERE conversation_id = ? AND state = 'confirmed' AND created_at < ?",
                    arguments: [id, cutoff])
                var dropped = db.changesCount
                if let edge = try Int64.fetchOne(
                    db,
                    sql: "SELECT seq FROM messages WHERE conversation_id = ? AND state = 'confirmed' ORDER BY seq DESC LIMIT 1 OFFSET ?",
                    arguments: [id, keep - 1])
                {
                    try db.execute(
                        sql: "DELETE FROM messages WHERE conversation_id = ? AND state = 'confirmed' AND seq < ?", arguments: [id, edge])
                    dropped += db.changesCount
                }
                if dropped > 0 {
                    try db.execute(sql: "UPDATE conversations SET has_older = 1 WHERE id = ?", arguments: [id])
                }
            }
        }
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

extension LocalDatabase {
    /// A conversation's pinned messages, newest pin first.
    public func pinnedMessages(in conversationId: EntityID, viewer: EntityID) async throws -> [LocalMessage] {
        // The partial index on pinned_at: a chat reloads this on every change, and a scan of
        // the whole conversation's extras was one per reload.
        try await writer.read { db in
            let members = try Self.storedConversation(db, conversationId)?.members ?? []
            let rows = try Row.fetchAll(
                db.cachedStatement(sql: """
                    SELECT \(RowReader.columns) FROM messages
                    WHERE conversation_id = ? AND pinned_at IS NOT NULL AND state = 'confirmed' AND \(Self.notHidden)
                    ORDER BY pinned_at DESC, seq DESC
                    """),
                arguments: [conversationId.description])
            var reader = RowReader(conversationId: conversationId, viewer: viewer, members: members)
            return try rows.map { try reader.message($0) }
        }
    }
}

extension LocalDatabase {
    /// Marks (or unmarks) every cached message of `sender` as from a user the viewer blocks,
    /// and the conversations' last messages; returns the conversations it touched.
    public func markMessages(of sender: EntityID, senderBlocked: Bool) async throws -> Set<EntityID> {
        try await writer.write { db in
            var touched = Set<EntityID>()
            let rows = try Row.fetchAll(
                db, sql: "SELECT client_message_id, conversation_id, extras FROM messages WHERE sender_id = ? AND type != 'system'",
                arguments: [sender.description])
            for row in rows {
                var extras = try (row[2] as String?).map { try JSONDecoder().decode(MessageExtras.self, from: Data($0.utf8)) }
                    ?? MessageExtras()
                extras.senderBlocked = senderBlocked ? true : nil
                try db.execute(
                    sql: "UPDATE messages SET extras = ? WHERE sender_id = ? AND client_message_id = ?",
                    arguments: [try Self.extrasJSON(extras), sender.description, row[0] as String])
                touched.insert(try Self.id(row[1]))
            }
            for conversationId in touched {
                guard var conversation = try Self.storedConversation(db, conversationId),
                    var last = conversation.lastMessage, last.senderId == sender
                else { continue }
                last.senderBlocked = senderBlocked ? true : nil
                conversation.lastMessage = last
                if let state = try Self.readState(db, conversationId.description) { try Self.write(db, conversation, state) }
            }
            return touched
        }
    }
}
