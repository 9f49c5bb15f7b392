import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The outbox's promise: a message written while offline is sent exactly once, in its
/// conversation's order, even when the app is killed at any moment. "Killed" here is a copy of
/// the live database files taken mid-run (nothing closed or checkpointed), then opened as the
/// next launch would.
@Suite struct SDKOutboxDurabilityTests {
    let world = SDKWorld()

    /// What the test expects the outbox to hold, per conversation, in send order.
    struct Expected {
        var queued: [EntityID: [String]] = [:]
        var failed: [String: String] = [:]
        var confirmed: Set<String> = []
        var order: [EntityID: [String]] = [:]

        var queuedCount: Int { queued.values.map(\.count).reduce(0, +) }
    }

    /// Sends every due head until none is left, confirming each with a server copy (the next
    /// launch's flush against a healthy server). Returns the ids in the order they were sent.
    func drain(_ database: LocalDatabase, seqs: inout [EntityID: Int64], far: Date) async throws -> [EntityID: [String]] {
        var sent: [EntityID: [String]] = [:]
        while let head = try await database.dueOutboxEntries(now: far).first {
            let conversation = head.conversationId
            seqs[conversation, default: 0] += 1
            let copy = Message(
                id: EntityID(), conversationId: conversation, seq: seqs[conversation]!, updatedSeq: seqs[conversation]!,
                senderId: world.me, clientMessageId: head.request.clientMessageId, type: .text, text: head.request.text,
                createdAt: world.start)
            try await database.apply([copy])
            sent[conversation, default: []].append(head.request.clientMessageId)
        }
        return sent
    }

    /// Seeded runs of enqueues, failed attempts, refusals, resends, discards and server copies
    /// over three conversations, killed at a random point: the next launch shows every unsent
    /// message once, in order, and sends each queued one exactly once in its conversation's
    /// order, never one the server already stored.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6])
    func aKillAtAnyPointLosesReordersAndDuplicatesNothing(seed: UInt64) async throws {
        let folder = try SDKTempFolder()
        defer { folder.remove() }
        var random = SeededGenerator(seed: seed)
        let conversations = [world.conversationId, EntityID(), EntityID()]
        let database = try LocalDatabase.open(path: folder.path("live.sqlite"))
        for id in conversations { try await world.track(database, id) }
        var expected = Expected()
        var seqs: [EntityID: Int64] = [:]
        var serial = 0
        let steps = Int.random(in: 20...80, using: &random)
        for _ in 0..<steps {
            let id = conversations.randomElement(using: &random)!
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                serial += 1
                let cmid = "s\(seed)-\(serial)"
                _ = try await database.enqueue(.init(clientMessageId: cmid, text: "text \(serial)"), in: id, senderId: world.me, now: world.start)
                expected.queued[id, default: []].append(cmid)
                expected.order[id, default: []].append(cmid)
            case 5:
                // The head's send got no answer: it stays first, due later.
                guard let head = expected.queued[id]?.first else { continue }
                try await database.outboxAttemptFailed(clientMessageId: head, retryAt: world.start.addingTimeInterval(30))
            case 6:
                // The server refused the head: failed, the rest go on.
                guard let head = expected.queued[id]?.first else { continue }
                try await database.outboxRejected(clientMessageId: head, reason: "refused \(head)")
                expected.queued[id]!.removeFirst()
                expected.failed[head] = "refused \(head)"
            case 7:
                // The user resends a failed one: it goes to the end of its queue.
                guard let failed = expected.failed.keys.sorted().first(where: { key in expected.order[id]?.contains(key) == true }) else { continue }
                #expect(try await database.resend(clientMessageId: failed))
                expected.failed[failed] = nil
                expected.queued[id, default: []].append(failed)
                expected.order[id]!.removeAll { $0 == failed }
                expected.order[id]!.append(failed)
            case 8:
                // The server stored the head (the reply or its echo): it leaves the outbox.
                guard let head = expected.queued[id]?.first else { continue }
                seqs[id, default: 0] += 1
                let copy = Message(
                    id: EntityID(), conversationId: id, seq: seqs[id]!, updatedSeq: seqs[id]!, senderId: world.me,
                    clientMessageId: head, type: .text, text: "stored", createdAt: world.start)
                try await database.apply([copy])
                expected.queued[id]!.removeFirst()
                expected.order[id]!.removeAll { $0 == head }
                expected.confirmed.insert(head)
            default:
                // The user discards a failed one.
                guard let failed = expected.failed.keys.sorted().first(where: { key in expected.order[id]?.contains(key) == true }) else { continue }
                #expect(try await database.discard(clientMessageId: failed))
                expected.failed[failed] = nil
                expected.order[id]!.removeAll { $0 == failed }
            }
        }

