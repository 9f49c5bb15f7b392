import Crypto
import Foundation
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Synchronization
import Testing

/// Access tokens (`Auth/TokenService.swift`, `Authenticator`): tokens made by hand, byte for
/// byte, so that every way of forging one is tried against the verifier: "none" and other
/// algorithms, tampered payloads and signatures, foreign keys, expiry at the second, missing
/// or malformed claims, and valid tokens of users who no longer match.
@Suite(.serialized) struct ServerTokenTests {
    static let secret = Array(String(repeating: "k", count: 40).utf8)
    static let user = User(id: EntityID(), organizationId: EntityID(), email: "kim@x.io", displayName: "Kim")

    static func service(_ secret: [UInt8] = secret, lifetime: Duration = .seconds(3600)) async throws -> TokenService {
        try await TokenService(secret: secret, lifetime: lifetime)
    }

    static func base64URL(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func json(_ object: [String: Any]) -> Data {
        try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    /// The claims a genuine token carries for `user`, valid for an hour from now.
    static func claims(_ user: User = user, now: Date = Date()) -> [String: Any] {
        let seconds = Int(now.timeIntervalSince1970)
        return ["sub": user.id.description, "org": user.organizationId.description, "iat": seconds, "exp": seconds + 3600]
    }

    enum Signature { case hs256, hs384, hs512, none, raw(String) }

    /// A token with exactly this header and payload, signed as asked with `key`.
    static func token(header: [String: Any] = ["alg": "HS256", "typ": "JWT"], payload: [String: Any], sign: Signature = .hs256, key: [UInt8] = secret) -> String {
        let input = base64URL(json(header)) + "." + base64URL(json(payload))
        let symmetric = SymmetricKey(data: key)
        let signature = switch sign {
        case .hs256: base64URL(Data(HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: symmetric)))
        case .hs384: base64URL(Data(HMAC<SHA384>.authenticationCode(for: Data(input.utf8), using: symmetric)))
        case .hs512: base64URL(Data(HMAC<SHA512>.authenticationCode(for: Data(input.utf8), using: symmetric)))
        case .none: ""
        case .raw(let text): text
        }
        return input + "." + signature
    }

    static func refused(_ tokens: TokenService, _ token: String) async -> Bool {
        do {
            _ = try await tokens.verify(token)
            return false
        } catch let error as ChatError {
            return error.code == .unauthorized
        } catch {
            return false
        }
    }

    /// The hand-made token is accepted when nothing is wrong with it: the refusals below are
    /// about what each one changes, not about the helper.
    @Test func aHandMadeGenuineTokenIsAccepted() async throws {
        let tokens = try await Self.service()
        let plain = Self.token(payload: Self.claims())
        #expect(try await tokens.verify(plain) == Identity(userId: Self.user.id, organizationId: Self.user.organizationId))
        let withKid = Self.token(header: ["alg": "HS256", "typ": "JWT", "kid": tokens.signingKeyId], payload: Self.claims())
        #expect(try await tokens.verify(withKid).userId == Self.user.id)
        let issued = try await tokens.issue(for: Self.user)
        #expect(try await tokens.verify(issued) == Identity(userId: Self.user.id, organizationId: Self.user.organizationId))
        #expect(TokenService.keyId(of: issued) == tokens.signingKeyId)
    }

    /// `alg: none` (with or without a signature part), and other algorithms signed with our
    /// own secret: all refused; only HS256 with the key verifies.
    @Test func otherAlgorithmsAndNoneAreRefused() async throws {
        let tokens = try await Self.service()
        let claims = Self.claims()
        let forged = [
            Self.token(header: ["alg": "none", "typ": "JWT"], payload: claims, sign: .none),
            Self.token(header: ["alg": "none"], payload: claims, sign: .none).dropLast().description,
            Self.token(header: ["alg": "None", "typ": "JWT"], payload: claims, sign: .none),
            Self.token(header: ["alg": "HS256", "typ": "JWT"], payload: claims, sign: .none),
            Self.token(header: ["alg": "HS384", "typ": "JWT"], payload: claims, sign: .hs384),
            Self.token(header: ["alg": "HS512", "typ": "JWT"], payload: claims, sign: .hs512),
            Self.token(header: ["alg": "HS256", "typ": "JWT"], payload: claims, sign: .hs512),
            Self.token(header: ["alg": "RS256", "typ": "JWT"], payload: claims, sign: .raw(Self.base64URL(Data(repeating: 1, count: 256)))),
            Self.token(header: ["alg": "ES256", "typ": "JWT"], payload: claims, sign: .raw(Self.base64URL(Data(repeating: 1, count: 64)))),
        ]
        for (n, token) in forged.enumerated() {
            #expect(await Self.refused(tokens, token), "forgery \(n)")
        }
    }

    /// A genuine token with any part of its payload changed (another user, another
    /// organization, a later expiry) keeps a signature that no longer matches.
    @Test func aTamperedPayloadIsRefused() async throws {
        let tokens = try await Self.service()
        let genuine = try await tokens.issue(for: Self.user)
        let parts = genuine.split(separator: ".").map(String.init)
        let original = try #require(JSONSerialization.jsonObject(with: Self.padded(parts[1])) as? [String: Any])
        var changes: [[String: Any]] = []
        let edits: [(String, Any)] = [("sub", EntityID().description), ("org", EntityID().description), ("exp", 9_999_999_999), ("iat", 1)]
        for (key, value) in edits {
            var changed = original
            changed[key] = value
            changes.append(changed)
        }
        var extra = original
        extra["admin"] = true
        changes.append(extra)
        for changed in changes {
            let tampered = parts[0] + "." + Self.base64URL(Self.json(changed)) + "." + parts[2]
            #expect(await Self.refused(tokens, tampered), "\(changed)")
        }
        // The same payload re-encoded differently (key order) is other bytes: refused too.
        let reordered = try JSONSerialization.data(withJSONObject: original, options: [])
        if Self.base64URL(reordered) != parts[1] {
            #expect(await Self.refused(tokens, parts[0] + "." + Self.base64URL(reordered) + "." + parts[2]))
        }
        #expect(try await tokens.verify(genuine).userId == Self.user.id, "the genuine one still works")
    }

    static func padded(_ base64URL: String) -> Data {
        var base64 = base64URL.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)!
    }

