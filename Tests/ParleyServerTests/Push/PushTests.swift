import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A server pushing to a local APNs that speaks HTTP/2 over TLS and checks every header and
/// the provider token's ES256 signature; coalescing runs on a manual clock.
struct PushHarness {
    let apns: TestAPNs
    let server: TestServer
    let clock: ManualClock

    static func start(_ adjust: @Sendable (inout APNsConfiguration) -> Void = { _ in }) async throws -> PushHarness {
        let apns = try await TestAPNs.start()
        let clock = ManualClock()
        var configuration = apns.configuration()
        adjust(&configuration)
        let apnsConfiguration = configuration
        let server = try await TestServer.start { server in
            server.apns = apnsConfiguration
            server.clock = clock.serverClock
        }
        return PushHarness(apns: apns, server: server, clock: clock)
    }

    func stop() async {
        await server.stop()
        await apns.stop()
    }

    /// Registers a device for a user over the real route.
    func register(_ user: TestUser, token: String, environment: PushEnvironment = .sandbox) async throws {
        try await user.api.registerDevice(token: token, environment: environment)
    }

    /// Requests that arrived for one device token.
    func requests(for token: String) -> [TestAPNs.Received] { apns.received.filter { $0.token == token } }

    var metrics: Metrics { server.app.metrics }
}

/// A device token: 64 hex digits.
func deviceToken(_ n: Int) -> String { String(format: "%064x", n) }

@Suite struct PushTests {
    @Test func anOfflineRecipientGetsOneNotificationPerDeviceWithTheContractsPayload() async throws {
        let push = try await PushHarness.start()
        defer { Task { await push.stop() } }
        let (alice, bob, direct) = try await push.server.directPair()
        try await push.register(bob, token: deviceToken(1), environment: .sandbox)
        try await push.register(bob, token: deviceToken(2), environment: .production)
        try await push.register(alice, token: deviceToken(3))

        let sent = try await alice.api.send(SendMessageRequest(clientMessageId: "m1", text: "Lunch at noon?"), to: direct.id)
        let requests = await push.apns.waitForRequests(2)
        #expect(requests.count == 2)
        #expect(Set(requests.map(\.token)) == [deviceToken(1), deviceToken(2)], "the sender's own device gets nothing")
        for request in requests {
            #expect(request.rejection == nil, "APNs checks: \(request.rejection ?? "")")
            #expect(request.headers["apns-topic"] == push.apns.topic)
            #expect(request.headers["apns-push-type"] == "alert")
            #expect(request.headers["apns-priority"] == "10")
            #expect(request.headers["apns-collapse-id"] == direct.id.description)
            #expect((Int(request.headers["apns-expiration"] ?? "") ?? 0) > Int(Date().timeIntervalSince1970))
            #expect(request.jwtAlgorithm == "ES256")
            #expect(request.jwtKeyId == push.apns.keyId)
            #expect(request.jwtIssuer == push.apns.teamId)
            let payload = try JSONDecoder().decode(PushNotificationPayload.self, from: request.body)
            #expect(payload.aps.alert.title == "Alice")
            #expect(payload.aps.alert.body == "Lunch at noon?")
            #expect(payload.aps.alert.subtitle == nil)
            #expect(payload.aps.sound == "default")
            #expect(payload.aps.threadId == direct.id.description)
            #expect(payload.aps.category == "CHAT_MESSAGE")
            #expect(payload.aps.mutableContent == 1)
            #expect(payload.aps.badge == 1)
            #expect(payload.conversationId == direct.id)
            #expect(payload.messageId == sent.id)
            #expect(payload.senderId == alice.id)
            #expect(payload.type == "chat_message")
            let json = request.json
            #expect((json["aps"] as? [String: Any])?["mutable-content"] as? Int == 1)
            #expect((json["aps"] as? [String: Any])?["thread-id"] as? String == direct.id.description)
        }
        // The app routes the tap from the same payload.
        #expect(PushRoute(payload: requests[0].body) == PushRoute(conversationId: direct.id, messageId: sent.id))
        try await waitFor("both deliveries counted") {
            push.metrics.value("parley_push_notifications_total", labels: ["outcome": "delivered"]) == 2
        }
        // A retry of the same send is not a new message: no second notification.
        _ = try await alice.api.send(SendMessageRequest(clientMessageId: "m1", text: "Lunch at noon?"), to: direct.id)
        try await barrier(push, from: alice)
        #expect(push.requests(for: deviceToken(1)).count == 1)
        #expect(push.requests(for: deviceToken(2)).count == 1)
    }

