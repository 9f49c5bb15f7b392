import ParleyProtocol

/// Who a request or connection acts as, read from a verified token.
public struct Identity: Sendable, Equatable {
    /// The user the token was issued to.
    public var userId: EntityID
    /// The organization of that user.
    public var organizationId: EntityID

    /// An identity from its parts (a verified token's, or a test's).
    public init(userId: EntityID, organizationId: EntityID) {
        self.userId = userId
        self.organizationId = organizationId
    }
}
