import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

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

    @Test func theSDKsOutboxWaitsRetryAfterAndSendsEverythingOnceInOrder() async throws {
        let clock = ManualClock()
        let server = try await Self.limited(clock) { $0.sendsPerUser = RateLimit(burst: 5, perSecond: 5) }
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let client = try ChatClient(serverURL: server.baseURL, token: alice.token, userId: alice.id, databasePath: nil)
        await client.start()
        let chat = await ChatModel(client: client, conversationId: direct.id)
        await chat.start()
        for n in 0..<12 { await chat.send("m\(n)") }
        // The server refuses the sixth on; the SDK keeps them queued (not failed) until the
        // bucket refills: advance the server's clock while the client retries.
        var texts: [String] = []
        for _ in 0..<100 {
            texts = try await bob.api.messages(direct.id, limit: 100).messages.map(\.text)
            if texts.count == 12 { break }
            clock.advance(by: 1)
            await client.retryNow()
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(texts == (0..<12).map { "m\($0)" })
        let failed = await chat.messages.filter { if case .failed = $0.delivery { true } else { false } }
        #expect(failed.isEmpty)
        await client.stop()
    }

    @Test func limitsParseAndTurnOff() {
        #expect(RateLimit(parsing: "10/60") == .count(10, per: 60))
        #expect(RateLimit(parsing: "0/60") == nil && RateLimit(parsing: "ten") == nil && RateLimit(parsing: "5/0") == nil)
        #expect(RateLimitSettings.off.enabled == false)
    }
}
