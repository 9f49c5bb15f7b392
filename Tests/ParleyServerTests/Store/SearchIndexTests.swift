import Foundation
import GRDB
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing
@testable import ParleySQLite

/// The search index stays in step with the messages however they are written: many sends in
/// one group commit, a message inserted and changed in one transaction, a transaction rolled
/// back, and (SQLite) a database indexed by the per-insert trigger of earlier versions.
///
/// SQLite indexes a transaction's new messages once, at its end (a trigger per insert made
/// FTS5 write a segment per message); these tests would catch a message missing from the
/// index, one found under text it no longer has, or an index that disagrees with its rows.
@Suite struct SearchIndexTests {
    /// Sixty senders at once: the group commit carries several sends per transaction, and each
    /// message is found by its own word, once, and by nobody outside the conversation.
    @Test(arguments: StoreKind.available)
    func everySendOfAGroupCommitIsFound(kind: StoreKind) async throws {
        try await withStore(kind) { store, fixture in
            let world = try await RulesWorld.make(store)
            let before = (store as? any GroupCommitting)?.writeBatchStats
            let sent = try await withThrowingTaskGroup(of: (Int, Message).self) { group in
                for index in 0..<60 {
                    let sender = [world.alice, world.bob, world.carol][index % 3]
                    group.addTask { (index, try await world.send("batch word\(index)x here", by: sender, in: world.group)) }
                }
                return try await group.reduce(into: [Int: Message]()) { $0[$1.0] = $1.1 }
            }
            if let before, let after = (store as? any GroupCommitting)?.writeBatchStats {
                // At least one transaction carried more than one send, or this test proves nothing.
                #expect(after.writes - before.writes > after.batches - before.batches)
            }
            for index in 0..<60 {
                let found = try await store.search("word\(index)x", viewer: world.bob.id, conversationId: nil, limit: 10, offset: 0)
                #expect(found.results.map(\.message.id) == [try #require(sent[index]).id], "word\(index)x")
            }
            #expect(try await store.search("batch", viewer: world.carol.id, conversationId: world.group.id, limit: 100, offset: 0).results.count == 60)
            #expect(try await store.search("batch", viewer: world.dave.id, conversationId: nil, limit: 100, offset: 0).results.isEmpty)
            try await expectIndexIntact(fixture)
        }
    }

    /// A message edited, and another deleted, in the transaction that inserted them is found
    /// by its text as the transaction left it; an edit in a later transaction moves it again.
    @Test(arguments: StoreKind.available)
    func aMessageChangedInTheTransactionThatInsertedItIsIndexedAsItEnds(kind: StoreKind) async throws {
        try await withStore(kind) { store, fixture in
            let world = try await RulesWorld.make(store)
            let (edited, deleted) = try await store.writing { tx in
                let edited = try await tx.insertMessage(world.draft("alpha first", by: world.alice, in: world.direct))
                try await tx.setText("bravo second", of: edited.id, editedAt: RulesWorld.now, updatedSeq: edited.seq)
                let deleted = try await tx.insertMessage(world.draft("delta gone", by: world.bob, in: world.direct))
                try await tx.tombstone(deleted, deletedAt: RulesWorld.now, updatedSeq: deleted.seq)
                return (edited, deleted)
            }
            func hits(_ word: String) async throws -> [EntityID] {
                try await store.search(word, viewer: world.alice.id, conversationId: nil, limit: 10, offset: 0).results.map(\.message.id)
            }
            #expect(try await hits("alpha").isEmpty)
            #expect(try await hits("bravo") == [edited.id])
            #expect(try await hits("delta").isEmpty)
            #expect(try await world.stored(deleted.id).deletedAt != nil)

            let change = try await store.change(.text("charlie third"), messageId: edited.id, in: world.direct.id, by: world.alice.id, now: RulesWorld.now)
            #expect(change.changed)
            #expect(try await hits("bravo").isEmpty)
            #expect(try await hits("charlie") == [edited.id])
            _ = try await store.change(.delete, messageId: edited.id, in: world.direct.id, by: world.alice.id, now: RulesWorld.now)
            #expect(try await hits("charlie").isEmpty)
            try await expectIndexIntact(fixture)
        }
    }