    /// Every single-byte change of the signature, a truncated or extended one, or another
    /// token's signature: refused.
    @Test func aTamperedSignatureIsRefused() async throws {
        let tokens = try await Self.service()
        let genuine = try await tokens.issue(for: Self.user)
        let parts = genuine.split(separator: ".").map(String.init)
        let signature = [UInt8](Self.padded(parts[2]))
        #expect(signature.count == 32)
        var forged: [String] = []
        for index in stride(from: 0, to: 32, by: 3) {
            var bytes = signature
            bytes[index] ^= 0x01
            forged.append(parts[0] + "." + parts[1] + "." + Self.base64URL(bytes))
        }
        forged.append(parts[0] + "." + parts[1] + "." + Self.base64URL(signature.dropLast()))
        forged.append(parts[0] + "." + parts[1] + "." + Self.base64URL(signature + [0]))
        forged.append(parts[0] + "." + parts[1] + ".")
        forged.append(parts[0] + "." + parts[1])
        let other = try await tokens.issue(for: User(id: EntityID(), organizationId: Self.user.organizationId, email: "o@x.io", displayName: "O"))
        forged.append(parts[0] + "." + parts[1] + "." + other.split(separator: ".")[2])
        for (n, token) in forged.enumerated() {
            #expect(await Self.refused(tokens, token), "forgery \(n)")
        }
    }

    /// Signed with another service's secret (however close to ours), refused; whatever kid
    /// it names.
    @Test func anotherKeysTokenIsRefused() async throws {
        let tokens = try await Self.service()
        var near = Self.secret
        near[near.count - 1] ^= 0x01
        // (Not `secret + [0]`: HMAC pads short keys with zeros, so that one is the same key.)
        for key in [near, Array(Self.secret.dropLast()), Self.secret + [1], Array(repeating: 0, count: 32)] {
            for header in [["alg": "HS256", "typ": "JWT"], ["alg": "HS256", "typ": "JWT", "kid": tokens.signingKeyId]] {
                #expect(await Self.refused(tokens, Self.token(header: header, payload: Self.claims(), key: key)))
            }
        }
    }

    /// Expiry is checked to the second against the verifier's clock: a second past `exp` is
    /// refused, a second before is accepted; a token issued by a node whose clock runs a few
    /// seconds ahead is still accepted (there is no not-before check to trip over).
    @Test func expiryIsExactAndAFastIssuerIsAccepted() async throws {
        let tokens = try await Self.service(lifetime: .seconds(600))
        let now = Int(Date().timeIntervalSince1970)
        func payload(iat: Int, exp: Int) -> [String: Any] {
            ["sub": Self.user.id.description, "org": Self.user.organizationId.description, "iat": iat, "exp": exp]
        }
        #expect(await Self.refused(tokens, Self.token(payload: payload(iat: now - 601, exp: now - 1))))
        #expect(await Self.refused(tokens, Self.token(payload: payload(iat: now - 7200, exp: now - 3600))))
        #expect(try await tokens.verify(Self.token(payload: payload(iat: now - 598, exp: now + 2))).userId == Self.user.id)
        #expect(try await tokens.verify(Self.token(payload: payload(iat: now + 5, exp: now + 605))).userId == Self.user.id)
        // Issued tokens carry the lifetime: one issued 601 s ago is dead, 590 s ago alive.
        #expect(await Self.refused(tokens, try await tokens.issue(for: Self.user, now: Date().addingTimeInterval(-601))))
        #expect(try await tokens.verify(try await tokens.issue(for: Self.user, now: Date().addingTimeInterval(-590))).userId == Self.user.id)
        let ahead = try await tokens.issue(for: Self.user, now: Date().addingTimeInterval(5))
        #expect(try await tokens.verify(ahead).userId == Self.user.id)
    }

