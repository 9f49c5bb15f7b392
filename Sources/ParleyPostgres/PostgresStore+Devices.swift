import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

extension PostgresStore {
    /// Upserts on the token in one statement: an existing token's row takes this user.
    public func registerDevice(token: String, userId: EntityID, platform: String, environment: PushEnvironment, now: Date) async throws {
        let logger = self.logger
        try await single { c in
            try await c.run(
                """
                INSERT INTO devices (token, user_id, platform, environment, registered_at)
                VALUES (\(token), \(userId.uuid), \(platform), \(environment.rawValue), \(now.millisecondsSince1970))
                ON CONFLICT (token) DO UPDATE SET user_id = excluded.user_id, platform = excluded.platform,
                    environment = excluded.environment, registered_at = excluded.registered_at
                """, logger)
        }
    }

    /// Deletes the row matching both token and user; true when one went.
    public func unregisterDevice(token: String, userId: EntityID) async throws -> Bool {
        let logger = self.logger
        return try await single { c in
            try await c.first("DELETE FROM devices WHERE token = \(token) AND user_id = \(userId.uuid) RETURNING token", logger) != nil
        }
    }

    /// The user's devices, oldest registration first.
    public func devices(userId: EntityID) async throws -> [RegisterDeviceRequest] {
        let logger = self.logger
        return try await single { c in
            try await c.all(
                "SELECT platform, token, environment FROM devices WHERE user_id = \(userId.uuid) ORDER BY registered_at", logger
            ).map {
                let (platform, token, environment) = try $0.decode((String, String, String).self)
                return RegisterDeviceRequest(
                    platform: platform, token: token, environment: PushEnvironment(rawValue: environment) ?? .production)
            }
        }
    }
}
