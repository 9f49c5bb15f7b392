import Crypto
import Foundation

/// A key that signs and verifies access tokens (HS256), named by its `kid`.
///
/// Every node of one service reads the same keys from the store, so a token one node issued
/// is valid on every other. Several keys may be live at once: the newest signs, all verify,
/// which is what lets a key be rotated without signing everyone out (see docs/protocol.md,
/// "Signing keys").
public struct SigningKey: Sendable, Equatable {
    /// The key's id, written into each token's header (`kid`).
    public var kid: String
    /// The HMAC secret (at least 32 bytes).
    public var secret: [UInt8]
    /// When the key was created; the newest live key signs.
    public var createdAt: Date
    /// When the key was retired; a retired key verifies nothing.
    public var retiredAt: Date?

    /// A key with the given parts.
    public init(kid: String, secret: [UInt8], createdAt: Date, retiredAt: Date? = nil) {
        self.kid = kid
        self.secret = secret
        self.createdAt = createdAt
        self.retiredAt = retiredAt
    }

    /// A new random key: 48 random bytes (as base64 text, the form secrets are kept in) and a
    /// random kid.
    public static func generate(now: Date) -> SigningKey {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<48).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let kidBytes = (0..<9).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return SigningKey(kid: base64URL(kidBytes), secret: Array(Data(bytes).base64EncodedString().utf8), createdAt: now)
    }

    /// A key whose kid follows from its secret (a configured secret, the same on every node
    /// that is given it, or a data directory's legacy secret).
    public static func derived(from secret: [UInt8], now: Date) -> SigningKey {
        let digest = SHA256.hash(data: secret)
        return SigningKey(kid: "s-" + base64URL(Array(digest.prefix(9))), secret: secret, createdAt: now)
    }

    /// Whether the key may verify tokens.
    public var isLive: Bool { retiredAt == nil }

    private static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
