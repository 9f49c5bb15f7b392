import Foundation
import GRDB
import ParleyProtocol
import ParleyStorage

extension SQLiteStore {
    /// Replaces the organization's pending registration for the email, in one write transaction.
    public func savePendingRegistration(_ pending: PendingRegistration) async throws {
        try await writer.write { db in
            try db.execute(
                sql: "DELETE FROM pending_registrations WHERE expires_at <= ? OR (organization_id = ? AND email = ?)",
                arguments: [pending.createdAt.millisecondsSince1970, pending.organizationId.description, pending.email])
            try db.execute(
                sql: """
                    INSERT INTO pending_registrations (token_hash, organization_id, organization_name, email, display_name,
                        password_hash, created_at, expires_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    pending.tokenHash, pending.organizationId.description, pending.organizationName, pending.email, pending.displayName,
                    pending.passwordHash, pending.createdAt.millisecondsSince1970, pending.expiresAt.millisecondsSince1970,
                ])
        }
    }

    /// Reads and deletes the row in one write transaction: a link works once.
    public func takePendingRegistration(tokenHash: String, now: Date) async throws -> PendingRegistration? {
        try await writer.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM pending_registrations WHERE token_hash = ?", arguments: [tokenHash])
            else { return nil }
            try db.execute(sql: "DELETE FROM pending_registrations WHERE token_hash = ?", arguments: [tokenHash])
            let pending = PendingRegistration(
                tokenHash: row["token_hash"], organizationId: EntityID(row["organization_id"] as String)!,
                organizationName: row["organization_name"], email: row["email"], displayName: row["display_name"],
                passwordHash: row["password_hash"], createdAt: Date(millisecondsSince1970: row["created_at"]),
                expiresAt: Date(millisecondsSince1970: row["expires_at"]))
            return pending.expiresAt > now ? pending : nil
        }
    }
}