    @Test func aConnectedRecipientGetsNoNotification() async throws {
        let push = try await PushHarness.start()
        defer { Task { await push.stop() } }
        let (alice, bob, direct) = try await push.server.directPair()
        try await push.register(bob, token: deviceToken(1))
        let connection = try await bob.connect()
        let events = EventRecorder(connection)
        _ = try await alice.api.send(SendMessageRequest(clientMessageId: "m1", text: "you there?"), to: direct.id)
        try await events.wait("the message over the WebSocket") { _ in !events.createdMessages.isEmpty }
        try await barrier(push, from: alice)
        #expect(push.requests(for: deviceToken(1)).isEmpty)
        #expect(push.metrics.value("parley_push_skipped_total", labels: ["why": "connected"]) >= 1)
        await connection.close()
    }

    @Test func aBurstIntoOneConversationIsCoalescedWithTheLatestTextAndACount() async throws {
        let push = try await PushHarness.start { $0.coalesceWindow = .seconds(2) }
        defer { Task { await push.stop() } }
        let (alice, bob, direct) = try await push.server.directPair()
        try await push.register(bob, token: deviceToken(1))
        for n in 1...5 {
            _ = try await alice.api.send(SendMessageRequest(clientMessageId: "m\(n)", text: "part \(n)"), to: direct.id)
        }
        let first = await push.apns.waitForRequests(1)
        #expect(first.count == 1)
        let leading = try JSONDecoder().decode(PushNotificationPayload.self, from: first[0].body)
        #expect(leading.aps.alert.body == "part 1")
        // The other four wait for the window's end on the manual clock.
        try await waitFor("the follow-up to be scheduled") { push.clock.sleepers >= 1 }
        #expect(push.apns.received.count == 1)
        push.clock.advance(by: 2)
        let all = await push.apns.waitForRequests(2)
        #expect(all.count == 2)
        let trailing = try JSONDecoder().decode(PushNotificationPayload.self, from: all[1].body)
        #expect(trailing.aps.alert.body == "part 5")
        #expect(trailing.messageCount == 4)
        #expect(trailing.aps.alert.subtitle == "4 new messages")
        #expect(trailing.aps.badge == 5)
        #expect(all[1].headers["apns-collapse-id"] == direct.id.description, "the follow-up replaces the first on the device")
        // After a quiet window, the next message goes out at once again.
        push.clock.advance(by: 3)
        _ = try await alice.api.send(SendMessageRequest(clientMessageId: "m6", text: "part 6"), to: direct.id)
        #expect(await push.apns.waitForRequests(3).count == 3)
        // Another conversation is not held back by this one's window.
        let carol = try await push.server.register("carol@x.io")
        let group = try await carol.api.createConversation(.init(type: .group, participantIds: [bob.id], name: "Team"))
        _ = try await carol.api.send(SendMessageRequest(clientMessageId: "c1", text: "standup"), to: group.id)
        let withGroup = await push.apns.waitForRequests(4)
        #expect(withGroup.count == 4)
        #expect(try JSONDecoder().decode(PushNotificationPayload.self, from: withGroup[3].body).conversationId == group.id)
    }

