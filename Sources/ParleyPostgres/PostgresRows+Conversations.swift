import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

/// Rows of conversations (views with their members and unread counts) and attachments.
extension PostgresRows {
    // MARK: Conversations

    /// The conversations as `viewer` sees them, in the order of `ids` (missing ones left out);
    /// the viewer's own fields are zero where they are not a participant. Two statements: run
    /// it inside a transaction for one snapshot.
    static func views(_ c: PostgresConnection, ids: [UUID], viewer: UUID, _ logger: Logger) async throws -> [Conversation] {
        guard !ids.isEmpty else { return [] }
        let rows = try await c.all(
            """
            SELECT c.id, c.type, c.name, c.created_at, c.last_activity_at, c.last_seq,
                   mem.ids, mem.reads, mem.delivered,
                   COALESCE(\(unescaped: ChatSQL.unreadCount), 0)::bigint, COALESCE(p.mention_unread, 0),
                   COALESCE(p.muted, false), p.muted_until, COALESCE(p.read_seq, 0)
            FROM conversations c
            LEFT JOIN participants p ON p.conversation_id = c.id AND p.user_id = \(viewer)
            LEFT JOIN LATERAL (
                SELECT array_agg(user_id ORDER BY joined_at, user_id) AS ids,
                       array_agg(read_seq ORDER BY joined_at, user_id) AS reads,
                       array_agg(delivered_seq ORDER BY joined_at, user_id) AS delivered
                FROM participants WHERE conversation_id = c.id
            ) mem ON true
            WHERE c.id = ANY(\(ids))
            """, logger)
        let lastMessages = try await c.all(
            """
            \(unescaped: messageSelect)
            WHERE m.id = ANY(ARRAY(
                SELECT (SELECT x.id FROM messages x WHERE x.conversation_id = cid AND x.thread_root_id IS NULL
                        ORDER BY x.seq DESC LIMIT 1)
                FROM unnest(\(ids)::uuid[]) AS cid))
            """, logger
        ).map(message)
        let lastByConversation = Dictionary(lastMessages.map { ($0.conversationId.uuid, $0) }, uniquingKeysWith: { a, _ in a })
        var byId: [UUID: Conversation] = [:]
        for row in rows {
            let r = row.makeRandomAccess()
            let (id, type, name, createdAt, lastActivityAt, lastSeq) = (
                try r[0].decode(UUID.self), try r[1].decode(String.self), try r[2].decode(String?.self),
                try r[3].decode(Int64.self), try r[4].decode(Int64.self), try r[5].decode(Int64.self))
            let (memberIds, reads, delivered) = (
                try r[6].decode([UUID]?.self), try r[7].decode([Int64]?.self), try r[8].decode([Int64]?.self))
            let members = zip(memberIds ?? [], zip(reads ?? [], delivered ?? [])).map {
                Member(userId: EntityID($0.0), readSeq: $0.1.0, deliveredSeq: $0.1.1)
            }
            var view = Conversation(
                id: EntityID(id), type: ConversationType(rawValue: type) ?? .group, name: name,
                participantIds: members.map(\.userId), createdAt: Date(millisecondsSince1970: createdAt),
                lastActivityAt: Date(millisecondsSince1970: lastActivityAt), lastSeq: lastSeq,
                lastMessage: lastByConversation[id], unreadCount: 0, readSeq: 0, members: members)
            try own(row, at: 9).apply(to: &view)
            byId[id] = view
        }
        return ids.compactMap { byId[$0] }
    }

    /// One conversation as `viewer` sees it.
    static func view(_ c: PostgresConnection, id: UUID, viewer: UUID, _ logger: Logger) async throws -> Conversation? {
        try await views(c, ids: [id], viewer: viewer, logger).first
    }

    // MARK: Attachments

    /// Attachments by id.
    static func attachments(_ c: PostgresConnection, ids: [UUID], _ logger: Logger) async throws -> [EntityID: StoredAttachment] {
        guard !ids.isEmpty else { return [:] }
        var result: [EntityID: StoredAttachment] = [:]
        for row in try await c.all(
            """
            SELECT id, uploader_id, organization_id, name, content_type, size, sha256, width, height, created_at
            FROM attachments WHERE id = ANY(\(ids))
            """, logger)
        {
            let (id, uploader, organization, name, contentType, size, sha256, width, height, createdAt) = try row.decode(
                (UUID, UUID, UUID, String, String, Int64, String, Int?, Int?, Int64).self)
            let attachment = StoredAttachment(
                id: EntityID(id), uploaderId: EntityID(uploader), organizationId: EntityID(organization), name: name,
                contentType: contentType, size: size, sha256: sha256, width: width, height: height,
                createdAt: Date(millisecondsSince1970: createdAt))
            result[attachment.id] = attachment
        }
        return result
    }
}
