import Foundation
@testable import ParleyClient
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Synchronization
import Testing

/// Backups that restore: `parley backup` of a SQLite server while messages are being
/// sent, `parley restore` into a new data directory, and a PostgreSQL dump restored into a fresh
/// database; each served again and checked from outside, with a client that had seen more
/// than the backup holds.
@Suite struct BackupRestoreTests {
    /// Every message of a conversation, oldest first, read a page at a time.
    static func everyMessage(_ api: ParleyAPI, _ conversation: EntityID) async throws -> [Message] {
        var messages: [Message] = []
        var before: Int64?
        while true {
            let page = try await api.messages(conversation, before: before, limit: 100)
            messages.insert(contentsOf: page.messages, at: 0)
            guard page.hasMore, let oldest = page.messages.first?.seq else { return messages }
            before = oldest
        }
    }

    static func storeId(_ user: TestUser) async throws -> String? {
        let connection = try await user.connect()
        defer { Task { await connection.close() } }
        return await connection.storeId
    }

    /// A backup under load: Alice sends without pause over her WebSocket while `parley backup`
    /// runs; every message acknowledged before the backup began is in the restored server,
    /// whose seqs are gapless, with the attachment's bytes. Bob's SDK client had seen messages
    /// sent after the backup (at seqs the restored server gives to new messages): it sees the
    /// new store identity, starts its cache again, and ends with exactly the server's messages.
    @Test(.heavy) func aBackupTakenUnderSendsRestoresEveryAcknowledgedMessage() async throws {
        let directory = TestServer.temporaryDirectory()
        let server = try await TestServer.start(dataDirectory: directory)
        let port = server.port
        let (alice, bob, direct) = try await server.directPair()
        let oldStoreId = try #require(try await Self.storeId(alice))
        let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let file = URL(fileURLWithPath: TestServer.temporaryDirectory()).appendingPathComponent("photo.bin")
        try bytes.write(to: file)
        let attachment = try await alice.api.upload(file: file, name: "photo.bin", contentType: "application/octet-stream")
        _ = try await alice.api.send(.init(clientMessageId: "photo", text: "a photo", type: .file, attachmentId: attachment.id), to: direct.id)

        let bobDatabase = TestServer.temporaryDirectory() + "/bob.sqlite"
        let bobClient = ChatClient(
            transport: LiveTransport(serverURL: server.baseURL, token: bob.token), database: try LocalDatabase.open(path: bobDatabase, retention: .init(maxMessagesPerConversation: 100_000)),
            userId: bob.id, environment: .live, policy: .init(maxAttempts: 1000, heartbeat: .seconds(10)), pollInterval: .seconds(3600))
        await bobClient.start()
        await bobClient.waitForFirstSync()
        _ = try await bobClient.openConversation(direct.id)
        @Sendable func bobsCache() async throws -> [LocalMessage] {
            try await bobClient.database.messages(in: direct.id, viewer: bob.id, limit: 10_000)
        }

        let socket = try await alice.connect()
        let acked = Mutex<[String]>([])
        let sender = Task {
            for n in 1...20_000 where !Task.isCancelled {
                guard (try? await socket.sendMessage(.init(conversationId: direct.id, clientMessageId: "m\(n)", text: "message \(n)"))) != nil
                else { return }
                acked.withLock { $0.append("m\(n)") }
            }
        }
        try await waitFor("sends under way") { acked.withLock { $0.count } >= 50 }
        let ackedBefore = acked.withLock { $0 }
        let backup = TestServer.temporaryDirectory() + "/backup"
        let (status, output) = try await runToEndOffPool(ServeProcess.binary, ["backup", "--data-dir", directory, "--to", backup])
        #expect(status == 0, "\(output)")
        let ackedDuring = acked.withLock { $0.count } - ackedBefore.count
        #expect(ackedDuring > 0, "sends went on while the backup ran")
        let ackedAfterBackup = acked.withLock { $0.count }
        try await waitFor("sends after the backup") { acked.withLock { $0.count } >= ackedAfterBackup + 30 }
        sender.cancel()
        await sender.value
        // The send in flight when the sender stopped may be stored without its answer: count the server's.
        let sentCount = try await Self.everyMessage(bob.api, direct.id).count
        do {
            try await waitFor("Bob's client has every message", timeout: .seconds(60)) { (try? await bobsCache().count) == sentCount }
        } catch {
            Issue.record("Bob's cache holds \(try await bobsCache().count) of \(sentCount)")
            throw error
        }
        await socket.close()
        await server.stop()

        // A restore never writes over a database.
        let refused = try await runToEndOffPool(ServeProcess.binary, ["restore", "--from", backup, "--data-dir", directory])
        #expect(refused.status != 0 && refused.output.contains("exists"), "\(refused.output)")
        let restoredDirectory = TestServer.temporaryDirectory() + "/restored"
        let restore = try await runToEndOffPool(ServeProcess.binary, ["restore", "--from", backup, "--data-dir", restoredDirectory])
        #expect(restore.status == 0, "\(restore.output)")
        let restored = try await TestServer.start(dataDirectory: restoredDirectory, port: port)
        defer { Task { await restored.stop() } }

        // The old tokens still work (the signing keys are in the copy); the data has a new identity.
        let newStoreId = try #require(try await Self.storeId(alice))
        #expect(newStoreId != oldStoreId)
        let stored = try await Self.everyMessage(bob.api, direct.id)
        let storedIds = Set(stored.map(\.clientMessageId))
        let missing = ackedBefore.filter { !storedIds.contains($0) }
        #expect(missing.isEmpty, "acknowledged before the backup began, missing after the restore: \(missing.prefix(10))")
        #expect(stored.map(\.seq) == Array(1...Int64(stored.count)), "gapless from 1")
        #expect(stored.count < sentCount, "the backup is older than the last sends (else the client check below proves nothing)")
        #expect(try await bob.api.download(attachment.url) == bytes)

        // Bob's client reconnects to the restored copy and starts its cache again: the open
        // chat loads its newest messages again, and none of those the copy lacks stays.
        await bobClient.networkChanged(available: true, interfaceChanged: true)
        try await waitFor("Bob's client sees the restored copy", timeout: .seconds(60)) { await bobClient.readCounts.storeChanges == 1 }
        _ = try await alice.api.send(.init(clientMessageId: "after-restore", text: "after the restore"), to: direct.id)
        let onServer = try await Self.everyMessage(bob.api, direct.id)
        #expect(onServer.last?.text == "after the restore")
        do {
            try await waitFor("Bob's cache is exactly the restored server's messages", timeout: .seconds(60)) {
                let cached: [LocalMessage] = (try? await bobsCache()) ?? []
                let cachedKeys: [String] = cached.map { "\($0.clientMessageId)@\($0.seq ?? -1)" }
                let serverKeys: [String] = onServer.map { "\($0.clientMessageId)@\($0.seq)" }
                // The cache holds the newest page(s): a run of the server's newest, nothing else.
                return !cachedKeys.isEmpty && cachedKeys == Array(serverKeys.suffix(cachedKeys.count))
            }
        } catch {
            let cached = try await bobsCache()
            Issue.record("cache \(cached.count) messages, last seq \(String(describing: cached.last?.seq)); server \(onServer.count), last \(onServer.last?.seq ?? 0)")
            throw error
        }
        await bobClient.stop()
    }

