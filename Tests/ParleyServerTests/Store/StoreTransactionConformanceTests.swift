import Foundation
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Synchronization
import Testing

/// The storage primitives the chat rules stand on (``StoreTransaction``), one suite for every
/// store: each test runs on SQLite and, with `PARLEY_TEST_POSTGRES_URL`, on PostgreSQL. The
/// rules themselves are tested in `ChatRulesTests`, on both stores too.
@Suite struct StoreTransactionConformanceTests {
    /// Two members of one organization in a direct conversation, and an outsider.
    struct Scene {
        let alice: User, bob: User, carol: User
        let direct: Conversation
        /// The direct conversation's members in the stores' order: by join time, then by id
        /// (both joined at once here).
        var members: [EntityID] { [alice.id, bob.id].sorted { $0.description < $1.description } }
    }

    static let now = Date(timeIntervalSince1970: 1_760_000_000.5)

    static func scene(_ store: any ParleyStore) async throws -> Scene {
        func user(_ name: String) async throws -> User {
            try await store.register(organization: "acme", email: "\(name)@x.io", displayName: name, passwordHash: "h", now: now)
        }
        let alice = try await user("alice"), bob = try await user("bob"), carol = try await user("carol")
        let direct = try await store.createConversation(NewConversation(
            organizationId: alice.organizationId, creatorId: alice.id, type: .direct, participantIds: [bob.id], now: now)).conversation
        return Scene(alice: alice, bob: bob, carol: carol, direct: direct)
    }

    static func draft(_ scene: Scene, _ clientId: String, from sender: EntityID? = nil, text: String = "hi") -> MessageDraft {
        MessageDraft(
            conversationId: scene.direct.id, senderId: sender ?? scene.alice.id, clientMessageId: clientId, type: .text,
            text: text, now: now)
    }

    // MARK: Conversations

