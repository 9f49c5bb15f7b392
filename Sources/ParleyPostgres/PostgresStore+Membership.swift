import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

extension PostgresStore {
    /// One transaction: inserts the organization or, on a name conflict, reads it and locks the
    /// invite; `admit` decides, and a taken email throws `conflict` (rolled back).
    public func register(_ registration: Registration, admit: @Sendable (Organization?, Invite?) throws -> Admission) async throws -> User {
        let logger = self.logger
        return try await write { c in
            let orgKey = registration.organization.lowercased()
            let ms = registration.now.millisecondsSince1970
            // Two first registrations of one new organization at once: one creates it (and is
            // its admin); the other waits for that commit and then joins an existing one, by its rules.
            let created = try await c.first(
                """
                INSERT INTO organizations (id, name, name_key, created_at) VALUES (\(UUID()), \(registration.organization), \(orgKey), \(ms))
                ON CONFLICT (name_key) DO NOTHING RETURNING id
                """, logger)
            var existing: Organization?
            var invite: Invite?
            let orgId: UUID
            if let created {
                orgId = try created.decode(UUID.self)
            } else {
                let row = try await c.first("SELECT \(unescaped: Self.organizationColumns) FROM organizations WHERE name_key = \(orgKey)", logger)!
                let organization = try Self.organization(row)
                existing = organization
                orgId = organization.id.uuid
                if let code = registration.inviteCode {
                    // Locked: concurrent uses of one invite are counted one after the other.
                    invite = try await c.first(
                        "SELECT \(unescaped: Self.inviteColumns) FROM invites WHERE code = \(code) AND organization_id = \(orgId) FOR UPDATE",
                        logger
                    ).map(Self.invite)
                }
            }
            let admission = try admit(existing, invite)
            if let invite, admission.usesInvite {
                try await c.run("UPDATE invites SET uses = uses + 1 WHERE code = \(invite.code)", logger)
            }
            let id = EntityID()
            let inserted = try await c.first(
                """
                INSERT INTO users (id, organization_id, email, display_name, password_hash, created_at, role)
                VALUES (\(id.uuid), \(orgId), \(registration.email), \(registration.displayName), \(registration.passwordHash), \(ms),
                        \(admission.role.rawValue))
                ON CONFLICT (organization_id, email) DO NOTHING
                RETURNING id
                """, logger)
            guard inserted != nil else { throw Self.emailTaken }
            return User(
                id: id, organizationId: EntityID(orgId), email: registration.email, displayName: registration.displayName, role: admission.role)
        }
    }

    /// The organization's row, in one statement.
    public func organization(id: EntityID) async throws -> Organization? {
        let logger = self.logger
        return try await single { c in
            try await c.first("SELECT \(unescaped: Self.organizationColumns) FROM organizations WHERE id = \(id.uuid)", logger)
                .map(Self.organization)
        }
    }

    /// One `UPDATE ... RETURNING` storing the domains as a JSON array; nil when no such
    /// organization.
    public func setAllowedEmailDomains(_ domains: [String], organizationId: EntityID) async throws -> Organization? {
        let logger = self.logger
        let json = String(decoding: try JSONEncoder().encode(domains), as: UTF8.self)
        return try await single { c in
            try await c.first(
                """
                UPDATE organizations SET allowed_email_domains = \(json) WHERE id = \(organizationId.uuid)
                RETURNING \(unescaped: Self.organizationColumns)
                """, logger
            ).map(Self.organization)
        }
    }

    /// Inserts the invite, with the current time as its creation time.
    public func createInvite(_ invite: Invite) async throws {
        let logger = self.logger
        try await single { c in
            try await c.run(
                """
                INSERT INTO invites (code, organization_id, email, max_uses, uses, expires_at, created_by, created_at)
                VALUES (\(invite.code), \(invite.organizationId.uuid), \(invite.email), \(invite.maxUses), \(invite.uses),
                        \(invite.expiresAt.millisecondsSince1970), \(invite.createdBy.uuid), \(Date().millisecondsSince1970))
                """, logger)
        }
    }

    /// The organization's invites, newest first (then by code).
    public func invites(organizationId: EntityID) async throws -> [Invite] {
        let logger = self.logger
        return try await single { c in
            try await c.all(
                """
                SELECT \(unescaped: Self.inviteColumns) FROM invites WHERE organization_id = \(organizationId.uuid)
                ORDER BY created_at DESC, code
                """, logger
            ).map(Self.invite)
        }
    }

