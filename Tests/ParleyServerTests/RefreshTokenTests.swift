import Foundation
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
import ParleyTestSupport
import Synchronization
import Testing

/// Short-lived access tokens renewed by rotating refresh tokens (issue 35): each renewal
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

/// The SDK's ``SessionCredentials`` against a real server: one renewal for many requests, each
/// renewal saved before it is used, and commands sharing one profile taking turns.
@Suite struct SessionCredentialsTests {
    final class MemoryStorage: CredentialStorage {
        private let saved = Mutex<[SessionTokens]>([])
        init() {}
        var saves: [SessionTokens] { saved.withLock { $0 } }
        func loadTokens() -> SessionTokens? { saves.last }
        func saveTokens(_ tokens: SessionTokens) throws { saved.withLock { $0.append(tokens) } }
    }

    /// Ten requests refused at once (their token is not accepted) renew the sign-in once, save
    /// it, and all succeed with the new token.
    @Test func requestsRefusedAtOnceRenewOnceAndSaveFirst() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let storage = MemoryStorage()
        let credentials = SessionCredentials(
            SessionTokens(token: "refused.by.server", refreshToken: alice.auth.refreshToken, expiresAt: Date().addingTimeInterval(3600)),
            storage: storage)
        let api = ParleyAPI(baseURL: server.baseURL, credentials: credentials)
        let ids = try await withThrowingTaskGroup(of: EntityID.self) { group in
            for _ in 0..<10 { group.addTask { try await api.me().id } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(ids == Array(repeating: alice.id, count: 10))
        #expect(storage.saves.count == 1 && storage.saves.first == credentials.tokens)
        #expect(credentials.tokens.refreshToken != alice.auth.refreshToken)
        // The sign-in is intact: its newest refresh token renews.
        _ = try await credentials.renew(using: api)
        #expect(storage.saves.count == 2)
    }

    /// A message written while the access token had gone stale (a phone asleep past its 15
    /// minutes) goes out after a renewal, once, with no sign-in asked for.
    @Test func theOutboxGoesOutAfterARenewal() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let storage = MemoryStorage()
        let credentials = SessionCredentials(
            SessionTokens(token: "stale.access.token", refreshToken: alice.auth.refreshToken, expiresAt: Date().addingTimeInterval(3600)),
            storage: storage)
        let client = try ChatClient(serverURL: server.baseURL, credentials: credentials, userId: alice.id, databasePath: nil)
        await client.start()
        _ = try await client.send(text: "written offline", in: direct.id)
        let deadline = ContinuousClock.now + .seconds(20)
        while try await bob.api.messages(direct.id).messages.isEmpty, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try await bob.api.messages(direct.id).messages.map(\.text) == ["written offline"])
        #expect(await client.signInRequired == false)
        #expect(storage.saves.count == 1, "one renewal, saved")
        await client.stop()
    }

    /// An app with its own sign-in renews through its backend (a token provider), not Parley's
    /// refresh token: ten requests refused at once ask the backend once, the answer is saved,
    /// and a message written meanwhile goes out. A backend that says "sign in again" stops the
    /// outbox (the message waits, queued) instead of failing it.
    @Test func anAppsOwnBackendRenewsTheSignInThroughATokenProvider() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let calls = Mutex(0)
        let storage = MemoryStorage()
        // The app's backend: it signs Alice in to Parley with the password it keeps for her.
        let backend: SessionCredentials.TokenProvider = { stale in
            #expect(stale.token == "issued.by.an.earlier.login")
            calls.withLock { $0 += 1 }
            return SessionTokens(try await ParleyAPI(baseURL: server.baseURL).login(
                LoginRequest(organization: "acme", email: "alice@x.io", password: TestUser.password)))
        }
        let credentials = SessionCredentials(SessionTokens(token: "issued.by.an.earlier.login"), storage: storage, provider: backend)
        #expect(credentials.canRenew)
        let api = ParleyAPI(baseURL: server.baseURL, credentials: credentials)
        let ids = try await withThrowingTaskGroup(of: EntityID.self) { group in
            for _ in 0..<10 { group.addTask { try await api.me().id } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(ids == Array(repeating: alice.id, count: 10))
        #expect(calls.withLock { $0 } == 1 && storage.saves == [credentials.tokens])

        let client = try ChatClient(serverURL: server.baseURL, credentials: credentials, userId: alice.id, databasePath: nil)
        await client.start()
        _ = try await client.send(text: "through my own backend", in: direct.id)
        let deadline = ContinuousClock.now + .seconds(20)
        while try await bob.api.messages(direct.id).messages.isEmpty, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try await bob.api.messages(direct.id).messages.map(\.text) == ["through my own backend"])
        await client.stop()

        // The backend refuses: the user must sign in again; nothing is lost.
        let refusing = SessionCredentials(SessionTokens(token: "refused.by.server")) { _ in
            throw ClientError(kind: .server, code: .unauthorized, httpStatus: 401, message: "signed out of the app")
        }
        let stranded = try ChatClient(serverURL: server.baseURL, credentials: refusing, userId: alice.id, databasePath: nil)
        await stranded.start()
        _ = try await stranded.send(text: "waits for a sign-in", in: direct.id)
        let until = ContinuousClock.now + .seconds(20)
        while await !stranded.signInRequired, ContinuousClock.now < until { try await Task.sleep(for: .milliseconds(20)) }
        #expect(await stranded.signInRequired)
        #expect(try await stranded.database.outboxCounts() == (queued: 1, failed: 0) ? true : false)
        #expect(try await bob.api.messages(direct.id).messages.count == 1)
        await stranded.stop()
    }

    /// A token about to expire is renewed before the request, not after a refusal.
    @Test func aTokenAboutToExpireIsRenewedFirst() async throws {
        let clock = ManualClock(start: Date().addingTimeInterval(-15 * 60 + 20))
        let server = try await TestServer.start { $0.clock = clock.serverClock }
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        clock.advance(by: 15 * 60)
        let credentials = SessionCredentials(SessionTokens(alice.auth))
        let renewals = Mutex(0)
        credentials.onRenewed { _ in renewals.withLock { $0 += 1 } }
        let api = ParleyAPI(baseURL: server.baseURL, credentials: credentials)
        #expect(try await api.me().id == alice.id)
        #expect(renewals.withLock { $0 } == 1 && credentials.tokens.token != alice.token)
        #expect(try await api.me().id == alice.id)
        #expect(renewals.withLock { $0 } == 1, "a fresh token is not renewed again")
    }

    /// Three commands started at once on one profile, each finding its token about to expire:
    /// they renew in turn under the profile's lock, each from what the last one saved, so no
    /// spent refresh token is presented and the sign-in survives.
    @Test func commandsSharingAProfileRenewInTurn() async throws {
        // A server clock 14 min 35 s behind: every token has 25 s left when issued, however
        // slowly the machine runs, so every command renews (its margin is 30 s).
        let behind: TimeInterval = 15 * 60 - 25
        let server = try await TestServer.start {
            $0.clock = ServerClock(now: { Date().addingTimeInterval(-behind) }) { date in
                await ServerClock.system.sleepUntil(date.addingTimeInterval(behind))
            }
        }
        defer { Task { await server.stop() } }
        let profile = try await CLI.register("ann@x.io", name: "Ann", server: server.baseURL)
        let first = try #require(try CLI.session(profile)["refreshToken"] as? String)
        let runs = try await withThrowingTaskGroup(of: (status: Int32, output: String).self) { group in
            for _ in 0..<3 { group.addTask { try await CLI.run(["users"], profile: profile) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for run in runs { #expect(run.status == 0, "\(run.output)") }
        let last = try #require(try CLI.session(profile)["refreshToken"] as? String)
        #expect(last != first)
        let renewed = try await server.raw("POST", "auth/refresh", json: #"{"refreshToken":"\#(last)"}"#)
        #expect(renewed.status == 200, "the saved refresh token is the live one")
        // The profile now holds a spent token (the test renewed behind its back, 0 s ago: within
        // the grace), so the next command renews from it once more and carries on.
        let listed = try await CLI.run(["sessions"], profile: profile)
        #expect(listed.status == 0, "\(listed.output)")
        #expect(CLI.lines(listed.output).count == 1 && listed.output.hasPrefix("* "), "\(listed.output)")
    }

    /// `parley sessions --end` ends another sign-in of the user; `parley members --sign-out`
    /// (an admin) ends all of someone's.
    @Test func theCommandLineEndsSignIns() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let profile = try await CLI.register("ann@x.io", name: "Ann", server: server.baseURL)
        let phone = try await server.api().login(LoginRequest(organization: "acme", email: "ann@x.io", password: TestUser.password))
        let phoneSession = String(try #require(phone.refreshToken).prefix { $0 != "." })
        let ended = try await CLI.run(["sessions", "--end", phoneSession], profile: profile)
        #expect(ended.status == 0 && ended.output.hasPrefix("ended \(phoneSession)\n"), "\(ended.output)")
        #expect(CLI.lines(ended.output).count == 2, "the message and the one sign-in left: \(ended.output)")
        #expect(try await server.raw("GET", "users/me", token: phone.token).status == 401)

        let bob = try await server.register("bob@x.io")
        let out = try await CLI.run(["members", "--sign-out", bob.id.description], profile: profile)
        #expect(out.status == 0 && out.output.contains("signed out \(bob.id) everywhere"), "\(out.output)")
        #expect(try await server.raw("GET", "users/me", token: bob.token).status == 401)
    }
}
