import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The cache's order and gap rules: an optimistic message and the server's copy are one row
/// whichever of reply, echo and catch-up lands first; live events past a missing change are
/// never applied; duplicates and late events change nothing; the timeline is in seq order with
/// unsent messages last; delivery marks follow every other member's watermarks.
@Suite struct SDKLocalDatabaseOrderTests {
    let world = SDKWorld()

    enum Arrival: CaseIterable, Sendable { case reply, echo, catchUp }

    /// Every order of the send's reply, its live echo and a catch-up page carrying it (with the
    /// first delivered twice): one row, confirmed, with the temporary id, and the outbox empty.
    @Test(arguments: [
        [Arrival.reply, .echo, .catchUp], [.reply, .catchUp, .echo], [.echo, .reply, .catchUp],
        [.echo, .catchUp, .reply], [.catchUp, .reply, .echo], [.catchUp, .echo, .reply],
    ])
    func theOptimisticCopyAndTheServersCopyAreOneRowInAnyOrder(order: [Arrival]) async throws {
        let database = try LocalDatabase.inMemory()
        try await world.track(database, lastSeq: 3)
        try await database.apply((1...3).map { world.message($0) })
        let pending = try await database.enqueue(.init(clientMessageId: "mine", text: "hi"), in: world.conversationId, senderId: world.me, now: world.start)
        let copy = world.stored(pending, seq: 4)
        for arrival in order + [order[0]] {
            switch arrival {
            case .reply: try await database.apply([copy])
            case .echo: #expect(try await database.applyLive(copy, changeSeq: 4) == .applied)
            case .catchUp: _ = try await database.apply(changes: ChangesPage(messages: [copy], lastSeq: 4, hasMore: false), in: world.conversationId, since: 3)
            }
            let shown = try await database.messages(in: world.conversationId, viewer: world.me)
            #expect(shown.map(\.seq) == [1, 2, 3, 4], "\(order): after \(arrival)")
            #expect(shown.last?.id == pending.id && shown.last?.serverId == copy.id)
            #expect(try await database.outboxCount() == 0)
        }
        #expect(try await database.syncedSeq(world.conversationId) == 4)
        #expect(try await database.dueOutboxEntries(now: world.start.addingTimeInterval(3600)).isEmpty, "nothing to send again")
    }

    /// My message was edited (from another device) before this device got the send's reply: the
    /// late reply carries the older version and must not undo the edit.
    @Test func aLateReplyDoesNotUndoANewerVersion() async throws {
        let database = try LocalDatabase.inMemory()
        try await world.track(database)
        let pending = try await database.enqueue(.init(clientMessageId: "m", text: "draft"), in: world.conversationId, senderId: world.me, now: world.start)
        let original = world.stored(pending, seq: 1)
        var edited = original
        edited.text = "final"
        edited.updatedSeq = 2
        edited.editedAt = world.start.addingTimeInterval(2)
        #expect(try await database.applyLive(original, changeSeq: 1) == .applied)
        #expect(try await database.applyLive(edited, changeSeq: 2) == .applied)
        try await database.apply([original])
        let shown = try await database.messages(in: world.conversationId, viewer: world.me)
        #expect(shown.map(\.text) == ["final"] && shown[0].updatedSeq == 2 && shown[0].editedAt != nil)
        #expect(shown[0].id == pending.id)
        #expect(try await database.outboxCount() == 0)
    }

    /// An echo that arrives past a gap is not applied: the message stays "sending" (not a
    /// second, stored copy) until the catch-up brings it with what was missed.
    @Test func anEchoPastAGapWaitsForTheCatchUp() async throws {
        let database = try LocalDatabase.inMemory()
        try await world.track(database, lastSeq: 1)
        let pending = try await database.enqueue(.init(clientMessageId: "m", text: "x"), in: world.conversationId, senderId: world.me, now: world.start)
        let copy = world.stored(pending, seq: 3)
        #expect(try await database.applyLive(copy, changeSeq: 3) == .gap)
        var shown = try await database.messages(in: world.conversationId, viewer: world.me)
        #expect(shown.map(\.delivery) == [.sending] && shown.map(\.seq) == [nil])
        #expect(try await database.outboxCount() == 1)
        _ = try await database.apply(changes: ChangesPage(messages: [world.message(2), copy], lastSeq: 3, hasMore: false), in: world.conversationId, since: 1)
        shown = try await database.messages(in: world.conversationId, viewer: world.me)
        #expect(shown.map(\.seq) == [2, 3] && shown.map(\.clientMessageId) == ["c2", "m"])
        #expect(try await database.outboxCount() == 0)
    }

