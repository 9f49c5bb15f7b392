import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Deleting one's message before the server has confirmed it. A message that went may be
/// stored already: dropping it locally left it on the server (everyone saw it, and it came back
/// here with the answer). Found by the terminal test that deletes a message right after sending
/// it: under load `/delete 1` ran while "oops" was still in flight, and "deleted" never showed.
@Suite struct RevokeUnsentTests {
    /// Holds something until released, and says whether it has been reached.
    actor Gate {
        private(set) var reached = 0
        private var waiters: [CheckedContinuation<Void, Never>] = []
        private var open = false

        func pass() async {
            reached += 1
            if open { return }
            await withCheckedContinuation { waiters.append($0) }
        }

        func release() {
            open = true
            for waiter in waiters { waiter.resume() }
            waiters = []
        }
    }

    /// A preparation that waits at the gate (the message is being prepared, not sent).
    struct HeldPreparation: MessagePreparation {
        let gate: Gate
        var name: String { "held" }
        func prepare(_ message: PreparedMessage) async throws -> PreparedMessage {
            await gate.pass()
            return message
        }
    }

    /// Time moves only with `clock`: nothing here waits for a timer (a retry's backoff stays
    /// pending), so what goes, goes because a flush sent it.
    static func client(
        _ user: TestUser, transport: any ChatTransport, path: String? = nil, hooks: MessageHooks = MessageHooks(),
        clock: ManualClock = ManualClock()
    ) throws -> ChatClient {
        ChatClient(
            transport: transport, database: try path.map { try LocalDatabase.open(path: $0) } ?? LocalDatabase.inMemory(),
            userId: user.id, environment: AppLifecycleTests.environment(clock), policy: .init(maxAttempts: 1000, heartbeat: .seconds(10)),
            pollInterval: .seconds(3600), hooks: hooks)
    }

    static func shown(_ client: ChatClient, _ conversation: EntityID, _ user: TestUser, _ clientMessageId: String) async throws -> LocalMessage? {
        await client.presented(try await client.database.messages(in: conversation, viewer: user.id, limit: 50))
            .first { $0.clientMessageId == clientMessageId }
    }

    /// On the server: the copies of the message (by its client id), as its sender reads them.
    static func serverCopies(_ user: TestUser, _ conversation: EntityID, _ clientMessageId: String) async throws -> [Message] {
        try await user.api.messages(conversation).messages.filter { $0.clientMessageId == clientMessageId }
    }