    /// A notice waiting in a coalescing window shows the message as it is when it goes: a
    /// deleted one (by its sender, an admin, retention or erasure) leaves none of its words in the
    /// payload, and alone sends nothing.
    @Test func aNoticeWaitingForItsWindowCarriesNothingOfADeletedMessage() async throws {
        let push = try await PushHarness.start { $0.coalesceWindow = .seconds(2) }
        defer { Task { await push.stop() } }
        let (alice, bob, direct) = try await push.server.directPair()
        try await push.register(bob, token: deviceToken(1))
        _ = try await alice.api.send(SendMessageRequest(clientMessageId: "m1", text: "first"), to: direct.id)
        #expect(await push.apns.waitForRequests(1).count == 1)
        let secret = try await alice.api.send(SendMessageRequest(clientMessageId: "m2", text: "my card is 4111"), to: direct.id)
        try await waitFor("the follow-up to be scheduled") { push.clock.sleepers >= 1 }
        _ = try await alice.api.deleteMessage(secret.id, in: direct.id)
        push.clock.advance(by: 2)
        try await waitFor("the follow-up to be skipped") {
            push.metrics.value("parley_push_skipped_total", labels: ["why": "deleted"]) == 1
        }
        #expect(push.apns.received.count == 1)
        // Two waiting, the last deleted: one notice for both, without its words.
        push.clock.advance(by: 3)
        _ = try await alice.api.send(SendMessageRequest(clientMessageId: "m3", text: "third"), to: direct.id)
        #expect(await push.apns.waitForRequests(2).count == 2)
        _ = try await alice.api.send(SendMessageRequest(clientMessageId: "m4", text: "fourth"), to: direct.id)
        let last = try await alice.api.send(SendMessageRequest(clientMessageId: "m5", text: "delete me 4111"), to: direct.id)
        try await waitFor("the next follow-up to be scheduled") { push.clock.sleepers >= 1 }
        _ = try await alice.api.deleteMessage(last.id, in: direct.id)
        push.clock.advance(by: 2)
        let all = await push.apns.waitForRequests(3)
        #expect(all.count == 3)
        let trailing = try JSONDecoder().decode(PushNotificationPayload.self, from: all[2].body)
        #expect(trailing.messageCount == 2 && trailing.aps.alert.body == "New message")
        #expect(!String(decoding: all[2].body, as: UTF8.self).contains("4111"))
    }

    @Test func unregisteredAndBadTokensAreRemoved() async throws {
        let push = try await PushHarness.start()
        defer { Task { await push.stop() } }
        let (alice, bob, direct) = try await push.server.directPair()
        let gone = deviceToken(1), bad = deviceToken(2), fine = deviceToken(3)
        for token in [gone, bad, fine] { try await push.register(bob, token: token) }
        push.apns.script(gone, [TestAPNs.Answer(status: 410, reason: "Unregistered")])
        push.apns.script(bad, [TestAPNs.Answer(status: 400, reason: "BadDeviceToken")])
        _ = try await alice.api.send(SendMessageRequest(clientMessageId: "m1", text: "hi"), to: direct.id)
        await push.apns.waitForRequests(3)
        try await waitFor("the dead devices to be removed") {
            push.metrics.value("parley_push_devices_removed_total") == 2
        }
        #expect(try await push.server.app.store.devices(userId: bob.id).map(\.token) == [fine])
        // The next message goes only to the device that is left.
        _ = try await alice.api.send(SendMessageRequest(clientMessageId: "m2", text: "again"), to: direct.id)
        push.clock.advance(by: 10)
        await push.apns.waitForRequests(4)
        #expect(push.requests(for: gone).count == 1)
        #expect(push.requests(for: bad).count == 1)
        #expect(push.requests(for: fine).count == 2)
    }

