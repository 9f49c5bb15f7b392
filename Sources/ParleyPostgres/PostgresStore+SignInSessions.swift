import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

extension PostgresStore {
    /// Inserts the session in one statement.
    public func createSignInSession(_ session: SignInSession) async throws {
        let logger = self.logger
        try await single { c in
            try await c.run(
                """
                INSERT INTO sign_in_sessions (id, user_id, organization_id, token_hash, previous_hash, label, created_at,
                    last_used_at, rotated_at, expires_at, ended_at)
                VALUES (\(session.id), \(session.userId.uuid), \(session.organizationId.uuid), \(session.tokenHash),
                    \(session.previousHash), \(session.label), \(session.createdAt.millisecondsSince1970),
                    \(session.lastUsedAt.millisecondsSince1970), \(session.rotatedAt?.millisecondsSince1970),
                    \(session.expiresAt.millisecondsSince1970), \(session.endedAt?.millisecondsSince1970))
                """, logger)
        }
    }

    /// One row by id.
    public func signInSession(id: String) async throws -> SignInSession? {
        let logger = self.logger
        return try await single { c in
            try await c.first("SELECT \(unescaped: Self.signInColumns) FROM sign_in_sessions WHERE id = \(id)", logger)
                .map(Self.signInSession)
        }
    }

    /// One compare-and-set `UPDATE ... RETURNING`: of two renewals with one token, one wins.
    public func rotateSignInSession(id: String, from currentHash: String, to newHash: String, at date: Date, expiresAt: Date) async throws -> Bool {
        let logger = self.logger
        let now = date.millisecondsSince1970
        return try await single { c in
            try await c.first(
                """
                UPDATE sign_in_sessions SET previous_hash = token_hash, token_hash = \(newHash), rotated_at = \(now),
                    last_used_at = \(now), expires_at = \(expiresAt.millisecondsSince1970)
                WHERE id = \(id) AND token_hash = \(currentHash) AND ended_at IS NULL AND expires_at > \(now)
                RETURNING id
                """, logger) != nil
        }
    }

    /// Moves `last_used_at` on.
    public func touchSignInSession(id: String, at date: Date) async throws {
        let logger = self.logger
        let now = date.millisecondsSince1970
        try await single { c in
            try await c.run("UPDATE sign_in_sessions SET last_used_at = \(now) WHERE id = \(id) AND last_used_at < \(now)", logger)
        }
    }

    /// The user's live sessions, newest first.
    public func signInSessions(userId: EntityID, now: Date) async throws -> [SignInSession] {
        let logger = self.logger
        return try await single { c in
            try await c.all(
                """
                SELECT \(unescaped: Self.signInColumns) FROM sign_in_sessions
                WHERE user_id = \(userId.uuid) AND ended_at IS NULL AND expires_at > \(now.millisecondsSince1970)
                ORDER BY created_at DESC, id
                """, logger
            ).map(Self.signInSession)
        }
    }

    /// Ends live sessions in one transaction; drops rows that ended or expired long ago.
    public func endSignInSessions(userId: EntityID, id: String?, at date: Date) async throws -> [String] {
        let logger = self.logger
        let now = date.millisecondsSince1970
        return try await write { c in
            var ended: [String] = []
            for row in try await c.all(
                """
                UPDATE sign_in_sessions SET ended_at = \(now)
                WHERE user_id = \(userId.uuid) AND ended_at IS NULL AND expires_at > \(now) AND (\(id)::text IS NULL OR id = \(id))
                RETURNING id
                """, logger)
            {
                ended.append(try row.decode(String.self))
            }
            try await c.run(
                """
                DELETE FROM sign_in_sessions
                WHERE user_id = \(userId.uuid) AND COALESCE(ended_at, expires_at) < \(now - SignInSession.keptAfterEnd)
                """, logger)
            return ended
        }
    }

    private static let signInColumns =
        "id, user_id, organization_id, token_hash, previous_hash, label, created_at, last_used_at, rotated_at, expires_at, ended_at"

    private static func signInSession(_ row: PostgresRow) throws -> SignInSession {
        let (id, userId, organizationId, tokenHash, previousHash, label, createdAt, lastUsedAt, rotatedAt, expiresAt, endedAt) =
            try row.decode((String, UUID, UUID, String, String?, String?, Int64, Int64, Int64?, Int64, Int64?).self)
        return SignInSession(
            id: id, userId: EntityID(userId), organizationId: EntityID(organizationId), tokenHash: tokenHash,
            previousHash: previousHash, label: label, createdAt: Date(millisecondsSince1970: createdAt),
            lastUsedAt: Date(millisecondsSince1970: lastUsedAt), rotatedAt: rotatedAt.map(Date.init(millisecondsSince1970:)),
            expiresAt: Date(millisecondsSince1970: expiresAt), endedAt: endedAt.map(Date.init(millisecondsSince1970:)))
    }
}
