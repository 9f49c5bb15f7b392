import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

/// ``StoreTransaction``'s profile primitives over PostgreSQL.
extension PostgresTransaction {
    func profile(of userId: EntityID) async throws -> (displayName: String, avatarId: EntityID?)? {
        guard let row = try await connection.first(
            "SELECT display_name, avatar_id FROM users WHERE id = \(userId.uuid) AND deactivated_at IS NULL FOR UPDATE", logger)
        else { return nil }
        let (name, avatar) = try row.decode((String, UUID?).self)
        return (name, avatar.map(EntityID.init))
    }

    func setProfile(of userId: EntityID, displayName: String, avatarId: EntityID?) async throws {
        try await connection.run(
            "UPDATE users SET display_name = \(displayName), avatar_id = \(avatarId?.uuid) WHERE id = \(userId.uuid)", logger)
    }

    func isAvatar(_ attachmentId: EntityID, visibleTo viewer: EntityID) async throws -> Bool {
        try await connection.first(
            """
            SELECT 1 FROM users owner JOIN users viewer ON viewer.organization_id = owner.organization_id
            WHERE owner.avatar_id = \(attachmentId.uuid) AND viewer.id = \(viewer.uuid) LIMIT 1
            """, logger) != nil
    }

    func orphanAttachment(_ attachmentId: EntityID) async throws {
        try await connection.run(
            "INSERT INTO attachment_orphans (attachment_id) VALUES (\(attachmentId.uuid)) ON CONFLICT DO NOTHING", logger)
    }
}
