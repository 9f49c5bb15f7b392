import Foundation
import GRDB
import ParleyProtocol
import ParleyStorage

extension SQLiteStore {
    /// Upserts on the token: an existing token's row takes this user, platform and environment.
    public func registerDevice(token: String, userId: EntityID, platform: String, environment: PushEnvironment, now: Date) async throws {
        try await writer.write { db in
            try db.execute(
                sql: """
                    INSERT INTO devices (token, user_id, platform, environment, registered_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (token) DO UPDATE SET user_id = excluded.user_id, platform = excluded.platform,
                        environment = excluded.environment, registered_at = excluded.registered_at
                    """,
                arguments: [token, userId.description, platform, environment.rawValue, now.millisecondsSince1970])
        }
    }

    /// Deletes the row matching both token and user; true when one went.
    public func unregisterDevice(token: String, userId: EntityID) async throws -> Bool {
        try await writer.write { db in
            try db.execute(sql: "DELETE FROM devices WHERE token = ? AND user_id = ?", arguments: [token, userId.description])
            return db.changesCount > 0
        }
    }

    /// The user's devices, oldest registration first.
    public func devices(userId: EntityID) async throws -> [RegisterDeviceRequest] {
        try await writer.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM devices WHERE user_id = ? ORDER BY registered_at", arguments: [userId.description]
            ).map {
                RegisterDeviceRequest(
                    platform: $0["platform"], token: $0["token"],
                    environment: PushEnvironment(rawValue: $0["environment"]) ?? .production)
            }
        }
    }
}
