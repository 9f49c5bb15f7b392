import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

/// ``StoreTransaction``'s primitives over one PostgreSQL connection inside a transaction, a
/// round trip each (the send's check and insert share one statement).
struct PostgresTransaction: StoreTransaction {
    let connection: PostgresConnection
    package let logger: Logger
    /// Conversations whose rows this transaction locked already (a send batch locks all of
    /// its conversations first, in id order).
    let locked: Set<UUID>
    /// What a batch's statement of plain sends found and stored for each of them, by sender
    /// and clientMessageId (see ``PostgresRows/insertPlainSends(_:_:_:)``).
    let prefetched: [PlainSendKey: SendProbe]

    init(_ connection: PostgresConnection, logger: Logger, locked: Set<UUID> = [], prefetched: [PlainSendKey: SendProbe] = [:]) {
        self.connection = connection
        self.logger = logger
        self.locked = locked
        self.prefetched = prefetched
    }

    // MARK: Conversations

    /// Locks the conversation's row until the transaction ends (at once if the batch did).
    func lockConversation(_ conversationId: EntityID) async throws -> Bool {
        if locked.contains(conversationId.uuid) { return true }
        return try await PostgresRows.lockConversation(connection, conversationId.uuid, logger)
    }

    func lastSeq(of conversationId: EntityID) async throws -> Int64? {
        try await connection.first("SELECT last_seq FROM conversations WHERE id = \(conversationId.uuid)", logger)?.decode(Int64.self)
    }

    func conversationHeader(_ conversationId: EntityID) async throws -> ConversationHeader? {
        guard let row = try await connection.first(
            "SELECT type, name, organization_id FROM conversations WHERE id = \(conversationId.uuid)", logger)
        else { return nil }
        let (type, name, organization) = try row.decode((String, String?, UUID).self)
        return ConversationHeader(type: ConversationType(rawValue: type) ?? .group, name: name, organizationId: EntityID(organization))
    }

    /// A direct pair's insert conflicts on `direct_key` (waiting for a racing creator's
    /// commit) and then gives the existing conversation.
    func insertConversation(_ new: NewConversation, members: [EntityID]) async throws -> (id: EntityID, created: Bool) {
        let directKey = new.type == .direct ? StoreRows.directKey(members) : nil
        let id = UUID()
        let now = new.now.millisecondsSince1970
        let inserted = try await connection.first(
            """
            INSERT INTO conversations (id, organization_id, type, name, direct_key, created_at, last_activity_at)
            VALUES (\(id), \(new.organizationId.uuid), \(new.type.rawValue), \(new.name), \(directKey), \(now), \(now))
            ON CONFLICT (direct_key) DO NOTHING RETURNING id
            """, logger)
        guard inserted != nil else {
            guard let existing = try await connection.first("SELECT id FROM conversations WHERE direct_key = \(directKey)", logger) else {
                throw ChatError(.internal, "A direct conversation conflict without its conversation")
            }
            return (EntityID(try existing.decode(UUID.self)), false)
        }
        try await connection.run(
            """
            INSERT INTO participants (conversation_id, user_id, joined_at, view_changed_at)
            SELECT \(id), u, \(now), \(unescaped: PostgresRows.nowMilliseconds) FROM unnest(\(members.map(\.uuid))::uuid[]) AS u
            """, logger)
        return (EntityID(id), true)
    }

    func setName(_ name: String, of conversationId: EntityID) async throws {
        try await connection.run("UPDATE conversations SET name = \(name) WHERE id = \(conversationId.uuid)", logger)
    }

    func view(of conversationId: EntityID, for viewer: EntityID) async throws -> Conversation? {
        try await PostgresRows.view(connection, id: conversationId.uuid, viewer: viewer.uuid, logger)
    }

    func takeNextSeq(in conversationId: EntityID) async throws -> Int64 {
        try await PostgresRows.nextSeq(connection, conversationId.uuid, logger)
    }

    // MARK: Participants

