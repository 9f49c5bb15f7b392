import Foundation
import JWTKit
import ParleyProtocol

/// Who a request or connection acts as, read from a verified token.
public struct Identity: Sendable, Equatable {
    public var userId: EntityID
    public var organizationId: EntityID
}

/// The claims of a Parley access token.
struct AccessClaims: JWTPayload {
    var sub: SubjectClaim
    var org: String
    var iat: IssuedAtClaim
    var exp: ExpirationClaim

    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
    }
}

/// Signs and verifies HS256 access tokens with the server's secret.
public struct TokenService: Sendable {
    private let keys: JWTKeyCollection
    /// How long a token is valid.
    public let lifetime: Duration

    /// A token service over a secret of at least 32 bytes.
    public init(secret: [UInt8], lifetime: Duration) async throws {
        guard secret.count >= 32 else {
            throw APIError(.internal, "The JWT secret must be at least 32 bytes long")
        }
        keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        self.lifetime = lifetime
    }

    /// A signed token for a user.
    public func issue(for user: User, now: Date = Date()) async throws -> String {
        let claims = AccessClaims(
            sub: .init(value: user.id.description), org: user.organizationId.description,
            iat: .init(value: now), exp: .init(value: now.addingTimeInterval(lifetime.timeInterval)))
        return try await keys.sign(claims)
    }

    /// The identity a token stands for; `unauthorized` when it is forged, malformed or expired.
    public func verify(_ token: String) async throws -> Identity {
        guard token.utf8.count < 4096,
            let claims = try? await keys.verify(token, as: AccessClaims.self),
            let userId = EntityID(claims.sub.value), let organizationId = EntityID(claims.org)
        else { throw APIError.unauthorized }
        return Identity(userId: userId, organizationId: organizationId)
    }
}

extension Duration {
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
