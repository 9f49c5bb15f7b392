import Foundation
import Logging
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Synchronization
import Testing
import FoundationNetworking

extension PushDeliveryRulesTests {
    // MARK: What APNs answers

    /// A device APNs calls gone after a retry is removed all the same; another 4xx is final at
    /// once (no retry) and keeps the device; throttling that never ends gives up after the
    /// retries and keeps the device. The next message goes only to the devices left.
    @Test func eachAnswerOfAPNsDecidesTheDevicesFate() async throws {
        let push = try await PushHarness.start { $0.maxRetries = 2 }
        defer { Task { await push.stop() } }
        let (alice, bob, direct) = try await push.server.directPair()
        let goneAfterRetry = deviceToken(1), badAfterRetry = deviceToken(2), topic = deviceToken(3), tooLarge = deviceToken(4)
        let throttled = deviceToken(5)
        for token in [goneAfterRetry, badAfterRetry, topic, tooLarge, throttled] { try await push.register(bob, token: token) }
        push.apns.script(goneAfterRetry, [.init(status: 503, reason: "ServiceUnavailable"), .init(status: 410, reason: "Unregistered")])
        push.apns.script(badAfterRetry, [.init(status: 500, reason: "InternalServerError"), .init(status: 400, reason: "BadDeviceToken")])
        push.apns.script(topic, [.init(status: 400, reason: "TopicDisallowed")])
        push.apns.script(tooLarge, [.init(status: 413, reason: "PayloadTooLarge")])
        push.apns.script(throttled, Array(repeating: .init(status: 429, reason: "TooManyRequests"), count: 3))
        _ = try await Self.send(alice, "hi", to: direct.id)
        try await waitFor("every outcome") {
            push.metrics.value("parley_push_devices_removed_total") == 2
                && push.metrics.value("parley_push_notifications_total", labels: ["outcome": "rejected"]) == 2
                && push.metrics.value("parley_push_notifications_total", labels: ["outcome": "failed"]) == 1
        }
        #expect(push.requests(for: goneAfterRetry).count == 2 && push.requests(for: badAfterRetry).count == 2)
        #expect(push.requests(for: topic).count == 1 && push.requests(for: tooLarge).count == 1, "a 4xx is not retried")
        #expect(push.requests(for: throttled).count == 3, "one try and two retries")
        let kept = Set([topic, tooLarge, throttled])
        #expect(Set(try await push.server.app.store.devices(userId: bob.id).map(\.token)) == kept)

        push.clock.advance(by: 10)
        let before = push.apns.received.count
        _ = try await Self.send(alice, "again", to: direct.id)
        let after = await push.apns.waitForRequests(before + 3, timeout: .seconds(30))
        #expect(Set(after.dropFirst(before).map(\.token)) == kept)
        try await waitFor("the second round's outcomes") {
            push.metrics.value("parley_push_notifications_total", labels: ["outcome": "delivered"]) == 3
        }
        #expect(push.apns.received.count == before + 3, "a removed device was tried again")
    }

