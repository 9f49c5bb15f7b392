import Foundation
import GRDB
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing
@testable import ParleySQLite

/// Organizations nobody walks into: the founder is admin; an existing
/// organization admits by invite or allowed domain only; admins manage roles and deactivate.
@Suite struct OrganizationTests {
    static func closed(_ kind: StoreKind = .sqlite) async throws -> TestServer {
        try await TestServer.start(store: kind) { $0.openOrganizations = false }
    }

    static func register(_ server: TestServer, _ email: String, organization: String = "Corp", invite: String? = nil) async throws -> TestUser {
        let auth = try await server.api().register(RegisterRequest(
            organization: organization, email: email, password: TestUser.password,
            displayName: String(email.prefix { $0 != "@" }).capitalized, inviteCode: invite))
        return TestUser(server: server, auth: auth)
    }

    static func refused(_ server: TestServer, _ email: String, organization: String = "Corp", invite: String? = nil) async -> ErrorCode? {
        do {
            _ = try await register(server, email, organization: organization, invite: invite)
            return nil
        } catch let error as ClientError {
            return error.code
        } catch {
            return .internal
        }
    }

    /// Invite codes are typed into command lines: none may start with `-` (it would read as an
    /// option), and they stay 43 characters of base64url.
    @Test func inviteCodesNeverLookLikeAnOption() {
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let codes = (0..<5_000).map { _ in Membership.newInviteCode() }
        #expect(codes.allSatisfy { !$0.hasPrefix("-") && $0.count == 43 && $0.allSatisfy(alphabet.contains) })
        #expect(Set(codes).count == codes.count)
    }

