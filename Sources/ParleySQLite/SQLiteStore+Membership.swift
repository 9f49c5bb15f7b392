import Foundation
import GRDB
import ParleyProtocol
import ParleyStorage

extension SQLiteStore {
    /// One write transaction: reads the organization (by lowercased name) and invite, lets
    /// `admit` decide before anything is written, then inserts; a taken email throws `conflict`.
    public func register(_ registration: Registration, admit: @Sendable (Organization?, Invite?) throws -> Admission) async throws -> User {
        try await writer.write { db in
            let orgKey = registration.organization.lowercased()
            let now = registration.now.millisecondsSince1970
            let existing = try Row.fetchOne(db, sql: "SELECT * FROM organizations WHERE name_key = ?", arguments: [orgKey])
                .map(Self.organization)
            var invite: Invite?
            if let existing, let code = registration.inviteCode {
                invite = try Row.fetchOne(
                    db, sql: "SELECT * FROM invites WHERE code = ? AND organization_id = ?", arguments: [code, existing.id.description]
                ).map(Self.invite)
            }
            // The rule decides before anything is written or told (a stranger learns nothing).
            let admission = try admit(existing, invite)
            let role = admission.role
            let orgId: String
            if let existing {
                orgId = existing.id.description
            } else {
                orgId = EntityID().description
                try db.execute(
                    sql: "INSERT INTO organizations (id, name, name_key, created_at) VALUES (?, ?, ?, ?)",
                    arguments: [orgId, registration.organization, orgKey, now])
            }
            if try Bool.fetchOne(db, sql: "SELECT 1 FROM users WHERE organization_id = ? AND email = ?", arguments: [orgId, registration.email]) == true {
                throw ChatError(.conflict, "A user with this email already exists in this organization")
            }
            if let invite, admission.usesInvite {
                try db.execute(sql: "UPDATE invites SET uses = uses + 1 WHERE code = ?", arguments: [invite.code])
            }
            let id = EntityID()
            try db.execute(
                sql: """
                    INSERT INTO users (id, organization_id, email, display_name, password_hash, created_at, role)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [id.description, orgId, registration.email, registration.displayName, registration.passwordHash, now, role.rawValue])
            return User(id: id, organizationId: EntityID(orgId)!, email: registration.email, displayName: registration.displayName, role: role)
        }
    }

    /// The organization's row, by id.
    public func organization(id: EntityID) async throws -> Organization? {
        try await writer.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM organizations WHERE id = ?", arguments: [id.description]).map(Self.organization)
        }
    }

    /// Stores the domains as a JSON array and reads the row back; nil when no such organization.
    public func setAllowedEmailDomains(_ domains: [String], organizationId: EntityID) async throws -> Organization? {
        let json = String(decoding: try JSONEncoder().encode(domains), as: UTF8.self)
        return try await writer.write { db in
            try db.execute(
                sql: "UPDATE organizations SET allowed_email_domains = ? WHERE id = ?", arguments: [json, organizationId.description])
            return try Row.fetchOne(db, sql: "SELECT * FROM organizations WHERE id = ?", arguments: [organizationId.description])
                .map(Self.organization)
        }
    }

    /// Inserts the invite, with the current time as its creation time.
    public func createInvite(_ invite: Invite) async throws {
        try await writer.write { db in
            try db.execute(
                sql: """
                    INSERT INTO invites (code, organization_id, email, max_uses, uses, expires_at, created_by, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    invite.code, invite.organizationId.description, invite.email, invite.maxUses, invite.uses,
                    invite.expiresAt.millisecondsSince1970, invite.createdBy.description, Date().millisecondsSince1970,
                ])
        }
    }

    /// The organization's invites, newest first (then by code).
    public func invites(organizationId: EntityID) async throws -> [Invite] {
        try await writer.read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM invites WHERE organization_id = ? ORDER BY created_at DESC, code",
                arguments: [organizationId.description]
            ).map(Self.invite)
        }
    }

    /// Deletes by code within the organization; true when a row went.
    public func deleteInvite(code: String, organizationId: EntityID) async throws -> Bool {
        try await writer.write { db in
            try db.execute(
                sql: "DELETE FROM invites WHERE code = ? AND organization_id = ?", arguments: [code, organizationId.description])
            return db.changesCount > 0
        }
    }

    /// One write transaction: updates the role, then `check` gets the active admins left (a
    /// refusal rolls the update back).
    public func setRole(_ role: UserRole, userId: EntityID, organizationId: EntityID, check: @Sendable (Int) throws -> Void) async throws -> User? {
        try await writer.write { db in
            let arguments: StatementArguments = [role.rawValue, userId.description, organizationId.description]
            try db.execute(
                sql: "UPDATE users SET role = ? WHERE id = ? AND organization_id = ? AND deactivated_at IS NULL", arguments: arguments)
            guard db.changesCount > 0 else { return nil }
            try check(try Self.activeAdmins(db, organizationId))
            return try Row.fetchOne(db, sql: "SELECT * FROM users WHERE id = ?", arguments: [userId.description]).map(SQLiteRows.user)
        }
    }

    /// One write transaction: sets `deactivated_at`, runs `check` on the active admins left (a
    /// refusal rolls it back), then deletes the user's devices.
    public func deactivate(userId: EntityID, organizationId: EntityID, now: Date, check: @Sendable (Int) throws -> Void) async throws -> Bool {
        try await writer.write { db in
            try db.execute(
                sql: "UPDATE users SET deactivated_at = ? WHERE id = ? AND organization_id = ? AND deactivated_at IS NULL",
                arguments: [now.millisecondsSince1970, userId.description, organizationId.description])
            guard db.changesCount > 0 else { return false }
            try check(try Self.activeAdmins(db, organizationId))
            try db.execute(sql: "DELETE FROM devices WHERE user_id = ?", arguments: [userId.description])
            return true
        }
    }

    /// Reads the user's organization and whether `deactivated_at` is unset.
    public func userState(id: EntityID) async throws -> UserState? {
        try await writer.read { db in
            try Row.fetchOne(db, sql: "SELECT organization_id, deactivated_at FROM users WHERE id = ?", arguments: [id.description]).map {
                UserState(organizationId: try SQLiteRows.id($0["organization_id"]), isActive: ($0["deactivated_at"] as Int64?) == nil)
            }
        }
    }

    private static func activeAdmins(_ db: Database, _ organizationId: EntityID) throws -> Int {
        try Int.fetchOne(
            db, sql: "SELECT COUNT(*) FROM users WHERE organization_id = ? AND role = 'admin' AND deactivated_at IS NULL",
            arguments: [organizationId.description]) ?? 0
    }

    static func organization(_ row: Row) throws -> Organization {
        Organization(
            id: try SQLiteRows.id(row["id"]), name: row["name"],
            allowedEmailDomains: (try? JSONDecoder().decode([String].self, from: Data((row["allowed_email_domains"] as String? ?? "[]").utf8))) ?? [],
            createdAt: Date(millisecondsSince1970: row["created_at"]), messageRetentionDays: row["message_retention_days"])
    }

    static func invite(_ row: Row) throws -> Invite {
        Invite(
            code: row["code"], organizationId: try SQLiteRows.id(row["organization_id"]), email: row["email"],
            maxUses: row["max_uses"], uses: row["uses"], expiresAt: Date(millisecondsSince1970: row["expires_at"]),
            createdBy: try SQLiteRows.id(row["created_by"]))
    }
}
