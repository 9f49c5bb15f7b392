import Foundation
import Logging
import ParleyProtocol
import PostgresNIO

extension PostgresStore {
    /// Inserts the attachment's row in one statement.
    public func createAttachment(_ attachment: StoredAttachment) async throws {
        let logger = self.logger
        try await single { c in
            try await c.run(
                """
                INSERT INTO attachments (id, uploader_id, organization_id, name, content_type, size, sha256, width, height, created_at)
                VALUES (\(attachment.id.uuid), \(attachment.uploaderId.uuid), \(attachment.organizationId.uuid),
                        \(attachment.name), \(attachment.contentType), \(attachment.size), \(attachment.sha256),
                        \(attachment.width), \(attachment.height), \(attachment.createdAt.millisecondsSince1970))
                """, logger)
        }
    }

    /// One snapshot: the record, then (for anyone but the uploader) a check that a message not
    /// deleted carries it in a conversation the viewer is in.
    public func attachment(id: EntityID, viewer: EntityID) async throws -> StoredAttachment? {
        let logger = self.logger
        return try await read { c in
            guard let attachment = try await PostgresRows.attachments(c, ids: [id.uuid], logger)[id] else { return nil }
            if attachment.uploaderId == viewer { return attachment }
            let visible = try await c.first(
                """
                SELECT 1 FROM messages m JOIN participants p ON p.conversation_id = m.conversation_id AND p.user_id = \(viewer.uuid)
                WHERE m.attachment_id = \(id.uuid) AND m.deleted_at IS NULL LIMIT 1
                """, logger) != nil
            return visible ? attachment : nil
        }
    }
}