    func participantIds(of conversationId: EntityID) async throws -> [EntityID] {
        try await PostgresRows.participantIds(connection, conversationId.uuid, logger)
    }

    func isParticipant(_ userId: EntityID, of conversationId: EntityID) async throws -> Bool {
        try await PostgresRows.isParticipant(connection, conversationId.uuid, userId.uuid, logger)
    }

    /// In one statement; their departures cleared and their counters based, then.
    func addParticipants(_ userIds: [EntityID], to conversationId: EntityID, joinedAt: Date) async throws {
        let id = conversationId.uuid, users = userIds.map(\.uuid)
        try await connection.run(
            """
            INSERT INTO participants (conversation_id, user_id, joined_at, view_changed_at)
            SELECT \(id), u, \(joinedAt.millisecondsSince1970), \(unescaped: PostgresRows.nowMilliseconds) FROM unnest(\(users)::uuid[]) AS u
            """, logger)
        try await connection.run("DELETE FROM departures WHERE conversation_id = \(id) AND user_id = ANY(\(users))", logger)
        // Newcomers' history is unread to them: their counters start from it (once, here).
        try await PostgresRows.rebase(connection, id, users, logger)
    }

    func removeParticipant(_ userId: EntityID, from conversationId: EntityID) async throws {
        let id = conversationId.uuid
        try await connection.run("DELETE FROM participants WHERE conversation_id = \(id) AND user_id = \(userId.uuid)", logger)
        try await connection.run(
            """
            INSERT INTO departures (user_id, conversation_id, left_at)
            VALUES (\(userId.uuid), \(id), \(unescaped: PostgresRows.nowMilliseconds))
            ON CONFLICT (user_id, conversation_id) DO UPDATE SET left_at = excluded.left_at
            """, logger)
    }

    func organizationsOfActiveUsers(_ userIds: Set<EntityID>) async throws -> [EntityID: EntityID] {
        guard !userIds.isEmpty else { return [:] }
        var organizations: [EntityID: EntityID] = [:]
        for row in try await connection.all(
            "SELECT id, organization_id FROM users WHERE id = ANY(\(userIds.map(\.uuid))) AND deactivated_at IS NULL", logger)
        {
            let (id, organization) = try row.decode((UUID, UUID).self)
            organizations[EntityID(id)] = EntityID(organization)
        }
        return organizations
    }

    /// The conversation first (shared, unless the batch holds it), in the order sends lock
    /// (conversation, then the sender's member row), so no send commits between a read's
    /// count and its counters; then the member's row for update.
    func lockWatermarks(of userId: EntityID, in conversationId: EntityID) async throws -> (member: Member, lastSeq: Int64)? {
        let id = conversationId.uuid
        if !locked.contains(id) {
            try await connection.run("SELECT 1 FROM conversations WHERE id = \(id) FOR SHARE", logger)
        }
        guard let row = try await connection.first(
            """
            SELECT p.read_seq, p.delivered_seq, c.last_seq
            FROM participants p JOIN conversations c ON c.id = p.conversation_id
            WHERE p.conversation_id = \(id) AND p.user_id = \(userId.uuid)
            FOR UPDATE OF p
            """, logger)
        else { return nil }
        let (read, delivered, lastSeq) = try row.decode((Int64, Int64, Int64).self)
        return (Member(userId: userId, readSeq: read, deliveredSeq: delivered), lastSeq)
    }

    func setWatermarks(_ member: Member, in conversationId: EntityID) async throws {
        try await connection.run(
            """
            UPDATE participants SET read_seq = \(member.readSeq), delivered_seq = \(member.deliveredSeq)
            WHERE conversation_id = \(conversationId.uuid) AND user_id = \(member.userId.uuid)
            """, logger)
    }

    func readMoved(for userId: EntityID, in conversationId: EntityID) async throws {
        try await PostgresRows.rebase(connection, conversationId.uuid, [userId.uuid], logger)
        try await connection.run(
            """
            UPDATE participants SET view_changed_at = \(unescaped: PostgresRows.nowMilliseconds)
            WHERE conversation_id = \(conversationId.uuid) AND user_id = \(userId.uuid)
            """, logger)
    }