    /// The timeline is stored messages in seq order (whatever order they arrived in), then
    /// unsent ones in send order; a confirmed message moves to its seq's place.
    @Test func theTimelineIsSeqOrderThenUnsentInSendOrder() async throws {
        let database = try LocalDatabase.inMemory()
        try await world.track(database)
        let a = try await database.enqueue(.init(clientMessageId: "a", text: "a"), in: world.conversationId, senderId: world.me, now: world.start)
        let b = try await database.enqueue(.init(clientMessageId: "b", text: "b"), in: world.conversationId, senderId: world.me, now: world.start)
        _ = try await database.enqueue(.init(clientMessageId: "c", text: "c"), in: world.conversationId, senderId: world.me, now: world.start)
        try await database.apply([world.message(5), world.message(2)])
        var shown = try await database.messages(in: world.conversationId, viewer: world.me)
        #expect(shown.map(\.clientMessageId) == ["c2", "c5", "a", "b", "c"])
        // The replies arrive out of order: b was stored at 4, a at 3.
        try await database.apply([world.stored(b, seq: 4)])
        shown = try await database.messages(in: world.conversationId, viewer: world.me)
        #expect(shown.map(\.clientMessageId) == ["c2", "b", "c5", "a", "c"])
        try await database.apply([world.stored(a, seq: 3)])
        shown = try await database.messages(in: world.conversationId, viewer: world.me)
        #expect(shown.map(\.clientMessageId) == ["c2", "a", "b", "c5", "c"])
        #expect(shown.map(\.seq) == [2, 3, 4, 5, nil])
    }

    /// Paging: `before` returns the page just below without the unsent messages (they belong
    /// to the newest page only), `from` keeps everything from a seq up, and `limit` takes the
    /// newest of what matches.
    @Test func pagesAreExactSlices() async throws {
        let database = try LocalDatabase.inMemory()
        try await world.track(database)
        try await database.apply((1...20).map { world.message($0) })
        _ = try await database.enqueue(.init(clientMessageId: "u", text: "u"), in: world.conversationId, senderId: world.me, now: world.start)
        #expect(try await database.messages(in: world.conversationId, viewer: world.me, limit: 3).map(\.seq) == [18, 19, 20, nil])
        #expect(try await database.messages(in: world.conversationId, viewer: world.me, before: 18, limit: 3).map(\.seq) == [15, 16, 17])
        #expect(try await database.messages(in: world.conversationId, viewer: world.me, before: 2, limit: 3).map(\.seq) == [1])
        #expect(try await database.messages(in: world.conversationId, viewer: world.me, from: 17, limit: 50).map(\.seq) == [17, 18, 19, 20, nil])
        #expect(try await database.oldestStoredSeq(in: world.conversationId) == 1)
        #expect(try await database.oldestStoredSeq(in: EntityID()) == nil)
    }

    /// The server's history over time, for the gap property: each change is a new message or a
    /// new version (edit or delete) of an earlier one, numbered 1, 2, 3...
    struct History {
        /// Every version, in change order: `changes[k - 1]` is change `k`.
        var changes: [Message] = []

        /// The conversation as the server holds it after change `k`: each message's latest
        /// version up to `k`, by seq.
        func state(at k: Int64) -> [EntityID: Message] {
            var latest: [EntityID: Message] = [:]
            for change in changes.prefix(Int(k)) { latest[change.id] = change }
            return latest
        }

        /// `/changes?since=` answered at time `now`, in pages of `limit`.
        func page(since: Int64, now: Int64, limit: Int) -> ChangesPage {
            let changed = state(at: now).values.filter { $0.updatedSeq > since }.sorted { $0.updatedSeq < $1.updatedSeq }
            return ChangesPage(messages: Array(changed.prefix(limit)), lastSeq: now, hasMore: changed.count > limit)
        }
    }

