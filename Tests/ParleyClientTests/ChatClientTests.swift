import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The SDK against a real server: optimistic send, offline queue, catch-up.
@Suite struct ChatClientTests {
    /// Real time, but backoff and polling shrunk so tests run in seconds. For the suites not
    /// yet on a manual clock; a new test passes a clock to ``client(_:path:transport:clock:)``.
    static func fastEnvironment() -> ClientEnvironment {
        var environment = ClientEnvironment.live
        environment.sleep = { duration in try await Task.sleep(for: duration / 50) }
        return environment
    }

    /// With a clock: time (timestamps, heartbeats, backoff, polling, the models' coalescing)
    /// moves only when the test advances it. Without: ``fastEnvironment()``.
    static func client(
        _ user: TestUser, path: String? = nil, transport: (any ChatTransport)? = nil, clock: ManualClock? = nil
    ) throws -> ChatClient {
        let database = try path.map { try LocalDatabase.open(path: $0) } ?? LocalDatabase.inMemory()
        return ChatClient(
            transport: transport ?? LiveTransport(serverURL: user.server.baseURL, token: user.token), database: database,
            userId: user.id, environment: clock.map(AppLifecycleTests.environment) ?? fastEnvironment(),
            policy: .init(maxAttempts: 1000, heartbeat: .seconds(10)), pollInterval: .seconds(5))
    }

    /// Waits until `condition` holds, moving `clock` by `step` (a chat model's coalescing) at
    /// each look: a model reads its window again only once its coalescing wait has passed.
    static func waitAdvancing(
        _ what: String, clock: ManualClock, by step: Duration = ChatModel.coalescing, timeout: Duration = .seconds(30),
        _ condition: @Sendable () async throws -> Bool
    ) async throws {
        try await waitFor(what, timeout: timeout) {
            if try await condition() { return true }
            clock.advance(by: step.seconds)
            return false
        }
    }

