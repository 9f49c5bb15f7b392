import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

/// Retention, export and erasure (see SQLiteStore+Lifecycle, the same queries).
extension PostgresStore {
    /// Sets or clears the retention in one statement.
    public func setMessageRetention(days: Int?, organizationId: EntityID) async throws -> Organization? {
        let logger = self.logger
        return try await single { c in
            try await c.first(
                """
                UPDATE organizations SET message_retention_days = \(days.map(Int32.init)) WHERE id = \(organizationId.uuid)
                RETURNING \(unescaped: Self.organizationColumns)
                """, logger
            ).map(Self.organization)
        }
    }

    /// The organizations with a retention.
    public func retentionPolicies() async throws -> [(organizationId: EntityID, days: Int)] {
        let logger = self.logger
        return try await single { c in
            try await c.all("SELECT id, message_retention_days FROM organizations WHERE message_retention_days IS NOT NULL", logger)
                .map { row in
                    let (id, days) = try row.decode((UUID, Int32).self)
                    return (EntityID(id), Int(days))
                }
        }
    }

    /// Messages past a retention, unordered (see the protocol requirement).
    public func expiredMessages(organizationId: EntityID, before cutoff: Date, limit: Int) async throws -> [MessageRef] {
        let logger = self.logger
        return try await single { c in
            try await Self.refs(
                c.all(
                    """
                    SELECT m.id, m.conversation_id FROM messages m JOIN conversations c ON c.id = m.conversation_id
                    WHERE c.organization_id = \(organizationId.uuid) AND m.created_at < \(cutoff.millisecondsSince1970)
                    AND m.deleted_at IS NULL AND m.type <> 'system'
                    LIMIT \(limit)
                    """, logger))
        }
    }

    /// The messages holding a user's words: theirs and forwards of theirs.
    public func undeletedMessages(of userId: EntityID, limit: Int) async throws -> [MessageRef] {
        let logger = self.logger
        return try await single { c in
            try await Self.refs(
                c.all(
                    """
                    SELECT id, conversation_id FROM messages
                    WHERE deleted_at IS NULL AND type <> 'system'
                    AND (sender_id = \(userId.uuid) OR forwarded_from_id IN (SELECT id FROM messages WHERE sender_id = \(userId.uuid)))
                    LIMIT \(limit)
                    """, logger))
        }
    }

    /// A page of a user's own messages by id.
    public func messagesSent(by userId: EntityID, after: EntityID?, limit: Int) async throws -> [Message] {
        let logger = self.logger
        return try await single { c in
            try await c.all(
                """
                \(unescaped: PostgresRows.messageSelect)
                WHERE m.sender_id = \(userId.uuid) AND m.type <> 'system' AND (\(after?.uuid)::uuid IS NULL OR m.id > \(after?.uuid))
                ORDER BY m.id LIMIT \(limit)
                """, logger
            ).map(PostgresRows.message)
        }
    }

    /// A user's uploads, oldest first.
    public func attachments(uploadedBy userId: EntityID) async throws -> [StoredAttachment] {
        let logger = self.logger
        return try await single { c in
            let ids = try await c.all(
                "SELECT id FROM attachments WHERE uploader_id = \(userId.uuid) ORDER BY created_at, id", logger
            ).map { try $0.decode(UUID.self) }
            let found = try await PostgresRows.attachments(c, ids: ids, logger)
            return ids.compactMap { found[EntityID($0)] }
        }
    }

    /// Attachments left by deleted messages or replaced pictures that nothing refers to.
    public func orphanedAttachments(limit: Int) async throws -> [StoredAttachment] {
        let logger = self.logger
        return try await single { c in
            let ids = try await c.all(
                """
                SELECT o.attachment_id FROM attachment_orphans o
                WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.attachment_id = o.attachment_id)
                AND NOT EXISTS (SELECT 1 FROM users u WHERE u.avatar_id = o.attachment_id) LIMIT \(limit)
                """, logger
            ).map { try $0.decode(UUID.self) }
            let found = try await PostgresRows.attachments(c, ids: ids, logger)
            return ids.compactMap { found[EntityID($0)] }
        }
    }

    /// Deletes an attachment's record when unused; whether its bytes are shared.
    public func deleteAttachmentIfUnused(_ id: EntityID) async throws -> (deleted: Bool, bytesShared: Bool) {
        let logger = self.logger
        return try await write { c in
            try await c.run("DELETE FROM attachment_orphans WHERE attachment_id = \(id.uuid)", logger)
            guard try await c.first("SELECT 1 FROM messages WHERE attachment_id = \(id.uuid) LIMIT 1", logger) == nil,
                try await c.first("SELECT 1 FROM users WHERE avatar_id = \(id.uuid) LIMIT 1", logger) == nil,
                let row = try await c.first("DELETE FROM attachments WHERE id = \(id.uuid) RETURNING sha256", logger)
            else { return (false, true) }
            let sha = try row.decode(String.self)
            let shared = try await c.first("SELECT 1 FROM attachments WHERE sha256 = \(sha) LIMIT 1", logger) != nil
            return (true, shared)
        }
    }

    /// Empties and closes a user's account in one transaction.
    public func eraseProfile(userId: EntityID, organizationId: EntityID, now: Date, check: @Sendable (Int) throws -> Void) async throws -> Bool {
        let logger = self.logger
        return try await write { c in
            // The organization's row first, as a role change or a deactivation takes it: two
            // admins erased at once (or one erased while the other is demoted) then count the
            // admins one after the other, and the second sees the first's change.
            try await c.run("SELECT 1 FROM organizations WHERE id = \(organizationId.uuid) FOR UPDATE", logger)
            guard try await c.first(
                """
                UPDATE users SET display_name = 'Deleted user', email = 'deleted-' || id::text, password_hash = '',
                    deactivated_at = COALESCE(deactivated_at, \(now.millisecondsSince1970)), last_seen_at = NULL, avatar_id = NULL
                WHERE id = \(userId.uuid) AND organization_id = \(organizationId.uuid) RETURNING id
                """, logger) != nil
            else { return false }
            let admins = try await c.first(
                """
                SELECT COUNT(*) FROM users WHERE organization_id = \(organizationId.uuid) AND role = 'admin' AND deactivated_at IS NULL
                """, logger)
            try check(Int(try admins?.decode(Int64.self) ?? 0))
            try await c.run("DELETE FROM devices WHERE user_id = \(userId.uuid)", logger)
            try await c.run("UPDATE reports SET reason = '' WHERE reporter_id = \(userId.uuid)", logger)
            return true
        }
    }

    /// Dead rows go with PostgreSQL's own vacuum; nothing to do here.
    public func purgeDeletedText() async throws {}

    private static func refs(_ rows: [PostgresRow]) throws -> [MessageRef] {
        try rows.map { row in
            let (id, conversation) = try row.decode((UUID, UUID).self)
            return MessageRef(id: EntityID(id), conversationId: EntityID(conversation))
        }
    }
}