        try folder.crashCopy(of: "live.sqlite", to: "crashed.sqlite")
        let relaunched = try LocalDatabase.open(path: folder.path("crashed.sqlite"))
        let counts = try await relaunched.outboxCounts()
        #expect(counts.queued == expected.queuedCount, "seed \(seed)")
        #expect(counts.failed == expected.failed.count, "seed \(seed)")
        for id in conversations {
            let shown = try await relaunched.messages(in: id, viewer: world.me, limit: 1000)
            let unsent = shown.filter { !$0.isConfirmed }
            #expect(unsent.map(\.clientMessageId) == expected.order[id] ?? [], "seed \(seed): the screen after relaunch")
            for message in unsent {
                if let reason = expected.failed[message.clientMessageId] {
                    #expect(message.delivery == .failed(reason: reason))
                } else {
                    #expect(message.delivery == .sending)
                }
            }
            let confirmed = shown.filter(\.isConfirmed).map(\.clientMessageId)
            #expect(Set(confirmed).isSubset(of: expected.confirmed) && Set(confirmed).count == confirmed.count)
            #expect(Set(confirmed).isDisjoint(with: Set(unsent.map(\.clientMessageId))), "stored and unsent at once")
        }
        let sent = try await drain(relaunched, seqs: &seqs, far: world.start.addingTimeInterval(3600))
        for id in conversations {
            #expect(sent[id] ?? [] == expected.queued[id] ?? [], "seed \(seed): sent in queue order, each once")
            #expect(Set(sent[id] ?? []).isDisjoint(with: expected.confirmed), "seed \(seed): already stored, sent again")
        }
        let after = try await relaunched.outboxCounts()
        #expect(after.queued == 0 && after.failed == expected.failed.count, "seed \(seed)")
    }

    /// A kill between the server's answer and anything else: the stored copy and the removal of
    /// the outbox entry are one transaction, so the relaunch neither re-sends it nor shows it
    /// twice.
    @Test func aKillRightAfterTheAckDoesNotResendOrDuplicate() async throws {
        let folder = try SDKTempFolder()
        defer { folder.remove() }
        let database = try LocalDatabase.open(path: folder.path("live.sqlite"))
        try await world.track(database)
        let first = try await database.enqueue(.init(clientMessageId: "t1", text: "one"), in: world.conversationId, senderId: world.me, now: world.start)
        _ = try await database.enqueue(.init(clientMessageId: "t2", text: "two"), in: world.conversationId, senderId: world.me, now: world.start)
        try await database.apply([world.stored(first, seq: 1)])
        try folder.crashCopy(of: "live.sqlite", to: "crashed.sqlite")

        let relaunched = try LocalDatabase.open(path: folder.path("crashed.sqlite"))
        #expect(try await relaunched.dueOutboxEntries(now: world.start).map(\.request.clientMessageId) == ["t2"])
        let shown = try await relaunched.messages(in: world.conversationId, viewer: world.me)
        #expect(shown.map(\.clientMessageId) == ["t1", "t2"])
        #expect(shown.map(\.seq) == [1, nil])
        #expect(shown.map(\.id) == [LocalMessage.id(senderId: world.me, clientMessageId: "t1"), LocalMessage.id(senderId: world.me, clientMessageId: "t2")])
    }

    /// A kill before the answer: the entry is still there with the same client message id (so
    /// the server recognizes the retry), its text, attempts and next attempt time intact.
    @Test func aKillBeforeTheAnswerKeepsTheEntryExactly() async throws {
        let folder = try SDKTempFolder()
        defer { folder.remove() }
        let database = try LocalDatabase.open(path: folder.path("live.sqlite"))
        let reply = EntityID()
        let request = SendMessageRequest(clientMessageId: "keep-1", text: "  with spaces  ", replyToId: reply, metadata: ["k": "v"])
        _ = try await database.enqueue(request, in: world.conversationId, senderId: world.me, now: world.start)
        let retryAt = Date(millisecondsSince1970: world.start.millisecondsSince1970 + 12_345)
        try await database.outboxAttemptFailed(clientMessageId: "keep-1", retryAt: retryAt)
        try await database.outboxAttemptFailed(clientMessageId: "keep-1", retryAt: retryAt)
        try folder.crashCopy(of: "live.sqlite", to: "crashed.sqlite")

        let relaunched = try LocalDatabase.open(path: folder.path("crashed.sqlite"))
        #expect(try await relaunched.dueOutboxEntries(now: world.start.addingTimeInterval(12)).isEmpty, "not due before its time")
        #expect(try await relaunched.nextOutboxAttempt() == retryAt)
        let entry = try #require(try await relaunched.dueOutboxEntries(now: retryAt).first)
        #expect(entry.request.clientMessageId == "keep-1")
        #expect(entry.request.text == "  with spaces  ")
        #expect(entry.request.replyToId == reply && entry.request.metadata == ["k": "v"])
        #expect(entry.request.conversationId == world.conversationId)
        #expect(entry.attempts == 2)
        #expect(entry.nextAttemptAt == retryAt)
        // The connection came back: everything is due at once.
        try await relaunched.outboxRetryNow()
        #expect(try await relaunched.dueOutboxEntries(now: world.start).map(\.request.clientMessageId) == ["keep-1"])
    }

    /// A preparation that finished (an upload) before the kill is not run again: its result,
    /// the scratch and the remaining steps are what the relaunch sees.
    @Test func preparationProgressSurvivesAKill() async throws {
        let folder = try SDKTempFolder()
        defer { folder.remove() }
        let database = try LocalDatabase.open(path: folder.path("live.sqlite"))
        _ = try await database.enqueue(
            .init(clientMessageId: "img", text: "caption", type: .image), in: world.conversationId, senderId: world.me, now: world.start,
            preparations: ["upload", "stamp"], context: ["file": "/tmp/cat.png"])
        let uploaded = EntityID()
        var prepared = SendMessageRequest(conversationId: world.conversationId, clientMessageId: "img", text: "caption", type: .image)
        prepared.attachmentId = uploaded
        try await database.outboxPrepared(
            clientMessageId: "img", request: prepared, context: ["file": "/tmp/cat.png", "upload": "u-1"], remaining: ["stamp"])
        try folder.crashCopy(of: "live.sqlite", to: "crashed.sqlite")

        let relaunched = try LocalDatabase.open(path: folder.path("crashed.sqlite"))
        let entry = try #require(try await relaunched.dueOutboxEntries(now: world.start).first)
        #expect(entry.preparations == ["stamp"])
        #expect(entry.context == ["file": "/tmp/cat.png", "upload": "u-1"])
        #expect(entry.request.attachmentId == uploaded && entry.request.type == .image)
    }

    /// Messages queued after a relaunch go after the ones queued before it, on screen and in
    /// the send order, even when the newest entries of the last run were discarded and a refused
    /// one is resent after the relaunch.
    @Test func messagesQueuedAfterARelaunchGoAfterOlderOnes() async throws {
        let folder = try SDKTempFolder()
        defer { folder.remove() }
        do {
            let database = try LocalDatabase.open(path: folder.path("app.sqlite"))
            try await world.track(database)
            for index in 1...4 {
                _ = try await database.enqueue(
                    .init(clientMessageId: "a\(index)", text: "a"), in: world.conversationId, senderId: world.me, now: world.start)
            }
            try await database.outboxRejected(clientMessageId: "a1", reason: "too long")
            #expect(try await database.discard(clientMessageId: "a4"))
            #expect(try await database.discard(clientMessageId: "a3"))
        }
        // A clean relaunch this time (the pool was released).
        let relaunched = try LocalDatabase.open(path: folder.path("app.sqlite"))
        _ = try await relaunched.enqueue(.init(clientMessageId: "b1", text: "b"), in: world.conversationId, senderId: world.me, now: world.start)
        #expect(try await relaunched.resend(clientMessageId: "a1"))
        _ = try await relaunched.enqueue(.init(clientMessageId: "b2", text: "b"), in: world.conversationId, senderId: world.me, now: world.start)
        let shown = try await relaunched.messages(in: world.conversationId, viewer: world.me)
        #expect(shown.map(\.clientMessageId) == ["a2", "b1", "a1", "b2"])
        var seqs: [EntityID: Int64] = [:]
        let sent = try await drain(relaunched, seqs: &seqs, far: world.start)
        #expect(sent[world.conversationId] == ["a2", "b1", "a1", "b2"])
    }

    /// An app update that rebuilds the cache keeps every unsent message, queued or refused (with
    /// its reason), in its order; and what the user hid on this device stays hidden when the
    /// server's messages come back.
    @Test func aCacheRebuildRestoresUnsentMessagesAndKeepsHiddenOnesHidden() async throws {
        let folder = try SDKTempFolder()
        defer { folder.remove() }
        let hidden = world.message(2, text: "hide me")
        do {
            let database = try LocalDatabase.open(path: folder.path("app.sqlite"))
            try await world.track(database)
            try await database.apply([world.message(1), hidden])
            try await database.hide(senderId: world.other, clientMessageId: hidden.clientMessageId)
            for cmid in ["q1", "q2", "q3"] {
                _ = try await database.enqueue(.init(clientMessageId: cmid, text: cmid), in: world.conversationId, senderId: world.me, now: world.start)
            }
            try await database.outboxRejected(clientMessageId: "q2", reason: "no permission")
            try await database.writer.write { db in
                try db.execute(sql: "UPDATE cache_meta SET value = 'old' WHERE key = 'cache_version'")
            }
        }
        let updated = try LocalDatabase.open(path: folder.path("app.sqlite"))
        var shown = try await updated.messages(in: world.conversationId, viewer: world.me)
        #expect(shown.map(\.clientMessageId) == ["q1", "q2", "q3"])
        #expect(shown.map(\.delivery) == [.sending, .failed(reason: "no permission"), .sending])
        let counts = try await updated.outboxCounts()
        #expect(counts.queued == 2 && counts.failed == 1)
        // The cache fills again from the server; the hidden message stays hidden.
        try await world.track(updated, lastSeq: 2)
        try await updated.apply([world.message(1), hidden])
        shown = try await updated.messages(in: world.conversationId, viewer: world.me)
        #expect(shown.map(\.clientMessageId) == ["c1", "q1", "q2", "q3"])
    }

    /// Signing out wipes the outbox only when asked: a plain reset keeps unsent messages (and
    /// shows them again), a full one removes both the entries and their rows.
    @Test func resetKeepsOrDropsTheOutboxAsAsked() async throws {
        let database = try LocalDatabase.inMemory()
        try await world.track(database)
        try await database.apply([world.message(1)])
        _ = try await database.enqueue(.init(clientMessageId: "u1", text: "x"), in: world.conversationId, senderId: world.me, now: world.start)
        try await database.reset()
        #expect(try await database.conversations().isEmpty)
        #expect(try await database.messages(in: world.conversationId, viewer: world.me).map(\.clientMessageId) == ["u1"])
        #expect(try await database.outboxCount() == 1)
        try await database.reset(includingOutbox: true)
        #expect(try await database.messages(in: world.conversationId, viewer: world.me).isEmpty)
        #expect(try await database.outboxCount() == 0)
    }

    /// Queuing the same client message id twice (a double tap replayed) is refused by the
    /// database instead of creating a second copy that would be sent twice.
    @Test func theSameClientMessageIdCannotBeQueuedTwice() async throws {
        let database = try LocalDatabase.inMemory()
        _ = try await database.enqueue(.init(clientMessageId: "dup", text: "x"), in: world.conversationId, senderId: world.me, now: world.start)
        await #expect(throws: (any Error).self) {
            _ = try await database.enqueue(.init(clientMessageId: "dup", text: "x"), in: world.conversationId, senderId: world.me, now: world.start)
        }
        #expect(try await database.outboxCount() == 1)
        #expect(try await database.messages(in: world.conversationId, viewer: world.me).count == 1)
    }

    /// Resend and discard only act on what they should: resending a queued (not failed) message
    /// is a no-op, and neither touches a message the server already stored.
    @Test func resendAndDiscardLeaveStoredAndQueuedMessagesAlone() async throws {
        let database = try LocalDatabase.inMemory()
        try await world.track(database)
        let pending = try await database.enqueue(.init(clientMessageId: "p", text: "x"), in: world.conversationId, senderId: world.me, now: world.start)
        _ = try await database.enqueue(.init(clientMessageId: "q", text: "y"), in: world.conversationId, senderId: world.me, now: world.start)
        #expect(try await database.resend(clientMessageId: "q") == false, "not failed: stays where it is")
        try await database.apply([world.stored(pending, seq: 1)])
        #expect(try await database.resend(clientMessageId: "p") == false)
        #expect(try await database.discard(clientMessageId: "p") == false)
        // A late refusal of a message already stored does not mark the stored copy failed.
        try await database.outboxRejected(clientMessageId: "p", reason: "late")
        let shown = try await database.messages(in: world.conversationId, viewer: world.me)
        #expect(shown.map(\.clientMessageId) == ["p", "q"])
        #expect(shown.map(\.delivery) == [.sent, .sending])
        #expect(try await database.dueOutboxEntries(now: world.start).map(\.request.clientMessageId) == ["q"])
    }
}