    /// Claims missing, of the wrong type or not ids: refused even though correctly signed.
    @Test(arguments: [
        ("no sub", ["org": "ORG", "iat": 1, "exp": "EXP"]),
        ("no org", ["sub": "SUB", "iat": 1, "exp": "EXP"]),
        ("no exp", ["sub": "SUB", "org": "ORG", "iat": 1]),
        ("sub not an id", ["sub": "kim", "org": "ORG", "iat": 1, "exp": "EXP"]),
        ("org not an id", ["sub": "SUB", "org": "acme", "iat": 1, "exp": "EXP"]),
        ("exp a string", ["sub": "SUB", "org": "ORG", "iat": 1, "exp": "tomorrow"]),
        ("sub a number", ["sub": 42, "org": "ORG", "iat": 1, "exp": "EXP"]),
    ] as [(String, [String: any Sendable])])
    func malformedClaimsAreRefused(what: String, template: [String: any Sendable]) async throws {
        let tokens = try await Self.service()
        let exp = Int(Date().timeIntervalSince1970) + 3600
        var payload: [String: Any] = [:]
        for (key, value) in template {
            switch value as? String {
            case "SUB": payload[key] = Self.user.id.description
            case "ORG": payload[key] = Self.user.organizationId.description
            case "EXP": payload[key] = exp
            default: payload[key] = value
            }
        }
        #expect(await Self.refused(tokens, Self.token(payload: payload)), "\(what)")
    }

    /// Not a token at all, or oversized: refused before any work. An oversized genuine token
    /// (padded with an extra claim) is refused too, one just under the bound is accepted.
    @Test func garbageAndOversizedTokensAreRefused() async throws {
        let tokens = try await Self.service()
        for garbage in ["", ".", "..", "a.b.c", "a.b", "e30.e30.", "e30.e30.e30", "Bearer x", String(repeating: "a", count: 5000), "🙂.🙂.🙂"] {
            #expect(await Self.refused(tokens, garbage), "\(garbage.prefix(20))")
        }
        func padded(to length: Int) -> String {
            var claims = Self.claims()
            claims["pad"] = ""
            let base = Self.token(payload: claims).utf8.count
            claims["pad"] = String(repeating: "p", count: (length - base) * 3 / 4)
            return Self.token(payload: claims)
        }
        let small = padded(to: 4000)
        #expect(small.utf8.count < 4096)
        #expect(try await tokens.verify(small).userId == Self.user.id)
        let big = padded(to: 4200)
        #expect(big.utf8.count >= 4096)
        #expect(await Self.refused(tokens, big))
    }

    /// Forged tokens make the service read its keys again at most once a second, not once
    /// each (a flood of forgeries is not a flood of database reads).
    @Test func forgeriesDoNotEachReloadTheKeys() async throws {
        let key = SigningKey.derived(from: Self.secret, now: Date(timeIntervalSince1970: 0))
        let reloads = Mutex(0)
        let tokens = try await TokenService(keys: [key], lifetime: .seconds(3600)) {
            reloads.withLock { $0 += 1 }
            return [key]
        }
        let started = ContinuousClock.now
        for n in 0..<40 {
            let forged = Self.token(header: ["alg": "HS256", "kid": "unknown-\(n)"], payload: Self.claims(), key: Array(repeating: UInt8(n), count: 32))
            #expect(await Self.refused(tokens, forged))
        }
        let seconds = (ContinuousClock.now - started).timeInterval
        let count = reloads.withLock { $0 }
        #expect(count >= 1 && count <= Int(seconds) + 1, "\(count) reloads in \(seconds) s")
        #expect(try await tokens.verify(try await tokens.issue(for: Self.user)).userId == Self.user.id)
    }

