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
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Who is notified, when, how often and with what badge; what each answer of APNs does to a
/// device; and the rules below them (the coalescer's windows, the provider token, the key
/// file). The whole path runs against `TestAPNs` with coalescing on a manual clock.
@Suite struct PushDeliveryRulesTests {
    static func payload(_ request: TestAPNs.Received) throws -> PushNotificationPayload {
        try JSONDecoder().decode(PushNotificationPayload.self, from: request.body)
    }

    static var quietLogger: Logger {
        var logger = Logger(label: "parley.test.apns")
        logger.logLevel = .critical
        return logger
    }

    static func send(_ user: TestUser, _ text: String, to conversationId: EntityID) async throws -> Message {
        try await user.api.send(SendMessageRequest(clientMessageId: UUID().uuidString, text: text), to: conversationId)
    }

    // MARK: Who is notified

    /// A burst's follow-up is dropped when the recipient connected during the window: they
    /// have the messages on screen. What comes after they leave is notified afresh, counting
    /// only itself.
    @Test func aFollowUpIsNotSentToARecipientWhoConnectedDuringTheWindow() async throws {
        let push = try await PushHarness.start { $0.coalesceWindow = .seconds(2) }
        defer { Task { await push.stop() } }
        let (alice, bob, direct) = try await push.server.directPair()
        try await push.register(bob, token: deviceToken(1))
        for n in 1...3 { _ = try await Self.send(alice, "part \(n)", to: direct.id) }
        #expect(await push.apns.waitForRequests(1, timeout: .seconds(30)).count == 1)
        try await waitFor("two messages merged into a follow-up") { push.metrics.value("parley_push_coalesced_total") == 2 }

        let socket = try await bob.connect()
        push.clock.advance(by: 2)
        try await waitFor("the follow-up skipped") {
            push.metrics.value("parley_push_skipped_total", labels: ["why": "connected"]) == 1
        }
        #expect(push.requests(for: deviceToken(1)).count == 1, "a follow-up went to a connected user")

        await socket.close()
        try await waitFor("Bob offline") { !push.server.app.fanOut.isOnline(bob.id) }
        push.clock.advance(by: 10)
        let later = try await Self.send(alice, "after you left", to: direct.id)
        let requests = await push.apns.waitForRequests(2, timeout: .seconds(30))
        #expect(requests.count == 2)
        let notice = try Self.payload(try #require(requests.last))
        #expect(notice.messageId == later.id && notice.messageCount == 1 && notice.aps.alert.subtitle == nil)
        #expect(notice.aps.badge == 4, "every message is still unread")
    }

    /// In a group each offline member has their own window; the sender is never notified of
    /// their own message; a follow-up shows the latest message's sender with the count.
    @Test func aGroupBurstIsCoalescedPerRecipientAndNeverReachesItsSender() async throws {
        let push = try await PushHarness.start { $0.coalesceWindow = .seconds(2) }
        defer { Task { await push.stop() } }
        let alice = try await push.server.register("alice@x.io")
        let bob = try await push.server.register("bob@x.io")
        let carol = try await push.server.register("carol@x.io")
        let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id, carol.id], name: "Team"))
        for (n, user) in [alice, bob, carol].enumerated() { try await push.register(user, token: deviceToken(n + 1)) }
        let (aliceToken, bobToken, carolToken) = (deviceToken(1), deviceToken(2), deviceToken(3))

        _ = try await Self.send(alice, "a1", to: group.id)
        _ = try await Self.send(alice, "a2", to: group.id)
        _ = try await Self.send(carol, "c1", to: group.id)
        // At once: a1 to Bob and Carol, c1 to Alice. Merged: a2 for Bob and Carol, c1 for Bob.
        #expect(await push.apns.waitForRequests(3, timeout: .seconds(30)).count == 3)
        try await waitFor("three merges") { push.metrics.value("parley_push_coalesced_total") == 3 }
        push.clock.advance(by: 2)
        #expect(await push.apns.waitForRequests(5, timeout: .seconds(30)).count == 5)

        let toBob = try push.requests(for: bobToken).map(Self.payload)
        #expect(toBob.map(\.aps.alert.body) == ["a1", "c1"])
        #expect(toBob.map(\.messageCount) == [1, 2])
        #expect(toBob.map(\.aps.alert.title) == ["Alice", "Carol"], "the follow-up is from whoever wrote last")
        #expect(toBob.last?.aps.alert.subtitle == "2 new messages")
        let toCarol = try push.requests(for: carolToken).map(Self.payload)
        #expect(toCarol.map(\.aps.alert.body) == ["a1", "a2"], "Carol's own c1 is neither pushed to her nor counted")
        #expect(toCarol.map(\.messageCount) == [1, 1])
        let toAlice = try push.requests(for: aliceToken).map(Self.payload)
        #expect(toAlice.map(\.aps.alert.body) == ["c1"])

        // A quiet while later, one message is one notification per other member, no more.
        push.clock.advance(by: 10)
        _ = try await Self.send(alice, "a3", to: group.id)
        #expect(await push.apns.waitForRequests(7, timeout: .seconds(30)).count == 7)
        #expect(push.requests(for: bobToken).count == 3 && push.requests(for: carolToken).count == 3)
        #expect(push.requests(for: aliceToken).count == 1)
    }

    /// The badge is the recipient's unread total over every conversation: their own messages
    /// never count, reading lowers it, and so does a deleted message they had not read.
    @Test func theBadgeIsTheUnreadTotalAcrossConversations() async throws {
        let push = try await PushHarness.start()
        defer { Task { await push.stop() } }
        let (alice, bob, direct) = try await push.server.directPair()
        let carol = try await push.server.register("carol@x.io")
        let group = try await carol.api.createConversation(.init(type: .group, participantIds: [bob.id], name: "Team"))
        try await push.register(bob, token: deviceToken(1))
        var badges: [Int?] = []
        func expectNotification(_ count: Int) async throws {
            let requests = await push.apns.waitForRequests(count, timeout: .seconds(30))
            #expect(requests.count == count)
            badges.append(try Self.payload(try #require(requests.last)).aps.badge)
            push.clock.advance(by: 10)  // past the window: the next one goes at once
        }
        _ = try await Self.send(alice, "d1", to: direct.id)
        try await expectNotification(1)
        let d2 = try await Self.send(alice, "d2", to: direct.id)
        try await expectNotification(2)
        let g1 = try await Self.send(carol, "g1", to: group.id)
        try await expectNotification(3)
        _ = try await Self.send(bob, "my own", to: group.id)
        _ = try await bob.api.markRead(direct.id, upToSeq: d2.seq)
        _ = try await Self.send(alice, "d3", to: direct.id)
        try await expectNotification(4)
        _ = try await carol.api.deleteMessage(g1.id, in: group.id)
        _ = try await Self.send(alice, "d4", to: direct.id)
        try await expectNotification(5)
        #expect(badges == [1, 2, 3, 2, 2], "g1 + d3 after reading d1-d2; d3 + d4 after g1's delete")
        #expect(push.requests(for: deviceToken(1)).count == 5)
    }

    /// Only new messages notify: making, renaming and changing a group (system messages),
    /// edits, reactions and deletes do not.
    @Test func onlyNewMessagesNotify() async throws {
        let push = try await PushHarness.start()
        defer { Task { await push.stop() } }
        let (alice, bob, direct) = try await push.server.directPair()
        let carol = try await push.server.register("carol@x.io")
        try await push.register(bob, token: deviceToken(1))
        let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id], name: "Team"))
        _ = try await alice.api.rename(group.id, to: "Team 2")
        _ = try await alice.api.addParticipants(group.id, userIds: [carol.id])
        _ = try await alice.api.removeParticipant(group.id, userId: carol.id)
        let first = try await Self.send(alice, "first", to: direct.id)
        // Its notification is out before the second message exists: two notifications in
        // flight at once may reach APNs in either order.
        #expect(await push.apns.waitForRequests(1, timeout: .seconds(30)).count == 1)
        _ = try await alice.api.editMessage(first.id, in: direct.id, text: "first, edited")
        _ = try await alice.api.react(first.id, in: direct.id, emoji: "🎉")
        _ = try await alice.api.deleteMessage(first.id, in: direct.id)
        push.clock.advance(by: 10)
        let second = try await Self.send(alice, "second", to: group.id)
        let requests = await push.apns.waitForRequests(2, timeout: .seconds(30))
        let payloads = try requests.map(Self.payload)
        #expect(payloads.map(\.messageId) == [first.id, second.id])
        #expect(payloads.map(\.messageCount) == [1, 1])
        #expect(payloads.map(\.aps.alert.body) == ["first", "second"])
    }

    /// A device token belongs to whoever registered it last: after it moved to Carol (the
    /// same phone, another account) Bob's messages no longer go to it, and it comes back to
    /// Bob when he registers it again.
    @Test func aTokenThatMovedToAnotherAccountGetsOnlyThatAccountsNotifications() async throws {
        let push = try await PushHarness.start()
        defer { Task { await push.stop() } }
        let (alice, bob, direct) = try await push.server.directPair()
        let carol = try await push.server.register("carol@x.io")
        let toCarol = try await alice.api.createConversation(.init(type: .direct, participantIds: [carol.id]))
        let phone = deviceToken(7)
        try await push.register(bob, token: phone)
        try await push.register(carol, token: phone)
        _ = try await Self.send(alice, "for Bob", to: direct.id)
        try await waitFor("Bob's message to find no device") {
            push.metrics.value("parley_push_skipped_total", labels: ["why": "no_device"]) == 1
        }
        _ = try await Self.send(alice, "for Carol", to: toCarol.id)
        let first = await push.apns.waitForRequests(1, timeout: .seconds(30))
        #expect(try first.map(Self.payload).map(\.conversationId) == [toCarol.id])

        try await push.register(bob, token: phone)
        push.clock.advance(by: 10)
        _ = try await Self.send(alice, "for Bob again", to: direct.id)
        let second = await push.apns.waitForRequests(2, timeout: .seconds(30))
        #expect(try second.map(Self.payload).map(\.aps.alert.body) == ["for Carol", "for Bob again"])
        #expect(push.requests(for: phone).count == 2)
    }

    /// Each device goes to its own environment's host: a sandbox token sent to production (or
    /// the reverse) is answered BadDeviceToken, and the device would be deleted. (One stand-in
    /// plays both hosts, reached by two names its certificate carries.)
    @Test func sandboxAndProductionDevicesGoToTheirOwnHosts() async throws {
        let push = try await PushHarness.start { configuration in
            configuration.productionURL = URL(string: "https://127.0.0.1:\(configuration.sandboxURL.port ?? 0)")!
        }
        defer { Task { await push.stop() } }
        #expect(push.apns.url.host == "localhost")
        let (alice, bob, direct) = try await push.server.directPair()
        try await push.register(bob, token: deviceToken(1), environment: .sandbox)
        try await push.register(bob, token: deviceToken(2), environment: .production)
        _ = try await Self.send(alice, "hi", to: direct.id)
        #expect(await push.apns.waitForRequests(2, timeout: .seconds(30)).count == 2)
        let sandbox = try #require(push.requests(for: deviceToken(1)).first)
        let production = try #require(push.requests(for: deviceToken(2)).first)
        #expect(sandbox.headers["host"]?.hasPrefix("localhost") == true, "\(sandbox.headers)")
        #expect(production.headers["host"]?.hasPrefix("127.0.0.1") == true, "\(production.headers)")
        try await waitFor("both delivered") {
            push.metrics.value("parley_push_notifications_total", labels: ["outcome": "delivered"]) == 2
        }
        #expect(try await push.server.app.store.devices(userId: bob.id).count == 2)
    }
}
