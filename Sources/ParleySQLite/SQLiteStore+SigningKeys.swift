import Foundation
import GRDB
import ParleyProtocol
import ParleyStorage

extension SQLiteStore {
    /// Every key in one read, oldest first.
    public func signingKeys() async throws -> [SigningKey] {
        try await writer.read { db in try Self.signingKeys(db) }
    }

    /// Reads the keys and inserts `candidate` when none is live, in one write transaction
    /// (SQLite's single writer makes it atomic).
    public func ensureSigningKey(_ candidate: SigningKey) async throws -> [SigningKey] {
        // One writer at a time: of two stores starting on one file, the second sees the first's key.
        try await writer.write { db in
            let keys = try Self.signingKeys(db)
            if keys.contains(where: \.isLive) { return keys }
            try Self.insert(candidate, db)
            return try Self.signingKeys(db)
        }
    }

    /// Inserts the key in its own write transaction.
    public func addSigningKey(_ key: SigningKey) async throws {
        try await writer.write { db in try Self.insert(key, db) }
    }

    /// Sets `retired_at` on the live key with this kid; false when no row changed.
    public func retireSigningKey(kid: String, at date: Date) async throws -> Bool {
        try await writer.write { db in
            try db.execute(
                sql: "UPDATE signing_keys SET retired_at = ? WHERE kid = ? AND retired_at IS NULL",
                arguments: [date.millisecondsSince1970, kid])
            return db.changesCount > 0
        }
    }

    /// Records a revoked session (kept if already there) and drops rows that have expired.
    public func revokeSession(_ sessionId: String, userId: EntityID, expiresAt: Date, at date: Date) async throws {
        try await writer.write { db in
            try db.execute(sql: "DELETE FROM revoked_sessions WHERE expires_at <= ?", arguments: [date.millisecondsSince1970])
            try db.execute(
                sql: "INSERT OR IGNORE INTO revoked_sessions (session_id, user_id, revoked_at, expires_at) VALUES (?, ?, ?, ?)",
                arguments: [sessionId, userId.description, date.millisecondsSince1970, expiresAt.millisecondsSince1970])
        }
    }

    /// The revoked sessions whose tokens have not expired yet.
    public func revokedSessions(now: Date) async throws -> [String: Date] {
        try await writer.read { db in
            var sessions: [String: Date] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT session_id, expires_at FROM revoked_sessions WHERE expires_at > ?", arguments: [now.millisecondsSince1970])
            {
                sessions[row["session_id"]] = Date(millisecondsSince1970: row["expires_at"])
            }
            return sessions
        }
    }

    private static func insert(_ key: SigningKey, _ db: Database) throws {
        try db.execute(
            sql: "INSERT INTO signing_keys (kid, secret, created_at, retired_at) VALUES (?, ?, ?, ?)",
            arguments: [key.kid, String(decoding: key.secret, as: UTF8.self), key.createdAt.millisecondsSince1970,
                        key.retiredAt?.millisecondsSince1970])
    }

    private static func signingKeys(_ db: Database) throws -> [SigningKey] {
        try Row.fetchAll(db, sql: "SELECT * FROM signing_keys ORDER BY created_at, kid").map { row in
            SigningKey(
                kid: row["kid"], secret: Array((row["secret"] as String).utf8),
                createdAt: Date(millisecondsSince1970: row["created_at"]),
                retiredAt: (row["retired_at"] as Int64?).map(Date.init(millisecondsSince1970:)))
        }
    }
}
