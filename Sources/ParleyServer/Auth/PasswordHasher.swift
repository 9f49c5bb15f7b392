import Crypto
import Foundation
import HummingbirdBcrypt
import NIOPosix

/// Hashes and checks passwords with bcrypt, off the event loops (bcrypt is slow on purpose).
///
/// bcrypt reads only the first 72 bytes of its input: two passwords that differ only after
/// that would be the same password. So the password is first reduced to its SHA-256 digest
/// (base64, 44 bytes: every byte of any length counts, and no NUL reaches bcrypt), and the
/// stored hash says so with a `$parley-sha256$` prefix before the bcrypt string. Hashes made
/// before this (plain bcrypt, `$2…`) are still checked as they were made, so existing accounts
/// keep working; for them the 72-byte limit stays until the password is set again.
public struct PasswordHasher: Sendable {
    /// The bcrypt cost; 4 is the minimum (tests), 10–12 for production.
    public let cost: UInt8
    /// What starts a hash of the digest of the password.
    public static let prehashPrefix = "$parley-sha256$"

    /// A hasher with the given bcrypt cost.
    public init(cost: UInt8) { self.cost = cost }

    /// The hash to store for a password: bcrypt of its SHA-256 digest, with the prefix.
    public func hash(_ password: String) async throws -> String {
        let cost = self.cost
        let digest = Self.digest(password)
        return try await NIOThreadPool.singleton.runIfActive { Self.prehashPrefix + Bcrypt.hash(digest, cost: cost) }
    }

    /// Whether a password matches a stored hash (either form).
    public func verify(_ password: String, hash: String) async throws -> Bool {
        if hash.hasPrefix(Self.prehashPrefix) {
            let digest = Self.digest(password)
            let bcrypt = String(hash.dropFirst(Self.prehashPrefix.count))
            return try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(digest, hash: bcrypt) }
        }
        return try await NIOThreadPool.singleton.runIfActive { Bcrypt.verify(password, hash: hash) }
    }

    /// A hash of nothing, checked against on unknown logins so their timing matches known ones.
    public func decoyHash() async throws -> String { try await hash("parley-decoy-password") }

    /// The base64 SHA-256 digest of the password's UTF-8 bytes.
    static func digest(_ password: String) -> String {
        Data(SHA256.hash(data: Data(password.utf8))).base64EncodedString()
    }
}
