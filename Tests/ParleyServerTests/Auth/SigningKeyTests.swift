import Crypto
import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Synchronization
import Testing

/// Token signing keys shared through the store: one key for every node, created once, rotated
/// without signing anyone out, retired so its tokens stop working.
@Suite struct SigningKeyTests {
    private static let user = User(
        id: EntityID(), organizationId: EntityID(), email: "kim@x.io", displayName: "Kim", isOnline: false, lastSeenAt: nil)

    @Test(arguments: StoreKind.available)
    func storesAgreeOnOneKeyEvenWhenStartedTogether(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, fixture in
            #expect(try await store.signingKeys().isEmpty)
            // Eight nodes starting at once, each with its own candidate: one key wins for all.
            let second = try await fixture.open()
            let results = try await withThrowingTaskGroup(of: [SigningKey].self) { group in
                for index in 0..<8 {
                    let target = index.isMultiple(of: 2) ? store : second
                    group.addTask { try await target.ensureSigningKey(.generate(now: Date())) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            try await second.close()
            let keys = try await store.signingKeys()
            #expect(keys.count == 1)
            #expect(results.allSatisfy { $0 == keys })

            // Rotation adds a key; retiring one leaves the others; a retired key is not retired twice.
            let rotated = SigningKey.generate(now: Date().addingTimeInterval(1))
            try await store.addSigningKey(rotated)
            #expect(try await store.ensureSigningKey(.generate(now: Date())).count == 2, "a live key exists: nothing added")
            #expect(try await store.retireSigningKey(kid: keys[0].kid, at: Date()))
            #expect(try await !store.retireSigningKey(kid: keys[0].kid, at: Date()))
            #expect(try await !store.retireSigningKey(kid: "no-such-kid", at: Date()))
            let after = try await store.signingKeys()
            #expect(after.map(\.kid) == [keys[0].kid, rotated.kid])
            #expect(after[0].retiredAt != nil && after[1].isLive && after[1].secret == rotated.secret)
        }
    }

    @Test func rotationKeepsOldTokensUntilTheOldKeyIsRetired() async throws {
        let first = SigningKey.generate(now: Date(timeIntervalSince1970: 100))
        let keys = KeyBox([first])
        let tokens = try await TokenService(keys: [first], lifetime: .seconds(3600), reload: { keys.value })
        let old = try await tokens.issue(for: Self.user)
        #expect(TokenService.keyId(of: old) == first.kid)

        // Another node rotates: a token it signs with the new key is accepted here at once
        // (an unknown kid makes this node read the keys again).
        let second = SigningKey.generate(now: Date(timeIntervalSince1970: 200))
        keys.value.append(second)
        let otherNode = try await TokenService(keys: keys.value, lifetime: .seconds(3600), reload: nil)
        let new = try await otherNode.issue(for: Self.user)
        #expect(TokenService.keyId(of: new) == second.kid)
        #expect(try await tokens.verify(new).userId == Self.user.id)
        // This node now signs with the newest key too, and the old token still works.
        #expect(tokens.signingKeyId == second.kid)
        #expect(try await tokens.verify(old).userId == Self.user.id)

        // Retired: the old key's tokens stop working once the node has read the keys.
        keys.value[0].retiredAt = Date()
        try await tokens.reloadKeys()
        await #expect(throws: ChatError.self) { try await tokens.verify(old) }
        #expect(try await tokens.verify(new).userId == Self.user.id)
    }

    @Test func tokensOfUnknownOrForeignKeysAreRefused() async throws {
        let mine = SigningKey.generate(now: Date())
        let tokens = try await TokenService(keys: [mine], lifetime: .seconds(3600), reload: { [mine] })
        // A stranger's key that claims our kid, and one with a kid we never had.
        var impostor = SigningKey.generate(now: Date())
        impostor.kid = mine.kid
        let strangers = [impostor, SigningKey.generate(now: Date())]
        for stranger in strangers {
            let forged = try await TokenService(keys: [stranger], lifetime: .seconds(3600), reload: nil).issue(for: Self.user)
            await #expect(throws: ChatError.self) { try await tokens.verify(forged) }
        }
        #expect(TokenService.keyId(of: "garbage") == nil)
        #expect(TokenService.keyId(of: "e30.e30.x") == nil, "{} has no kid")
    }

    /// A data directory from before shared keys: its `jwt-secret` file becomes the first key, so
    /// tokens it signed (without a kid) stay valid after the upgrade.
    @Test func aLegacySecretFileIsImportedAndItsTokensStayValid() async throws {
        let directory = TestServer.temporaryDirectory()
        let legacy = String(repeating: "legacy-secret-", count: 4)
        try Data(legacy.utf8).write(to: URL(fileURLWithPath: directory + "/jwt-secret"))
        let server = try await TestServer.start(dataDirectory: directory)
        defer { Task { await server.stop() } }
        let kim = try await server.register("kim@x.io")
        // A token as the previous version signed it: HS256 with the file's secret, no kid.
        let oldStyle = try await LegacySigner.token(secret: legacy, user: kim.auth.user)
        #expect(TokenService.keyId(of: oldStyle) == nil)
        #expect(try await server.api(token: oldStyle).me().id == kim.id)
        let keys = try await server.app.store.signingKeys()
        #expect(keys.count == 1 && keys[0].secret == Array(legacy.utf8))
    }

    @Test func keysSurviveARestartOfTheSameDataDirectory() async throws {
        let directory = TestServer.temporaryDirectory()
        let first = try await TestServer.start(dataDirectory: directory)
        let frank = try await first.register("frank@x.io")
        await first.stop()
        let second = try await TestServer.start(dataDirectory: directory)
        defer { Task { await second.stop() } }
        #expect(try await second.api(token: frank.token).me().id == frank.id)
        #expect(!FileManager.default.fileExists(atPath: directory + "/jwt-secret"), "the keys live in the database now")
    }

    /// Two nodes on one PostgreSQL, neither given PARLEY_JWT_SECRET: a token from one works on
    /// the other, and so does a key rotated on the database while both run.
    @Test(.needsPostgres)
    func nodesWithoutASharedSecretAcceptEachOthersTokens() async throws {
        let a = try await TestServer.start(store: .postgres)
        let url = try #require(a.database?.url)
        let b = try await TestServer.start { $0.databaseURL = url }
        defer { Task { await b.stop(); await a.stop() } }
        let alice = try await a.register("alice@x.io")
        #expect(try await b.api(token: alice.token).me().id == alice.id)

        let rotated = SigningKey.generate(now: Date().addingTimeInterval(1))
        try await a.app.store.addSigningKey(rotated)
        try await a.app.tokens.reloadKeys()
        let fresh = try await a.api().login(.init(organization: "acme", email: "alice@x.io", password: TestUser.password))
        #expect(TokenService.keyId(of: fresh.token) == rotated.kid)
        #expect(try await b.api(token: fresh.token).me().id == alice.id, "B learns the new key when a token names it")
        #expect(try await b.api(token: alice.token).me().id == alice.id, "the old key still verifies")
    }
}

/// Keys a test changes while a token service reads them.
private final class KeyBox: Sendable {
    private let keys: Mutex<[SigningKey]>
    init(_ value: [SigningKey]) { keys = Mutex(value) }
    var value: [SigningKey] {
        get { keys.withLock { $0 } }
        set { keys.withLock { $0 = newValue } }
    }
}

/// Signs a token the way versions before shared keys did: HS256, no kid.
private enum LegacySigner {
    static func token(secret: String, user: User) async throws -> String {
        // The fixed-secret service signs with a derived kid; strip it by re-signing by hand.
        let header = Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8)
        let now = Int(Date().timeIntervalSince1970)
        let payload = Data(#"{"sub":"\#(user.id)","org":"\#(user.organizationId)","iat":\#(now),"exp":\#(now + 3600)}"#.utf8)
        let input = base64URL(header) + "." + base64URL(payload)
        let signature = HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return input + "." + base64URL(Data(signature))
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
