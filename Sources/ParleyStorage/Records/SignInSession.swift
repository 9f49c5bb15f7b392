import Foundation
import ParleyProtocol

/// One sign-in (a login or a registration) as the store keeps it: the hash of its current
/// refresh token, the one before it (to tell a stolen, replayed token from a lost answer),
/// and when it ends.
public struct SignInSession: Sendable, Equatable {
    /// The session id: the `sid` of every access token it issues.
    public var id: String
    /// Whose it is.
    public var userId: EntityID
    /// Their organization.
    public var organizationId: EntityID
    /// SHA-256 (hex) of the refresh token that renews it now.
    public var tokenHash: String
    /// SHA-256 (hex) of the refresh token it replaced, if any.
    public var previousHash: String?
    /// What signed in (User-Agent, shortened, neutralised).
    public var label: String?
    /// When the user signed in.
    public var createdAt: Date
    /// When it last renewed (the last rotation, or a bearer renewal).
    public var lastUsedAt: Date
    /// When the refresh token last changed (nil: never).
    public var rotatedAt: Date?
    /// When the refresh token stops working unless used before.
    public var expiresAt: Date
    /// When it was ended (logout, an admin, the user from another device, token reuse).
    public var endedAt: Date?

    /// A session with these fields.
    public init(
        id: String, userId: EntityID, organizationId: EntityID, tokenHash: String, previousHash: String? = nil, label: String? = nil,
        createdAt: Date, lastUsedAt: Date, rotatedAt: Date? = nil, expiresAt: Date, endedAt: Date? = nil
    ) {
        self.id = id
        self.userId = userId
        self.organizationId = organizationId
        self.tokenHash = tokenHash
        self.previousHash = previousHash
        self.label = label
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.rotatedAt = rotatedAt
        self.expiresAt = expiresAt
        self.endedAt = endedAt
    }

    /// Whether its refresh token can still renew at `now`.
    public func isLive(at now: Date) -> Bool { endedAt == nil && expiresAt > now }
}

extension SignInSession {
    /// How long (ms) a row stays after its session ended or expired (it answers "ended" to a
    /// replayed token meanwhile), before the next end of that user's sessions drops it.
    package static let keptAfterEnd: Int64 = 30 * 86_400_000
}
