import Foundation
import GRDB
import ParleyProtocol
import ParleyStorage

extension SQLiteTransaction {
    // MARK: Blocks

    func blocks(_ blocker: EntityID, _ blocked: EntityID) async throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM blocks WHERE blocker_id = ? AND blocked_id = ?"),
            arguments: [blocker.description, blocked.description]) ?? false
    }

    func setBlock(_ blocker: EntityID, _ blocked: EntityID, present: Bool, at date: Date) async throws -> Bool {
        if present {
            try db.execute(
                sql: "INSERT OR IGNORE INTO blocks (blocker_id, blocked_id, created_at) VALUES (?, ?, ?)",
                arguments: [blocker.description, blocked.description, date.millisecondsSince1970])
        } else {
            try db.execute(
                sql: "DELETE FROM blocks WHERE blocker_id = ? AND blocked_id = ?", arguments: [blocker.description, blocked.description])
        }
        return db.changesCount > 0
    }

    func sharedConversationIds(_ a: EntityID, _ b: EntityID) async throws -> [EntityID] {
        try String.fetchAll(
            db,
            sql: """
                SELECT p.conversation_id FROM participants p JOIN participants q ON q.conversation_id = p.conversation_id
                WHERE p.user_id = ? AND q.user_id = ? ORDER BY p.conversation_id
                """,
            arguments: [a.description, b.description]
        ).map { try SQLiteRows.id($0) }
    }

    func threadMemberIds(of rootId: EntityID) async throws -> [EntityID] {
        try String.fetchAll(
            db.cachedStatement(sql: "SELECT user_id FROM thread_members WHERE root_id = ? ORDER BY user_id"),
            arguments: [rootId.description]
        ).map { try SQLiteRows.id($0) }
    }

    func setThreadSummary(_ summary: ThreadSummary, of rootId: EntityID, updatedSeq: Int64) async throws {
        try db.cachedStatement(
            sql: """
                UPDATE messages SET thread_reply_count = ?, thread_last_reply_at = ?, thread_last_reply_seq = ?, updated_seq = ?
                WHERE id = ?
                """
        ).execute(arguments: [
            summary.replyCount, summary.lastReplyAt.millisecondsSince1970, summary.lastReplySeq, updatedSeq, rootId.description,
        ])
    }

    func setMute(_ settings: ConversationSettings, of userId: EntityID, in conversationId: EntityID) async throws {
        try db.execute(
            sql: """
                UPDATE participants SET muted = ?, muted_until = ?, view_changed_at = \(SQLiteRows.nowMilliseconds)
                WHERE conversation_id = ? AND user_id = ?
                """,
            arguments: [
                settings.muted, settings.mutedUntil?.millisecondsSince1970, conversationId.description, userId.description,
            ])
    }

    /// A conversation's muted members, read through the partial index of muted rows (named: the
    /// planner, without statistics, would take the primary key and read every member).
    static let mutedMembersSQL = """
        SELECT user_id FROM participants INDEXED BY participants_muted
        WHERE conversation_id = ? AND muted != 0 AND (muted_until IS NULL OR muted_until > ?)
        """

    func mutedMemberIds(of conversationId: EntityID, at now: Date) async throws -> Set<EntityID> {
        Set(try String.fetchAll(
            db.cachedStatement(sql: Self.mutedMembersSQL),
            arguments: [conversationId.description, now.millisecondsSince1970]
        ).map { try SQLiteRows.id($0) })
    }

    func pinCount(in conversationId: EntityID) async throws -> Int {
        try Int.fetchOne(
            db.cachedStatement(sql: "SELECT COUNT(*) FROM messages WHERE conversation_id = ? AND pinned_at IS NOT NULL"),
            arguments: [conversationId.description]) ?? 0
    }

    func setPin(of messageId: EntityID, at date: Date?, by userId: EntityID?, updatedSeq: Int64) async throws {
        try db.execute(
            sql: "UPDATE messages SET pinned_at = ?, pinned_by = ?, updated_seq = ? WHERE id = ?",
            arguments: [date?.millisecondsSince1970, userId?.description, updatedSeq, messageId.description])
    }

    func pinnedMessages(in conversationId: EntityID) async throws -> [Message] {
        try SQLiteRows.messages(
            db, where: "conversation_id = ? AND pinned_at IS NOT NULL", arguments: [conversationId.description],
            order: "pinned_at DESC, seq DESC")
    }

    func setPreview(_ preview: LinkPreview, of messageId: EntityID, updatedSeq: Int64) async throws {
        let json = String(decoding: try JSONEncoder().encode(preview), as: UTF8.self)
        try db.execute(
            sql: "UPDATE messages SET preview_json = ?, updated_seq = ? WHERE id = ?",
            arguments: [json, updatedSeq, messageId.description])
    }

    // MARK: Attachments

    func attachment(_ attachmentId: EntityID) async throws -> StoredAttachment? {
        try SQLiteRows.attachments(db, ids: [attachmentId.description]).values.first
    }

    func isAttachmentShared(_ attachmentId: EntityID, with userId: EntityID) async throws -> Bool {
        try Bool.fetchOne(
            db,
            sql: """
                SELECT 1 FROM messages m JOIN participants p ON p.conversation_id = m.conversation_id AND p.user_id = ?
                WHERE m.attachment_id = ? AND m.deleted_at IS NULL LIMIT 1
                """,
            arguments: [userId.description, attachmentId.description]) ?? false
    }
}
