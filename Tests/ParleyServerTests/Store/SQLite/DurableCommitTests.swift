import Foundation
import GRDB
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
import ParleyTestSupport
import Testing
@testable import ParleySQLite

/// An acknowledged write is on disk: the store's writer commits with `synchronous = FULL`
/// (the log fsynced at every commit), not the NORMAL that GRDB's pool sets when it turns WAL
/// on, which leaves commits in the page cache until the next checkpoint.
@Suite struct DurableCommitTests {
    static func synchronous(of writer: any DatabaseWriter) throws -> Int? {
        try writer.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA synchronous") }
    }

    @Test func theStoresWriterFsyncsEveryCommitBeforeAndAfterWrites() async throws {
        let directory = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(path: directory + "/parley.sqlite")
        #expect(try Self.synchronous(of: store.writer) == 2, "FULL from the start")
        let journal = try await store.writer.read { try String.fetchOne($0, sql: "PRAGMA journal_mode") }
        #expect(journal == "wal")
        let now = Date()
        let alice = try await store.register(organization: "acme", email: "a@x.io", displayName: "A", passwordHash: "x", now: now)
        let bob = try await store.register(organization: "acme", email: "b@x.io", displayName: "B", passwordHash: "x", now: now)
        let conversation = try await store.createConversation(NewConversation(
            organizationId: alice.organizationId, creatorId: alice.id, type: .direct, participantIds: [bob.id], now: now)).conversation
        for n in 0..<5 {
            _ = try await store.send(MessageDraft(
                conversationId: conversation.id, senderId: alice.id, clientMessageId: "d\(n)", type: .text, text: "\(n)", now: now))
        }
        await store.checkpointer?.checkpoint()
        #expect(try Self.synchronous(of: store.writer) == 2, "still FULL after group commits and a checkpoint")
        try await store.close()
    }

    /// Why the store sets it after opening: a FULL asked for in `prepareDatabase` does not
    /// survive GRDB's WAL set-up. If GRDB stops doing that, this says so (and the helper is
    /// then merely belt and braces).
    @Test func grdbsPoolTurnsAFullAskedForInPrepareDatabaseIntoNormal() throws {
        let directory = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = Configuration()
        configuration.prepareDatabase { try $0.execute(sql: "PRAGMA synchronous = FULL") }
        let plain = try DatabasePool(path: directory + "/plain.sqlite", configuration: configuration)
        #expect(try Self.synchronous(of: plain) == 1, "GRDB's WAL set-up runs after prepareDatabase")
        let durable = try DurableWAL.pool(path: directory + "/durable.sqlite", configuration: configuration)
        #expect(try Self.synchronous(of: durable) == 2)
    }
}