    @Test(arguments: StoreKind.available)
    func theCounterGoesUpByOneAndOnlyInCommittedTransactions(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let scene = try await Self.scene(store)
            let id = scene.direct.id
            let (exists, missing, first, unknown) = try await store.writing { tx in
                (try await tx.lockConversation(id), try await tx.lockConversation(EntityID()),
                 try await tx.lastSeq(of: id), try await tx.lastSeq(of: EntityID()))
            }
            #expect(exists && !missing && unknown == nil)
            let start = try #require(first)
            let taken = try await store.writing { tx in [try await tx.takeNextSeq(in: id), try await tx.takeNextSeq(in: id)] }
            #expect(taken == [start + 1, start + 2])
            // A transaction that throws gives its seqs back.
            struct Abort: Error {}
            await #expect(throws: Abort.self) {
                try await store.writing { tx -> Int64 in
                    _ = try await tx.takeNextSeq(in: id)
                    throw Abort()
                }
            }
            #expect(try await store.reading { tx in try await tx.lastSeq(of: id) } == start + 2)
            let error = await #expect(throws: ChatError.self) { try await store.writing { tx in try await tx.takeNextSeq(in: EntityID()) } }
            #expect(error?.code == .notFound)
        }
    }

    // MARK: Pages

    @Test(arguments: StoreKind.available)
    func pagesOfHistoryChangesMembersAndReaders(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let scene = try await Self.scene(store)
            let id = scene.direct.id
            var inserted: [Message] = []
            for n in 1...7 {
                inserted.append(try await store.writing { tx in try await tx.insertMessage(Self.draft(scene, "p\(n)", text: "\(n)")) })
            }
            let sent = inserted
            try await store.reading { tx async throws -> Void in
                let newest = try await tx.messagePage(in: id, before: nil, after: nil, limit: 3, includingThreads: false)
                #expect(newest.messages.map(\.text) == ["5", "6", "7"] && newest.hasMore, "the newest, oldest first")
                let older = try await tx.messagePage(in: id, before: newest.messages[0].seq, after: nil, limit: 3, includingThreads: false)
                #expect(older.messages.map(\.text) == ["2", "3", "4"] && older.hasMore)
                let oldest = try await tx.messagePage(in: id, before: older.messages[0].seq, after: nil, limit: 3, includingThreads: false)
                #expect(oldest.messages.map(\.text) == ["1"] && !oldest.hasMore)
                let forward = try await tx.messagePage(in: id, before: nil, after: sent[1].seq, limit: 2, includingThreads: false)
                #expect(forward.messages.map(\.text) == ["3", "4"] && forward.hasMore, "after: the oldest after it")
                let between = try await tx.messagePage(in: id, before: sent[5].seq, after: sent[2].seq, limit: 10, includingThreads: false)
                #expect(between.messages.map(\.text) == ["4", "5"] && !between.hasMore)
                #expect(try await tx.messagePage(in: EntityID(), before: nil, after: nil, limit: 5, includingThreads: false).messages.isEmpty)
            }
            // An edit gives the message a new updatedSeq: the change feed lists it after the others.
            try await store.writing { tx async throws -> Void in
                let seq = try await tx.takeNextSeq(in: id)
                try await tx.setText("two", of: sent[1].id, editedAt: Self.now, updatedSeq: seq)
            }
            try await store.reading { tx async throws -> Void in
                let all = try await tx.changedMessages(in: id, since: sent[3].seq, limit: 10)
                #expect(all.messages.map(\.text) == ["5", "6", "7", "two"] && !all.hasMore, "by updatedSeq")
                let first = try await tx.changedMessages(in: id, since: 0, limit: 6)
                #expect(first.messages.map(\.text) == ["1", "3", "4", "5", "6", "7"] && first.hasMore, "the edited one comes last")
                #expect(try await tx.changedMessages(in: id, since: sent[6].seq + 1, limit: 5).messages.isEmpty)
            }
            // Members by id, and who has read up to a seq.
            try await store.writing { tx async throws -> Void in
                guard let (bob, _) = try await tx.lockWatermarks(of: scene.bob.id, in: id) else { throw ChatError.notFound("member") }
                var moved = bob
                moved.readSeq = sent[3].seq
                moved.deliveredSeq = sent[3].seq
                try await tx.setWatermarks(moved, in: id)
            }
            try await store.reading { tx async throws -> Void in
                let one = try await tx.memberPage(of: id, after: nil, limit: 1)
                #expect(one.participants.map(\.userId) == [scene.members[0]] && one.hasMore)
                let rest = try await tx.memberPage(of: id, after: one.participants[0].userId, limit: 5)
                #expect(rest.participants.map(\.userId) == [scene.members[1]] && !rest.hasMore)
                let bob = (one.participants + rest.participants).first { $0.userId == scene.bob.id }
                #expect(bob?.readSeq == sent[3].seq && bob?.deliveredSeq == sent[3].seq)
                let readFourth = try await tx.readerPage(in: id, reaching: sent[3].seq, after: nil, limit: 5)
                #expect(readFourth.userIds == [scene.bob.id] && !readFourth.hasMore)
                #expect(try await tx.readerPage(in: id, reaching: sent[4].seq, after: nil, limit: 5).userIds.isEmpty)
            }
        }
    }

    // MARK: Participants and watermarks

    @Test(arguments: StoreKind.available)
    func participantsAndWatermarks(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let scene = try await Self.scene(store)
            let id = scene.direct.id
            for n in 0..<3 { _ = try await store.writing { tx in try await tx.insertMessage(Self.draft(scene, "m\(n)")) } }
            try await store.writing { tx async throws -> Void in
                #expect(try await tx.participantIds(of: id) == scene.members, "by join time, then id")
                #expect(try await tx.participantIds(of: EntityID()).isEmpty)
                #expect(try await tx.isParticipant(scene.bob.id, of: id))
                #expect(try await !tx.isParticipant(scene.carol.id, of: id))
                #expect(try await tx.lockWatermarks(of: scene.carol.id, in: id) == nil)
                let bob = try #require(try await tx.lockWatermarks(of: scene.bob.id, in: id))
                #expect(bob.member == Member(userId: scene.bob.id, readSeq: 0, deliveredSeq: 0))
                #expect(bob.lastSeq == scene.direct.lastSeq + 3)
                let before = try await tx.unreadCountAndParticipants(of: scene.bob.id, in: id)
                #expect(before.unread == 3 && before.participantIds == scene.members)
                // Written as given; the unread count follows only once the read is said to have moved.
                let moved = Member(userId: scene.bob.id, readSeq: bob.lastSeq - 1, deliveredSeq: bob.lastSeq)
                try await tx.setWatermarks(moved, in: id)
                #expect(try await tx.lockWatermarks(of: scene.bob.id, in: id)?.member == moved)
                try await tx.readMoved(for: scene.bob.id, in: id)
                #expect(try await tx.unreadCountAndParticipants(of: scene.bob.id, in: id).unread == 1)
                #expect(try await tx.unreadCountAndParticipants(of: scene.alice.id, in: id).unread == 0, "one's own messages are never unread")
            }
        }
    }

    // MARK: Messages

    @Test(arguments: StoreKind.available)
    func insertingReadingAndProbingMessages(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let scene = try await Self.scene(store)
            let id = scene.direct.id
            let first = try await store.writing { tx in try await tx.insertMessage(Self.draft(scene, "a1", text: "one")) }
            #expect(first.seq == scene.direct.lastSeq + 1 && first.updatedSeq == first.seq && first.text == "one")
            try await store.reading { tx async throws -> Void in
                #expect(try await tx.message(first.id) == first)
                #expect(try await tx.message(EntityID()) == nil)
                #expect(try await tx.conversationId(ofMessage: first.id) == id)
                #expect(try await tx.conversationId(ofMessage: EntityID()) == nil)
                #expect(try await tx.messageId(sentBy: scene.alice.id, clientMessageId: "a1") == first.id)
                #expect(try await tx.messageId(sentBy: scene.bob.id, clientMessageId: "a1") == nil, "the pair is per sender")
                #expect(try await tx.lastSeq(of: id) == first.seq)
            }
            let probes = try await store.writing { tx in
                [
                    try await tx.insertMessageUnlessSent(Self.draft(scene, "c1", from: scene.carol.id), checkOnly: false),
                    try await tx.insertMessageUnlessSent(Self.draft(scene, "a1", text: "again"), checkOnly: false),
                    try await tx.insertMessageUnlessSent(Self.draft(scene, "a2"), checkOnly: true),
                    try await tx.insertMessageUnlessSent(Self.draft(scene, "a3", text: "three"), checkOnly: false),
                ]
            }
            let members = scene.members
            #expect(probes[0] == SendProbe(participantIds: members, existingId: nil, message: nil), "an outsider stores nothing")
            #expect(probes[1] == SendProbe(participantIds: members, existingId: first.id, message: nil), "a sent pair stores nothing")
            #expect(probes[2] == SendProbe(participantIds: members, existingId: nil, message: nil), "checkOnly stores nothing")
            let third = try #require(probes[3].message)
            #expect(probes[3].existingId == nil && third.seq == first.seq + 1 && third.text == "three", "no seq was taken by the others")
            try await store.reading { tx async throws -> Void in
                #expect(try await tx.message(third.id) == third)
                #expect(try await tx.messageId(sentBy: scene.carol.id, clientMessageId: "c1") == nil)
                #expect(try await tx.highestSeq(of: [first.id, third.id, EntityID()], in: id) == third.seq)
                #expect(try await tx.highestSeq(of: [EntityID()], in: id) == nil)
                #expect(try await tx.highestSeq(of: [first.id], in: EntityID()) == nil, "only messages of that conversation")
            }
        }
    }

    @Test(arguments: StoreKind.available)
    func editingTombstoningAndReacting(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let scene = try await Self.scene(store)
            let id = scene.direct.id
            let message = try await store.writing { tx in try await tx.insertMessage(Self.draft(scene, "a1", text: "draft")) }
            let later = Self.now.addingTimeInterval(60)
            let edited = try await store.writing { tx in
                let seq = try await tx.takeNextSeq(in: id)
                try await tx.setText("final", of: message.id, editedAt: later, updatedSeq: seq)
                return try #require(try await tx.message(message.id))
            }
            #expect(edited.text == "final" && edited.editedAt == later.wholeMilliseconds && edited.updatedSeq == message.seq + 1)
            #expect(edited.seq == message.seq, "an edit keeps the message's place")
            let outcomes = try await store.writing { tx in
                [
                    try await tx.setReaction("👍", by: scene.bob.id, on: message.id, present: true, at: later),
                    try await tx.setReaction("👍", by: scene.bob.id, on: message.id, present: true, at: later),
                    try await tx.setReaction("🎉", by: scene.alice.id, on: message.id, present: true, at: later),
                    try await tx.setReaction("🎉", by: scene.alice.id, on: message.id, present: false, at: later),
                    try await tx.setReaction("🎉", by: scene.alice.id, on: message.id, present: false, at: later),
                ]
            }
            #expect(outcomes == [true, false, true, true, false], "true only when it changed something")
            try await store.writing { tx in try await tx.setUpdatedSeq(try await tx.takeNextSeq(in: id), of: message.id) }
            let reacted = try #require(try await store.reading { tx in try await tx.message(message.id) })
            #expect(reacted.reactions == ["👍": [scene.bob.id]] && reacted.updatedSeq == message.seq + 2)
            #expect(try await store.reading { tx in try await tx.unreadCountAndParticipants(of: scene.bob.id, in: id).unread } == 1)
            let deleted = try await store.writing { tx in
                try await tx.tombstone(reacted, deletedAt: later, updatedSeq: try await tx.takeNextSeq(in: id))
                return try #require(try await tx.message(message.id))
            }
            #expect(deleted.text.isEmpty && deleted.reactions.isEmpty && deleted.deletedAt == later.wholeMilliseconds)
            #expect(deleted.seq == message.seq && deleted.updatedSeq == message.seq + 3)
            #expect(try await store.reading { tx in try await tx.unreadCountAndParticipants(of: scene.bob.id, in: id).unread } == 0,
                "a deleted message is not unread")
        }
    }

    // MARK: Attachments

    @Test(arguments: StoreKind.available)
    func attachmentsAndWhereTheyAreShared(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let scene = try await Self.scene(store)
            let photo = StoredAttachment(
                id: EntityID(), uploaderId: scene.alice.id, organizationId: scene.alice.organizationId, name: "p.png",
                contentType: "image/png", size: 10, sha256: String(repeating: "a", count: 64), width: 2, height: 1,
                createdAt: Self.now.wholeMilliseconds)
            try await store.createAttachment(photo)
            try await store.reading { tx async throws -> Void in
                #expect(try await tx.attachment(photo.id) == photo)
                #expect(try await tx.attachment(EntityID()) == nil)
                #expect(try await !tx.isAttachmentShared(photo.id, with: scene.bob.id), "uploaded, not yet sent")
            }
            var draft = Self.draft(scene, "p1")
            draft.type = .image
            draft.attachmentId = photo.id
            let imageDraft = draft
            let message = try await store.writing { tx in try await tx.insertMessage(imageDraft) }
            #expect(message.attachment == photo.wire)
            try await store.reading { tx async throws -> Void in
                #expect(try await tx.isAttachmentShared(photo.id, with: scene.bob.id))
                #expect(try await !tx.isAttachmentShared(photo.id, with: scene.carol.id), "not in the conversation")
            }
            try await store.writing { tx in try await tx.tombstone(message, deletedAt: Self.now, updatedSeq: try await tx.takeNextSeq(in: message.conversationId)) }
            #expect(try await store.reading { tx in try await tx.isAttachmentShared(photo.id, with: scene.bob.id) } == false,
                "its message was deleted")
        }
    }

    // MARK: Transactions

    /// Queued writes of one conversation commit in the order queued, `onCommit` runs in that
    /// order, and a write that fails is rolled back alone.
    @Test(arguments: StoreKind.available)
    func queuedWritesCommitInOrderAndFailAlone(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let scene = try await Self.scene(store)
            let id = scene.direct.id
            final class Committed: Sendable { let seqs = Mutex<[Int64]>([]) }
            let committed = Committed()
            struct Boom: Error {}
            var pending: [(Int, PendingWrite<Int64>)] = []
            for n in 0..<40 {
                pending.append((n, store.enqueueWrite(in: id, onCommit: { seq in committed.seqs.withLock { $0.append(seq) } }) { tx in
                    let seq = try await tx.takeNextSeq(in: id)
                    if n % 7 == 3 { throw Boom() }
                    return seq
                }))
            }
            var seqs: [Int64] = []
            for (n, write) in pending {
                do {
                    seqs.append(try await write.result())
                    #expect(n % 7 != 3)
                } catch {
                    #expect(n % 7 == 3 && error is Boom, "\(n): \(error)")
                }
            }
            let base = scene.direct.lastSeq
            #expect(seqs == Array((base + 1)...(base + Int64(seqs.count))), "in queued order, the failed ones' seqs given back")
            #expect(committed.seqs.withLock { $0 } == seqs)
        }
    }
}