    /// Seeded live streams with drops, duplicates, late and reordered events, each answered as
    /// the client does (a gap means catch up from the synced seq, in pages). After every event
    /// the cache holds exactly the server's state as of the synced seq: never a change past a
    /// missing one, never an older version over a newer one. At the end it matches the server.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6, 7, 8])
    func gapsAreDetectedAndTheCacheNeverHoldsAChangeAfterAMissingOne(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        let database = try LocalDatabase.inMemory()
        try await world.track(database)
        var history = History()
        var delivery: [(Message, Int64)] = []
        var gaps = 0
        var dropped = 0

        func check(_ label: String) async throws {
            let synced = try #require(try await database.syncedSeq(world.conversationId))
            let expected = history.state(at: synced).values.sorted { $0.seq < $1.seq }
            let shown = try await database.messages(in: world.conversationId, viewer: world.me, limit: 10_000)
            #expect(shown.map(\.serverId) == expected.map(\.id), "seed \(seed) \(label): messages at synced \(synced)")
            #expect(shown.map(\.updatedSeq) == expected.map(\.updatedSeq), "seed \(seed) \(label): versions")
            #expect(shown.map(\.text) == expected.map(\.text), "seed \(seed) \(label): texts")
        }

        func catchUp() async throws {
            var since = try #require(try await database.syncedSeq(world.conversationId))
            while true {
                let page = history.page(since: since, now: Int64(history.changes.count), limit: 3)
                since = try await database.apply(changes: page, in: world.conversationId, since: since)
                if !page.hasMore { break }
            }
        }

        for step in 0..<150 {
            // The server takes a change.
            let k = Int64(history.changes.count + 1)
            let latest = history.state(at: k - 1).values.filter { $0.deletedAt == nil }.sorted { $0.seq < $1.seq }
            let change: Message
            if let target = latest.randomElement(using: &random), Int.random(in: 0..<3, using: &random) == 0 {
                var version = target
                version.updatedSeq = k
                if Bool.random(using: &random) {
                    version.text = "edit \(k)"
                    version.editedAt = world.start.addingTimeInterval(Double(k))
                } else {
                    version.text = ""
                    version.deletedAt = world.start.addingTimeInterval(Double(k))
                }
                change = version
            } else {
                change = world.message(k, from: Bool.random(using: &random) ? world.me : world.other, cmid: "s\(k)")
            }
            history.changes.append(change)
            // Its event joins the stream, or is lost.
            if Int.random(in: 0..<8, using: &random) == 0 { dropped += 1 } else { delivery.append((change, k)) }
            // Sometimes an old event is delivered again.
            if let old = delivery.randomElement(using: &random), Int.random(in: 0..<6, using: &random) == 0 { delivery.append(old) }
            // Events leave the stream, sometimes two swapped.
            while !delivery.isEmpty, Int.random(in: 0..<3, using: &random) > 0 {
                if delivery.count > 1, Int.random(in: 0..<5, using: &random) == 0 { delivery.swapAt(0, 1) }
                let (message, changeSeq) = delivery.removeFirst()
                let outcome = try await database.applyLive(message, changeSeq: changeSeq)
                let synced = try #require(try await database.syncedSeq(world.conversationId))
                #expect(outcome != .untracked)
                if outcome == .gap {
                    #expect(changeSeq > synced + 1, "seed \(seed): a gap reported for \(changeSeq) at synced \(synced)")
                    gaps += 1
                    try await catchUp()
                } else {
                    #expect(changeSeq <= synced, "seed \(seed): applied \(changeSeq) but synced is \(synced)")
                }
                try await check("step \(step)")
            }
        }
        try await catchUp()
        try await check("end")
        #expect(try await database.syncedSeq(world.conversationId) == Int64(history.changes.count))
        if dropped > 0 { #expect(gaps > 0, "seed \(seed): \(dropped) events lost, no gap noticed") }
    }

    /// A clean stream (in order, with duplicates) never reports a gap: a false gap costs a
    /// needless catch-up on every duplicate.
    @Test func inOrderEventsWithDuplicatesNeverReportAGap() async throws {
        let database = try LocalDatabase.inMemory()
        try await world.track(database, lastSeq: 10)
        var outcomes: [LocalDatabase.LiveOutcome] = []
        for seq in Int64(11)...30 {
            let message = world.message(seq, cmid: "x\(seq)")
            outcomes.append(try await database.applyLive(message, changeSeq: seq))
            outcomes.append(try await database.applyLive(message, changeSeq: seq))
            if seq > 12 { outcomes.append(try await database.applyLive(world.message(seq - 2, cmid: "x\(seq - 2)"), changeSeq: seq - 2)) }
        }
        #expect(outcomes.allSatisfy { $0 == .applied })
        #expect(try await database.syncedSeq(world.conversationId) == 30)
        #expect(try await database.messages(in: world.conversationId, viewer: world.me, limit: 100).map(\.seq) == (Int64(11)...30).map { Optional($0) })
    }

    /// A catch-up page never moves the synced seq backwards (a slow catch-up finishing after a
    /// faster one), and a multi-page catch-up stops at the last message it stored.
    @Test func catchUpPagesMoveTheSyncedSeqOnlyForward() async throws {
        let database = try LocalDatabase.inMemory()
        try await world.track(database, lastSeq: 2)
        let first = ChangesPage(messages: [world.message(3), world.message(4)], lastSeq: 9, hasMore: true)
        #expect(try await database.apply(changes: first, in: world.conversationId, since: 2) == 4)
        #expect(try await database.syncedSeq(world.conversationId) == 4)
        let last = ChangesPage(messages: (5...9).map { world.message($0) }, lastSeq: 9, hasMore: false)
        #expect(try await database.apply(changes: last, in: world.conversationId, since: 4) == 9)
        // A stale, slower catch-up from 2 finishes now.
        let stale = ChangesPage(messages: [world.message(3)], lastSeq: 3, hasMore: false)
        _ = try await database.apply(changes: stale, in: world.conversationId, since: 2)
        #expect(try await database.syncedSeq(world.conversationId) == 9)
        // An empty page with more to come keeps `since`.
        #expect(try await database.apply(changes: ChangesPage(messages: [], lastSeq: 12, hasMore: true), in: world.conversationId, since: 9) == 9)
    }

    /// A conversation seen only in the list (never opened here) is untracked: live events do
    /// not start a partial history that would look complete.
    @Test func untrackedConversationsKeepNoPartialHistory() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: world.conversation(lastSeq: 5))
        #expect(try await database.applyLive(world.message(6), changeSeq: 6) == .untracked)
        #expect(try await database.messages(in: world.conversationId, viewer: world.me).isEmpty)
        #expect(try await database.syncedSeq(world.conversationId) == nil)
        #expect(try await database.syncedConversations().isEmpty)
        // Opening it sets the synced seq to the counter read before the page.
        try await database.applyInitialPage(MessagesPage(messages: [world.message(5)], hasMore: true), conversation: world.conversation(lastSeq: 6))
        #expect(try await database.syncedSeq(world.conversationId) == 6)
        #expect(try await database.hasOlder(world.conversationId))
        #expect(try await database.syncedConversations().map { $0.syncedSeq } == [6])
    }

    /// In a group, my message is read only when every other member read it, delivered when
    /// every other member holds it; receipts never move a watermark back.
    @Test(arguments: [
        // (other's read, other's delivered, third's read, third's delivered) → status of seq 3
        (Int64(3), Int64(3), Int64(3), Int64(3), Delivery.read),
        (3, 3, 2, 3, .delivered),
        (3, 3, 0, 2, .sent),
        (5, 5, 3, 4, .read),
        (0, 3, 0, 3, .delivered),
        (2, 2, 2, 2, .sent),
    ])
    func groupStatusFollowsTheLowestOtherMember(
        otherRead: Int64, otherDelivered: Int64, thirdRead: Int64, thirdDelivered: Int64, status: Delivery
    ) async throws {
        let database = try LocalDatabase.inMemory()
        try await database.applyInitialPage(MessagesPage(messages: [], hasMore: false), conversation: world.conversation(type: .group, lastSeq: 0))
        try await database.apply([world.message(3, from: world.me, cmid: "mine")])
        try await database.apply(receipt: ReceiptEvent(conversationId: world.conversationId, userId: world.other, readSeq: otherRead, deliveredSeq: otherDelivered))
        try await database.apply(receipt: ReceiptEvent(conversationId: world.conversationId, userId: world.third, readSeq: thirdRead, deliveredSeq: thirdDelivered))
        // A late, older receipt changes nothing.
        try await database.apply(receipt: ReceiptEvent(conversationId: world.conversationId, userId: world.other, readSeq: 0, deliveredSeq: 0))
        // My own watermark does not count.
        try await database.apply(receipt: ReceiptEvent(conversationId: world.conversationId, userId: world.me, readSeq: 0, deliveredSeq: 0))
        let shown = try await database.messages(in: world.conversationId, viewer: world.me)
        #expect(shown.map(\.delivery) == [status])
    }

    /// Watermarks only rise, and a read raises delivered with it (a member who read 5 has
    /// received 5, whatever the receipt said).
    @Test func watermarksOnlyRiseAndReadImpliesDelivered() async throws {
        let database = try LocalDatabase.inMemory()
        try await world.track(database)
        let receipts: [(Int64, Int64)] = [(2, 1), (1, 4), (6, 0), (3, 3)]
        var expected = (read: Int64(0), delivered: Int64(0))
        for (read, delivered) in receipts {
            try await database.apply(receipt: ReceiptEvent(conversationId: world.conversationId, userId: world.other, readSeq: read, deliveredSeq: delivered))
            expected.read = max(expected.read, read)
            expected.delivered = max(expected.delivered, delivered, expected.read)
            let member = try #require(try await database.conversation(world.conversationId)?.members.first { $0.userId == world.other })
            #expect(member.readSeq == expected.read && member.deliveredSeq == expected.delivered)
        }
        #expect(expected.read == 6 && expected.delivered == 6)
        // A receipt for someone not in the conversation, or for an unknown conversation, is ignored.
        try await database.apply(receipt: ReceiptEvent(conversationId: world.conversationId, userId: EntityID(), readSeq: 9, deliveredSeq: 9))
        try await database.apply(receipt: ReceiptEvent(conversationId: EntityID(), userId: world.other, readSeq: 9, deliveredSeq: 9))
        #expect(try await database.conversation(world.conversationId)?.members.map(\.readSeq) == [0, 6])
    }

    /// The answer to my own read sets my badge; a late answer to an earlier, lower read does
    /// not bring the badge back.
    @Test func aLateAnswerToAnOlderReadDoesNotBringTheBadgeBack() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: world.conversation(lastSeq: 10, unread: 6, readSeq: 4))
        try await database.apply(ownRead: ReadResponse(readSeq: 10, unreadCount: 0), in: world.conversationId, userId: world.me)
        try await database.apply(ownRead: ReadResponse(readSeq: 7, unreadCount: 3), in: world.conversationId, userId: world.me)
        let stored = try #require(try await database.conversation(world.conversationId))
        #expect(stored.unreadCount == 0 && stored.readSeq == 10)
        let mine = try #require(stored.members.first { $0.userId == world.me })
        #expect(mine.readSeq == 10 && mine.deliveredSeq == 10)
        // A view from before the read (older readSeq, same lastSeq) does not either.
        try await database.store(conversation: world.conversation(lastSeq: 10, unread: 6, readSeq: 4))
        #expect(try await database.conversation(world.conversationId)?.unreadCount == 0)
    }

    /// Retention never cuts a hole in the middle: what is kept is the newest contiguous run,
    /// the conversation on screen is spared, and a trimmed conversation says it has older
    /// messages again.
    @Test func trimmingKeepsTheNewestRunAndSparesTheOpenConversation() async throws {
        let database = try LocalDatabase.inMemory(retention: .init(maxMessagesPerConversation: 4, maxAge: .seconds(1_000_000)))
        let open = EntityID()
        try await world.track(database)
        try await world.track(database, open)
        try await database.apply((1...10).map { world.message($0) } + (1...10).map { world.message($0, in: open, cmid: "o\($0)") })
        try await database.applyOlderPage(MessagesPage(messages: [], hasMore: false), in: world.conversationId)
        #expect(try await database.hasOlder(world.conversationId) == false)
        try await database.trim(now: world.start.addingTimeInterval(20), sparing: [open])
        #expect(try await database.messages(in: world.conversationId, viewer: world.me, limit: 100).map(\.seq) == [7, 8, 9, 10])
        #expect(try await database.messages(in: open, viewer: world.me, limit: 100).count == 10)
        #expect(try await database.hasOlder(world.conversationId))
        // Trimmed later, once off screen, the other one says older messages exist again too;
        // one with nothing to drop keeps its "no older messages".
        try await database.applyOlderPage(MessagesPage(messages: [], hasMore: false), in: open)
        try await database.applyOlderPage(MessagesPage(messages: [], hasMore: false), in: world.conversationId)
        try await database.trim(now: world.start.addingTimeInterval(20))
        #expect(try await database.messages(in: open, viewer: world.me, limit: 100).map(\.seq) == [7, 8, 9, 10])
        #expect(try await database.hasOlder(open))
        #expect(try await database.hasOlder(world.conversationId) == false)
    }
}
