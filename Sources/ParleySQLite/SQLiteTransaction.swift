import Foundation
import GRDB
import ParleyProtocol
import ParleyStorage

/// ``StoreTransaction``'s primitives over one GRDB `Database`, inside one of its transactions.
///
/// Every method is synchronous (SQLite is a library): the rules' `await`s never suspend here,
/// and the store runs them on its writer thread (see ``InlineAsync``).
struct SQLiteTransaction: StoreTransaction, @unchecked Sendable {
    // SAFETY: a `Database` may only be used on its writer's thread inside the closure GRDB
    // gave it to. The store creates this value there and runs the rule with ``InlineAsync``,
    // whose every job runs on that same thread before the closure returns (a rule that
    // awaited elsewhere is stopped there); nothing keeps it after.
    let db: Database
    /// The messages this transaction inserted, indexed for search once at its end
    /// (``indexNewMessages()``). Confined to the writer's thread like `db`.
    private let newMessages = NewMessageRows()

    init(db: Database) {
        self.db = db
    }

    /// Rows inserted, changed or deleted on this connection so far (SQLite's running count):
    /// a job whose count moved has written.
    var rowsChanged: Int { db.totalChangesCount }

    /// Adds the messages inserted so far to the search index, in one statement: the store calls
    /// it once per write transaction, before the commit.
    ///
    /// A statement that writes the FTS5 table inside a transaction flushes FTS5's pending terms
    /// as a segment of their own: indexed by a trigger on each insert, every message of a
    /// group commit wrote its own segment, and FTS5 then merged them (about a fifth of the
    /// writer's time under load). Indexed here, a batch writes one. Rowids of inserts that a
    /// savepoint rolled back find no row; a rowid reused by a later insert is indexed once.
    func indexNewMessages() throws {
        guard !newMessages.rowids.isEmpty else { return }
        let rowids = "[" + newMessages.rowids.map(String.init).joined(separator: ",") + "]"
        newMessages.rowids.removeAll()
        try db.cachedStatement(
            sql: "INSERT INTO messages_fts (rowid, text) SELECT rowid, text FROM messages WHERE rowid IN (SELECT value FROM json_each(?))"
        ).execute(arguments: [rowids])
        // FTS5 writes the batch's segment when a savepoint opens (or at the commit): opened
        // here, a full disk fails this statement like any insert (SQLITE_FULL, answered 503)
        // rather than the commit.
        try db.cachedStatement(sql: "SAVEPOINT parley_search_index").execute()
        try db.cachedStatement(sql: "RELEASE parley_search_index").execute()
    }

    /// Inserts a message (``SQLiteRows/insertMessage(_:_:)``) and notes it for the search index.
    private func insertNoted(_ draft: MessageDraft) throws -> Message {
        let message = try SQLiteRows.insertMessage(db, draft)
        newMessages.rowids.insert(db.lastInsertedRowID)
        return message
    }

    // MARK: Conversations

