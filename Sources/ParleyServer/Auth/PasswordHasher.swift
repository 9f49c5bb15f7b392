import HummingbirdBcrypt
import NIOPosix

/// Hashes and checks passwords with bcrypt, off the event loops (bcrypt is slow on purpose).
public struct PasswordHasher: Sendable {
    /// The bcrypt cost; 4 is the minimum (tests), 10–12 for production.
    public let cost: UInt8

    /// A hasher with the given bcrypt cost.
    public init(cost: UInt8) { self.cost = cost }

    /// The bcrypt hash of a password.
    public func hash(_ password: String) async throws -> String {
        let cost = self.cost
        return try await NIOThreadPool.singleton.runIfActive { Bcrypt.hash(password, cost: cost) }
    }

    /// Whether a password matches a hash.
    public func verify(_ password: String, hash: String) async throws -> Bool {
        try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(password, hash: hash) }
    }

    /// A hash of nothing, checked against on unknown logins so their timing matches known ones.
    public func decoyHash() async throws -> String { try await hash("parley-decoy-password") }
}
