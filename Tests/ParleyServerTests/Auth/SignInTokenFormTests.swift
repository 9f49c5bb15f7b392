import Foundation
import ParleyProtocol
@testable import ParleyServer
import Testing

/// The pieces of a sign-in that need no store (`Auth/SignInSessions.swift`,
/// `Auth/SessionRevocations.swift`, `Auth/PasswordHasher.swift`): the refresh token's form and
/// what the server refuses to even look up, the label kept from a User-Agent, a logout known at
/// once on its own node, and passwords compared by every byte.
@Suite struct SignInTokenFormTests {
    static let session = EntityID()

    // MARK: Refresh tokens

    /// A new token is `<session>.<secret>`: it parses back to both, and the store keeps the
    /// secret's SHA-256 (never the secret).
    @Test func aNewRefreshTokenParsesBackToItsSessionAndSecret() throws {
        let (token, hash) = SignInSessions.newRefreshToken(sessionId: "\(Self.session)")
        let parsed = try #require(SignInSessions.parse(token))
        #expect(parsed.id == "\(Self.session)")
        #expect(parsed.secret.count == 43 && token == "\(Self.session).\(parsed.secret)")
        #expect(SignInSessions.hash(parsed.secret) == hash && hash != parsed.secret)
        let other = SignInSessions.newRefreshToken(sessionId: "\(Self.session)")
        #expect(other.token != token && other.hash != hash, "every token has its own secret")
    }

    /// SHA-256 in lowercase hex: the published test vectors.
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    ])
    func secretsAreHashedWithSHA256(secret: String, hex: String) {
        #expect(SignInSessions.hash(secret) == hex)
    }

    /// What is not a refresh token is refused before any lookup: the wrong shape, a session
    /// that is not an id, a secret too short or outside base64url, anything over 200 bytes.
    @Test(arguments: [
        "", ".", "no-dot-at-all", "\(session)", "\(session).", ".\(String(repeating: "a", count: 43))",
        "not-an-id.\(String(repeating: "a", count: 43))", "\(session).\(String(repeating: "a", count: 31))",
        "\(session).\(String(repeating: "a", count: 40))+", "\(session).\(String(repeating: "a", count: 40))/=",
        "\(session).\(String(repeating: "é", count: 40))", "\(session).\(String(repeating: "a", count: 40)) x",
        "\(session).\(String(repeating: "a", count: 43)).extra", "\(session).\(String(repeating: "a", count: 164))",
        "\(session)\u{0}.\(String(repeating: "a", count: 43))",
    ])
    func malformedRefreshTokensAreRefused(token: String) {
        #expect(SignInSessions.parse(token) == nil)
    }

    /// The bounds themselves: a 32-character secret, a token of exactly 200 bytes, an id in
    /// capitals (ids are read in either case).
    @Test func theBoundsThemselvesAreAccepted() throws {
        let id = "\(Self.session)"
        #expect(SignInSessions.parse("\(id).\(String(repeating: "a", count: 32))")?.secret.count == 32)
        let longest = "\(id).\(String(repeating: "b", count: 200 - id.count - 1))"
        #expect(longest.utf8.count == 200 && SignInSessions.parse(longest) != nil)
        #expect(SignInSessions.parse("\(id.uppercased()).\(String(repeating: "-_9Z", count: 8))") != nil)
    }

    // MARK: Labels

    /// A sign-in's label is what its User-Agent said, trimmed, cut to 120 characters, with
    /// controls and direction overrides made visible (it is shown in the list of sign-ins).
    @Test(arguments: [
        ("Parley/1.2 (iPhone; iOS 18.1)", "Parley/1.2 (iPhone; iOS 18.1)"), ("  curl/8.5.0 \n", "curl/8.5.0"),
        ("evil\u{1B}[2J", "evil\u{FFFD}[2J"), ("a\u{202E}b", "a\u{FFFD}b"), ("a\tb", "a b"), ("a\nb", "a\u{FFFD}b"),
        ("Chrome \u{9B}31m", "Chrome \u{FFFD}31m"),
    ] as [(String, String)])
    func labelsAreTheUserAgentMadeHarmless(userAgent: String, label: String) {
        #expect(SignInSessions.label(userAgent) == label)
    }

    @Test func labelsAreCutAndEmptyOnesAreNone() {
        #expect(SignInSessions.label(nil) == nil)
        #expect(SignInSessions.label("") == nil && SignInSessions.label(" \t\n ") == nil)
        #expect(SignInSessions.label(String(repeating: "x", count: 120)) == String(repeating: "x", count: 120))
        #expect(SignInSessions.label(String(repeating: "x", count: 121)) == String(repeating: "x", count: 120))
        #expect(SignInSessions.label(String(repeating: "👍🏽", count: 200)) == String(repeating: "👍🏽", count: 120), "characters, never half an emoji")
    }

    // MARK: Revocations on this node

    /// A logout is refused here at once, for its session only; reloading without a store (a
    /// token service on its own) keeps what this node knows.
    @Test func aRevokedSessionIsRefusedAtOnceAndOnlyIt() async throws {
        let revocations = SessionRevocations(store: nil)
        #expect(!revocations.isRevoked("s1"))
        try await revocations.revoke("s1", userId: EntityID(), expiresAt: Date().addingTimeInterval(600))
        #expect(revocations.isRevoked("s1"))
        #expect(!revocations.isRevoked("s2") && !revocations.isRevoked("S1") && !revocations.isRevoked(""))
        try await revocations.reload()
        revocations.refreshIfStale()
        #expect(revocations.isRevoked("s1"))
    }

    // MARK: Passwords

    /// Every byte of a password counts: a NUL inside it (which would end a C string) or a
    /// difference past bcrypt's 72 bytes makes another password; a hash is salted.
    @Test func passwordsAreComparedByEveryByte() async throws {
        let hasher = PasswordHasher(cost: 4)
        let withNul = try await hasher.hash("correct\u{0}horse")
        #expect(withNul.hasPrefix(PasswordHasher.prehashPrefix))
        #expect(try await hasher.verify("correct\u{0}horse", hash: withNul))
        #expect(try await !hasher.verify("correct", hash: withNul))
        let long = String(repeating: "é", count: 40)  // 80 bytes
        let longHash = try await hasher.hash(long + "a")
        #expect(try await !hasher.verify(long + "b", hash: longHash))
        let again = try await hasher.hash(long + "a")
        #expect(again != longHash, "salted")
        #expect(try await hasher.verify(long + "a", hash: again))
    }

    /// The digest bcrypt sees is 44 ASCII bytes whatever the password, under bcrypt's 72,
    /// and differs for composed and decomposed accents (bytes, not looks, are the password).
    @Test func theDigestIsShortASCIIAndByteExact() {
        for password in ["", "a", String(repeating: "x", count: 10_000), "пароль🔑"] {
            let digest = PasswordHasher.digest(password)
            #expect(digest.utf8.count == 44 && digest.allSatisfy { $0.isASCII } && !digest.contains("\u{0}"))
        }
        #expect(PasswordHasher.digest("caf\u{E9}") != PasswordHasher.digest("cafe\u{301}"))
        #expect(PasswordHasher.digest("abc") == Data(hex: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad").base64EncodedString())
    }
}

extension Data {
    /// Bytes from an even-length hex string (test vectors).
    fileprivate init(hex: String) {
        let digits = Array(hex.utf8)
        self.init(stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)! })
    }
}