    @Test func throttlingAndServerErrorsAreRetriedABoundedNumberOfTimes() async throws {
        let push = try await PushHarness.start { $0.maxRetries = 3 }
        defer { Task { await push.stop() } }
        let (alice, bob, direct) = try await push.server.directPair()
        let throttled = deviceToken(1), broken = deviceToken(2)
        try await push.register(bob, token: throttled)
        try await push.register(bob, token: broken)
        push.apns.script(throttled, [TestAPNs.Answer(status: 429, reason: "TooManyRequests"), TestAPNs.Answer(status: 503, reason: "ServiceUnavailable")])
        push.apns.script(broken, Array(repeating: TestAPNs.Answer(status: 500, reason: "InternalServerError"), count: 10))
        _ = try await alice.api.send(SendMessageRequest(clientMessageId: "m1", text: "hi"), to: direct.id)
        // 429, 503, then 200 for one; 1 + 3 retries of 500 for the other.
        await push.apns.waitForRequests(3 + 4)
        try await waitFor("both outcomes") {
            push.metrics.value("parley_push_notifications_total", labels: ["outcome": "delivered"]) == 1
                && push.metrics.value("parley_push_notifications_total", labels: ["outcome": "failed"]) == 1
        }
        #expect(push.requests(for: throttled).count == 3)
        #expect(push.requests(for: broken).count == 4)
        #expect(push.metrics.value("parley_push_retries_total", labels: ["status": "429"]) == 1)
        #expect(push.metrics.value("parley_push_retries_total", labels: ["status": "500"]) == 3)
        // Failing is not a reason to drop a device.
        #expect(try await push.server.app.store.devices(userId: bob.id).count == 2)
    }