    /// One round trip for both.
    func unreadCountAndParticipants(of userId: EntityID, in conversationId: EntityID) async throws -> (unread: Int, participantIds: [EntityID]) {
        let id = conversationId.uuid
        guard let row = try await connection.first(
            """
            SELECT (SELECT \(unescaped: ChatSQL.unreadCount) FROM participants p JOIN conversations c ON c.id = p.conversation_id
                    WHERE p.conversation_id = \(id) AND p.user_id = \(userId.uuid)),
                   (SELECT array_agg(user_id ORDER BY joined_at, user_id) FROM participants WHERE conversation_id = \(id))
            """, logger)
        else { return (0, []) }
        let (unread, participants) = try row.decode((Int?, [UUID]?).self)
        return (unread ?? 0, (participants ?? []).map(EntityID.init))
    }

    // MARK: Messages

    func message(_ messageId: EntityID) async throws -> Message? {
        try await PostgresRows.message(connection, id: messageId.uuid, logger)
    }

    func conversationId(ofMessage messageId: EntityID) async throws -> EntityID? {
        try await connection.first("SELECT conversation_id FROM messages WHERE id = \(messageId.uuid)", logger)
            .map { EntityID(try $0.decode(UUID.self)) }
    }

    func highestSeq(of messageIds: [EntityID], in conversationId: EntityID) async throws -> Int64? {
        guard !messageIds.isEmpty else { return nil }
        return try await connection.first(
            "SELECT max(seq) FROM messages WHERE conversation_id = \(conversationId.uuid) AND id = ANY(\(messageIds.map(\.uuid)))", logger
        )?.decode(Int64?.self)
    }

    func messageId(sentBy senderId: EntityID, clientMessageId: String) async throws -> EntityID? {
        try await connection.first(
            "SELECT id FROM messages WHERE sender_id = \(senderId.uuid) AND client_message_id = \(clientMessageId)", logger
        ).map { EntityID(try $0.decode(UUID.self)) }
    }

    /// One statement (see ``PostgresRows/insertMessage(_:_:guarded:checkOnly:_:)``). A retry
    /// that committed between its check and its insert (another node) throws ``SendRaceLost``:
    /// the transaction must roll back, so the seq it took is not burnt.
    func insertMessageUnlessSent(_ draft: MessageDraft, checkOnly: Bool) async throws -> SendProbe {
        if !checkOnly, let probe = prefetched[PlainSendKey(draft)] { return probe }
        let insertion = try await PostgresRows.insertMessage(connection, draft, guarded: true, checkOnly: checkOnly, logger)
        if insertion.lostRace { throw SendRaceLost() }
        return SendProbe(
            participantIds: insertion.participantIds, existingId: insertion.existingId.map(EntityID.init), message: insertion.message,
            blocked: insertion.blocked)
    }

    func insertMessage(_ draft: MessageDraft) async throws -> Message {
        let insertion = try await PostgresRows.insertMessage(connection, draft, guarded: false, logger)
        guard let message = insertion.message, !insertion.lostRace else { throw SendRaceLost() }
        return message
    }

    func setText(_ text: String, of messageId: EntityID, editedAt: Date, updatedSeq: Int64) async throws {
        try await connection.run(
            """
            UPDATE messages SET text = \(text), edited_at = \(editedAt.millisecondsSince1970), updated_seq = \(updatedSeq)
            WHERE id = \(messageId.uuid)
            """, logger)
    }

