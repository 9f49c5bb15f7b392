import Foundation
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Synchronization
import Testing

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
        try await waitFor("the message at the server", timeout: .seconds(20)) { try await !bob.api.messages(direct.id).messages.isEmpty }
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
        try await waitFor("the message at the server", timeout: .seconds(20)) { try await !bob.api.messages(direct.id).messages.isEmpty }
        #expect(try await bob.api.messages(direct.id).messages.map(\.text) == ["through my own backend"])
        await client.stop()

        // The backend refuses: the user must sign in again; nothing is lost.
        let refusing = SessionCredentials(SessionTokens(token: "refused.by.server")) { _ in
            throw ClientError(kind: .server, code: .unauthorized, httpStatus: 401, message: "signed out of the app")
        }
        let stranded = try ChatClient(serverURL: server.baseURL, credentials: refusing, userId: alice.id, databasePath: nil)
        await stranded.start()
        _ = try await stranded.send(text: "waits for a sign-in", in: direct.id)
        try await waitFor("a sign-in asked for", timeout: .seconds(20)) { await stranded.signInRequired }
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