    /// Removed from a group (or leaving it from another device): the one `conversation.updated`
    /// without the user takes the row and its messages away at once, and the events that
    /// follow (the system message) do not bring it back. It stayed until the next full sync.
    @Test func aGroupOneIsRemovedFromLeavesTheListAtOnce() async throws {
        let clock = ManualClock()
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, _) = try await server.directPair()
        let group = try await bob.api.createConversation(.init(type: .group, participantIds: [alice.id], name: "Launch"))
        _ = try await bob.api.send(.init(clientMessageId: "g1", text: "welcome"), to: group.id)
        let client = try Self.client(alice, clock: clock)
        await client.start()
        _ = try await client.openConversation(group.id)
        try await waitFor("the group in Alice's list") { try await client.database.conversations().contains { $0.id == group.id } }
        try await waitFor("connected") { await client.connectionState == .connected }
        _ = try await bob.api.removeParticipant(group.id, userId: alice.id)
        try await waitFor("the group gone from Alice's list") {
            try await !client.database.conversations().contains { $0.id == group.id }
        }
        #expect(try await client.database.messages(in: group.id, viewer: alice.id).isEmpty, "its messages too")
        _ = try await bob.api.send(.init(clientMessageId: "g2", text: "after you left"), to: group.id)
        await client.synchronize()
        #expect(try await !client.database.conversations().contains { $0.id == group.id }, "nothing brings it back")
        await client.stop()
    }

    @Test func optimisticSendShowsAtOnceThenIsConfirmedOnEveryDevice() async throws {
        let clock = ManualClock()
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let aliceClient = try Self.client(alice, clock: clock)
        let bobClient = try Self.client(bob, clock: clock)
        await aliceClient.start()
        await bobClient.start()
        _ = try await aliceClient.openConversation(direct.id)
        _ = try await bobClient.openConversation(direct.id)

        let pending = try await aliceClient.send(text: "hello", in: direct.id)
        #expect(pending.delivery == .sending)
        try await waitFor("bob receives") {
            try await bobClient.database.messages(in: direct.id, viewer: bob.id).map(\.text) == ["hello"]
        }
        try await waitFor("alice's copy confirmed") {
            try await aliceClient.database.messages(in: direct.id, viewer: alice.id).first?.isConfirmed == true
        }
        let mine = try await aliceClient.database.messages(in: direct.id, viewer: alice.id)
        // Sent at least: Bob has the conversation open, so his delivered (or read) receipt may
        // already have moved it on by now (a loaded run saw .delivered here).
        #expect(mine.count == 1 && mine[0].id == pending.id)
        #expect([.sent, .delivered, .read].contains(mine.first?.delivery), "\(String(describing: mine.first?.delivery))")
        #expect(try await aliceClient.database.outboxCount() == 0)
        await aliceClient.stop()
        await bobClient.stop()
    }

    /// A sync says so while it runs (the banner's "Syncing…"), and says when it ended, once
    /// however many run at once; the list model follows.
    @Test func aSyncIsAnnouncedWhileItRunsAndTheListModelShowsIt() async throws {
        let clock = ManualClock()
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, _, _) = try await server.directPair()
        let client = try Self.client(alice, clock: clock)
        let changes = await client.changes()
        let model = await ConversationListModel(client: client)
        await model.start()
        #expect(await model.banner == "Offline", "not started: offline")
        async let first = client.synchronize()
        async let second = client.synchronize()
        _ = await (first, second)
        var syncing: [Bool] = []
        for await change in changes {
            if case .syncing(let running) = change { syncing.append(running) }
            if syncing.last == false { break }
        }
        #expect(syncing == [true, false], "one start and one end for two overlapping syncs: \(syncing)")
        #expect(await client.isSyncing == false)
        try await waitFor("the model to see the end") { await model.isSyncing == false }
        await model.stop()
    }

    @Test func messagesWrittenWhileTheServerIsDownAreDeliveredOnceWhenItReturns() async throws {
        let clock = ManualClock()
        let directory = TestServer.temporaryDirectory()
        let server = try await TestServer.start(dataDirectory: directory)
        let port = server.port
        let (alice, bob, direct) = try await server.directPair()
        let databasePath = directory + "/alice-client.sqlite"
        var aliceClient = try Self.client(alice, path: databasePath, clock: clock)
        await aliceClient.start()
        _ = try await aliceClient.openConversation(direct.id)
        await server.stop()

        for index in 1...5 { try await aliceClient.send(text: "offline \(index)", in: direct.id) }
        #expect(try await aliceClient.database.outboxCount() == 5)
        // The app is killed while offline, and opened again later.
        await aliceClient.stop()
        let reopened = try Self.client(alice, path: databasePath, clock: clock)
        aliceClient = reopened
        let shown = try await reopened.database.messages(in: direct.id, viewer: alice.id)
        #expect(shown.map(\.text) == (1...5).map { "offline \($0)" } && shown.allSatisfy { $0.delivery == .sending })

        let restarted = try await TestServer.start(dataDirectory: directory, port: port)
        defer { Task { await restarted.stop() } }
        await reopened.start()
        try await waitFor("outbox drained") { try await reopened.database.outboxCount() == 0 }
        let history = try await bob.api.messages(direct.id).messages
        #expect(history.map(\.text) == (1...5).map { "offline \($0)" }, "in order, each once")
        #expect(history.map(\.seq) == [1, 2, 3, 4, 5])
        await aliceClient.stop()
    }

    @Test func aRefusedMessageIsMarkedFailedAndCanBeDiscarded() async throws {
        let clock = ManualClock()
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let client = try Self.client(alice, clock: clock)
        await client.start()
        _ = try await client.openConversation(direct.id)
        // Enqueue a request the server will refuse (a reply to a message of no conversation).
        _ = try await client.database.enqueue(
            .init(clientMessageId: "doomed", text: "x", replyToId: EntityID()), in: direct.id, senderId: alice.id, now: Date())
        try await client.send(text: "fine", in: direct.id)
        try await waitFor("the refusal is recorded") {
            try await client.database.message(senderId: alice.id, clientMessageId: "doomed", viewer: alice.id)?.delivery
                == .failed(reason: "replyToId is not a message of this conversation")
        }
        try await waitFor("the next message is not blocked") {
            try await bob.api.messages(direct.id).messages.map(\.text) == ["fine"]
        }
        try await client.discard(clientMessageId: "doomed", in: direct.id)
        try await waitFor("the outbox empty (\"fine\" confirmed, \"doomed\" discarded)") {
            try await client.database.outboxCount() == 0
        }
        #expect(try await client.database.messages(in: direct.id, viewer: alice.id).map(\.text) == ["fine"])
        await client.stop()
    }

    @Test func openingFromTheCacheCountsHitsAndPagesBackToTheServer() async throws {
        let clock = ManualClock()
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        for index in 1...30 { _ = try await bob.api.send(.init(clientMessageId: "b\(index)", text: "\(index)"), to: direct.id) }
        let client = try Self.client(alice, clock: clock)
        let first = try await client.openConversation(direct.id, limit: 10)
        #expect(first.compactMap(\.seq) == Array(21...30))
        let second = try await client.openConversation(direct.id, limit: 10)
        #expect(second.compactMap(\.seq) == Array(21...30))
        let older = try await client.loadOlder(direct.id, before: 21, limit: 10)
        #expect(older.compactMap(\.seq) == Array(11...20))
        let oldest = try await client.loadOlder(direct.id, before: 11, limit: 10)
        #expect(oldest.compactMap(\.seq) == Array(1...10))
        let again = try await client.loadOlder(direct.id, before: 11, limit: 10)
        #expect(again.compactMap(\.seq) == Array(1...10))
        // The first open fetched two screens: the first page back was already cached.
        let counts = await client.readCounts
        #expect(counts.cacheHits == 3 && counts.cacheMisses == 2, "\(counts)")
    }

    /// A screen pages back only while there is something older: never in an empty chat (its
    /// spinner would spin forever), and not once the first message is shown.
    @Test func aChatModelOffersOlderMessagesOnlyWhileThereAreSome() async throws {
        let clock = ManualClock()
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let client = try Self.client(alice, clock: clock)
        await client.start()
        let empty = await ChatModel(client: client, conversationId: direct.id)
        await empty.start()
        #expect(await empty.canLoadOlder == false, "an empty chat has nothing older")
        await empty.stop()
        for index in 1...60 { _ = try await bob.api.send(.init(clientMessageId: "p\(index)", text: "\(index)"), to: direct.id) }
        try await waitFor("the messages") { try await client.database.messages(in: direct.id, viewer: alice.id).count >= 50 }
        let chat = await ChatModel(client: client, conversationId: direct.id)
        await chat.start()
        try await Self.waitAdvancing("the newest 50", clock: clock) { await chat.messages.last?.seq == 60 }
        // The window is the newest page, unless the cache already held all 60 when it opened
        // (a loaded machine): either way, older ones are offered exactly when seq 1 is not shown.
        let firstShown = await chat.messages.first?.seq ?? -1
        #expect(await chat.canLoadOlder == (firstShown > 1), "first shown seq \(firstShown)")
        if firstShown > 1 { await chat.loadOlder() }
        #expect(await chat.messages.compactMap(\.seq) == Array(1...60))
        #expect(await chat.canLoadOlder == false, "the first message is shown")
        await chat.stop()
        await client.stop()
    }

    @Test func editsDeletesAndReactionsReachTheCache() async throws {
        let clock = ManualClock()
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let bobClient = try Self.client(bob, clock: clock)
        await bobClient.start()
        _ = try await bobClient.openConversation(direct.id)
        try await waitFor("connected") { await bobClient.connectionState == .connected }
        let one = try await alice.api.send(.init(clientMessageId: "1", text: "typo"), to: direct.id)
        let two = try await alice.api.send(.init(clientMessageId: "2", text: "regret"), to: direct.id)
        let path = "conversations/\(direct.id)/messages"
        _ = try await server.raw("PATCH", "\(path)/\(one.id)", token: alice.token, json: #"{"text":"fixed"}"#)
        _ = try await server.raw("DELETE", "\(path)/\(two.id)", token: alice.token)
        _ = try await server.raw("POST", "\(path)/\(one.id)/reactions", token: alice.token, json: #"{"emoji":"👍"}"#)
        try await waitFor("bob's cache follows") {
            let shown = try await bobClient.database.messages(in: direct.id, viewer: bob.id)
            return shown.map(\.text) == ["fixed", ""] && shown[0].editedAt != nil && shown[1].deletedAt != nil
                && shown[0].reactions == ["👍": [alice.id]]
        }
        #expect(try await bobClient.database.syncedSeq(direct.id) == 5)
        await bobClient.stop()
    }

    @Test func listAndChatModelsFollowTheDatabase() async throws {
        let clock = ManualClock()
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io", name: "Bob")
        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        let client = try Self.client(alice, clock: clock)
        await client.start()
        let list = await ConversationListModel(client: client, names: { $0 == bob.id ? "Bob" : nil })
        await list.start()
        let chat = await ChatModel(client: client, conversationId: direct.id)
        await chat.start()
        try await waitFor("the list shows the conversation") {
            await list.rows.map(\.title) == ["Bob"]
        }
        await chat.send("hi Bob")
        #expect(await chat.messages.map(\.text) == ["hi Bob"])
        // Bob answers once Alice's message is stored (else his could take the first seq).
        try await waitFor("alice's message stored") { try await client.database.outboxCount() == 0 }
        _ = try await bob.api.send(.init(clientMessageId: "r", text: "hi Alice"), to: direct.id)
        try await Self.waitAdvancing("the reply shows", clock: clock) { await chat.messages.map(\.text) == ["hi Bob", "hi Alice"] }
        try await waitFor("the badge counts it") { await list.totalUnread == 1 }
        #expect(await chat.connection == .connected)
        await chat.stop()
        await list.stop()
        await client.stop()
    }
}
