import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// The SDK's side of push: token registration (also when it was offline), logout, routing a
/// tapped notification to a synced conversation, and the badge.
@Suite struct ClientPushTests {
    static let token = String(repeating: "a1", count: 32)
    /// Every HTTP request fails (no network), until the plan is calmed.
    static var httpDown: FaultPlan.Odds {
        var odds = FaultPlan.Odds()
        odds.failHTTP = 1.0
        return odds
    }

    @Test func theTokenIsRegisteredNowOrAfterTheNextSyncAndFollowsTheSignedInUser() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, _) = try await server.directPair()
        // Offline when the token arrives: HTTP fails until the network is back.
        let plan = FaultPlan(seed: 1, odds: Self.httpDown)
        let path = TestServer.temporaryDirectory() + "/alice.sqlite"
        let offline = try ChatClientTests.client(
            alice, path: path, transport: FaultyTransport(serverURL: server.baseURL, token: alice.token, plan: plan), clock: ManualClock())
        await offline.setPushToken(Data(repeating: 0xa1, count: 32), environment: .production)
        #expect(await offline.isPushTokenRegistered() == false)
        #expect(try await server.app.store.devices(userId: alice.id).isEmpty)
        plan.calm()
        await offline.synchronize()
        #expect(await offline.isPushTokenRegistered())
        #expect(try await server.app.store.devices(userId: alice.id).map(\.token) == [Self.token])
        #expect(try await server.app.store.devices(userId: alice.id).map(\.environment) == [.production])

        // The same phone, now signed in as Bob with the same database: re-registered for Bob.
        let asBob = ChatClient(
            transport: LiveTransport(serverURL: server.baseURL, token: bob.token), database: offline.database, userId: bob.id)
        #expect(await asBob.isPushTokenRegistered() == false)
        await asBob.synchronize()
        #expect(await asBob.isPushTokenRegistered())
        #expect(try await server.app.store.devices(userId: alice.id).isEmpty)
        #expect(try await server.app.store.devices(userId: bob.id).map(\.token) == [Self.token])

        // Logout stops push to this phone and wipes the account's local data.
        _ = try await asBob.send(text: "queued", in: try #require(await asBob.database.conversations().first?.id))
        try await asBob.logout()
        #expect(try await server.app.store.devices(userId: bob.id).isEmpty)
        #expect(try await asBob.database.conversations().isEmpty)
        #expect(try await asBob.database.outboxCount() == 0)
    }

    @Test func logoutThatCannotReachTheServerKeepsEverything() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, _, direct) = try await server.directPair()
        let plan = FaultPlan(seed: 2, odds: Self.httpDown)
        plan.calm()
        let client = try ChatClientTests.client(
            alice, transport: FaultyTransport(serverURL: server.baseURL, token: alice.token, plan: plan), clock: ManualClock())
        await client.setPushToken(hex: Self.token, environment: .sandbox)
        _ = try await client.openConversation(direct.id)
        let failing = FaultPlan(seed: 3, odds: Self.httpDown)
        let cutOff = ChatClient(
            transport: FaultyTransport(serverURL: server.baseURL, token: alice.token, plan: failing),
            database: client.database, userId: alice.id)
        await #expect(throws: ClientError.self) { try await cutOff.logout() }
        #expect(try await server.app.store.devices(userId: alice.id).count == 1)
        #expect(try await client.database.conversations().count == 1)
    }

    @Test func aTappedNotificationOpensItsConversationSyncedFirstAndTheBadgeCountsUnread() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let bobClient = try ChatClientTests.client(bob, clock: ManualClock())
        _ = try await bobClient.openConversation(direct.id)
        // Bob's app is in the background (not connected); Alice writes three messages.
        var last: Message?
        for n in 1...3 {
            last = try await alice.api.send(SendMessageRequest(clientMessageId: "m\(n)", text: "hi \(n)"), to: direct.id)
        }
        let sent = try #require(last)
        let payload = PushNotificationPayload(message: sent, senderName: "Alice", badge: 3)
        let userInfo = try #require(JSONSerialization.jsonObject(with: try JSONEncoder().encode(payload)) as? [AnyHashable: Any])
        let route = try #require(PushRoute(userInfo: userInfo))
        #expect(route == PushRoute(conversationId: direct.id, messageId: sent.id))
        #expect(PushRoute(userInfo: ["aps": ["alert": "hello"]]) == nil, "not a Parley notification")

        let opened = try await bobClient.open(route)
        #expect(opened.map(\.text) == ["hi 1", "hi 2", "hi 3"], "the announced message is on screen at once")
        #expect(opened.last?.serverId == sent.id)
        await bobClient.synchronize()
        #expect(try await bobClient.badgeCount() == 3)

        // A conversation the phone has never opened (a new group) opens from the server.
        let carol = try await server.register("carol@x.io")
        let group = try await carol.api.createConversation(.init(type: .group, participantIds: [bob.id], name: "Plans"))
        let invite = try await carol.api.send(SendMessageRequest(clientMessageId: "c1", text: "join us"), to: group.id)
        let fresh = try await bobClient.open(PushRoute(conversationId: group.id, messageId: invite.id))
        #expect(fresh.map(\.text).contains("join us"))
        await bobClient.synchronize()
        #expect(try await bobClient.badgeCount() == 4)
        await bobClient.markRead(direct.id, upTo: sent.seq)
        await bobClient.flushReceipts()
        await bobClient.synchronize()
        #expect(try await bobClient.badgeCount() == 1)
    }
}
