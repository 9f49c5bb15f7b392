import Foundation
import ParleyProtocol

/// A registration as the store takes it: validated, the password already hashed.
public struct Registration: Sendable, Equatable {
    /// The organization's name (matched case-insensitively): joined if it exists, else created.
    public var organization: String
    /// The email to sign in with, unique in the organization.
    public var email: String
    /// The name shown to other users.
    public var displayName: String
    /// The hashed password.
    public var passwordHash: String
    /// The invite code given with the registration, if any.
    public var inviteCode: String?
    /// When the registration happens: the creation time of the user and a new organization.
    public var now: Date

    /// A registration from its fields.
    public init(organization: String, email: String, displayName: String, passwordHash: String, inviteCode: String? = nil, now: Date) {
        self.organization = organization
        self.email = email
        self.displayName = displayName
        self.passwordHash = passwordHash
        self.inviteCode = inviteCode
        self.now = now
    }
}

/// What the rule decided for a registration.
public struct Admission: Sendable, Equatable {
    /// The role the new user gets.
    public var role: UserRole
    /// The invite admitted them: the store counts one use of it.
    public var usesInvite: Bool
    /// An admission with `role`; `usesInvite` when an invite admitted the user.
    public init(role: UserRole, usesInvite: Bool = false) {
        self.role = role
        self.usesInvite = usesInvite
    }
}
