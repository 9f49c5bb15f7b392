import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

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
}