    /// A PostgreSQL service: pg_dump of a database in use, restored into a fresh database,
    /// marked with `parley restore --database`, serves the same messages, attachments (kept in
    /// the database) and sign-ins, under a new store identity.
    @Test(.needsPostgres, .needs("pg_dump", package: "postgresql-client")) func aPostgresDumpRestoresIntoAFreshDatabase() async throws {
        let server = try await TestServer.start(store: .postgres)
        let (alice, bob, direct) = try await server.directPair()
        for n in 1...30 {
            _ = try await alice.api.send(.init(clientMessageId: "m\(n)", text: "message \(n)"), to: direct.id)
        }
        let bytes = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
        let file = URL(fileURLWithPath: TestServer.temporaryDirectory()).appendingPathComponent("doc.bin")
        try bytes.write(to: file)
        let attachment = try await alice.api.upload(file: file, name: "doc.bin", contentType: "application/octet-stream")
        _ = try await alice.api.send(.init(clientMessageId: "doc", text: "a file", type: .file, attachmentId: attachment.id), to: direct.id)
        let before = try await Self.everyMessage(bob.api, direct.id)
        let oldStoreId = try await Self.storeId(alice)
        let source = try #require(server.database)

        let dump = TestServer.temporaryDirectory() + "/parley.dump"
        let dumped = try await runToEndOffPool(
            URL(fileURLWithPath: try #require(TestTools.path(of: "pg_dump"))), ["--format=custom", "--no-owner", "--file", dump, source.url])
        #expect(dumped.status == 0, "\(dumped.output)")
        await server.stop()
        let fresh = try await TestDatabase.create()
        defer { Task { await fresh.drop() } }
        let loaded = try await runToEndOffPool(
            URL(fileURLWithPath: try #require(TestTools.path(of: "pg_restore"))), ["--no-owner", "--exit-on-error", "--dbname", fresh.url, dump])
        #expect(loaded.status == 0, "\(loaded.output)")
        let marked = try await runToEndOffPool(ServeProcess.binary, ["restore", "--database", fresh.url])
        #expect(marked.status == 0, "\(marked.output)")

        let restored = try await TestServer.start { $0.databaseURL = fresh.url }
        defer { Task { await restored.stop() } }
        let bobThere = TestUser(server: restored, auth: bob.auth)
        let after = try await Self.everyMessage(bobThere.api, direct.id)
        #expect(after == before)
        #expect(try await bobThere.api.download(attachment.url) == bytes)
        let aliceThere = TestUser(server: restored, auth: alice.auth)
        #expect(try await Self.storeId(aliceThere) != oldStoreId)
        _ = try await aliceThere.api.send(.init(clientMessageId: "after", text: "after the restore"), to: direct.id)
        #expect(try await Self.everyMessage(bobThere.api, direct.id).map(\.seq) == Array(1...Int64(before.count + 1)))
    }
}
