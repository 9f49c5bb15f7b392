import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Rate limits from outside, on a manual clock: password guessing, send floods over the
/// WebSocket and REST, typing and receipts; a throttled request gets `rate_limited` with
/// `retryAfter` and stores nothing; the SDK's outbox waits and sends everything once.
@Suite struct RateLimitTests {
    static func limited(_ clock: ManualClock, _ adjust: (inout RateLimitSettings) -> Void = { _ in }) async throws -> TestServer {
        try await TestServer.start {
            $0.clock = clock.serverClock
            $0.rateLimits = RateLimitSettings()
            adjust(&$0.rateLimits)
        }
    }

    static func errorCode(_ body: Data) -> (String?, Int?) {
        let error = (try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["error"] as? [String: Any]
        return (error?["code"] as? String, error?["retryAfter"] as? Int)
    }

    @Test func passwordGuessingIsThrottledPerAccountAndARightPasswordWaitsToo() async throws {
        let clock = ManualClock()
        let server = try await Self.limited(clock)
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let wrong = #"{"organization":"acme","email":"alice@x.io","password":"not-her-password"}"#
        for attempt in 1...10 {
            let answer = try await server.raw("POST", "auth/login", json: wrong)
            #expect(answer.status == 401, "attempt \(attempt)")
        }
        let eleventh = try await server.raw("POST", "auth/login", json: wrong)
        #expect(eleventh.status == 429)
        let (code, retryAfter) = Self.errorCode(eleventh.body)
        #expect(code == "rate_limited" && (retryAfter ?? 0) >= 1 && (retryAfter ?? 0) <= 6)
        // Guessing cannot go on by trying the right one in between: it waits as well.
        let right = #"{"organization":"acme","email":"alice@x.io","password":"\#(TestUser.password)"}"#
        #expect(try await server.raw("POST", "auth/login", json: right).status == 429)
        // Case and spaces do not make another account.
        #expect(try await server.raw("POST", "auth/login", json: #"{"organization":" ACME","email":"Alice@X.io","password":"x"}"#).status == 429)
        // Another account is not affected.
        _ = try await server.register("bob@x.io")
        #expect(try await server.raw("POST", "auth/login", json: #"{"organization":"acme","email":"bob@x.io","password":"\#(TestUser.password)"}"#).status == 200)
        // A minute later the bucket has refilled.
        clock.advance(by: 61)
        #expect(try await server.raw("POST", "auth/login", json: right).status == 200)
        _ = alice
    }

    /// Someone who knows Alice's address fails on purpose from elsewhere: they are throttled,
    /// Alice (from her own address) is not locked out.
    @Test func failingOnPurposeFromOneAddressDoesNotLockTheOwnerOutElsewhere() async throws {
        let clock = ManualClock()
        let server = try await TestServer.start {
            $0.clock = clock.serverClock
            $0.rateLimits = RateLimitSettings()
            $0.trustedProxies = ["127.0.0.1"]
        }
        defer { Task { await server.stop() } }
        _ = try await server.register("alice@x.io")
        func login(_ password: String, from address: String) async throws -> Int {
            try await server.exchange(
                "POST", "auth/login", body: Data(#"{"organization":"acme","email":"alice@x.io","password":"\#(password)"}"#.utf8),
                headers: ["X-Forwarded-For": address]
            ).status
        }
        for _ in 1...10 { #expect(try await login("guess", from: "203.0.113.66") == 401) }
        #expect(try await login("guess", from: "203.0.113.66") == 429, "the attacker's address is throttled")
        #expect(try await login(TestUser.password, from: "203.0.113.66") == 429, "and cannot try the right one there")
        #expect(try await login(TestUser.password, from: "198.51.100.20") == 200, "Alice, elsewhere, signs in")
    }

    /// Beyond the allowance each failure doubles the wait (the bucket alone would let a guess
    /// through every 6 s forever); the right password after the wait signs in and starts afresh.
    @Test func guessingPastTheAllowanceWaitsTwiceAsLongEachTime() async throws {
        let clock = ManualClock()
        let server = try await Self.limited(clock)
        defer { Task { await server.stop() } }
        _ = try await server.register("alice@x.io")
        let wrong = #"{"organization":"acme","email":"alice@x.io","password":"not-her-password"}"#
        let right = #"{"organization":"acme","email":"alice@x.io","password":"\#(TestUser.password)"}"#
        for _ in 1...10 { #expect(try await server.raw("POST", "auth/login", json: wrong).status == 401) }
        // A minute later the bucket is full again, but every failure from now on doubles the wait.
        var waits: [Int] = []
        for _ in 1...7 {
            clock.advance(by: 61)
            let answer = try await server.raw("POST", "auth/login", json: wrong)
            if answer.status == 429 {
                waits.append(Self.errorCode(answer.body).1 ?? 0)
                break
            }
            #expect(answer.status == 401)
        }
        // Failures 11-16 waited 2, 4, 8, 16, 32 s (under a minute each); the 16th set 64 s.
        #expect(waits.count == 1 && (1...3).contains(waits[0]), "the 17th guess waits the rest of 64 s: \(waits)")
        #expect(try await server.raw("POST", "auth/login", json: right).status == 429, "the right password waits too")
        clock.advance(by: 4)
        #expect(try await server.raw("POST", "auth/login", json: right).status == 200)
        #expect(try await server.raw("POST", "auth/login", json: wrong).status == 401, "a success starts afresh")
    }

    @Test func aSendFloodGetsRateLimitedRepliesAndStoresOnlyWhatWasAccepted() async throws {
        let clock = ManualClock()
        let server = try await Self.limited(clock) { $0.sendsPerUser = RateLimit(burst: 20, perSecond: 5) }
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let socket = try await alice.connect()
        var accepted: [String] = []
        var throttled = 0
        for n in 0..<60 {
            do {
                _ = try await socket.sendMessage(.init(conversationId: direct.id, clientMessageId: "f\(n)", text: "\(n)"))
                accepted.append("\(n)")
            } catch let error as ClientError {
                #expect(error.code == .rateLimited && (error.retryAfter ?? 0) >= 1, "\(error)")
                throttled += 1
            }
        }
        #expect(accepted.count == 20 && throttled == 40)
        // REST is the same bucket.
        let rest = try await server.raw("POST", "conversations/\(direct.id)/messages", token: alice.token, json: #"{"clientMessageId":"r1","text":"rest"}"#)
        #expect(rest.status == 429)
        // Nothing throttled was stored; the connection still works, and time refills the bucket.
        let stored = try await bob.api.messages(direct.id, limit: 100).messages.map(\.text)
        #expect(stored == accepted)
        clock.advance(by: 1)
        _ = try await socket.sendMessage(.init(conversationId: direct.id, clientMessageId: "later", text: "later"))
        // Other users have their own buckets.
        let bobSocket = try await bob.connect()
        _ = try await bobSocket.sendMessage(.init(conversationId: direct.id, clientMessageId: "b", text: "bob"))
        // Typing and receipts have their own limits.
        var typingRefused = 0
        for _ in 0..<15 {
            do { try await socket.perform(.typing(TypingCommand(conversationId: direct.id, isTyping: true))) } catch let error as ClientError where error.code == .rateLimited { typingRefused += 1 }
        }
        #expect(typingRefused == 5)
        await socket.close()
        await bobSocket.close()
    }

    /// Alice's SDK client, started, with a chat model open on her direct conversation with Bob.
    static func aliceChatting(_ server: TestServer) async throws -> (bob: TestUser, direct: Conversation, client: ChatClient, chat: ChatModel) {
        let (alice, bob, direct) = try await server.directPair()
        let client = try ChatClient(serverURL: server.baseURL, token: alice.token, userId: alice.id, databasePath: nil)
        await client.start()
        let chat = await ChatModel(client: client, conversationId: direct.id)
        await chat.start()
        return (bob, direct, client, chat)
    }

    @Test func theSDKsOutboxWaitsRetryAfterAndSendsEverythingOnceInOrder() async throws {
        let clock = ManualClock()
        let server = try await Self.limited(clock) { $0.sendsPerUser = RateLimit(burst: 5, perSecond: 5) }
        defer { Task { await server.stop() } }
        let (bob, direct, client, chat) = try await Self.aliceChatting(server)
        for n in 0..<12 { await chat.send("m\(n)") }
        // The server refuses the sixth on; the SDK keeps them queued (not failed) until the
        // bucket refills: advance the server's clock, then retry; a retry returns once the
        // outbox has sent all it could.
        var texts: [String] = []
        for _ in 0..<100 {
            texts = try await bob.api.messages(direct.id, limit: 100).messages.map(\.text)
            if texts.count == 12 { break }
            clock.advance(by: 1)
            await client.retryNow()
        }
        #expect(texts == (0..<12).map { "m\($0)" })
        let failed = await chat.messages.filter { if case .failed = $0.delivery { true } else { false } }
        #expect(failed.isEmpty)
        await client.stop()
    }

    /// The SDK waits as long as the server said, not its own (shorter) backoff: with one send
    /// every 30 s the refused message's next attempt is 30 s away, and it is queued, not failed.
    @Test func theOutboxWaitsTheServersRetryAfterNotItsOwnBackoff() async throws {
        let clock = ManualClock()
        let server = try await Self.limited(clock) { $0.sendsPerUser = RateLimit(burst: 3, perSecond: 1.0 / 30) }
        defer { Task { await server.stop() } }
        let (bob, direct, client, chat) = try await Self.aliceChatting(server)
        let before = Date()
        for n in 0..<4 { await chat.send("w\(n)") }
        // The fourth is refused with retryAfter 30: its next attempt is that far away (the
        // SDK's own first backoff is at most 1 s).
        try await waitFor("the refused one's next attempt set", timeout: .seconds(30)) {
            (try await client.database.nextOutboxAttempt() ?? .distantPast) >= Date().addingTimeInterval(5)
        }
        let next = (try await client.database.nextOutboxAttempt()) ?? .distantPast
        #expect(next.timeIntervalSince(before) >= 29, "the next attempt is at \(next), \(next.timeIntervalSince(before)) s after the sends")
        let counts = try await client.database.outboxCounts()
        #expect(counts.queued == 1 && counts.failed == 0, "queued, not failed: \(counts)")
        #expect(try await bob.api.messages(direct.id, limit: 10).messages.map(\.text) == ["w0", "w1", "w2"])
        // Once the server's bucket has a token again, the queued one goes.
        clock.advance(by: 30)
        await client.retryNow()
        try await waitFor("the fourth to arrive", timeout: .seconds(30)) {
            (try? await bob.api.messages(direct.id, limit: 10).messages.count) == 4
        }
        await client.stop()
    }

    /// Registrations per client address (seen through a trusted proxy): a 429 with the
    /// `Retry-After` header equal to the body's `retryAfter`; the refused one created nothing.
    @Test func registrationsAreLimitedPerAddressAndTheRefusedOneCreatesNothing() async throws {
        let clock = ManualClock()
        let server = try await TestServer.start {
            $0.clock = clock.serverClock
            $0.rateLimits = RateLimitSettings()
            $0.rateLimits.registrationsPerAddress = .count(3, per: 3600)
            $0.trustedProxies = ["127.0.0.1"]
        }
        defer { Task { await server.stop() } }
        func register(_ email: String, from address: String) async throws -> (status: Int, headers: [String: String], body: Data) {
            try await server.exchange(
                "POST", "auth/register",
                body: Data(#"{"organization":"acme","email":"\#(email)","password":"\#(TestUser.password)","displayName":"X"}"#.utf8),
                headers: ["X-Forwarded-For": address])
        }
        for n in 0..<3 { #expect(try await register("u\(n)@x.io", from: "203.0.113.7").status == 201) }
        let refused = try await register("u3@x.io", from: "203.0.113.7")
        #expect(refused.status == 429)
        let (code, retryAfter) = Self.errorCode(refused.body)
        #expect(code == "rate_limited" && (retryAfter ?? 0) > 1000)
        #expect(refused.headers["retry-after"] == retryAfter.map(String.init), "\(refused.headers)")
        // Nothing was created: the same email registers from another address.
        #expect(try await register("u3@x.io", from: "203.0.113.8").status == 201)
        clock.advance(by: 3600)
        #expect(try await register("u4@x.io", from: "203.0.113.7").status == 201)
    }

    /// Read and delivery receipts share one bucket per user; a refused one moves no watermark.
    @Test func receiptFloodsAreRefusedAndMoveNoWatermark() async throws {
        let clock = ManualClock()
        let server = try await Self.limited(clock) { $0.receiptsPerUser = RateLimit(burst: 4, perSecond: 1) }
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        for n in 1...8 { _ = try await alice.api.send(.init(clientMessageId: "r\(n)", text: "\(n)"), to: direct.id) }
        let socket = try await bob.connect()
        var outcomes: [String] = []
        for seq in 1...6 {
            do {
                let answer = try await socket.read(.init(conversationId: direct.id, upToSeq: Int64(seq)))
                outcomes.append("read \(answer.readSeq)")
            } catch let error as ClientError where error.code == .rateLimited {
                #expect((error.retryAfter ?? 0) >= 1)
                outcomes.append("limited")
            }
        }
        #expect(outcomes == ["read 1", "read 2", "read 3", "read 4", "limited", "limited"])
        let view = try await bob.api.conversation(direct.id)
        #expect(view.readSeq == 4 && view.unreadCount == 4, "a refused receipt moved nothing")
        clock.advance(by: 1)
        #expect(try await socket.read(.init(conversationId: direct.id, upToSeq: 8)).readSeq == 8)
        await socket.close()
    }

    /// Upload bytes per user: what an upload declares is counted; over the budget a 429 that
    /// stores nothing, and the budget refills.
    @Test func uploadBytesAreLimitedPerUser() async throws {
        let clock = ManualClock()
        let server = try await Self.limited(clock) { $0.uploadBytesPerUser = .count(250_000, per: 60) }
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("limit-\(UUID()).bin")
        try Data(repeating: 7, count: 100_000).write(to: file)
        _ = try await alice.api.upload(file: file, name: "a.bin", contentType: "application/octet-stream")
        _ = try await alice.api.upload(file: file, name: "b.bin", contentType: "application/octet-stream")
        await #expect(throws: ClientError.self) {
            _ = try await alice.api.upload(file: file, name: "c.bin", contentType: "application/octet-stream")
        }
        let third = try await server.exchange(
            "POST", "attachments?name=c.bin", token: alice.token, body: Data(repeating: 7, count: 100_000),
            headers: ["Content-Type": "application/octet-stream"])
        #expect(third.status == 429 && Int(third.headers["retry-after"] ?? "") ?? 0 >= 1)
        clock.advance(by: 60)
        _ = try await alice.api.upload(file: file, name: "d.bin", contentType: "application/octet-stream")
    }

    /// The options of the real binary: `--send-limit` (and its variable) set a limit,
    /// `--rate-limits off` turns every one off, and a value that is not COUNT/SECONDS stops
    /// the server at start with a message that names the variable.
    @Test(.heavy) func serveOptionsSetAndTurnOffTheLimits() async throws {
        func sendStatuses(_ server: ServeProcess, count: Int) async throws -> [Int] {
            try await server.waitUntilReady()
            let api = ParleyAPI(baseURL: server.url)
            let alice = try await api.register(.init(organization: "acme", email: "alice@x.io", password: TestUser.password, displayName: "Alice"))
            let bob = try await api.register(.init(organization: "acme", email: "bob@x.io", password: TestUser.password, displayName: "Bob"))
            let direct = try await ParleyAPI(baseURL: server.url, token: alice.token)
                .createConversation(.init(type: .direct, participantIds: [bob.user.id]))
            var statuses: [Int] = []
            for n in 0..<count {
                var request = URLRequest(url: server.url.appendingPathComponent("api/v1/conversations/\(direct.id)/messages"))
                request.httpMethod = "POST"
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.setValue("Bearer \(alice.token)", forHTTPHeaderField: "Authorization")
                request.httpBody = Data(#"{"clientMessageId":"m\#(n)","text":"\#(n)"}"#.utf8)
                let (_, response) = try await URLSession.shared.data(for: request)
                statuses.append((response as? HTTPURLResponse)?.statusCode ?? 0)
            }
            return statuses
        }
        let limited = try ServeProcess(name: "limited", arguments: ["--send-limit", "3/60"])
        defer { limited.stop() }
        #expect(try await sendStatuses(limited, count: 5) == [201, 201, 201, 429, 429])
        limited.stop()

        let off = try ServeProcess(name: "off", arguments: ["--rate-limits", "off", "--send-limit", "3/60"])
        defer { off.stop() }
        #expect(try await sendStatuses(off, count: 5) == [201, 201, 201, 201, 201])
        off.stop()

        let bad = try await runToEndOffPool(
            ServeProcess.binary, ["serve", "--port", "0", "--data-dir", TestServer.temporaryDirectory(), "--send-limit", "ten"])
        #expect(bad.status != 0 && bad.output.contains("PARLEY_SEND_LIMIT"), "\(bad.status): \(bad.output)")
    }

    @Test func limitsParseAndTurnOff() {
        #expect(RateLimit(parsing: "10/60") == .count(10, per: 60))
        #expect(RateLimit(parsing: "0/60") == nil && RateLimit(parsing: "ten") == nil && RateLimit(parsing: "5/0") == nil)
        #expect(RateLimitSettings.off.enabled == false)
    }
}