    func tombstone(_ message: Message, deletedAt: Date, deletedBy: EntityID?, updatedSeq: Int64) async throws {
        let id = message.id.uuid
        try await connection.run(
            """
            UPDATE messages SET text = '', metadata_json = NULL, attachment_id = NULL,
                deleted_at = \(deletedAt.millisecondsSince1970), updated_seq = \(updatedSeq),
                pinned_at = NULL, pinned_by = NULL, preview_json = NULL, mentions_json = NULL, deleted_by = \(deletedBy?.uuid)
            WHERE id = \(id)
            """, logger)
        try await connection.run("DELETE FROM reactions WHERE message_id = \(id)", logger)
        if let attachment = message.attachment {
            // Collected once no message refers to it any more.
            try await connection.run(
                "INSERT INTO attachment_orphans (attachment_id) VALUES (\(attachment.id.uuid)) ON CONFLICT DO NOTHING", logger)
        }
        try await PostgresRows.uncount(connection, message, logger)
    }

    func setReaction(_ emoji: String, by userId: EntityID, on messageId: EntityID, present: Bool, at date: Date) async throws -> Bool {
        let touched = present
            ? try await connection.first(
                """
                INSERT INTO reactions (message_id, emoji, user_id, created_at)
                VALUES (\(messageId.uuid), \(emoji), \(userId.uuid), \(date.millisecondsSince1970))
                ON CONFLICT DO NOTHING RETURNING 1
                """, logger)
            : try await connection.first(
                "DELETE FROM reactions WHERE message_id = \(messageId.uuid) AND emoji = \(emoji) AND user_id = \(userId.uuid) RETURNING 1",
                logger)
        return touched != nil
    }

    func setUpdatedSeq(_ updatedSeq: Int64, of messageId: EntityID) async throws {
        try await connection.run("UPDATE messages SET updated_seq = \(updatedSeq) WHERE id = \(messageId.uuid)", logger)
    }

    // MARK: Threads, mentions, mute, pins, previews

    func joinThread(_ rootId: EntityID, in conversationId: EntityID, users: [EntityID]) async throws {
        // One statement: the newcomers (the rows inserted) gain the thread's replies above their watermark.
        try await connection.run(
            """
            WITH joined AS (
                INSERT INTO thread_members (root_id, user_id, conversation_id)
                SELECT \(rootId.uuid), u, \(conversationId.uuid) FROM unnest(\(users.map(\.uuid))::uuid[]) AS u
                ON CONFLICT DO NOTHING RETURNING user_id
            )
            UPDATE participants p SET thread_unread = p.thread_unread + (
                SELECT count(*) FROM messages m
                WHERE m.thread_root_id = \(rootId.uuid) AND m.seq > p.read_seq AND m.sender_id <> p.user_id AND m.deleted_at IS NULL
            AND NOT EXISTS (SELECT 1 FROM blocks b WHERE b.blocker_id = p.user_id AND b.blocked_id = m.sender_id))
            FROM joined WHERE p.conversation_id = \(conversationId.uuid) AND p.user_id = joined.user_id
            """, logger)
    }

    // MARK: Blocks

    func blocks(_ blocker: EntityID, _ blocked: EntityID) async throws -> Bool {
        try await connection.first(
            "SELECT 1 FROM blocks WHERE blocker_id = \(blocker.uuid) AND blocked_id = \(blocked.uuid)", logger) != nil
    }

    func setBlock(_ blocker: EntityID, _ blocked: EntityID, present: Bool, at date: Date) async throws -> Bool {
        if present {
            return try await connection.first(
                """
                INSERT INTO blocks (blocker_id, blocked_id, created_at) VALUES (\(blocker.uuid), \(blocked.uuid), \(date.millisecondsSince1970))
                ON CONFLICT DO NOTHING RETURNING 1
                """, logger) != nil
        }
        return try await connection.first(
            "DELETE FROM blocks WHERE blocker_id = \(blocker.uuid) AND blocked_id = \(blocked.uuid) RETURNING 1", logger) != nil
    }

    func sharedConversationIds(_ a: EntityID, _ b: EntityID) async throws -> [EntityID] {
        try await connection.all(
            """
            SELECT p.conversation_id FROM participants p JOIN participants q ON q.conversation_id = p.conversation_id
            WHERE p.user_id = \(a.uuid) AND q.user_id = \(b.uuid) ORDER BY p.conversation_id
            """, logger
        ).map { EntityID(try $0.decode(UUID.self)) }
    }

