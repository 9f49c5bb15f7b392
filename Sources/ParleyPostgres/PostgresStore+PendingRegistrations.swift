import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

extension PostgresStore {
    /// Replaces the organization's pending registration for the email, in one transaction.
    public func savePendingRegistration(_ pending: PendingRegistration) async throws {
        let logger = self.logger
        try await write { c in
            try await c.run(
                """
                DELETE FROM pending_registrations WHERE expires_at <= \(pending.createdAt.millisecondsSince1970)
                OR (organization_id = \(pending.organizationId.uuid) AND email = \(pending.email))
                """, logger)
            try await c.run(
                """
                INSERT INTO pending_registrations (token_hash, organization_id, organization_name, email, display_name,
                    password_hash, created_at, expires_at)
                VALUES (\(pending.tokenHash), \(pending.organizationId.uuid), \(pending.organizationName), \(pending.email),
                    \(pending.displayName), \(pending.passwordHash), \(pending.createdAt.millisecondsSince1970),
                    \(pending.expiresAt.millisecondsSince1970))
                """, logger)
        }
    }

    /// One `DELETE ... RETURNING`: a link works once.
    public func takePendingRegistration(tokenHash: String, now: Date) async throws -> PendingRegistration? {
        let logger = self.logger
        return try await single { c in
            guard let row = try await c.first(
                """
                DELETE FROM pending_registrations WHERE token_hash = \(tokenHash)
                RETURNING token_hash, organization_id, organization_name, email, display_name, password_hash, created_at, expires_at
                """, logger)
            else { return nil }
            let (hash, organizationId, organizationName, email, displayName, passwordHash, createdAt, expiresAt) =
                try row.decode((String, UUID, String, String, String, String, Int64, Int64).self)
            let pending = PendingRegistration(
                tokenHash: hash, organizationId: EntityID(organizationId), organizationName: organizationName, email: email,
                displayName: displayName, passwordHash: passwordHash, createdAt: Date(millisecondsSince1970: createdAt),
                expiresAt: Date(millisecondsSince1970: expiresAt))
            return pending.expiresAt > now ? pending : nil
        }
    }
}
