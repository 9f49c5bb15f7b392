import Foundation
import ParleyProtocol

/// A registration that joins an organization by its allowed email domain, waiting until the
/// person opens the link mailed to the address (proving it is theirs). The store keeps the
/// link's SHA-256, never the link.
public struct PendingRegistration: Sendable, Equatable {
    /// SHA-256 (hex) of the link's token.
    public var tokenHash: String
    /// The organization it joins.
    public var organizationId: EntityID
    /// Its name as registered with (the registration is replayed by name).
    public var organizationName: String
    /// The address to prove (lowercased).
    public var email: String
    /// The name to show.
    public var displayName: String
    /// The password's hash, as a registration would store it.
    public var passwordHash: String
    /// When the registration was asked for.
    public var createdAt: Date
    /// When the link stops working.
    public var expiresAt: Date

    /// A pending registration with these fields.
    public init(
        tokenHash: String, organizationId: EntityID, organizationName: String, email: String, displayName: String, passwordHash: String,
        createdAt: Date, expiresAt: Date
    ) {
        self.tokenHash = tokenHash
        self.organizationId = organizationId
        self.organizationName = organizationName
        self.email = email
        self.displayName = displayName
        self.passwordHash = passwordHash
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}
