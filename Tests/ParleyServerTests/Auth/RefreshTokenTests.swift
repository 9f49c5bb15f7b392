import Foundation
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Synchronization
import Testing

/// Short-lived access tokens renewed by rotating refresh tokens: each renewal
/// answers a new pair and spends the old refresh token; a spent token presented again after
/// the grace ends the whole sign-in; logout, the user from another device and an admin end
/// sign-ins; a WebSocket carries on under a renewed token (`auth`); the SDK, the command line's
/// profile and the web client renew without the user noticing.
@Suite struct RefreshTokenTests {
    /// A server whose clock the test moves (the grace is 60 s; nobody waits for it).
    static func server(_ clock: ManualClock, store: StoreKind = .sqlite) async throws -> TestServer {
        try await TestServer.start(store: store) { $0.clock = clock.serverClock }
    }

    static func refresh(_ server: TestServer, _ refreshToken: String) async throws -> (status: Int, auth: AuthResponse?, body: Data) {
        let answer = try await server.raw("POST", "auth/refresh", json: #"{"refreshToken":"\#(refreshToken)"}"#)
        return (answer.status, try? WireCoding.makeDecoder().decode(AuthResponse.self, from: answer.body), answer.body)
    }

    @Test func loginAnswersAShortLivedTokenAndARefreshTokenThatRotates() async throws {
        let clock = ManualClock()
        let server = try await Self.server(clock)
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let first = try #require(alice.auth.refreshToken)
        let expiresAt = try #require(alice.auth.expiresAt)
        #expect(abs(expiresAt.timeIntervalSince(clock.now()) - 15 * 60) < 2, "access tokens live 15 minutes")
        #expect(abs(try #require(alice.auth.refreshExpiresAt).timeIntervalSince(clock.now()) - 30 * 86400) < 2)
        // The store keeps a hash, never the token.
        let stored = try #require(try await server.app.store.signInSession(id: String(first.prefix { $0 != "." })))
        #expect(!stored.tokenHash.contains(String(first.split(separator: ".")[1])) && stored.tokenHash.count == 64)

        clock.advance(by: 600)
        let renewed = try await Self.refresh(server, first)
        #expect(renewed.status == 200)
        let second = try #require(renewed.auth)
        #expect(second.user.id == alice.id && second.token != alice.token)
        #expect(try #require(second.refreshToken) != first)
        #expect(try #require(second.refreshExpiresAt) > alice.auth.refreshExpiresAt!, "using it moves the refresh expiry on")
        #expect(try await server.api(token: second.token).me().id == alice.id)
        // The same sign-in: the renewed token carries the session's id.
        let sessions = try await server.api(token: second.token).signInSessions()
        #expect(sessions.count == 1 && sessions[0].current)
    }

    /// A spent refresh token presented again after the grace: two holders, one a thief. The
    /// whole sign-in ends: the newest refresh token, the access tokens and the open sockets.
    @Test(arguments: StoreKind.available)
    func aSpentRefreshTokenPresentedAgainEndsTheSignIn(store: StoreKind) async throws {
        let clock = ManualClock()
        let server = try await Self.server(clock, store: store)
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let stolen = try #require(alice.auth.refreshToken)
        let legit = try #require(try await Self.refresh(server, stolen).auth)
        let socket = try await TestUser(server: server, auth: legit).connect()
        let events = EventRecorder(socket)

        clock.advance(by: SignInSessions.reuseGrace + 1)
        let replay = try await Self.refresh(server, stolen)
        #expect(replay.status == 401 && errorCode(replay.body) == .unauthorized)
        #expect(String(decoding: replay.body, as: UTF8.self).contains("used twice"))
        #expect(try await Self.refresh(server, try #require(legit.refreshToken)).status == 401, "the legitimate copy ends too")
        #expect(try await server.raw("GET", "users/me", token: legit.token).status == 401)
        try await events.waitUntilFinished(timeout: .seconds(30))
        #expect(await socket.closeCode == 4001)
        // A password still signs in.
        let again = try await server.api().login(LoginRequest(organization: "acme", email: "alice@x.io", password: TestUser.password))
        #expect(try await server.api(token: again.token).me().id == alice.id)
    }

    /// An answer lost on the way: the client retries with what it had, within the grace, and
    /// gets a pair that works; the pair it never saw is then the spent one.
    @Test(arguments: StoreKind.available)
    func aRenewalWhoseAnswerWasLostIsRetriedWithinTheGrace(store: StoreKind) async throws {
        let clock = ManualClock()
        let server = try await Self.server(clock, store: store)
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let first = try #require(alice.auth.refreshToken)
        let lost = try #require(try await Self.refresh(server, first).auth)
        clock.advance(by: 5)
        let retried = try #require(try await Self.refresh(server, first).auth, "within the grace the spent token renews once more")
        let retriedToken = try #require(retried.refreshToken)
        let next = try #require(try await Self.refresh(server, retriedToken).auth)
        #expect(try await server.api(token: next.token).me().id == alice.id)
        // The lost answer's token was replaced twice: it is refused, and ends nothing.
        #expect(try await Self.refresh(server, try #require(lost.refreshToken)).status == 401)
        #expect(try await server.api(token: next.token).me().id == alice.id)
        // Malformed and unknown tokens are refused without effect.
        for bad in ["", "x", "\(EntityID()).\(String(repeating: "a", count: 43))", String(repeating: "z", count: 300)] {
            #expect(try await Self.refresh(server, bad).status == 401)
        }
        #expect(try await server.raw("POST", "auth/refresh", json: #"{"refreshToken": 5}"#).status == 400)
        #expect(try await server.raw("POST", "auth/refresh").status == 401, "no refresh token and no bearer")
    }

    @Test func logoutEndsTheRefreshTokenAndExpiredOnesAreRefused() async throws {
        let clock = ManualClock()
        let server = try await Self.server(clock)
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let laptop = try await server.api().login(LoginRequest(organization: "acme", email: "alice@x.io", password: TestUser.password))
        try await alice.api.logout(deviceToken: nil)
        #expect(try await Self.refresh(server, try #require(alice.auth.refreshToken)).status == 401)
        #expect(try await Self.refresh(server, try #require(laptop.refreshToken)).status == 200, "the other sign-in goes on")
        // Unused for 30 days: expired.
        let phone = try await server.api().login(LoginRequest(organization: "acme", email: "alice@x.io", password: TestUser.password))
        clock.advance(by: 30 * 86400 + 1)
        #expect(try await Self.refresh(server, try #require(phone.refreshToken)).status == 401)
    }

    /// `GET /auth/sessions` lists where the user is signed in; ending one (a lost phone) ends
    /// its refresh token, its access tokens and its socket, and nobody else's.
    @Test(arguments: StoreKind.available)
    func aUserSeesTheirSignInsAndEndsOne(store: StoreKind) async throws {
        let clock = ManualClock()
        let server = try await Self.server(clock, store: store)
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let login = #"{"organization":"acme","email":"alice@x.io","password":"\#(TestUser.password)"}"#
        let phoneAnswer = try await server.raw(
            "POST", "auth/login", body: Data(login.utf8), headers: ["User-Agent": "ParleyPhone/1.0 \u{202E}evil"])
        let phone = try WireCoding.makeDecoder().decode(AuthResponse.self, from: phoneAnswer.body)
        let phoneSocket = try await TestUser(server: server, auth: phone).connect()
        let phoneEvents = EventRecorder(phoneSocket)

        let listed = try await alice.api.signInSessions()
        #expect(listed.count == 2)
        let current = try #require(listed.first { $0.current })
        let other = try #require(listed.first { !$0.current })
        #expect(current.id == String(alice.auth.refreshToken!.prefix { $0 != "." }))
        #expect(other.label?.hasPrefix("ParleyPhone/1.0") == true && other.label?.contains("\u{202E}") == false, "labels are neutralised")

        // Not someone else's, and not twice.
        #expect(try await server.raw("DELETE", "auth/sessions/\(other.id)", token: bob.token).status == 404)
        try await alice.api.endSignInSession(other.id)
        #expect(try await server.raw("DELETE", "auth/sessions/\(other.id)", token: alice.token).status == 404)
        #expect(try await Self.refresh(server, try #require(phone.refreshToken)).status == 401)
        #expect(try await server.raw("GET", "users/me", token: phone.token).status == 401)
        try await phoneEvents.waitUntilFinished(timeout: .seconds(30))
        #expect(await phoneSocket.closeCode == 4001)
        #expect(try await alice.api.me().id == alice.id)
        #expect(try await alice.api.signInSessions().map(\.id) == [current.id])
    }

    @Test func anAdminSignsAMemberOutEverywhere() async throws {
        let clock = ManualClock()
        let server = try await TestServer.start {
            $0.clock = clock.serverClock
            $0.openOrganizations = false
        }
        defer { Task { await server.stop() } }
        let admin = try await server.register("admin@corp.test", organization: "corp")
        _ = try await admin.api.setAllowedEmailDomains(["corp.test"])
        let bob = try await server.register("bob@corp.test", organization: "corp")
        let other = try await server.register("eve@else.test", organization: "else")
        let bobLaptop = try await server.api().login(LoginRequest(organization: "corp", email: "bob@corp.test", password: TestUser.password))

        #expect(try await server.raw("POST", "users/\(admin.id)/sign-out", token: bob.token).status == 403, "members cannot")
        #expect(try await server.raw("POST", "users/\(bob.id)/sign-out", token: other.token).status == 404, "another organization's admin")
        #expect(try await server.raw("POST", "users/\(other.id)/sign-out", token: admin.token).status == 404, "another organization's user")
        try await admin.api.signOut(userId: bob.id)
        for auth in [bob.auth, bobLaptop] {
            #expect(try await Self.refresh(server, try #require(auth.refreshToken)).status == 401)
            #expect(try await server.raw("GET", "users/me", token: auth.token).status == 401)
        }
        #expect(try await admin.api.me().id == admin.id)
        // The account stays: Bob signs in again.
        let again = try await server.api().login(LoginRequest(organization: "corp", email: "bob@corp.test", password: TestUser.password))
        #expect(try await server.api(token: again.token).me().id == bob.id)
        // A deactivated member's refresh token is refused.
        try await admin.api.deactivate(bob.id)
        #expect(try await Self.refresh(server, try #require(again.refreshToken)).status == 401)
    }

    /// A token from before refresh tokens (no session row) renewed by the bearer: the answer
    /// carries a refresh token, so old sign-ins move over; a bearer renewal of a session that
    /// has one never outlives it.
    @Test func aBearerRenewalMovesAnOldSignInOver() async throws {
        let clock = ManualClock()
        let server = try await Self.server(clock)
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let user = try #require(try await server.app.store.user(id: alice.id))
        let old = try await server.app.tokens.issue(for: user, now: clock.now())
        let moved = try await server.api(token: old).refresh()
        let refreshToken = try #require(moved.refreshToken)
        let renewedOld = try await Self.refresh(server, refreshToken)
        #expect(renewedOld.auth?.user.id == alice.id)

        let bearer = try await alice.api.refresh()
        #expect(bearer.refreshToken == nil, "the session has its refresh token already")
        #expect(try #require(bearer.expiresAt) <= alice.auth.refreshExpiresAt!)
        #expect(try await server.api(token: bearer.token).me().id == alice.id)
    }

    /// `auth` over the socket: the connection carries on past the token it was opened with; a
    /// refused or another user's token changes nothing.
    @Test func aSocketCarriesOnUnderARenewedToken() async throws {
        // Tokens issued first have 15 s left on the wall clock (a token's expiry is checked
        // against it); then the server's clock catches up and renewed tokens get their 15 minutes.
        let clock = ManualClock(start: Date().addingTimeInterval(-15 * 60 + 15))
        let server = try await TestServer.start { $0.clock = clock.serverClock }
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let renewedSocket = try await alice.connect()
        let plainSocket = try await alice.connect()
        let plainEvents = EventRecorder(plainSocket)
        let aliceRefresh = try #require(alice.auth.refreshToken)
        clock.advance(by: 15 * 60 - 15)
        let renewed = try #require(try await Self.refresh(server, aliceRefresh).auth)
        await #expect(throws: ClientError.self) { try await renewedSocket.perform(.auth(AuthCommand(token: bob.token))) }
        await #expect(throws: ClientError.self) { try await renewedSocket.perform(.auth(AuthCommand(token: "garbage"))) }
        try await renewedSocket.perform(.auth(AuthCommand(token: renewed.token)))
        // The first token expires: the socket that was not renewed is closed; the other goes on.
        try await plainEvents.waitUntilFinished(timeout: .seconds(30))
        #expect(await plainSocket.closeCode == 4001)
        try await renewedSocket.ping()
        let sent = try await renewedSocket.sendMessage(SendMessageRequest(conversationId: direct.id, clientMessageId: "after-expiry", text: "still here"))
        #expect(sent.text == "still here")
    }
}

