import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Several nodes on one PostgreSQL act as one service: messages, typing, receipts and
/// presence cross nodes through LISTEN/NOTIFY; a dead node's users expire; a node that may
/// have missed notifications makes its clients resync. Runs when PARLEY_TEST_POSTGRES_URL is set.
@Suite(.needsPostgres) struct ClusterTests {
    static let secret = String(repeating: "cluster-secret-", count: 4)

    /// Fast heartbeats (a node expired by mistake rejoins within one), but a node is declared
    /// dead only after 30 s of silence: a loaded machine (CI, 2 cores) paused a node's
    /// heartbeat past 2 s, the other node expired it and dropped its users' presence, and with
    /// it the typing signal the test waited for. No test here expires a node; the multi-process
    /// tests kill one for real.
    static func fastCluster(_ configuration: inout ServerConfiguration) {
        configuration.jwtSecret = secret
        guard let url = configuration.databaseURL, var cluster = try? ClusterConfiguration(url: url) else { return }
        cluster.heartbeatInterval = .milliseconds(200)
        cluster.deadAfter = .seconds(30)
        configuration.cluster = cluster
    }

    /// Node A (which owns the fresh database) and node B on the same database.
    static func twoNodes() async throws -> (a: TestServer, b: TestServer) {
        let a = try await TestServer.start(store: .postgres, configure: fastCluster)
        let url = try #require(a.database?.url)
        let b = try await TestServer.start { configuration in
            configuration.databaseURL = url
            fastCluster(&configuration)
        }
        for node in [a, b] { try await #require(node.app.cluster).waitUntilListening() }
        return (a, b)
    }

    @Test func messagesTypingReceiptsAndPresenceCrossNodes() async throws {
        let (a, b) = try await Self.twoNodes()
        defer { Task { await b.stop(); await a.stop() } }
        let alice = try await a.register("alice@x.io")
        let bob = try await b.register("bob@x.io")
        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))

        let aliceSocket = try await alice.connect()
        let aliceEvents = EventRecorder(aliceSocket)
        let bobSocket = try await bob.connect()
        let bobEvents = EventRecorder(bobSocket)
        // Presence crossed: Alice (on A) learns Bob (on B) came online; A's directory says so.
        try await aliceEvents.wait("Bob online") { events in
            events.contains { if case .presence(let p) = $0 { p.userId == bob.id && p.isOnline } else { false } }
        }
        #expect(try await alice.api.users().first { $0.id == bob.id }?.isOnline == true)