    @Test func anExpiredProviderTokenIsSignedAgainOnceAndReusedOtherwise() async throws {
        let push = try await PushHarness.start()
        defer { Task { await push.stop() } }
        let alice = try await push.server.register("alice@x.io")
        var directs: [Conversation] = []
        for n in 1...3 {
            let user = try await push.server.register("user\(n)@x.io")
            let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [user.id]))
            try await push.register(user, token: deviceToken(n))
            _ = try await alice.api.send(SendMessageRequest(clientMessageId: "m\(n)", text: "hi \(n)"), to: direct.id)
            directs.append(direct)
        }
        let first = await push.apns.waitForRequests(3)
        #expect(Set(first.map { $0.headers["authorization"] ?? "" }).count == 1, "one provider token for all requests")
        #expect(first.allSatisfy { $0.rejection == nil })

        // APNs calls the token expired: a new one is signed and the request retried, once.
        let user4 = try await push.server.register("user4@x.io")
        let direct4 = try await alice.api.createConversation(.init(type: .direct, participantIds: [user4.id]))
        try await push.register(user4, token: deviceToken(4))
        push.apns.script(deviceToken(4), [
            TestAPNs.Answer(status: 403, reason: "ExpiredProviderToken"), TestAPNs.Answer(status: 403, reason: "ExpiredProviderToken"),
        ])
        push.clock.advance(by: 1)
        _ = try await alice.api.send(SendMessageRequest(clientMessageId: "m4", text: "hi 4"), to: direct4.id)
        let after = await push.apns.waitForRequests(5)
        #expect(after.count == 5)
        #expect(after[3].headers["authorization"] == first[0].headers["authorization"])
        #expect(after[4].headers["authorization"] != first[0].headers["authorization"], "signed again after 403 ExpiredProviderToken")
        try await waitFor("the second 403 to be final") {
            push.metrics.value("parley_push_notifications_total", labels: ["outcome": "rejected"]) == 1
        }
        #expect(push.requests(for: deviceToken(4)).count == 2, "refreshed once, not in a loop")
        #expect(push.metrics.value("parley_push_provider_token_refreshes_total") == 1)

        // Fifty minutes on, the token is renewed before APNs would call it expired.
        push.clock.advance(by: 50 * 60)
        _ = try await alice.api.send(SendMessageRequest(clientMessageId: "m5", text: "later"), to: directs[0].id)
        let renewed = await push.apns.waitForRequests(6)
        #expect(renewed.count == 6)
        #expect(renewed[5].headers["authorization"] != after[4].headers["authorization"])
        #expect(renewed[5].rejection == nil)
    }

    @Test func aSlowAPNsDoesNotDelayTheSendReply() async throws {
        let push = try await PushHarness.start { $0.requestTimeout = .seconds(300) }
        defer { Task { await push.stop() } }
        let (alice, bob, direct) = try await push.server.directPair()
        let clock = ContinuousClock()
        func timedSends(_ prefix: String, afterFirst: @Sendable () async -> Void = {}) async throws -> [Duration] {
            var replies: [Duration] = []
            for n in 1...20 {
                let started = clock.now
                _ = try await alice.api.send(SendMessageRequest(clientMessageId: "\(prefix)\(n)", text: "n\(n)"), to: direct.id)
                replies.append(clock.now - started)
                if n == 1 { await afterFirst() }
            }
            return replies.sorted()
        }
        // Baseline in the same run: Bob has no device, so nothing goes to APNs.
        let baseline = try await timedSends("base")
        // Now Bob has a device and APNs takes a minute to answer each request.
        try await push.register(bob, token: deviceToken(1))
        push.clock.advance(by: 60)
        push.apns.setDefaultAnswer(TestAPNs.Answer(status: 200, delay: .seconds(60)))
        let slow = try await timedSends("slow") { await push.apns.waitForRequests(1) }
        // Every reply came back while APNs was still holding the first request.
        #expect(push.apns.received.count == 1)
        #expect(push.metrics.value("parley_push_notifications_total", labels: ["outcome": "delivered"]) == 0)
        print("send reply (debug build), p50/max: no push \(baseline[10])/\(baseline[19]); APNs answering in 60 s \(slow[10])/\(slow[19])")
    }

    @Test func logoutStopsPushToTheDeviceOrToEveryDevice() async throws {
        let push = try await PushHarness.start()
        defer { Task { await push.stop() } }
        let bob = try await push.server.register("bob@x.io")
        for n in 1...3 { try await push.register(bob, token: deviceToken(n)) }
        // Each logout ends the sign-in it is called with: the next one signs in again.
        func signIn() async throws -> String {
            try await push.server.api().login(.init(organization: "acme", email: "bob@x.io", password: TestUser.password)).token
        }
        try await bob.api.logout(deviceToken: deviceToken(1))
        #expect(Set(try await push.server.app.store.devices(userId: bob.id).map(\.token)) == [deviceToken(2), deviceToken(3)])
        #expect(try await push.server.raw("POST", "auth/logout", token: bob.token).status == 401, "that session has ended")
        #expect(try await push.server.raw("POST", "auth/logout", token: try await signIn()).status == 204)
        #expect(try await push.server.app.store.devices(userId: bob.id).isEmpty)
        #expect(try await push.server.raw("POST", "auth/logout").status == 401)
        let again = try await signIn()
        #expect(try await push.server.raw("POST", "auth/logout", token: again, json: #"{"deviceToken":"zz"}"#).status == 400)
        #expect(try await push.server.raw("GET", "users/me", token: again).status == 200, "a refused logout ends nothing")
    }

    @Test func metricsAreExposedWithoutMessageText() async throws {
        let push = try await PushHarness.start()
        defer { Task { await push.stop() } }
        let (alice, bob, direct) = try await push.server.directPair()
        try await push.register(bob, token: deviceToken(1))
        _ = try await alice.api.send(SendMessageRequest(clientMessageId: "m1", text: "secret plans"), to: direct.id)
        await push.apns.waitForRequests(1)
        try await waitFor("the outcome to be counted") {
            push.metrics.value("parley_push_notifications_total", labels: ["outcome": "delivered"]) == 1
        }
        var request = URLRequest(url: push.server.baseURL.appendingPathComponent("metrics"))
        request.httpMethod = "GET"
        let (data, _) = try await URLSession.shared.data(for: request)
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains(#"parley_push_notifications_total{outcome="delivered"} 1"#))
        #expect(!text.contains("secret"))
    }

    /// Waits until every event queued so far has passed the push loop: a message to a fresh
    /// offline user's device is pushed, and the loop is serial.
    private func barrier(_ push: PushHarness, from alice: TestUser) async throws {
        let before = push.apns.received.count
        let witness = try await push.server.register("witness-\(UUID().uuidString.prefix(8))@x.io")
        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [witness.id]))
        let token = deviceToken(Int.random(in: 1_000_000...9_000_000))
        try await push.register(witness, token: token)
        _ = try await alice.api.send(SendMessageRequest(clientMessageId: UUID().uuidString, text: "barrier"), to: direct.id)
        try await waitFor("the barrier notification") { push.requests(for: token).count == 1 }
        #expect(push.apns.received.count > before)
    }
}
