import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

extension PostgresStore {
    /// Every key in one statement, oldest first.
    public func signingKeys() async throws -> [SigningKey] {
        let logger = self.logger
        return try await single { c in try await Self.signingKeys(c, logger) }
    }

    /// One transaction under the migrations' advisory lock: reads the keys and inserts
    /// `candidate` when none is live.
    public func ensureSigningKey(_ candidate: SigningKey) async throws -> [SigningKey] {
        let logger = self.logger
        return try await write { c in
            // The migrations' lock: nodes starting at once create one key between them.
            try await c.run("SELECT pg_advisory_xact_lock(\(PostgresSchema.advisoryLockKey))", logger)
            let keys = try await Self.signingKeys(c, logger)
            if keys.contains(where: \.isLive) { return keys }
            try await Self.insert(candidate, c, logger)
            return try await Self.signingKeys(c, logger)
        }
    }

    /// Inserts the key in one statement.
    public func addSigningKey(_ key: SigningKey) async throws {
        let logger = self.logger
        try await single { c in try await Self.insert(key, c, logger) }
    }

    /// One `UPDATE ... RETURNING` on the live key with this kid; false when none.
    public func retireSigningKey(kid: String, at date: Date) async throws -> Bool {
        let logger = self.logger
        return try await single { c in
            try await c.first(
                """
                UPDATE signing_keys SET retired_at = \(date.millisecondsSince1970)
                WHERE kid = \(kid) AND retired_at IS NULL RETURNING kid
                """, logger) != nil
        }
    }

    /// Records a revoked session (kept if already there) and drops rows that have expired.
    public func revokeSession(_ sessionId: String, userId: EntityID, expiresAt: Date, at date: Date) async throws {
        let logger = self.logger
        try await write { c in
            try await c.run("DELETE FROM revoked_sessions WHERE expires_at <= \(date.millisecondsSince1970)", logger)
            try await c.run(
                """
                INSERT INTO revoked_sessions (session_id, user_id, revoked_at, expires_at)
                VALUES (\(sessionId), \(userId.uuid), \(date.millisecondsSince1970), \(expiresAt.millisecondsSince1970))
                ON CONFLICT (session_id) DO NOTHING
                """, logger)
        }
    }

    /// The revoked sessions whose tokens have not expired yet.
    public func revokedSessions(now: Date) async throws -> [String: Date] {
        let logger = self.logger
        return try await single { c in
            var sessions: [String: Date] = [:]
            for row in try await c.all(
                "SELECT session_id, expires_at FROM revoked_sessions WHERE expires_at > \(now.millisecondsSince1970)", logger)
            {
                let (id, expiresAt) = try row.decode((String, Int64).self)
                sessions[id] = Date(millisecondsSince1970: expiresAt)
            }
            return sessions
        }
    }

    private static func insert(_ key: SigningKey, _ c: PostgresConnection, _ logger: Logger) async throws {
        let secret = String(decoding: key.secret, as: UTF8.self)
        try await c.run(
            """
            INSERT INTO signing_keys (kid, secret, created_at, retired_at)
            VALUES (\(key.kid), \(secret), \(key.createdAt.millisecondsSince1970), \(key.retiredAt?.millisecondsSince1970))
            """, logger)
    }

    private static func signingKeys(_ c: PostgresConnection, _ logger: Logger) async throws -> [SigningKey] {
        try await c.all("SELECT kid, secret, created_at, retired_at FROM signing_keys ORDER BY created_at, kid", logger).map {
            let (kid, secret, created, retired) = try $0.decode((String, String, Int64, Int64?).self)
            return SigningKey(
                kid: kid, secret: Array(secret.utf8), createdAt: Date(millisecondsSince1970: created),
                retiredAt: retired.map(Date.init(millisecondsSince1970:)))
        }
    }
}