    /// SQLite has one writer, which holds every conversation already: only whether it exists.
    func lockConversation(_ conversationId: EntityID) async throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM conversations WHERE id = ?"), arguments: [conversationId.description]) ?? false
    }

    func lastSeq(of conversationId: EntityID) async throws -> Int64? {
        try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT last_seq FROM conversations WHERE id = ?"), arguments: [conversationId.description])
    }

    func conversationHeader(_ conversationId: EntityID) async throws -> ConversationHeader? {
        guard let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT type, name, organization_id FROM conversations WHERE id = ?"),
            arguments: [conversationId.description])
        else { return nil }
        return ConversationHeader(
            type: ConversationType(rawValue: row[0]) ?? .group, name: row[1], organizationId: try SQLiteRows.id(row[2]))
    }

    /// A direct pair is found by its `direct_key` (the pair's ids, sorted): SQLite's one
    /// writer means no other creator can race between the look and the insert.
    func insertConversation(_ new: NewConversation, members: [EntityID]) async throws -> (id: EntityID, created: Bool) {
        let directKey = new.type == .direct ? StoreRows.directKey(members) : nil
        if let directKey, let existing = try String.fetchOne(
            db, sql: "SELECT id FROM conversations WHERE direct_key = ?", arguments: [directKey])
        {
            return (try SQLiteRows.id(existing), false)
        }
        let id = EntityID()
        let now = new.now.millisecondsSince1970
        try db.execute(
            sql: """
                INSERT INTO conversations (id, organization_id, type, name, direct_key, created_at, last_activity_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [id.description, new.organizationId.description, new.type.rawValue, new.name, directKey, now, now])
        for userId in members {
            try db.execute(
                sql: "INSERT INTO participants (conversation_id, user_id, joined_at, view_changed_at) VALUES (?, ?, ?, \(SQLiteRows.nowMilliseconds))",
                arguments: [id.description, userId.description, now])
        }
        return (id, true)
    }

    func setName(_ name: String, of conversationId: EntityID) async throws {
        try db.execute(sql: "UPDATE conversations SET name = ? WHERE id = ?", arguments: [name, conversationId.description])
    }

    func view(of conversationId: EntityID, for viewer: EntityID) async throws -> Conversation? {
        try SQLiteStore.view(db, id: conversationId.description, viewer: viewer)
    }

    func takeNextSeq(in conversationId: EntityID) async throws -> Int64 {
        try SQLiteRows.nextSeq(db, conversationId.description)
    }

    // MARK: Participants

    func participantIds(of conversationId: EntityID) async throws -> [EntityID] {
        try SQLiteRows.participantIds(db, conversationId.description)
    }

    func isParticipant(_ userId: EntityID, of conversationId: EntityID) async throws -> Bool {
        try SQLiteRows.isParticipant(db, conversationId.description, userId)
    }

    func addParticipants(_ userIds: [EntityID], to conversationId: EntityID, joinedAt: Date) async throws {
        let id = conversationId.description
        for user in userIds {
            try db.execute(
                sql: "INSERT INTO participants (conversation_id, user_id, joined_at, view_changed_at) VALUES (?, ?, ?, \(SQLiteRows.nowMilliseconds))",
                arguments: [id, user.description, joinedAt.millisecondsSince1970])
            try db.execute(sql: "DELETE FROM departures WHERE user_id = ? AND conversation_id = ?", arguments: [user.description, id])
            // A newcomer's history is unread to them: their counters start from it (once, here).
            try SQLiteRows.rebase(db, id, user)
        }
    }

    func removeParticipant(_ userId: EntityID, from conversationId: EntityID) async throws {
        let id = conversationId.description
        try db.execute(sql: "DELETE FROM participants WHERE conversation_id = ? AND user_id = ?", arguments: [id, userId.description])
        try db.execute(
            sql: "INSERT OR REPLACE INTO departures (user_id, conversation_id, left_at) VALUES (?, ?, \(SQLiteRows.nowMilliseconds))",
            arguments: [userId.description, id])
    }

    func organizationsOfActiveUsers(_ userIds: Set<EntityID>) async throws -> [EntityID: EntityID] {
        var organizations: [EntityID: EntityID] = [:]
        for userId in userIds {
            let organization = try String.fetchOne(
                db.cachedStatement(sql: "SELECT organization_id FROM users WHERE id = ? AND deactivated_at IS NULL"),
                arguments: [userId.description])
            if let organization { organizations[userId] = try SQLiteRows.id(organization) }
        }
        return organizations
    }

    func lockWatermarks(of userId: EntityID, in conversationId: EntityID) async throws -> (member: Member, lastSeq: Int64)? {
        guard let row = try Row.fetchOne(
            db.cachedStatement(sql: """
                SELECT p.read_seq, p.delivered_seq, c.last_seq FROM participants p JOIN conversations c ON c.id = p.conversation_id
                WHERE p.conversation_id = ? AND p.user_id = ?
                """),
            arguments: [conversationId.description, userId.description])
        else { return nil }
        return (Member(userId: userId, readSeq: row[0], deliveredSeq: row[1]), row[2])
    }

    func setWatermarks(_ member: Member, in conversationId: EntityID) async throws {
        try db.cachedStatement(
            sql: "UPDATE participants SET read_seq = ?, delivered_seq = ? WHERE conversation_id = ? AND user_id = ?"
        ).execute(arguments: [member.readSeq, member.deliveredSeq, conversationId.description, member.userId.description])
    }

    func readMoved(for userId: EntityID, in conversationId: EntityID) async throws {
        let id = conversationId.description
        try SQLiteRows.rebase(db, id, userId)
        try db.cachedStatement(
            sql: "UPDATE participants SET view_changed_at = \(SQLiteRows.nowMilliseconds) WHERE conversation_id = ? AND user_id = ?"
        ).execute(arguments: [id, userId.description])
    }

    func unreadCountAndParticipants(of userId: EntityID, in conversationId: EntityID) async throws -> (unread: Int, participantIds: [EntityID]) {
        let id = conversationId.description
        return (try SQLiteRows.unreadCount(db, id, userId), try SQLiteRows.participantIds(db, id))
    }

    // MARK: Messages

    func message(_ messageId: EntityID) async throws -> Message? {
        try SQLiteRows.messages(db, where: "id = ?", arguments: [messageId.description]).first
    }

    func conversationId(ofMessage messageId: EntityID) async throws -> EntityID? {
        try String.fetchOne(
            db.cachedStatement(sql: "SELECT conversation_id FROM messages WHERE id = ?"), arguments: [messageId.description]
        ).flatMap(EntityID.init)
    }

    func highestSeq(of messageIds: [EntityID], in conversationId: EntityID) async throws -> Int64? {
        guard !messageIds.isEmpty else { return nil }
        let placeholders = Array(repeating: "?", count: messageIds.count).joined(separator: ",")
        return try Int64.fetchOne(
            db, sql: "SELECT MAX(seq) FROM messages WHERE conversation_id = ? AND id IN (\(placeholders))",
            arguments: StatementArguments([conversationId.description] + messageIds.map(\.description)))
    }

    func messageId(sentBy senderId: EntityID, clientMessageId: String) async throws -> EntityID? {
        // A bare index probe: almost every send is new.
        try String.fetchOne(
            db.cachedStatement(sql: "SELECT id FROM messages WHERE sender_id = ? AND client_message_id = ?"),
            arguments: [senderId.description, clientMessageId]
        ).flatMap(EntityID.init)
    }

    func insertMessageUnlessSent(_ draft: MessageDraft, checkOnly: Bool) async throws -> SendProbe {
        let participants = try SQLiteRows.participantIds(db, draft.conversationId.description)
        guard participants.contains(draft.senderId) else { return SendProbe(participantIds: participants, existingId: nil, message: nil) }
        if let existing = try await messageId(sentBy: draft.senderId, clientMessageId: draft.clientMessageId) {
            return SendProbe(participantIds: participants, existingId: existing, message: nil)
        }
        if try isBlockedInDirect(draft.senderId, draft.conversationId.description) {
            return SendProbe(participantIds: participants, existingId: nil, message: nil, blocked: true)
        }
        return SendProbe(participantIds: participants, existingId: nil, message: checkOnly ? nil : try insertNoted(draft))
    }

    func insertMessage(_ draft: MessageDraft) async throws -> Message {
        try insertNoted(draft)
    }

    func setText(_ text: String, of messageId: EntityID, editedAt: Date, updatedSeq: Int64) async throws {
        try db.execute(
            sql: "UPDATE messages SET text = ?, edited_at = ?, updated_seq = ? WHERE id = ?",
            arguments: [text, editedAt.millisecondsSince1970, updatedSeq, messageId.description])
    }

    func tombstone(_ message: Message, deletedAt: Date, deletedBy: EntityID?, updatedSeq: Int64) async throws {
        let id = message.id.description
        try db.execute(
            sql: """
                UPDATE messages SET text = '', metadata_json = NULL, attachment_id = NULL, deleted_at = ?, updated_seq = ?,
                    pinned_at = NULL, pinned_by = NULL, preview_json = NULL, mentions_json = NULL, deleted_by = ?
                WHERE id = ?
                """,
            arguments: [deletedAt.millisecondsSince1970, updatedSeq, deletedBy?.description, id])
        try db.execute(sql: "DELETE FROM reactions WHERE message_id = ?", arguments: [id])
        if let attachment = message.attachment {
            // Collected once no message refers to it any more.
            try db.execute(sql: "INSERT OR IGNORE INTO attachment_orphans (attachment_id) VALUES (?)", arguments: [attachment.id.description])
        }
        try SQLiteRows.uncount(db, message)
    }

    func setReaction(_ emoji: String, by userId: EntityID, on messageId: EntityID, present: Bool, at date: Date) async throws -> Bool {
        if present {
            try db.execute(
                sql: "INSERT OR IGNORE INTO reactions (message_id, emoji, user_id, created_at) VALUES (?, ?, ?, ?)",
                arguments: [messageId.description, emoji, userId.description, date.millisecondsSince1970])
        } else {
            try db.execute(
                sql: "DELETE FROM reactions WHERE message_id = ? AND emoji = ? AND user_id = ?",
                arguments: [messageId.description, emoji, userId.description])
        }
        return db.changesCount > 0
    }

    func setUpdatedSeq(_ updatedSeq: Int64, of messageId: EntityID) async throws {
        try db.execute(sql: "UPDATE messages SET updated_seq = ? WHERE id = ?", arguments: [updatedSeq, messageId.description])
    }

    // MARK: Threads, mentions, mute, pins, previews

    func joinThread(_ rootId: EntityID, in conversationId: EntityID, users: [EntityID]) async throws {
        let root = rootId.description, conversation = conversationId.description
        for user in users {
            try db.cachedStatement(
                sql: "INSERT OR IGNORE INTO thread_members (root_id, user_id, conversation_id) VALUES (?, ?, ?)"
            ).execute(arguments: [root, user.description, conversation])
            guard db.changesCount > 0 else { continue }
            try db.cachedStatement(
                sql: """
                    UPDATE participants SET thread_unread = thread_unread + (
                        SELECT COUNT(*) FROM messages m
                        WHERE m.thread_root_id = ?1 AND m.seq > participants.read_seq AND m.sender_id != ?2 AND m.deleted_at IS NULL
                        AND \(ChatSQL.blocks("?2", "m.sender_id", not: true)))
                    WHERE conversation_id = ?3 AND user_id = ?2
                    """
            ).execute(arguments: [root, user.description, conversation])
        }
    }

    /// Whether the conversation is direct and its other member blocks `sender`.
    private func isBlockedInDirect(_ sender: EntityID, _ conversationId: String) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: """
                SELECT 1 FROM conversations c
                JOIN blocks b ON b.blocked_id = ?2
                JOIN participants p ON p.conversation_id = c.id AND p.user_id = b.blocker_id
                WHERE c.id = ?1 AND c.type = 'direct' LIMIT 1
                """),
            arguments: [conversationId, sender.description]) ?? false
    }

}

/// Rowids of the messages one transaction inserted (see ``SQLiteTransaction/indexNewMessages()``).
private final class NewMessageRows {
    var rowids: Set<Int64> = []
}