    /// The client alone: each answer's outcome and how many requests it took; a retry waits
    /// (doubling, with jitter from half to one and a half times), so a throttled APNs is not
    /// hammered; an unreachable host is retried and then given up.
    @Test func theClientsOutcomesRetriesAndBackoff() async throws {
        let apns = try await TestAPNs.start()
        defer { Task { await apns.stop() } }
        var configuration = apns.configuration()
        configuration.maxRetries = 3
        configuration.retryBaseDelay = .milliseconds(100)
        let metrics = Metrics()
        let client = try await APNsClient(configuration: configuration, metrics: metrics, logger: Self.quietLogger)
        func send(_ n: Int, environment: PushEnvironment = .sandbox, priority: Int = 10) async -> APNsOutcome {
            await client.send(APNsRequest(
                deviceToken: deviceToken(n), environment: environment, payload: Array(#"{"aps":{"alert":"x"}}"#.utf8),
                collapseId: nil, priority: priority))
        }
        let cases: [(answers: [TestAPNs.Answer], outcome: APNsOutcome, requests: Int)] = [
            ([.ok], .delivered, 1),
            ([.init(status: 410, reason: "Unregistered")], .deviceGone(status: 410, reason: "Unregistered"), 1),
            ([.init(status: 400, reason: "BadDeviceToken")], .deviceGone(status: 400, reason: "BadDeviceToken"), 1),
            ([.init(status: 400, reason: "BadMessageId")], .rejected(status: 400, reason: "BadMessageId"), 1),
            ([.init(status: 404, reason: "BadPath")], .rejected(status: 404, reason: "BadPath"), 1),
            ([.init(status: 500, reason: "InternalServerError"), .ok], .delivered, 2),
            (Array(repeating: .init(status: 429, reason: "TooManyRequests"), count: 4), .failed(status: 429, reason: "TooManyRequests"), 4),
        ]
        for (index, example) in cases.enumerated() {
            apns.script(deviceToken(100 + index), example.answers)
            #expect(await send(100 + index) == example.outcome, "case \(index)")
            #expect(apns.received.filter { $0.token == deviceToken(100 + index) }.count == example.requests, "case \(index)")
        }
        // Three retries of 503 wait at least half of 100 + 200 + 400 ms in all.
        apns.script(deviceToken(200), Array(repeating: .init(status: 503, reason: "ServiceUnavailable"), count: 3))
        let started = ContinuousClock.now
        #expect(await send(200, priority: 5) == .delivered)
        #expect(ContinuousClock.now - started >= .milliseconds(350), "retried without backing off")
        let retried = apns.received.filter { $0.token == deviceToken(200) }
        #expect(retried.count == 4 && retried.allSatisfy { $0.headers["apns-priority"] == "5" && $0.headers["apns-collapse-id"] == nil })
        #expect(metrics.value("parley_push_retries_total", labels: ["status": "503"]) == 3)

        await client.shutdown()

        // A host nothing listens on: one try and a retry, then a failure (the service keeps
        // the device: failing is not a reason to drop it).
        configuration.productionURL = URL(string: "https://127.0.0.1:1")!
        configuration.maxRetries = 1
        configuration.requestTimeout = .seconds(2)
        let unreachable = try await APNsClient(configuration: configuration, metrics: metrics, logger: Self.quietLogger)
        let outcome = await unreachable.send(APNsRequest(
            deviceToken: deviceToken(300), environment: .production, payload: Array(#"{"aps":{}}"#.utf8), collapseId: nil))
        await unreachable.shutdown()
        guard case .failed(nil, _) = outcome else {
            Issue.record("an unreachable APNs gave \(outcome)")
            return
        }
        #expect(metrics.value("parley_push_retries_total", labels: ["status": "network"]) == 1)
        #expect(apns.received.allSatisfy { $0.token != deviceToken(300) }, "a production device reached the sandbox host")
    }

    // MARK: The rules below

    /// The provider token is signed once and reused until the refresh interval; a clock that
    /// jumps back, or APNs calling the current token expired, signs a new one; an older
    /// token's expiry does not throw the current one away.
    @Test func theProviderTokenIsReusedUntilItMustBeRenewed() async throws {
        let apns = try await TestAPNs.start()
        await apns.stop()
        var configuration = apns.configuration()
        configuration.tokenRefreshInterval = .seconds(50 * 60)
        let now = Mutex(Date(timeIntervalSince1970: 1_700_000_000.7))
        func move(by seconds: TimeInterval) { now.withLock { $0 += seconds } }
        let provider = try await ProviderToken(configuration: configuration, now: { now.withLock { $0 } })
        let first = try await provider.token()
        move(by: 49 * 60)
        #expect(try await provider.token() == first)
        var signed = await provider.signedCount
        #expect(signed == 1)
        move(by: 60)
        let second = try await provider.token()
        signed = await provider.signedCount
        #expect(second != first && signed == 2, "not renewed after 50 minutes")
        move(by: -3600)
        let third = try await provider.token()
        #expect(third != second, "a token issued in the future was kept")
        await provider.expire(first)
        #expect(try await provider.token() == third, "a stale token's expiry threw away the current one")
        await provider.expire(third)
        let fourth = try await provider.token()
        signed = await provider.signedCount
        #expect(fourth != third && signed == 4)
        // `iat` is whole seconds (APNs reads an integer).
        let claims = try #require(fourth.split(separator: ".").dropFirst().first)
        var base64 = claims.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        let data = try #require(Data(base64Encoded: base64))
        let json = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        let issuedAt = json?["iat"] as? Int
        #expect(issuedAt == 1_700_000_000 + 49 * 60 + 60 - 3600)

        configuration.privateKeyPEM = "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n"
        await #expect(throws: ServerStartError.self) { _ = try await ProviderToken(configuration: configuration, now: Date.init) }
    }

    /// The key file and identifiers an operator gives are checked at start, with a message
    /// that says what is wrong.
    @Test func aBadKeyFileOrEmptyIdentifierIsRefusedAtStart() async throws {
        let apns = try await TestAPNs.start()
        await apns.stop()
        let folder = TestServer.temporaryDirectory()
        let keyFile = folder + "/AuthKey.p8", notAKey = folder + "/notes.txt"
        try apns.privateKeyPEM.write(toFile: keyFile, atomically: true, encoding: .utf8)
        try "just some notes".write(toFile: notAKey, atomically: true, encoding: .utf8)
        func refusal(_ file: String, keyId: String = "KEY1234567", teamId: String = "TEAM123456", topic: String = "app") -> String? {
            do {
                _ = try APNsConfiguration.load(keyFile: file, keyId: keyId, teamId: teamId, topic: topic)
                return nil
            } catch {
                return "\(error)"
            }
        }
        #expect(refusal(folder + "/missing.p8")?.contains("Cannot read") == true)
        #expect(refusal(notAKey)?.contains("not a PEM private key") == true)
        #expect(refusal(keyFile, keyId: "")?.contains("key id is empty") == true)
        #expect(refusal(keyFile, teamId: "")?.contains("team id is empty") == true)
        #expect(refusal(keyFile, topic: "")?.contains("topic is empty") == true)
        let loaded = try APNsConfiguration.load(keyFile: keyFile, keyId: "KEY1234567", teamId: "TEAM123456", topic: "app.parley")
        #expect(loaded.privateKeyPEM == apns.privateKeyPEM && loaded.keyId == "KEY1234567" && loaded.teamId == "TEAM123456")
        #expect(loaded.topic == "app.parley" && loaded.productionURL.host == "api.push.apple.com")
        #expect(loaded.sandboxURL.host == "api.sandbox.push.apple.com")
        // The loaded key signs provider tokens.
        _ = try await ProviderToken(configuration: loaded, now: Date.init).token()
    }

    /// A window that ended with merged messages whose flush has not run yet: the next message
    /// takes them along in its count, and the late flush then sends nothing (no double buzz).
    /// A flush that comes early keeps what is merged for the real one; pruning never forgets a
    /// window with merged messages in it.
    @Test func theCoalescerCarriesLateMergesAndNeverDropsThem() {
        let conversation = EntityID()
        let key = PushCoalescer.Key(userId: EntityID(), conversationId: conversation)
        let m = (1...4).map { PushCoalescerTests.message($0, in: conversation) }
        let t0 = Date(timeIntervalSince1970: 1000)
        var coalescer = PushCoalescer(window: 2)
        #expect(coalescer.offer(m[0], for: key, now: t0) == .sendNow(.init(message: m[0], count: 1)))
        #expect(coalescer.offer(m[1], for: key, now: t0 + 1) == .scheduleFlush(at: t0 + 2))
        #expect(coalescer.flush(key, now: t0 + 0.5) == nil, "an early flush sent the window's merges")
        #expect(coalescer.offer(m[2], for: key, now: t0 + 5) == .sendNow(.init(message: m[2], count: 2)))
        #expect(coalescer.flush(key, now: t0 + 5.1) == nil, "the late flush buzzed again")

        var pruned = PushCoalescer(window: 2)
        _ = pruned.offer(m[0], for: key, now: t0)
        #expect(pruned.offer(m[1], for: key, now: t0 + 1) == .scheduleFlush(at: t0 + 2))
        for n in 0..<600 {
            _ = pruned.offer(m[3], for: .init(userId: EntityID(), conversationId: conversation), now: t0 + 10 + Double(n) * 0.01)
        }
        #expect(pruned.openWindows < 600, "closed windows were not pruned")
        #expect(pruned.flush(key, now: t0 + 11) == .init(message: m[1], count: 1), "pruning dropped a merged message")
    }

    /// A maximal message of heavy characters from a sender with a heavy name still makes a
    /// payload APNs accepts (at most 4,096 bytes), cut with an ellipsis.
    @Test func aHugeMessageFromAHeavyNameStillFitsAPNsLimit() async throws {
        let push = try await PushHarness.start()
        defer { Task { await push.stop() } }
        let alice = try await push.server.register("alice@x.io", name: String(repeating: "🧑‍🚀", count: 100))
        let bob = try await push.server.register("bob@x.io")
        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        try await push.register(bob, token: deviceToken(1))
        _ = try await Self.send(alice, String(repeating: "👩‍👩‍👧‍👦\"", count: 1000), to: direct.id)
        let request = try #require(await push.apns.waitForRequests(1, timeout: .seconds(30)).first)
        #expect(request.rejection == nil, "\(request.rejection ?? "")")
        #expect(request.body.count <= 4096)
        let payload = try Self.payload(request)
        #expect(payload.aps.alert.body.hasSuffix("…") && payload.aps.alert.body.count <= PushNotificationPayload.maxBodyCharacters)
        #expect(payload.aps.alert.title.hasSuffix("…") && payload.aps.alert.title.hasPrefix("🧑‍🚀"))
        try await waitFor("delivered") {
            push.metrics.value("parley_push_notifications_total", labels: ["outcome": "delivered"]) == 1
        }
    }
}