        // A message sent through A reaches Bob on B, once, in order.
        for n in 1...5 {
            _ = try await aliceSocket.sendMessage(SendMessageRequest(conversationId: direct.id, clientMessageId: "m\(n)", text: "hi \(n)"))
        }
        try await bobEvents.wait("five messages on B") { _ in bobEvents.createdMessages.count >= 5 }
        #expect(bobEvents.createdMessages.map(\.seq) == [1, 2, 3, 4, 5].map { $0 + direct.lastSeq })
        // Typing from B reaches A, and lapses there too.
        try await bobSocket.perform(.typing(TypingCommand(conversationId: direct.id, isTyping: true)))
        try await aliceEvents.wait(timeout: .seconds(30), "typing") { events in
            events.contains { if case .typing(let t) = $0 { t.userId == bob.id && t.isTyping } else { false } }
        }
        try await aliceEvents.wait("typing lapse") { events in
            events.contains { if case .typing(let t) = $0 { t.userId == bob.id && !t.isTyping } else { false } }
        }
        // A read receipt on B reaches the sender on A.
        let last = try #require(bobEvents.createdMessages.last)
        _ = try await bob.api.markRead(direct.id, upToSeq: last.seq)
        try await aliceEvents.wait("receipt") { events in
            events.contains { if case .receipt(let r) = $0 { r.userId == bob.id && r.readSeq == last.seq } else { false } }
        }
        // Bob leaves B: Alice learns he is offline, with a last-seen time.
        await bobSocket.close()
        try await aliceEvents.wait("Bob offline") { events in
            events.contains { if case .presence(let p) = $0 { p.userId == bob.id && !p.isOnline && p.lastSeenAt != nil } else { false } }
        }
        await aliceSocket.close()
    }

    @Test func aUserOnTwoNodesStaysOnlineUntilTheLastConnectionCloses() async throws {
        let (a, b) = try await Self.twoNodes()
        defer { Task { await b.stop(); await a.stop() } }
        let alice = try await a.register("alice@x.io")
        let bob = try await a.register("bob@x.io")
        let watcher = EventRecorder(try await alice.connect())
        let bobOnA = try await bob.connect()
        let bobOnB = RealtimeConnection(serverURL: b.baseURL, token: bob.token)
        _ = try await bobOnB.connect()
        try await watcher.wait("Bob online") { events in
            events.contains { if case .presence(let p) = $0 { p.userId == bob.id && p.isOnline } else { false } }
        }
        try await waitFor("A to know Bob is also on B") { try #require(a.app.cluster).isOnlineElsewhere(bob.id) }
        await bobOnA.close()
        // Still connected on B: no offline, and A's directory still shows him online.
        try await waitFor("A to see Bob only on B") { !a.app.fanOut.isOnlineHere(bob.id) }
        #expect(a.app.fanOut.isOnline(bob.id))
        #expect(try await alice.api.users().first { $0.id == bob.id }?.isOnline == true)
        await bobOnB.close()
        try await watcher.wait("Bob offline") { events in
            events.contains { if case .presence(let p) = $0 { p.userId == bob.id && !p.isOnline } else { false } }
        }
        let offline = watcher.events.filter { if case .presence(let p) = $0 { p.userId == bob.id && !p.isOnline } else { false } }
        #expect(offline.count == 1)
    }

    @Test func aLargeEventIsCarriedThroughTheSpillTable() async throws {
        let (a, b) = try await Self.twoNodes()
        defer { Task { await b.stop(); await a.stop() } }
        let alice = try await a.register("alice@x.io")
        var members: [TestUser] = []
        for n in 0..<40 { members.append(try await b.register("m\(n)@x.io")) }
        let group = try await alice.api.createConversation(.init(type: .group, participantIds: members.map(\.id), name: "big"))
        let receiver = EventRecorder(try await members[7].connect())
        let text = String(repeating: "é€", count: 2400)  // 4,800 characters, 12,000 bytes
        _ = try await alice.api.send(SendMessageRequest(clientMessageId: "big", text: text), to: group.id)
        try await receiver.wait("the large message on B") { _ in receiver.createdMessages.contains { $0.text == text } }
        #expect(try #require(a.app.cluster).stats.value("parley_cluster_spilled_total") >= 1)
    }

    @Test func aNodeThatMayHaveMissedNotificationsMakesItsClientsResync() async throws {
        let (a, b) = try await Self.twoNodes()
        defer { Task { await b.stop(); await a.stop() } }
        let alice = try await a.register("alice@x.io")
        let bob = try await b.register("bob@x.io")
        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        let bobEvents = EventRecorder(try await bob.connect())
        let database = try #require(a.database?.name)
        // Cut every LISTEN connection of the test database (both nodes' listeners).
        try await TestDatabase.admin { client in
            try await client.query("""
                SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                WHERE datname = \(database) AND query ILIKE 'LISTEN%'
                """)
        }
        try await bobEvents.waitUntilFinished()
        // Reconnected (as every client does), Bob gets what is sent next, across nodes.
        try await #require(b.app.cluster).waitUntilListening()
        let again = EventRecorder(try await bob.connect())
        _ = try await alice.api.send(SendMessageRequest(clientMessageId: "after", text: "still here"), to: direct.id)
        try await again.wait("the message after the listener came back") { _ in !again.createdMessages.isEmpty }
        #expect(try #require(b.app.cluster).stats.value("parley_cluster_listener_restarts_total") >= 1)
    }
}
