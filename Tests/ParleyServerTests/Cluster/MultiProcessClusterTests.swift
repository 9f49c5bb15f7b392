import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Two `parley serve` processes on one PostgreSQL, driven from outside: one is killed with
/// SIGKILL mid-conversation; its users are expired and announced offline by the survivor, and
/// a client that moves to the survivor ends with every message exactly once, in order.
@Suite(.needsPostgres) struct MultiProcessClusterTests {
    typealias Node = ServeProcess

    @Test(.heavy) func aNodeKilledMidConversationLosesNothing() async throws {
        let database = try await TestDatabase.create()
        // No PARLEY_JWT_SECRET: the nodes share their signing keys through the database, so the
        // client that moves from the killed node to the survivor keeps its token.
        let (a, b) = try await Node.readyPair(databaseURL: database.url)
        defer {
            a.stop()
            b.stop()
            Task { await database.drop() }
        }

        let apiA = ParleyAPI(baseURL: a.url), apiB = ParleyAPI(baseURL: b.url)
        let alice = try await apiA.register(RegisterRequest(organization: "acme", email: "alice@x.io", password: TestUser.password, displayName: "Alice"))
        let bob = try await apiB.register(RegisterRequest(organization: "acme", email: "bob@x.io", password: TestUser.password, displayName: "Bob"))
        let aliceAPI = ParleyAPI(baseURL: a.url, token: alice.token)
        let direct = try await aliceAPI.createConversation(.init(type: .direct, participantIds: [bob.user.id]))

        // Alice watches on A; Bob's app is connected to B.
        let aliceSocket = RealtimeConnection(serverURL: a.url, token: alice.token)
        _ = try await aliceSocket.connect()
        let aliceEvents = EventRecorder(aliceSocket)
        let bobPath = TestServer.temporaryDirectory() + "/bob.sqlite"
        let bobOnB = ChatClient(
            transport: LiveTransport(serverURL: b.url, token: bob.token), database: try LocalDatabase.open(path: bobPath),
            userId: bob.user.id)
        await bobOnB.start()
        _ = try await bobOnB.openConversation(direct.id)
        try await aliceEvents.wait("Bob online (through B)") { events in
            events.contains { if case .presence(let p) = $0 { p.userId == bob.user.id && p.isOnline } else { false } }
        }
        // Live across processes: sent to A, received by Bob's app on B.
        for n in 1...10 {
            _ = try await aliceSocket.sendMessage(SendMessageRequest(conversationId: direct.id, clientMessageId: "before-\(n)", text: "before \(n)"))
        }
        try await waitFor("Bob's app to have the first ten") {
            try await bobOnB.database.messages(in: direct.id, viewer: bob.user.id).count == 10
        }

        // B dies without a word; Alice keeps writing through A.
        b.kill()
        await bobOnB.stop()
        for n in 1...20 {
            _ = try await aliceSocket.sendMessage(SendMessageRequest(conversationId: direct.id, clientMessageId: "during-\(n)", text: "during \(n)"))
        }
        // A expires B and tells Alice that Bob is gone.
        try await aliceEvents.wait(timeout: .seconds(20), "Bob offline after B's expiry") { events in
            events.contains { if case .presence(let p) = $0 { p.userId == bob.user.id && !p.isOnline && p.lastSeenAt != nil } else { false } }
        }
        let bobSeenByAlice = try await aliceAPI.users().first { $0.id == bob.user.id }
        #expect(bobSeenByAlice?.isOnline == false)

        // Bob's app reconnects (through the load balancer) to A with the same database.
        let bobOnA = ChatClient(
            transport: LiveTransport(serverURL: a.url, token: bob.token), database: try LocalDatabase.open(path: bobPath),
            userId: bob.user.id)
        await bobOnA.start()
        try await waitFor("Bob's app to catch up on A", timeout: .seconds(20)) {
            try await bobOnA.database.messages(in: direct.id, viewer: bob.user.id).count == 30
        }
        let messages = try await bobOnA.database.messages(in: direct.id, viewer: bob.user.id, limit: 100)
        #expect(messages.map(\.text) == (1...10).map { "before \($0)" } + (1...20).map { "during \($0)" })
        #expect(messages.compactMap(\.seq) == Array(1...30))
        try await aliceEvents.wait("Bob online again (through A)") { events in
            events.filter { if case .presence(let p) = $0 { p.userId == bob.user.id && p.isOnline } else { false } }.count >= 2
        }
        await bobOnA.stop()
        await aliceSocket.close()
    }
}
