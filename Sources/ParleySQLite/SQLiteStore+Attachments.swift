import Foundation
import GRDB
import ParleyProtocol
import ParleyStorage

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
}
