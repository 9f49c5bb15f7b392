import Foundation
import GRDB
import ParleyProtocol
import ParleyStorage

/// Retention, export and erasure: what the sweeps and the export read, and the profile
/// erasure. Message deletions themselves go through the rules (``MessageRules``).
extension SQLiteStore {
    /// Sets or clears the retention in one statement.
    public func setMessageRetention(days: Int?, organizationId: EntityID) async throws -> Organization? {
        try await writer.write { db in
            try db.execute(
                sql: "UPDATE organizations SET message_retention_days = ? WHERE id = ?", arguments: [days, organizationId.description])
            return try Row.fetchOne(db, sql: "SELECT * FROM organizations WHERE id = ?", arguments: [organizationId.description])
                .map(Self.organization)
        }
    }

    /// The organizations with a retention.
    public func retentionPolicies() async throws -> [(organizationId: EntityID, days: Int)] {
        try await writer.read { db in
            try Row.fetchAll(db, sql: "SELECT id, message_retention_days FROM organizations WHERE message_retention_days IS NOT NULL")
                .map { (try SQLiteRows.id($0[0]), $0[1]) }
        }
    }

    /// Messages past a retention, unordered (see the protocol requirement).
    public func expiredMessages(organizationId: EntityID, before cutoff: Date, limit: Int) async throws -> [MessageRef] {
        try await writer.read { db in
            try Self.refs(
                db,
                sql: """
                    SELECT m.id, m.conversation_id FROM messages m JOIN conversations c ON c.id = m.conversation_id
                    WHERE c.organization_id = ? AND m.created_at < ? AND m.deleted_at IS NULL AND m.type != 'system'
                    LIMIT ?
                    """,
                arguments: [organizationId.description, cutoff.millisecondsSince1970, limit])
        }
    }

    /// The messages holding a user's words: theirs and forwards of theirs.
    public func undeletedMessages(of userId: EntityID, limit: Int) async throws -> [MessageRef] {
        try await writer.read { db in
            try Self.refs(
                db,
                sql: """
                    SELECT id, conversation_id FROM messages
                    WHERE deleted_at IS NULL AND type != 'system'
                    AND (sender_id = ?1 OR forwarded_from_id IN (SELECT id FROM messages WHERE sender_id = ?1))
                    LIMIT ?2
                    """,
                arguments: [userId.description, limit])
        }
    }

    /// A page of a user's own messages by id.
    public func messagesSent(by userId: EntityID, after: EntityID?, limit: Int) async throws -> [Message] {
        try await writer.read { db in
            try SQLiteRows.messages(
                db, where: "sender_id = ? AND type != 'system' AND id > ?", arguments: [userId.description, after?.description ?? "", limit],
                order: "id ASC", limitPlaceholder: true)
        }
    }

    /// A user's uploads, oldest first.
    public func attachments(uploadedBy userId: EntityID) async throws -> [StoredAttachment] {
        try await writer.read { db in
            let ids = try String.fetchAll(
                db, sql: "SELECT id FROM attachments WHERE uploader_id = ? ORDER BY created_at, id", arguments: [userId.description])
            let found = try SQLiteRows.attachments(db, ids: ids)
            return ids.compactMap { found[$0] }
        }
    }

    /// Attachments left by deleted messages or replaced pictures that nothing refers to.
    public func orphanedAttachments(limit: Int) async throws -> [StoredAttachment] {
        try await writer.read { db in
            let ids = try String.fetchAll(
                db,
                sql: """
                    SELECT o.attachment_id FROM attachment_orphans o
                    WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.attachment_id = o.attachment_id)
                    AND NOT EXISTS (SELECT 1 FROM users u WHERE u.avatar_id = o.attachment_id) LIMIT ?
                    """,
                arguments: [limit])
            let found = try SQLiteRows.attachments(db, ids: ids)
            return ids.compactMap { found[$0] }
        }
    }

    /// Deletes an attachment's record when unused; whether its bytes are shared.
    public func deleteAttachmentIfUnused(_ id: EntityID) async throws -> (deleted: Bool, bytesShared: Bool) {
        try await writer.write { db in
            let key = id.description
            try db.execute(sql: "DELETE FROM attachment_orphans WHERE attachment_id = ?", arguments: [key])
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM messages WHERE attachment_id = ? LIMIT 1", arguments: [key]) != true,
                try Bool.fetchOne(db, sql: "SELECT 1 FROM users WHERE avatar_id = ? LIMIT 1", arguments: [key]) != true,
                let sha = try String.fetchOne(db, sql: "DELETE FROM attachments WHERE id = ? RETURNING sha256", arguments: [key])
            else { return (false, true) }
            let shared = try Bool.fetchOne(db, sql: "SELECT 1 FROM attachments WHERE sha256 = ? LIMIT 1", arguments: [sha]) ?? false
            return (true, shared)
        }
    }

    /// Empties and closes a user's account in one transaction.
    public func eraseProfile(userId: EntityID, organizationId: EntityID, now: Date, check: @Sendable (Int) throws -> Void) async throws -> Bool {
        try await writer.write { db in
            let id = userId.description
            try db.execute(
                sql: """
                    UPDATE users SET display_name = 'Deleted user', email = 'deleted-' || id, password_hash = '',
                        deactivated_at = COALESCE(deactivated_at, ?), last_seen_at = NULL, avatar_id = NULL
                    WHERE id = ? AND organization_id = ?
                    """,
                arguments: [now.millisecondsSince1970, id, organizationId.description])
            guard db.changesCount > 0 else { return false }
            try check(try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM users WHERE organization_id = ? AND role = 'admin' AND deactivated_at IS NULL",
                arguments: [organizationId.description]) ?? 0)
            try db.execute(sql: "DELETE FROM devices WHERE user_id = ?", arguments: [id])
            try db.execute(sql: "UPDATE reports SET reason = '' WHERE reporter_id = ?", arguments: [id])
            return true
        }
    }

    /// Merges the search index and truncates the log after deletions.
    public func purgeDeletedText() async throws {
        try await writer.write { db in
            // Merges the index's segments into one, dropping the entries of deleted text.
            try db.execute(sql: "INSERT INTO messages_fts (messages_fts) VALUES ('optimize')")
        }
        // Old page images in the log go when it is truncated (secure_delete zeroed the pages in
        // the file). A reader or the checkpointer at work makes a truncation give up; it is tried
        // again, the writer free between tries, for up to ten seconds (two were too few on a
        // loaded machine: the words stayed in the log until a later checkpoint).
        for _ in 0..<500 {
            let busy = try await writer.writeWithoutTransaction { db in
                try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)").map { ($0[0] as Int?) ?? 0 } ?? 0
            }
            if busy == 0 { return }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    private static func refs(_ db: Database, sql: String, arguments: StatementArguments) throws -> [MessageRef] {
        try Row.fetchAll(db, sql: sql, arguments: arguments).map {
            MessageRef(id: try SQLiteRows.id($0[0]), conversationId: try SQLiteRows.id($0[1]))
        }
    }
}
