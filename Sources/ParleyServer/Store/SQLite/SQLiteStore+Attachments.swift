import Foundation
import GRDB
import ParleyProtocol

extension SQLiteStore {
    /// Inserts the attachment's row.
    public func createAttachment(_ attachment: StoredAttachment) async throws {
        try await writer.write { db in
            try db.execute(
                sql: """
                    INSERT INTO attachments (id, uploader_id, organization_id, name, content_type, size, sha256, width, height, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    attachment.id.description, attachment.uploaderId.description, attachment.organizationId.description,
                    attachment.name, attachment.contentType, attachment.size, attachment.sha256, attachment.width,
                    attachment.height, attachment.createdAt.millisecondsSince1970,
                ])
        }
    }

    /// One read: the record, then (for anyone but the uploader) a check that a message not
    /// deleted carries it in a conversation the viewer is in.
    public func attachment(id: EntityID, viewer: EntityID) async throws -> StoredAttachment? {
        try await writer.read { db in
            guard let attachment = try SQLiteRows.attachments(db, ids: [id.description]).values.first else { return nil }
            if attachment.uploaderId == viewer { return attachment }
            let visible = try Bool.fetchOne(
                db,
                sql: """
                    SELECT 1 FROM messages m JOIN participants p ON p.conversation_id = m.conversation_id AND p.user_id = ?
                    WHERE m.attachment_id = ? AND m.deleted_at IS NULL LIMIT 1
                    """,
                arguments: [viewer.description, id.description]) ?? false
            return visible ? attachment : nil
        }
    }
}

extension SQLiteRows {
    /// Attachments by id.
    static func attachments(_ db: Database, ids: [String]) throws -> [String: StoredAttachment] {
        guard !ids.isEmpty else { return [:] }
        let placeholders = Array(repeating: "?", count: ids.count).joined(separator: ",")
        let rows = try Row.fetchAll(db, sql: "SELECT * FROM attachments WHERE id IN (\(placeholders))", arguments: StatementArguments(ids))
        var result: [String: StoredAttachment] = [:]
        for row in rows {
            let attachment = StoredAttachment(
                id: try id(row["id"]), uploaderId: try id(row["uploader_id"]), organizationId: try id(row["organization_id"]),
                name: row["name"], contentType: row["content_type"], size: row["size"], sha256: row["sha256"],
                width: row["width"], height: row["height"], createdAt: Date(millisecondsSince1970: row["created_at"]))
            result[attachment.id.description] = attachment
        }
        return result
    }

    /// Checks an attachment may go into a message of this type from this sender.
    static func requireAttachment(_ db: Database, _ id: EntityID, sender: EntityID, type: MessageType) throws {
        guard let attachment = try attachments(db, ids: [id.description]).values.first, attachment.uploaderId == sender else {
            throw APIError.invalid("attachmentId does not name an attachment you uploaded")
        }
        let family = attachment.contentType.split(separator: "/").first.map(String.init) ?? ""
        let fits = switch type {
        case .image: family == "image"
        case .video: family == "video"
        case .audio: family == "audio"
        default: true
        }
        guard fits else { throw APIError.invalid("a \(type.rawValue) message needs a \(type.rawValue) attachment, not \(attachment.contentType)") }
    }
}
