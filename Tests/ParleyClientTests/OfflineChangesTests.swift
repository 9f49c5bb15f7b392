import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Edits and reactions made offline: shown at once, kept in the database across a restart,
/// sent once and in order when the server answers; a refusal drops the change.
@Suite struct OfflineChangesTests {
    /// A plan where nothing reaches the server until `calm()`.
    static func unreachable() -> FaultPlan {
        var odds = FaultPlan.Odds()
        odds.failHTTP = 1
        odds.failOpen = 1
        odds.failBeforeSend = 1
        return FaultPlan(seed: 7, odds: odds)
    }

    @Test func changesMadeOfflineShowAtOnceSurviveARestartAndReachTheServerOnceInOrder() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let mine = try await alice.api.send(.init(clientMessageId: "a1", text: "draft"), to: direct.id)
        let theirs = try await bob.api.send(.init(clientMessageId: "b1", text: "hello"), to: direct.id)
        let path = TestServer.temporaryDirectory() + "-alice.sqlite"

        // Alice's device has the conversation, then loses the server. Its clock stands still:
        // the changes go only when a flush sends them, never on a retry timer.
        let clock = ManualClock()
        let first = try ChatClientTests.client(alice, path: path, clock: clock)
        _ = try await first.openConversation(direct.id)
        await first.stop()
        let plan = Self.unreachable()
        let offline = ChatClient(
            transport: FaultyTransport(serverURL: server.baseURL, token: alice.token, plan: plan),
            database: try LocalDatabase.open(path: path), userId: alice.id, environment: AppLifecycleTests.environment(clock),
            policy: .init(maxAttempts: 1000, heartbeat: .seconds(10)), pollInterval: .seconds(5))
        let service = MessageService(client: offline)
        @Sendable func shown(_ client: ChatClient) async throws -> [LocalMessage] {
            await client.presented(try await client.database.messages(in: direct.id, viewer: alice.id, from: nil, limit: 50))
        }
        let cached = try await shown(offline)
        let myMessage = try #require(cached.first { $0.serverId == mine.id })
        let theirMessage = try #require(cached.first { $0.serverId == theirs.id })

        // Each call returns at once (queued), and the screen shows the result.
        try await service.edit(myMessage, text: "final")
        try await service.react(theirMessage, emoji: "👍")
        try await service.react(theirMessage, emoji: "🎉")
        try await service.unreact(theirMessage, emoji: "🎉")
        let now = try await shown(offline)
        #expect(now.first { $0.serverId == mine.id }?.text == "final")
        #expect(now.first { $0.serverId == mine.id }?.editedAt != nil)
        #expect(now.first { $0.serverId == theirs.id }?.reactions == ["👍": [alice.id]])
        #expect(try await offline.database.pendingChanges().map(\.change) == [.edit("final"), .react("👍"), .react("🎉"), .unreact("🎉")])
        let untouched = try await bob.api.messages(direct.id).messages
        #expect(untouched.first { $0.id == mine.id }?.text == "draft", "nothing reached the server")
        #expect(plan.injected > 0)
        await offline.stop()

        // The app restarts with the server back: the changes go, once each, in order.
        let online = try ChatClientTests.client(alice, path: path, clock: clock)
        #expect(try await shown(online).first { $0.serverId == mine.id }?.text != nil)
        await online.start()
        _ = await online.synchronize()
        try await waitFor("the changes reach the server") {
            try await online.database.pendingChanges().isEmpty
        }
        let stored = try await bob.api.messages(direct.id).messages
        #expect(stored.first { $0.id == mine.id }?.text == "final")
        #expect(stored.first { $0.id == mine.id }?.editedAt != nil)
        #expect(stored.first { $0.id == theirs.id }?.reactions == ["👍": [alice.id]], "🎉 added then taken back, in that order")
        let cache = try await shown(online)
        #expect(cache.first { $0.serverId == mine.id }?.text == "final")
        #expect(cache.first { $0.serverId == theirs.id }?.reactions == ["👍": [alice.id]])

        // A refusal: nothing waits, the error comes back, the message shows as the server has it.
        let refused = try #require(cache.first { $0.serverId == theirs.id })
        await #expect(throws: ClientError.self) { try await online.change(.edit("not mine"), of: refused) }
        #expect(try await online.database.pendingChanges().isEmpty)
        #expect(try await shown(online).first { $0.serverId == theirs.id }?.text == "hello")
        await online.stop()
    }
}
