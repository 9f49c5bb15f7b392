import Foundation
import HummingbirdBcrypt
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

@Suite struct AuthTests {
    @Test func registerLoginAndMe() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("Alice@Example.com", organization: "Acme Corp", name: "Alice")
        #expect(alice.auth.user.email == "alice@example.com")
        #expect(alice.auth.user.displayName == "Alice")
        let login = try await server.api().login(
            LoginRequest(organization: "acme corp", email: " ALICE@example.com ", password: TestUser.password))
        #expect(login.user.id == alice.id)
        let me = try await server.api(token: login.token).me()
        #expect(me.id == alice.id && me.organizationId == alice.auth.user.organizationId)
    }

    @Test func registerAnswers201AndSecondRegistrationIsConflict() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let body = #"{"organization":"acme","email":"bob@x.io","password":"long enough pw","displayName":"Bob"}"#
        let first = try await server.raw("POST", "auth/register", json: body)
        #expect(first.status == 201)
        let second = try await server.raw("POST", "auth/register", json: body)
        #expect(second.status == 409 && errorCode(second.body) == .conflict)
        // The same email in another organization is another person.
        let other = try await server.raw("POST", "auth/register", json: body.replacingOccurrences(of: "acme", with: "globex"))
        #expect(other.status == 201)
    }

    @Test(arguments: [
        #"{"organization":"acme","email":"not-an-email","password":"long enough pw","displayName":"X"}"#,
        #"{"organization":"acme","email":"a@x.io","password":"short","displayName":"X"}"#,
        #"{"organization":"","email":"a@x.io","password":"long enough pw","displayName":"X"}"#,
        #"{"organization":"acme","email":"a@x.io","password":"long enough pw","displayName":"   "}"#,
        #"{"organization":"acme","email":"a@x.io","password":"long enough pw"}"#,
        #"{"organization":"acme","email":42,"password":"long enough pw","displayName":"X"}"#,
        #"not json"#,
        #""#,
    ])
    func invalidRegistrationsAreRejected(_ body: String) async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let answer = try await server.raw("POST", "auth/register", json: body)
        #expect(answer.status == 400)
        #expect(errorCode(answer.body) == .invalidRequest)
        let users = try await server.app.store.users(organizationId: EntityID(), matching: nil, limit: 10)
        #expect(users.isEmpty)
    }

    @Test func wrongPasswordAndUnknownUserLookTheSame() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        _ = try await server.register("carol@x.io")
        for body in [
            #"{"organization":"acme","email":"carol@x.io","password":"wrong password"}"#,
            #"{"organization":"acme","email":"nobody@x.io","password":"wrong password"}"#,
            #"{"organization":"nope","email":"carol@x.io","password":"correct horse battery"}"#,
        ] {
            let answer = try await server.raw("POST", "auth/login", json: body)
            #expect(answer.status == 401)
            let error = try WireCoding.makeDecoder().decode(ErrorBody.self, from: answer.body).error
            #expect(error == ErrorInfo(code: .unauthorized, message: "Invalid organization, email or password"))
        }
    }

    @Test func forgedMalformedAndMissingTokensAreUnauthorized() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let dave = try await server.register("dave@x.io")
        let parts = dave.token.split(separator: ".")
        // Same header and signature, payload claiming another user: the signature no longer matches.
        let forgedPayload = Data(#"{"sub":"\#(EntityID())","org":"\#(dave.auth.user.organizationId)","iat":1,"exp":9999999999}"#.utf8)
            .base64EncodedString().replacingOccurrences(of: "=", with: "")
        let forged = "\(parts[0]).\(forgedPayload).\(parts[2])"
        // A token signed with another secret.
        let stranger = try await TokenService(secret: Array(repeating: 7, count: 32), lifetime: .seconds(60))
        let foreign = try await stranger.issue(for: dave.auth.user)
        for token in [forged, foreign, "garbage", "a.b.c", String(repeating: "x", count: 5000)] {
            let answer = try await server.raw("GET", "users/me", token: token)
            #expect(answer.status == 401, "token \(token.prefix(20))")
            #expect(errorCode(answer.body) == .unauthorized)
        }
        let none = try await server.raw("GET", "conversations")
        #expect(none.status == 401 && errorCode(none.body) == .unauthorized)
        let basic = try await server.raw("GET", "users/me", headers: ["Authorization": "Basic Zm9vOmJhcg=="])
        #expect(basic.status == 401)
    }

    @Test func expiredTokensAreUnauthorized() async throws {
        let server = try await TestServer.start { $0.jwtSecret = String(repeating: "s", count: 40) }
        defer { Task { await server.stop() } }
        let erin = try await server.register("erin@x.io")
        let tokens = try await TokenService(secret: Array(String(repeating: "s", count: 40).utf8), lifetime: .seconds(60))
        let expired = try await tokens.issue(for: erin.auth.user, now: Date().addingTimeInterval(-3600))
        let answer = try await server.raw("GET", "users/me", token: expired)
        #expect(answer.status == 401)
        let fresh = try await tokens.issue(for: erin.auth.user)
        #expect(try await server.raw("GET", "users/me", token: fresh).status == 200)
    }

    @Test func passwordsAreStoredAsBcryptHashesOnly() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        _ = try await server.register("gina@x.io")
        let database = try Data(contentsOf: URL(fileURLWithPath: server.dataDirectory + "/parley.sqlite"))
        let wal = (try? Data(contentsOf: URL(fileURLWithPath: server.dataDirectory + "/parley.sqlite-wal"))) ?? Data()
        for blob in [database, wal] {
            #expect(blob.range(of: Data(TestUser.password.utf8)) == nil)
        }
        let stored = try await server.app.store.credentials(organization: "acme", email: "gina@x.io")
        #expect(stored?.passwordHash.hasPrefix(PasswordHasher.prehashPrefix + "$2") == true)
    }

    /// bcrypt reads 72 bytes: passwords that differ only after that must not open each
    /// other's account; a hash made before the digest step still verifies.
    @Test func passwordsLongerThanBcryptReadsAreCheckedWhole() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let long = String(repeating: "p", count: 80) + "-right"
        let sameStart = String(repeating: "p", count: 80) + "-wrong"
        let body = try JSONSerialization.data(withJSONObject: [
            "organization": "acme", "email": "long@x.io", "password": long, "displayName": "Long",
        ])
        #expect(try await server.raw("POST", "auth/register", body: body).status == 201)
        let api = server.api()
        _ = try await api.login(.init(organization: "acme", email: "long@x.io", password: long))
        await #expect(throws: ClientError.self, "the first 72 bytes are not the password") {
            _ = try await api.login(.init(organization: "acme", email: "long@x.io", password: sameStart))
        }
        // An account from before: its plain bcrypt hash is still checked as it was made.
        let hasher = PasswordHasher(cost: 4)
        let legacy = Bcrypt.hash(TestUser.password, cost: 4)
        #expect(try await hasher.verify(TestUser.password, hash: legacy))
        #expect(try await !hasher.verify("not the password", hash: legacy))
        let fresh = try await hasher.hash(TestUser.password)
        #expect(try await hasher.verify(TestUser.password, hash: fresh))
        #expect(try await !hasher.verify(TestUser.password + "x", hash: fresh))
    }
}