    /// A transaction that fails after inserting leaves nothing in the index, and the message
    /// that takes its place (and, on SQLite, its rowid) is found under its own text only.
    @Test(arguments: StoreKind.available)
    func aRolledBackInsertLeavesNothingToFind(kind: StoreKind) async throws {
        struct Abort: Error {}
        try await withStore(kind) { store, fixture in
            let world = try await RulesWorld.make(store)
            await #expect(throws: Abort.self) {
                try await store.writing { tx in
                    _ = try await tx.insertMessage(world.draft("ghost words", by: world.alice, in: world.direct))
                    throw Abort()
                }
            }
            let real = try await world.send("real words", by: world.bob, in: world.direct)
            #expect(try await store.search("ghost", viewer: world.alice.id, conversationId: nil, limit: 10, offset: 0).results.isEmpty)
            #expect(try await store.search("words", viewer: world.alice.id, conversationId: nil, limit: 10, offset: 0).results.map(\.message.id) == [real.id])
            #expect(real.seq == 1)
            try await expectIndexIntact(fixture)
        }
    }

    /// Writes that fail inside a batch (a trigger poisons some inserts) make the store run the
    /// batch again with a savepoint per write: the index then holds exactly the messages that
    /// were stored, though a rolled-back insert's rowid is taken again by the next one.
    @Test(arguments: StoreKind.available)
    func aBatchRunAgainAfterAFailedWriteIndexesWhatItStored(kind: StoreKind) async throws {
        try await withStore(kind) { store, fixture in
            try await fixture.poisonInserts(textLike: "poison%")
            let world = try await RulesWorld.make(store)
            // Queued without waiting, as a connection pipelines them: they share transactions.
            let pending = (0..<60).map { n in
                (n, store.enqueueSend(world.draft(n % 7 == 2 ? "poison word\(n)x" : "kept word\(n)x", by: world.alice, in: world.group)))
            }
            var stored: [Int: Message] = [:]
            for (n, send) in pending {
                if let message = try? await send.result().message { stored[n] = message }
            }
            #expect(stored.keys.sorted() == (0..<60).filter { $0 % 7 != 2 })
            for n in 0..<60 {
                let found = try await store.search("word\(n)x", viewer: world.bob.id, conversationId: nil, limit: 10, offset: 0)
                #expect(found.results.map(\.message.id) == (stored[n].map { [$0.id] } ?? []), "word\(n)x")
            }
            #expect(try await store.search("poison", viewer: world.bob.id, conversationId: nil, limit: 100, offset: 0).results.isEmpty)
            #expect(try await store.search("kept", viewer: world.bob.id, conversationId: nil, limit: 100, offset: 0).results.count == stored.count)
            try await expectIndexIntact(fixture)
        }
    }

    /// A message's id carries its createdAt millisecond (a version 7 UUID), so the stores'
    /// id indexes grow at their end; the rest of the id stays random.
    @Test(arguments: StoreKind.available)
    func messageIdsCarryTheirTimeAndSortWithIt(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            var messages: [Message] = []
            for n in 0..<20 {
                var draft = world.draft("m\(n)", by: world.bob, in: world.direct)
                draft.now = Date(millisecondsSince1970: 1_760_000_000_000 + Int64(n) * 7)
                messages.append(try await store.send(draft).message)
            }
            for message in messages {
                let bytes = message.id.uuid.uuid
                let milliseconds = [bytes.0, bytes.1, bytes.2, bytes.3, bytes.4, bytes.5].reduce(Int64(0)) { $0 << 8 | Int64($1) }
                #expect(milliseconds == message.createdAt.millisecondsSince1970)
                #expect(bytes.6 >> 4 == 7)
            }
            #expect(messages.map(\.id.description) == messages.map(\.id.description).sorted())
            let page = try await store.messages(conversationId: world.direct.id, viewer: world.alice.id, before: nil, after: 0, limit: 50)
            #expect(page.messages.map(\.id) == messages.map(\.id), "stored and read back as sent")
        }
    }

    /// A database written before the index moved out of the insert trigger: its messages are
    /// found after the upgrade, edits and deletes keep them in step, and new ones join them.
    @Test func aDatabaseIndexedByTheOldTriggerStaysInStep() async throws {
        let directory = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = (directory as NSString).appendingPathComponent("parley.sqlite")
        let org = UUID().uuidString.lowercased(), alice = UUID().uuidString.lowercased(), bob = UUID().uuidString.lowercased()
        let conversation = UUID().uuidString.lowercased()
        let old = (1...3).map { _ in UUID().uuidString.lowercased() }
        let queue = try DatabaseQueue(path: path)
        try SQLiteSchema.migrator.migrate(queue, upTo: "v9-list-sync")
        try await queue.write { db in
            try db.execute(sql: "INSERT INTO organizations (id, name, name_key, created_at) VALUES (?, 'Acme', 'acme', 0)", arguments: [org])
            for (id, email) in [(alice, "alice@acme.test"), (bob, "bob@acme.test")] {
                try db.execute(
                    sql: "INSERT INTO users (id, organization_id, email, display_name, password_hash, created_at) VALUES (?, ?, ?, ?, 'h', 0)",
                    arguments: [id, org, email, email])
            }
            try db.execute(
                sql: "INSERT INTO conversations (id, organization_id, type, name, created_at, last_activity_at, last_seq) VALUES (?, ?, 'group', 'g', 0, 0, 3)",
                arguments: [conversation, org])
            for user in [alice, bob] {
                try db.execute(sql: "INSERT INTO participants (conversation_id, user_id, joined_at) VALUES (?, ?, 0)", arguments: [conversation, user])
            }
            for (index, text) in ["legacy apple", "legacy banana", "legacy cherry"].enumerated() {
                try db.execute(
                    sql: """
                        INSERT INTO messages (id, conversation_id, seq, updated_seq, sender_id, client_message_id, type, text, created_at)
                        VALUES (?, ?, ?, ?, ?, ?, 'text', ?, 0)
                        """,
                    arguments: [old[index], conversation, index + 1, index + 1, alice, "c\(index)", text])
            }
        }
        try queue.close()

        let store = try SQLiteStore(path: path)
        let viewer = try #require(EntityID(bob)), conversationId = try #require(EntityID(conversation))
        let sender = try #require(EntityID(alice))
        func hits(_ word: String) async throws -> [String] {
            try await store.search(word, viewer: viewer, conversationId: nil, limit: 10, offset: 0).results.map(\.message.id.description)
        }
        #expect(try await hits("legacy").sorted() == old.sorted())
        let now = Date(timeIntervalSince1970: 1_760_000_000)
        _ = try await store.change(.text("renamed durian"), messageId: try #require(EntityID(old[0])), in: conversationId, by: sender, now: now)
        _ = try await store.change(.delete, messageId: try #require(EntityID(old[1])), in: conversationId, by: sender, now: now)
        let new = try await store.send(MessageDraft(
            conversationId: conversationId, senderId: sender, clientMessageId: "new", type: .text, text: "legacy elderberry", now: now)).message
        #expect(try await hits("apple").isEmpty)
        #expect(try await hits("durian") == [old[0]])
        #expect(try await hits("banana").isEmpty)
        #expect(try await hits("legacy").sorted() == [old[2], new.id.description].sorted())
        try await store.close()
        try await expectIndexIntact(StoreFixture(kind: .sqlite, path: path, database: nil))
    }
}

/// FTS5's own check of the SQLite index (nothing to check on PostgreSQL, whose `tsvector` is a
/// column of the row): it fails when the index holds terms its rows do not.
private func expectIndexIntact(_ fixture: StoreFixture, sourceLocation: SourceLocation = #_sourceLocation) async throws {
    guard fixture.kind == .sqlite else { return }
    await #expect(throws: Never.self, sourceLocation: sourceLocation) {
        try await fixture.execute(["INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')"])
    }
}