    /// A key shorter than 32 bytes is refused when the service is made, so no weak key signs.
    @Test func shortSecretsAreRefused() async throws {
        await #expect(throws: ChatError.self) { _ = try await TokenService(secret: Array(repeating: 1, count: 31), lifetime: .seconds(60)) }
        let short = SigningKey(kid: "short", secret: Array(repeating: 1, count: 16), createdAt: Date())
        await #expect(throws: ChatError.self) { _ = try await TokenService(keys: [short], lifetime: .seconds(60), reload: nil) }
        let retired = SigningKey(kid: "old", secret: Self.secret, createdAt: Date(), retiredAt: Date())
        await #expect(throws: ChatError.self) { _ = try await TokenService(keys: [retired], lifetime: .seconds(60), reload: nil) }
    }

    // MARK: Through a real server

    static let serverSecret = String(repeating: "z", count: 40)

    /// Correctly signed tokens that no longer match a user: one whose `org` is not the
    /// user's (a user of one organization claiming another), one of a user who does not exist
    /// (deleted, or never was) and one of a deactivated user: all 401 on REST, and no
    /// WebSocket upgrade.
    @Test func validlySignedTokensOfMismatchedUsersAreRefused() async throws {
        let server = try await TestServer.start { $0.jwtSecret = Self.serverSecret }
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let admin = try await server.register("boss@other.io", organization: "other")
        let eve = try await server.register("eve@other.io", organization: "other")
        let key = Array(Self.serverSecret.utf8)
        var otherOrg = Self.claims(alice.auth.user)
        otherOrg["org"] = admin.auth.user.organizationId.description
        let ghost = User(id: EntityID(), organizationId: alice.auth.user.organizationId, email: "g@x.io", displayName: "G")
        try await admin.api.deactivate(eve.id)
        let forgedAnswer = try await Self.upgradeStatusLine(server, token: "forged.token.value")
        #expect(forgedAnswer.hasPrefix("HTTP/1.1 4"), "\(forgedAnswer)")
        let cases: [(String, String)] = [
            ("another organization", Self.token(payload: otherOrg, key: key)),
            ("no such user", Self.token(payload: Self.claims(ghost), key: key)),
            ("deactivated", eve.token),
        ]
        for (what, token) in cases {
            #expect(try await server.raw("GET", "users/me", token: token).status == 401, "\(what)")
            #expect(try await server.raw("GET", "conversations", token: token).status == 401, "\(what)")
            // Not upgraded: the same answer as a forged token gets (Hummingbird answers a
            // refused upgrade 400, whatever the reason).
            let line = try await Self.upgradeStatusLine(server, token: token)
            #expect(line == forgedAnswer && !line.hasPrefix("HTTP/1.1 101"), "\(what): WebSocket answered \(line)")
        }
        // The hand-made token with alice's own claims works: what was refused is the mismatch.
        let own = Self.token(payload: Self.claims(alice.auth.user), key: key)
        #expect(try await server.raw("GET", "users/me", token: own).status == 200)
        #expect(try await Self.upgradeStatusLine(server, token: own).hasPrefix("HTTP/1.1 101"))
    }

    /// The first line of the answer to a WebSocket upgrade with `?token=`.
    static func upgradeStatusLine(_ server: TestServer, token: String) async throws -> String {
        let socket = try RawSocket(port: server.port)
        socket.send(
            "GET /api/v1/ws?token=\(token) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        let received = Mutex(Data())
        try await waitFor("the upgrade's answer") {
            let (data, closed) = socket.drain()
            return received.withLock { all in
                all.append(data)
                return closed || String(decoding: all, as: UTF8.self).contains("\r\n")
            }
        }
        let text = received.withLock { String(decoding: $0, as: UTF8.self) }
        return text.components(separatedBy: "\r\n").first ?? ""
    }

    /// The `Authorization` header wins over `?token=`: a request with a non-bearer header is
    /// refused even if the query holds a valid token; the scheme is case-insensitive.
    @Test func theHeaderDecidesWhenPresent() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        // HTTP routes read the header only: a token in a URL ends up in proxies' and servers' logs.
        #expect(try await server.raw("GET", "users/me?token=\(alice.token)").status == 401)
        #expect(try await server.raw("GET", "users/me?token=\(alice.token)", headers: ["Authorization": "Basic Zm9vOmJhcg=="]).status == 401)
        #expect(try await server.raw("GET", "users/me", headers: ["Authorization": "bearer \(alice.token)"]).status == 200)
        #expect(try await server.raw("GET", "users/me", headers: ["Authorization": "BEARER \(alice.token)"]).status == 200)
        #expect(try await server.raw("GET", "users/me", headers: ["Authorization": "Bearer"]).status == 401)
        #expect(try await server.raw("GET", "users/me", headers: ["Authorization": "Bearer "]).status == 401)
        #expect(try await server.raw("GET", "users/me", headers: ["Authorization": alice.token]).status == 401)
        #expect(try await server.raw("GET", "users/me?token=").status == 401)
    }
}