    func threadMemberIds(of rootId: EntityID) async throws -> [EntityID] {
        try await connection.all("SELECT user_id FROM thread_members WHERE root_id = \(rootId.uuid) ORDER BY user_id", logger)
            .map { EntityID(try $0.decode(UUID.self)) }
    }

    func setThreadSummary(_ summary: ThreadSummary, of rootId: EntityID, updatedSeq: Int64) async throws {
        try await connection.run(
            """
            UPDATE messages SET thread_reply_count = \(Int64(summary.replyCount)),
                thread_last_reply_at = \(summary.lastReplyAt.millisecondsSince1970), thread_last_reply_seq = \(summary.lastReplySeq),
                updated_seq = \(updatedSeq)
            WHERE id = \(rootId.uuid)
            """, logger)
    }

    func setMute(_ settings: ConversationSettings, of userId: EntityID, in conversationId: EntityID) async throws {
        try await connection.run(
            """
            UPDATE participants SET muted = \(settings.muted), muted_until = \(settings.mutedUntil?.millisecondsSince1970),
                view_changed_at = \(unescaped: PostgresRows.nowMilliseconds)
            WHERE conversation_id = \(conversationId.uuid) AND user_id = \(userId.uuid)
            """, logger)
    }

    func mutedMemberIds(of conversationId: EntityID, at now: Date) async throws -> Set<EntityID> {
        Set(try await connection.all(
            """
            SELECT user_id FROM participants
            WHERE conversation_id = \(conversationId.uuid) AND muted AND (muted_until IS NULL OR muted_until > \(now.millisecondsSince1970))
            """, logger
        ).map { EntityID(try $0.decode(UUID.self)) })
    }

    func pinCount(in conversationId: EntityID) async throws -> Int {
        let row = try await connection.first(
            "SELECT count(*) FROM messages WHERE conversation_id = \(conversationId.uuid) AND pinned_at IS NOT NULL", logger)
        return Int(try row?.decode(Int64.self) ?? 0)
    }

    func setPin(of messageId: EntityID, at date: Date?, by userId: EntityID?, updatedSeq: Int64) async throws {
        try await connection.run(
            """
            UPDATE messages SET pinned_at = \(date?.millisecondsSince1970), pinned_by = \(userId?.uuid), updated_seq = \(updatedSeq)
            WHERE id = \(messageId.uuid)
            """, logger)
    }

    func pinnedMessages(in conversationId: EntityID) async throws -> [Message] {
        try await connection.all(
            """
            \(unescaped: PostgresRows.messageSelect)
            WHERE m.conversation_id = \(conversationId.uuid) AND m.pinned_at IS NOT NULL ORDER BY m.pinned_at DESC, m.seq DESC
            """, logger
        ).map(PostgresRows.message)
    }

    func setPreview(_ preview: LinkPreview, of messageId: EntityID, updatedSeq: Int64) async throws {
        let json = String(decoding: try JSONEncoder().encode(preview), as: UTF8.self)
        try await connection.run(
            "UPDATE messages SET preview_json = \(json), updated_seq = \(updatedSeq) WHERE id = \(messageId.uuid)", logger)
    }

    // MARK: Attachments

    func attachment(_ attachmentId: EntityID) async throws -> StoredAttachment? {
        try await PostgresRows.attachments(connection, ids: [attachmentId.uuid], logger)[attachmentId]
    }

    func isAttachmentShared(_ attachmentId: EntityID, with userId: EntityID) async throws -> Bool {
        try await connection.first(
            """
            SELECT 1 FROM messages m JOIN participants p ON p.conversation_id = m.conversation_id AND p.user_id = \(userId.uuid)
            WHERE m.attachment_id = \(attachmentId.uuid) AND m.deleted_at IS NULL LIMIT 1
            """, logger) != nil
    }
}
