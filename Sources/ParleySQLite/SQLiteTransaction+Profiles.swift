import Foundation
import GRDB
import ParleyProtocol
import ParleyStorage

/// ``StoreTransaction``'s profile primitives over SQLite.
extension SQLiteTransaction {
    func profile(of userId: EntityID) async throws -> (displayName: String, avatarId: EntityID?)? {
        guard let row = try Row.fetchOne(
            db, sql: "SELECT display_name, avatar_id FROM users WHERE id = ? AND deactivated_at IS NULL",
            arguments: [userId.description])
        else { return nil }
        return (row["display_name"], (row["avatar_id"] as String?).flatMap(EntityID.init))
    }

    func setProfile(of userId: EntityID, displayName: String, avatarId: EntityID?) async throws {
        try db.execute(
            sql: "UPDATE users SET display_name = ?, avatar_id = ? WHERE id = ?",
            arguments: [displayName, avatarId?.description, userId.description])
    }

    func isAvatar(_ attachmentId: EntityID, visibleTo viewer: EntityID) async throws -> Bool {
        try Bool.fetchOne(
            db,
            sql: """
                SELECT 1 FROM users owner JOIN users viewer ON viewer.organization_id = owner.organization_id
                WHERE owner.avatar_id = ? AND viewer.id = ? LIMIT 1
                """,
            arguments: [attachmentId.description, viewer.description]) ?? false
    }

    func orphanAttachment(_ attachmentId: EntityID) async throws {
        try db.execute(sql: "INSERT OR IGNORE INTO attachment_orphans (attachment_id) VALUES (?)", arguments: [attachmentId.description])
    }
}
