import Foundation
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing
@testable import ParleySQLite

/// The write-ahead log is checkpointed beside the writer, not inside a commit.
@Suite struct WALCheckpointTests {
    /// 600 sends of 2 KB each, each its own commit (about 6,000 pages of log: below the
    /// writer's own threshold of 10,000, so the writer never checkpoints here). The database
    /// file still takes the messages in, because the checkpointer copied them beside the
    /// writer; every message is there after the store is closed and opened again.
    @Test func theLogIsCheckpointedBesideTheWriter() async throws {
        let directory = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/parley.sqlite"
        let store = try SQLiteStore(path: path)
        let now = Date()
        let alice = try await store.register(organization: "acme", email: "a@x.io", displayName: "A", passwordHash: "x", now: now)
        let bob = try await store.register(organization: "acme", email: "b@x.io", displayName: "B", passwordHash: "x", now: now)
        let conversation = try await store.createConversation(NewConversation(
            organizationId: alice.organizationId, creatorId: alice.id, type: .direct, participantIds: [bob.id], now: now)).conversation
        let checkpointer = try #require(store.checkpointer)
        await checkpointer.checkpoint()
        let before = Self.size(of: path)
        let words = String(repeating: "lorem ipsum dolor sit amet ", count: 76)
        for n in 0..<600 {
            _ = try await store.send(MessageDraft(
                conversationId: conversation.id, senderId: alice.id, clientMessageId: "w\(n)", type: .text,
                text: "\(n) \(words)", now: now))
        }
        let logged = Self.size(of: path + "-wal")
        #expect(logged < UInt64(WALCheckpointer.safetyNetPages) * 4096, "below the writer's own threshold: \(logged)")
        // The checkpoint scheduled by the last sends runs within its delay (0.5 s).
        try? await waitFor("the checkpoint", timeout: .seconds(20)) { Self.size(of: path) >= before + 1_000_000 }
        #expect(Self.size(of: path) >= before + 1_000_000, "the messages reached the database file: \(before) -> \(Self.size(of: path))")
        #expect(checkpointer.runs > 1)
        try await store.close()

        let reopened = try SQLiteStore(path: path)
        let page = try await reopened.messages(conversationId: conversation.id, viewer: bob.id, before: nil, after: 0, limit: 200)
        #expect(page.messages.first?.text == "0 \(words)")
        let view = try #require(try await reopened.conversation(id: conversation.id, viewer: bob.id))
        #expect(view.unreadCount == 600 && view.lastSeq == 600)
        try await reopened.close()
    }

    /// A checkpoint scheduled by the last writes may run while the store closes. The closed
    /// check once ran before the checkpoint reached the connection's queue, so a close landing
    /// between them handed SQLite a closed connection: a segmentation fault in a full run (CI,
    /// `sqlite3_wal_checkpoint_v2` with a null handle). Many races of the two must all end
    /// cleanly, and a checkpoint after the close does nothing.
    @Test func aCheckpointRacingTheCloseNeverTouchesAClosedConnection() async throws {
        let directory = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/parley.sqlite"
        let store = try SQLiteStore(path: path)
        try await store.close()
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<1_000 {
            let checkpointer = try WALCheckpointer(path: path, delay: .zero)
            async let checkpoints: Void = withTaskGroup(of: Void.self) { group in
                for _ in 0..<4 { group.addTask { await checkpointer.checkpoint() } }
            }
            // The close lands anywhere from before the first checkpoint's start to after the last.
            let spin = ContinuousClock.now + .microseconds(Int.random(in: 0..<300, using: &generator))
            while ContinuousClock.now < spin {}
            try checkpointer.close()
            await checkpoints
            let runs = checkpointer.runs
            await checkpointer.checkpoint()
            #expect(checkpointer.runs == runs, "no checkpoint after the close")
        }
    }

    static func size(of path: String) -> UInt64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.uint64Value ?? 0
    }
}