    @Test(arguments: StoreKind.available)
    func theFounderIsAdminAndStrangersAndLookalikeDomainsAreRefused(_ kind: StoreKind) async throws {
        let server = try await Self.closed(kind)
        defer { Task { await server.stop() } }
        let founder = try await Self.register(server, "founder@corp.test")
        #expect(founder.auth.user.role == .admin)
        #expect(try await founder.api.me().role == .admin)
        #expect(await Self.refused(server, "stranger@elsewhere.test") == .forbidden)
        #expect(await Self.refused(server, "stranger@elsewhere.test", organization: "CORP") == .forbidden, "the name is matched without case")
        // Allowed domains admit their own addresses, matched on the whole domain.
        let organization = try await founder.api.setAllowedEmailDomains(["Corp.Test", "@corp.test"])
        #expect(organization.allowedEmailDomains == ["corp.test"])
        let bob = try await Self.register(server, "bob@corp.test")
        #expect(bob.auth.user.role == .member)
        for lookalike in ["eve@corp.test.evil.test", "eve@evilcorp.test", "eve@sub.corp.test", "eve@corp.testx"] {
            #expect(await Self.refused(server, lookalike) == .forbidden, "\(lookalike)")
        }
        // Refused attempts wrote nothing: the directory has the two members only.
        #expect(try await founder.api.users().map(\.email).sorted() == ["bob@corp.test", "founder@corp.test"])
        // Members read the organization but cannot change it.
        #expect(try await bob.api.organization().name == "Corp")
        await #expect(throws: ClientError.self) { _ = try await bob.api.setAllowedEmailDomains(["evil.test"]) }
        let bad = try await server.raw("PATCH", "organization", token: founder.token, json: #"{"allowedEmailDomains":["not a domain"]}"#)
        #expect(bad.status == 400)
    }

    @Test(arguments: StoreKind.available)
    func invitesAdmitAsManyAsTheySayAndOnlyWhomTheyName(_ kind: StoreKind) async throws {
        let server = try await Self.closed(kind)
        defer { Task { await server.stop() } }
        let admin = try await Self.register(server, "admin@corp.test")
        let single = try await admin.api.createInvite()
        #expect(single.maxUses == 1 && single.uses == 0 && single.code.count >= 40)
        let carol = try await Self.register(server, "carol@elsewhere.test", invite: single.code)
        #expect(carol.auth.user.role == .member)
        #expect(await Self.refused(server, "dave@elsewhere.test", invite: single.code) == .forbidden, "single use")
        #expect(try await admin.api.invites().first { $0.code == single.code }?.uses == 1)
        // An invite naming an address admits that address only.
        let named = try await admin.api.createInvite(.init(email: "erin@elsewhere.test"))
        #expect(await Self.refused(server, "frank@elsewhere.test", invite: named.code) == .forbidden)
        _ = try await Self.register(server, "Erin@Elsewhere.test", invite: named.code)
        // Withdrawn and expired invites admit nobody; neither does another organization's.
        let withdrawn = try await admin.api.createInvite(.init(maxUses: 5))
        try await admin.api.deleteInvite(withdrawn.code)
        #expect(await Self.refused(server, "gina@elsewhere.test", invite: withdrawn.code) == .forbidden)
        let expired = Invite(
            code: Membership.newInviteCode(), organizationId: admin.auth.user.organizationId, email: nil, maxUses: 5, uses: 0,
            expiresAt: Date().addingTimeInterval(-60), createdBy: admin.id)
        try await server.app.store.createInvite(expired)
        #expect(await Self.refused(server, "hank@elsewhere.test", invite: expired.code) == .forbidden)
        let other = try await Self.register(server, "boss@other.test", organization: "Other")
        let foreign = try await other.api.createInvite()
        #expect(await Self.refused(server, "ivan@elsewhere.test", invite: foreign.code) == .forbidden)
        // Members cannot invite, list or withdraw invites.
        for (method, path) in [("POST", "organization/invites"), ("GET", "organization/invites"), ("DELETE", "organization/invites/\(single.code)")] {
            let answer = method == "POST"
                ? try await server.raw(method, path, token: carol.token, json: "{}") : try await server.raw(method, path, token: carol.token)
            #expect(answer.status == 403 && errorCode(answer.body) == .forbidden, "\(method) \(path)")
        }
    }

    /// Two registrations racing for the last use of an invite: exactly one gets in.
    @Test(arguments: StoreKind.available)
    func concurrentUsesOfASingleUseInviteAdmitOne(_ kind: StoreKind) async throws {
        let server = try await Self.closed(kind)
        defer { Task { await server.stop() } }
        let admin = try await Self.register(server, "admin@corp.test")
        let invite = try await admin.api.createInvite()
        let outcomes = await withTaskGroup(of: ErrorCode?.self) { group in
            for n in 0..<8 { group.addTask { await Self.refused(server, "racer\(n)@elsewhere.test", invite: invite.code) } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 == nil }.count == 1 && outcomes.filter { $0 == .forbidden }.count == 7, "\(outcomes)")
        #expect(try await admin.api.invites().first?.uses == 1)
    }

    @Test(arguments: StoreKind.available)
    func rolesChangeButAnOrganizationKeepsAnAdmin(_ kind: StoreKind) async throws {
        let server = try await Self.closed(kind)
        defer { Task { await server.stop() } }
        let admin = try await Self.register(server, "admin@corp.test")
        _ = try await admin.api.setAllowedEmailDomains(["corp.test"])
        let bob = try await Self.register(server, "bob@corp.test")
        await #expect(throws: ClientError.self) { _ = try await bob.api.setRole(.admin, of: bob.id) }
        let last = try await server.raw("PATCH", "users/\(admin.id)", token: admin.token, json: #"{"role":"member"}"#)
        #expect(last.status == 409 && errorCode(last.body) == .conflict)
        #expect(try await admin.api.setRole(.admin, of: bob.id).role == .admin)
        #expect(try await bob.api.setRole(.member, of: admin.id).role == .member, "two admins: one may step down")
        let selfRemoval = try await server.raw("DELETE", "users/\(bob.id)", token: bob.token)
        #expect(selfRemoval.status == 409, "the last admin cannot deactivate themselves")
        let outsider = try await Self.register(server, "boss@other.test", organization: "Other")
        let foreign = try await server.raw("PATCH", "users/\(outsider.id)", token: bob.token, json: #"{"role":"member"}"#)
        #expect(foreign.status == 404, "another organization's user does not exist here")
    }

    /// Deactivation takes effect everywhere at once: HTTP, the open WebSocket (4001), login,
    /// the directory and presence, push devices; the user's messages stay.
    @Test(arguments: StoreKind.available)
    func deactivationTakesEffectEverywhereAndKeepsTheMessages(_ kind: StoreKind) async throws {
        let server = try await Self.closed(kind)
        defer { Task { await server.stop() } }
        let admin = try await Self.register(server, "admin@corp.test")
        _ = try await admin.api.setAllowedEmailDomains(["corp.test"])
        let bob = try await Self.register(server, "bob@corp.test")
        let direct = try await admin.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        let sent = try await bob.api.send(.init(clientMessageId: "before", text: "I was here"), to: direct.id)
        try await bob.api.registerDevice(token: String(repeating: "ab", count: 32), environment: .sandbox)
        let adminSocket = try await admin.connect()
        let adminEvents = EventRecorder(adminSocket)
        let bobSocket = try await bob.connect()
        let bobEvents = EventRecorder(bobSocket)

        try await admin.api.deactivate(bob.id)
        #expect(try await server.raw("GET", "users/me", token: bob.token).status == 401)
        try await bobEvents.waitUntilFinished(timeout: .seconds(5))
        #expect(await bobSocket.closeCode == 4001)
        await #expect(throws: ClientError.self) { _ = try await server.api().login(.init(organization: "Corp", email: "bob@corp.test", password: TestUser.password)) }
        await #expect(throws: ClientError.self) { _ = try await bob.api.refresh() }
        #expect(try await admin.api.users().map(\.id) == [admin.id])
        try await adminEvents.wait("bob offline") { events in
            events.contains { if case .presence(let p) = $0 { p.userId == bob.id && !p.isOnline } else { false } }
        }
        #expect(try await server.app.store.devices(userId: bob.id).isEmpty)
        #expect(try await admin.api.messages(direct.id).messages.contains(sent), "the messages stay")
        let again = try await server.raw("DELETE", "users/\(bob.id)", token: admin.token)
        #expect(again.status == 404)
        await adminSocket.close()
    }

    /// On two nodes of one PostgreSQL: a deactivation on A closes the user's socket on B and
    /// B refuses the token.
    @Test(.needsPostgres)
    func deactivationReachesEveryNode() async throws {
        let a = try await TestServer.start(store: .postgres) { $0.openOrganizations = false }
        let url = try #require(a.database?.url)
        let b = try await TestServer.start { $0.databaseURL = url; $0.openOrganizations = false }
        defer { Task { await b.stop(); await a.stop() } }
        for node in [a, b] { try await #require(node.app.cluster).waitUntilListening() }
        let admin = try await Self.register(a, "admin@corp.test")
        _ = try await admin.api.setAllowedEmailDomains(["corp.test"])
        let bob = try await Self.register(b, "bob@corp.test")
        #expect(try await b.api(token: bob.token).me().id == bob.id, "B has Bob's state cached as active")
        let socket = RealtimeConnection(serverURL: b.baseURL, token: bob.token)
        _ = try await socket.connect()
        let events = EventRecorder(socket)
        try await admin.api.deactivate(bob.id)
        try await events.waitUntilFinished(timeout: .seconds(5))
        #expect(await socket.closeCode == 4001)
        #expect(try await b.raw("GET", "users/me", token: bob.token).status == 401)
    }

    @Test func refreshGivesAFreshTokenThatWorks() async throws {
        let server = try await Self.closed()
        defer { Task { await server.stop() } }
        let admin = try await Self.register(server, "admin@corp.test")
        let fresh = try await admin.api.refresh()
        #expect(fresh.user.id == admin.id && !fresh.token.isEmpty)
        #expect(try await server.api(token: fresh.token).me().id == admin.id)
    }

    /// The SDK renews a token within the last third of its life, says so for the app to keep
    /// it, and the open connection carries on under it.
    @Test func theClientRenewsItsTokenBeforeItExpires() async throws {
        // Tokens issued now by the server's clock have 4 of their 15 minutes left.
        let clock = ManualClock(start: Date().addingTimeInterval(-11 * 60))
        let server = try await TestServer.start { $0.clock = clock.serverClock }
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let credentials = SessionCredentials(SessionTokens(alice.auth))
        let transport = LiveTransport(serverURL: server.baseURL, credentials: credentials)
        let before = try #require(transport.tokenExpiresAt)
        let client = ChatClient(transport: transport, database: try LocalDatabase.inMemory(), userId: alice.id, pollInterval: .seconds(3600))
        let changes = await client.changes()
        clock.advance(by: 11 * 60)
        await client.synchronize()
        var renewed: SessionTokens?
        for await change in changes {
            if case .tokenRenewed(let tokens) = change { renewed = tokens; break }
        }
        let tokens = try #require(renewed)
        #expect(tokens.token != alice.token && transport.api.currentToken == tokens.token)
        #expect(tokens.refreshToken != nil && tokens.refreshToken != alice.auth.refreshToken, "the refresh token rotated")
        #expect(try #require(transport.tokenExpiresAt) > before)
        #expect(try await server.api(token: tokens.token).me().id == alice.id)
        await client.stop()
    }

    /// Databases from before roles: the first user of each organization becomes its admin.
    @Test func theMigrationMakesTheFirstUserOfEachOrganizationItsAdmin() async throws {
        let path = TestServer.temporaryDirectory() + "/old.sqlite"
        let pool = try DatabasePool(path: path)
        try SQLiteSchema.migrator.migrate(pool, upTo: "v6-health")
        try await pool.write { db in
            try db.execute(sql: "INSERT INTO organizations (id, name, name_key, created_at) VALUES (?, 'A', 'a', 1), (?, 'B', 'b', 1)",
                           arguments: [EntityID().description, EntityID().description])
            let orgs = try String.fetchAll(db, sql: "SELECT id FROM organizations ORDER BY name")
            for (index, (org, created)) in [(orgs[0], 10), (orgs[0], 5), (orgs[1], 7)].enumerated() {
                try db.execute(
                    sql: "INSERT INTO users (id, organization_id, email, display_name, password_hash, created_at) VALUES (?, ?, ?, 'U', 'h', ?)",
                    arguments: [EntityID().description, org, "u\(index)@x.io", created])
            }
        }
        try pool.close()
        let store = try SQLiteStore(path: path)
        let admins = try await store.writer.read { db in
            try String.fetchAll(db, sql: "SELECT email FROM users WHERE role = 'admin' ORDER BY email")
        }
        #expect(admins == ["u1@x.io", "u2@x.io"])
        try await store.close()
    }
}