    @Test func aMessageDeletedWhileItsSendIsInFlightIsDeletedOnTheServer() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, _, direct) = try await server.directPair()
        let gate = Gate()
        let transport = FaultyTransport(
            serverURL: server.baseURL, token: alice.token, plan: FaultPlan(seed: 1, odds: FaultPlan.Odds.none),
            beforeSend: { _ in await gate.pass() })
        let client = try Self.client(alice, transport: transport)
        let pending = try await client.send(text: "oops", in: direct.id)
        try await waitFor("the send in flight") { await gate.reached == 1 }

        try await MessageService(client: client).revoke(pending)
        let now = try #require(try await Self.shown(client, direct.id, alice, pending.clientMessageId))
        #expect(now.deletedAt != nil && now.text.isEmpty, "shown deleted at once")

        // The send was on its way: it is stored, then deleted, and stays deleted here.
        await gate.release()
        try await waitFor("the server's copy deleted") {
            try await Self.serverCopies(alice, direct.id, pending.clientMessageId).first?.deletedAt != nil
        }
        try await waitFor("the revoke done") { try await client.database.pendingRevokes(senderId: alice.id).isEmpty }
        #expect(try await Self.serverCopies(alice, direct.id, pending.clientMessageId).count == 1)
        let after = try #require(try await Self.shown(client, direct.id, alice, pending.clientMessageId))
        #expect(after.deletedAt != nil && after.serverId != nil, "the server's tombstone, not a local overlay")
        await client.stop()
    }

    /// The send's answer was lost (stored, but the device cannot know), the user deletes it,
    /// and the app is restarted before the server is reached again: the delete was kept, and
    /// goes once the retry has the message's id.
    @Test func aDeleteAfterALostAnswerSurvivesARestartAndReachesTheServer() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let path = TestServer.temporaryDirectory() + "-revoke.sqlite"
        var odds = FaultPlan.Odds.none
        odds.failAfterSend = 1
        let clock = ManualClock()
        let lossy = try Self.client(
            alice, transport: FaultyTransport(serverURL: server.baseURL, token: alice.token, plan: FaultPlan(seed: 2, odds: odds)), path: path,
            clock: clock)
        let pending = try await lossy.send(text: "sent, answer lost", in: direct.id)
        try await waitFor("one attempt whose answer was lost") {
            (try await lossy.database.outboxState(clientMessageId: pending.clientMessageId)?.attempts ?? 0) >= 1
        }
        #expect(try await Self.serverCopies(alice, direct.id, pending.clientMessageId).first?.deletedAt == nil, "stored, not deleted")

        try await MessageService(client: lossy).revoke(pending)
        #expect(try await Self.shown(lossy, direct.id, alice, pending.clientMessageId)?.deletedAt != nil, "shown deleted at once")
        #expect(try await lossy.database.pendingRevokes(senderId: alice.id).map(\.clientMessageId) == [pending.clientMessageId])
        await lossy.stop()

        // The same phone's clock: the lost send's retry is still in its backoff; connecting makes it due.
        let restarted = try ChatClientTests.client(alice, path: path, clock: clock)
        await restarted.start()
        try await waitFor("still shown deleted after the restart") {
            try await Self.shown(restarted, direct.id, alice, pending.clientMessageId)?.deletedAt != nil
        }
        await restarted.synchronize()
        try await waitFor("the server's copy deleted") {
            try await Self.serverCopies(alice, direct.id, pending.clientMessageId).first?.deletedAt != nil
        }
        #expect(try await Self.serverCopies(alice, direct.id, pending.clientMessageId).count == 1, "the retry stored nothing twice")
        #expect(try await bob.api.messages(direct.id).messages.allSatisfy { $0.deletedAt != nil || $0.text != "sent, answer lost" })
        try await waitFor("the revoke done") { try await restarted.database.pendingRevokes(senderId: alice.id).isEmpty }
        await restarted.stop()
    }

    /// Deleted while still being prepared (never sent): dropped, and it never goes, even though
    /// the flush had already picked it up.
    @Test func aMessageDeletedBeforeItEverWentIsDroppedAndNeverSent() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, _, direct) = try await server.directPair()
        let gate = Gate()
        let sends = Gate()
        let transport = FaultyTransport(
            serverURL: server.baseURL, token: alice.token, plan: FaultPlan(seed: 3, odds: FaultPlan.Odds.none),
            beforeSend: { _ in await sends.pass() })
        await sends.release()
        let client = try Self.client(alice, transport: transport, hooks: MessageHooks(preparations: [HeldPreparation(gate: gate)]))
        let pending = try await client.send(text: "never mind", in: direct.id)
        try await waitFor("the preparation under way") { await gate.reached == 1 }

        try await MessageService(client: client).revoke(pending)
        #expect(try await Self.shown(client, direct.id, alice, pending.clientMessageId) == nil, "gone from the screen")
        #expect(try await client.database.outboxCount() == 0)
        #expect(try await client.database.pendingRevokes(senderId: alice.id).isEmpty, "nothing to delete on the server")

        await gate.release()
        // A later message goes as usual: the held flush has finished by the time it is stored.
        let next = try await client.send(text: "this one", in: direct.id)
        try await waitFor("the next message stored") { !(try await Self.serverCopies(alice, direct.id, next.clientMessageId).isEmpty) }
        #expect(try await Self.serverCopies(alice, direct.id, pending.clientMessageId).isEmpty, "the deleted one never went")
        #expect(await sends.reached == 1)
        await client.stop()
    }
}
