import Foundation
import GRDB
import ParleyProtocol
import ParleyStorage

extension SQLiteStore {
    /// Inserts the session in its own write transaction.
    public func createSignInSession(_ session: SignInSession) async throws {
        try await writer.write { db in
            try db.execute(
                sql: """
                    INSERT INTO sign_in_sessions (id, user_id, organization_id, token_hash, previous_hash, label, created_at,
                        last_used_at, rotated_at, expires_at, ended_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    session.id, session.userId.description, session.organizationId.description, session.tokenHash,
                    session.previousHash, session.label, session.createdAt.millisecondsSince1970,
                    session.lastUsedAt.millisecondsSince1970, session.rotatedAt?.millisecondsSince1970,
                    session.expiresAt.millisecondsSince1970, session.endedAt?.millisecondsSince1970,
                ])
        }
    }

    /// One row by id.
    public func signInSession(id: String) async throws -> SignInSession? {
        try await writer.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM sign_in_sessions WHERE id = ?", arguments: [id]).map(Self.signInSession)
        }
    }

    /// One compare-and-set `UPDATE`: SQLite's single writer makes it atomic.
    public func rotateSignInSession(id: String, from currentHash: String, to newHash: String, at date: Date, expiresAt: Date) async throws -> Bool {
        try await writer.write { db in
            try db.execute(
                sql: """
                    UPDATE sign_in_sessions SET previous_hash = token_hash, token_hash = ?, rotated_at = ?, last_used_at = ?,
                        expires_at = ?
                    WHERE id = ? AND token_hash = ? AND ended_at IS NULL AND expires_at > ?
                    """,
                arguments: [
                    newHash, date.millisecondsSince1970, date.millisecondsSince1970, expiresAt.millisecondsSince1970, id, currentHash,
                    date.millisecondsSince1970,
                ])
            return db.changesCount > 0
        }
    }

    /// Moves `last_used_at` on.
    public func touchSignInSession(id: String, at date: Date) async throws {
        try await writer.write { db in
            try db.execute(
                sql: "UPDATE sign_in_sessions SET last_used_at = ? WHERE id = ? AND last_used_at < ?",
                arguments: [date.millisecondsSince1970, id, date.millisecondsSince1970])
        }
    }

    /// The user's live sessions, newest first.
    public func signInSessions(userId: EntityID, now: Date) async throws -> [SignInSession] {
        try await writer.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM sign_in_sessions WHERE user_id = ? AND ended_at IS NULL AND expires_at > ?
                    ORDER BY created_at DESC, id
                    """,
                arguments: [userId.description, now.millisecondsSince1970]
            ).map(Self.signInSession)
        }
    }

    /// Ends live sessions in one write transaction; drops rows that ended or expired long ago.
    public func endSignInSessions(userId: EntityID, id: String?, at date: Date) async throws -> [String] {
        try await writer.write { db in
            let now = date.millisecondsSince1970
            let ids = try String.fetchAll(
                db,
                sql: """
                    SELECT id FROM sign_in_sessions WHERE user_id = ? AND ended_at IS NULL AND expires_at > ?
                    AND (? IS NULL OR id = ?)
                    """,
                arguments: [userId.description, now, id, id])
            for ended in ids {
                try db.execute(sql: "UPDATE sign_in_sessions SET ended_at = ? WHERE id = ?", arguments: [now, ended])
            }
            try db.execute(
                sql: "DELETE FROM sign_in_sessions WHERE user_id = ? AND COALESCE(ended_at, expires_at) < ?",
                arguments: [userId.description, now - SignInSession.keptAfterEnd])
            return ids
        }
    }

    private static func signInSession(_ row: Row) -> SignInSession {
        SignInSession(
            id: row["id"], userId: EntityID(row["user_id"] as String)!, organizationId: EntityID(row["organization_id"] as String)!,
            tokenHash: row["token_hash"], previousHash: row["previous_hash"], label: row["label"],
            createdAt: Date(millisecondsSince1970: row["created_at"]), lastUsedAt: Date(millisecondsSince1970: row["last_used_at"]),
            rotatedAt: (row["rotated_at"] as Int64?).map(Date.init(millisecondsSince1970:)),
            expiresAt: Date(millisecondsSince1970: row["expires_at"]),
            endedAt: (row["ended_at"] as Int64?).map(Date.init(millisecondsSince1970:)))
    }
}
