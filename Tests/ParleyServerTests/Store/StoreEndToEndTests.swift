import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing
import ParleySQLite
import ParleyPostgres

/// The protocol's main path through a real server on every available store: on PostgreSQL
/// (when `PARLEY_TEST_POSTGRES_URL` is set) as well as on the default SQLite.
@Suite struct StoreEndToEndTests {
    @Test(arguments: StoreKind.available)
    func registerConverseOverWebSocketAndRetry(kind: StoreKind) async throws {
        let server = try await TestServer.start(store: kind)
        do {
            try await converse(on: server, kind: kind)
        } catch {
            await server.stop()
            throw error
        }
        // Awaited (not deferred) so the PostgreSQL database is dropped before the run ends.
        await server.stop()
    }

    private func converse(on server: TestServer, kind: StoreKind) async throws {
        #expect((server.app.store is PostgresStore) == (kind == .postgres))
        #expect((server.app.store is SQLiteStore) == (kind == .sqlite))
        let (alice, bob, direct) = try await server.directPair()
        // A second create is the same direct conversation.
        #expect(try await bob.api.createConversation(.init(type: .direct, participantIds: [alice.id])).id == direct.id)
        // Login goes through the store's credentials.
        _ = try await server.api().login(LoginRequest(organization: "acme", email: "bob@x.io", password: TestUser.password))

        let aliceSocket = try await alice.connect()
        let bobEvents = EventRecorder(try await bob.connect())
        let request = SendMessageRequest(conversationId: direct.id, clientMessageId: "e2e-1", text: "hello over ws")
        let sent = try await aliceSocket.sendMessage(request)
        #expect(sent.seq == 1 && sent.text == "hello over ws" && sent.senderId == alice.id)
        try await bobEvents.wait { _ in bobEvents.createdMessages.contains { $0.id == sent.id } }

        // The retry (over the socket and over HTTP) answers with the original and stores nothing.
        #expect(try await aliceSocket.sendMessage(request) == sent)
        #expect(try await alice.api.send(.init(clientMessageId: "e2e-1", text: "changed"), to: direct.id) == sent)
        let reply = try await bob.api.send(.init(clientMessageId: "e2e-2", text: "hi back"), to: direct.id)
        #expect(reply.seq == 2)

        let history = try await bob.api.messages(direct.id, limit: 10)
        #expect(history.messages.map(\.id) == [sent.id, reply.id])
        #expect(history.messages.map(\.seq) == [1, 2])
        let conversation = try await alice.api.conversation(direct.id)
        #expect(conversation.lastSeq == 2 && conversation.unreadCount == 1 && conversation.lastMessage?.id == reply.id)
        let read = try await alice.api.markRead(direct.id, upToSeq: 2)
        #expect(read.readSeq == 2 && read.unreadCount == 0)
        #expect(try await alice.api.changes(direct.id, since: 1).messages.map(\.id) == [reply.id])
        await aliceSocket.close()
    }
}

/// Reading the database URL of `--database` / `PARLEY_DATABASE_URL` (no server needed).
@Suite struct DatabaseURLTests {
    @Test func postgresURLsBecomeClientConfigurations() throws {
        let full = try PostgresStore.configuration(url: "postgresql://app:p%40ss%3Aword@db.example.com:6543/parley_prod?sslmode=require")
        #expect(full.host == "db.example.com" && full.port == 6543)
        #expect(full.username == "app" && full.password == "p@ss:word" && full.database == "parley_prod")
        let minimal = try PostgresStore.configuration(url: "postgres://127.0.0.1/")
        #expect(minimal.host == "127.0.0.1" && minimal.port == 5432)
        #expect(minimal.username == "postgres" && minimal.password == nil && minimal.database == nil)
        for bad in ["mysql://u@h/db", "postgres:///db", "not a url", "postgres://u@h/db?sslmode=maybe"] {
            #expect(throws: (any Error).self, "\(bad)") { try PostgresStore.configuration(url: bad) }
        }
    }

    @Test func theConfigurationNamesItsStore() {
        var configuration = ServerConfiguration()
        #expect(!configuration.usesPostgres && configuration.databaseDescription == configuration.databasePath)
        configuration.databaseURL = "postgres://app:secret@db:5432/parley"
        #expect(configuration.usesPostgres)
        #expect(!configuration.databaseDescription.contains("secret") && configuration.databaseDescription.contains("db:5432/parley"))
        configuration.databaseURL = "sqlite:///tmp/x"
        #expect(!configuration.usesPostgres)
    }

    @Test func anUnreachableDatabaseStopsTheStartWithinItsTimeout() async throws {
        let started = ContinuousClock.now
        let error = await #expect(throws: ServerStartError.self) {
            try await PostgresStore.connect(url: "postgres://parley:secret@127.0.0.1:1/nothing", startTimeout: .seconds(1))
        }
        #expect(error?.description.contains("secret") == false)
        // It answers at its timeout (1 s), without waiting for the pool to wind down (which took
        // 30 s): a loaded CI machine running the whole suite has been seen at 16.9 s, so the
        // bound sits between that and the pool's 30 s.
        #expect(ContinuousClock.now - started < .seconds(25))
    }

    @Test func anUnsupportedDatabaseURLStopsTheStart() async throws {
        var configuration = ServerConfiguration()
        configuration.dataDirectory = TestServer.temporaryDirectory()
        configuration.databaseURL = "mysql://u@h/db"
        await #expect(throws: ServerStartError.self) { try await ParleyApp(configuration: configuration) }
    }
}