    /// One `DELETE ... RETURNING` by code within the organization; true when a row went.
    public func deleteInvite(code: String, organizationId: EntityID) async throws -> Bool {
        let logger = self.logger
        return try await single { c in
            try await c.first(
                "DELETE FROM invites WHERE code = \(code) AND organization_id = \(organizationId.uuid) RETURNING code", logger) != nil
        }
    }

    /// One transaction under the organization's row lock: the update, then `check` on the active
    /// admins left (a refusal rolls it back).
    public func setRole(_ role: UserRole, userId: EntityID, organizationId: EntityID, check: @Sendable (Int) throws -> Void) async throws -> User? {
        let logger = self.logger
        return try await write { c in
            // The organization's row lock serializes role changes and deactivations: two admins
            // demoting each other at once cannot leave none.
            try await c.run("SELECT 1 FROM organizations WHERE id = \(organizationId.uuid) FOR UPDATE", logger)
            guard let row = try await c.first(
                """
                UPDATE users SET role = \(role.rawValue)
                WHERE id = \(userId.uuid) AND organization_id = \(organizationId.uuid) AND deactivated_at IS NULL
                RETURNING \(unescaped: PostgresRows.userColumns)
                """, logger)
            else { return nil }
            try check(try await Self.activeAdmins(c, organizationId, logger))
            return try PostgresRows.user(row)
        }
    }

    /// One transaction under the organization's row lock: the update, `check` on the active
    /// admins left, then the user's devices deleted.
    public func deactivate(userId: EntityID, organizationId: EntityID, now: Date, check: @Sendable (Int) throws -> Void) async throws -> Bool {
        let logger = self.logger
        return try await write { c in
            try await c.run("SELECT 1 FROM organizations WHERE id = \(organizationId.uuid) FOR UPDATE", logger)
            guard try await c.first(
                """
                UPDATE users SET deactivated_at = \(now.millisecondsSince1970)
                WHERE id = \(userId.uuid) AND organization_id = \(organizationId.uuid) AND deactivated_at IS NULL
                RETURNING id
                """, logger) != nil
            else { return false }
            try check(try await Self.activeAdmins(c, organizationId, logger))
            try await c.run("DELETE FROM devices WHERE user_id = \(userId.uuid)", logger)
            return true
        }
    }

    /// Reads the user's organization and whether `deactivated_at` is unset, in one statement.
    public func userState(id: EntityID) async throws -> UserState? {
        let logger = self.logger
        return try await single { c in
            try await c.first("SELECT organization_id, deactivated_at FROM users WHERE id = \(id.uuid)", logger).map {
                let (organization, deactivated) = try $0.decode((UUID, Int64?).self)
                return UserState(organizationId: EntityID(organization), isActive: deactivated == nil)
            }
        }
    }

    private static func activeAdmins(_ c: PostgresConnection, _ organizationId: EntityID, _ logger: Logger) async throws -> Int {
        let row = try await c.first(
            """
            SELECT COUNT(*) FROM users WHERE organization_id = \(organizationId.uuid) AND role = 'admin' AND deactivated_at IS NULL
            """, logger)
        return Int(try row?.decode(Int64.self) ?? 0)
    }

    static let organizationColumns = "id, name, allowed_email_domains, created_at, message_retention_days"
    static let inviteColumns = "code, organization_id, email, max_uses, uses, expires_at, created_by"

    static func organization(_ row: PostgresRow) throws -> Organization {
        let (id, name, domains, created, retention) = try row.decode((UUID, String, String, Int64, Int32?).self)
        return Organization(
            id: EntityID(id), name: name,
            allowedEmailDomains: (try? JSONDecoder().decode([String].self, from: Data(domains.utf8))) ?? [],
            createdAt: Date(millisecondsSince1970: created), messageRetentionDays: retention.map(Int.init))
    }

    static func invite(_ row: PostgresRow) throws -> Invite {
        let (code, organization, email, maxUses, uses, expires, creator) = try row.decode((String, UUID, String?, Int32, Int32, Int64, UUID).self)
        return Invite(
            code: code, organizationId: EntityID(organization), email: email, maxUses: Int(maxUses), uses: Int(uses),
            expiresAt: Date(millisecondsSince1970: expires), createdBy: EntityID(creator))
    }
}
