import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The list row's unread badge when the read answer, the server's conversation views and the
/// live events arrive in any order. The server sends a read's answer and its `conversation.updated`
/// views outside the conversation's event order, so each of them may be older or newer than the
/// row: the badge must still equal the server's count (never counting an event twice, never
/// losing a read made on another device), and the read watermark must only move up. Every order
/// of small scripts is tried, and seeded runs are compared with a brute-force count of a model
/// server's messages.
@Suite struct UnreadRaceTests {
    let world = RaceWorld()

    func row(_ database: LocalDatabase) async throws -> Conversation {
        try #require(try await database.conversation(world.conversationId))
    }

    // MARK: The two reported races, step by step

    /// Race 1: the read answer counted message 6, whose event came after it; the event must not
    /// add it again (the badge showed 2 where the server said 1).
    @Test func aReadAnswerAheadOfTheEventsDoesNotCountThemTwice() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: world.conversation(lastSeq: 5, unread: 0, readSeq: 5))
        try await database.apply(
            ownRead: ReadResponse(readSeq: 5, unreadCount: 1, lastSeq: 6), in: world.conversationId, userId: world.me)
        var stored = try await row(database)
        #expect(stored.unreadCount == 1 && stored.readSeq == 5 && stored.lastSeq == 5, "the answer's count shows at once")
        #expect(try await database.applyToListRow(world.message(6), changeSeq: 6, viewer: world.me) == .applied)
        stored = try await row(database)
        #expect(stored.unreadCount == 1, "message 6 was in the answer's count")
        #expect(stored.lastSeq == 6 && stored.lastMessage?.seq == 6)
        // The next message is new to the answer: it counts.
        _ = try await database.applyToListRow(world.message(7), changeSeq: 7, viewer: world.me)
        #expect(try await row(database).unreadCount == 2)
    }

    /// The mirror of race 1: the answer was taken before message 6, whose event the row already
    /// applied; the answer's 0 must not wipe message 6 from the badge.
    @Test func aReadAnswerBehindTheRowKeepsWhatCameAfterIt() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: world.conversation(lastSeq: 5, unread: 3, readSeq: 2))
        _ = try await database.applyToListRow(world.message(6), changeSeq: 6, viewer: world.me)
        #expect(try await row(database).unreadCount == 4)
        try await database.apply(
            ownRead: ReadResponse(readSeq: 5, unreadCount: 0, lastSeq: 5), in: world.conversationId, userId: world.me)
        let stored = try await row(database)
        #expect(stored.readSeq == 5)
        #expect(stored.unreadCount == 1, "message 6 came after the read")
        #expect(stored.lastSeq == 6)
    }

    /// Race 2: a read on another device; its view (taken at seq 5) arrives after event 6. The
    /// read must not be lost (readSeq stayed 2 and the badge 4 where the server said 1).
    @Test func anOlderViewWithAHigherReadIsNotLost() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: world.conversation(lastSeq: 5, unread: 3, readSeq: 2, lastMessage: world.message(5)))
        _ = try await database.applyToListRow(world.message(6), changeSeq: 6, viewer: world.me)
        try await database.store(conversation: world.conversation(lastSeq: 5, unread: 0, readSeq: 5, lastMessage: world.message(5)))
        let stored = try await row(database)
        #expect(stored.readSeq == 5, "the read on the other device")
        #expect(stored.unreadCount == 1, "only message 6 is unread")
        #expect(stored.lastSeq == 6 && stored.lastMessage?.seq == 6, "the older view does not take the row back")
    }

    /// An older view whose watermark is not above the row's changes nothing: the watermark never
    /// moves back and the badge stays.
    @Test func anOlderViewWithALowerReadChangesNothing() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: world.conversation(lastSeq: 5, unread: 0, readSeq: 5, lastMessage: world.message(5)))
        _ = try await database.applyToListRow(world.message(6), changeSeq: 6, viewer: world.me)
        try await database.store(conversation: world.conversation(lastSeq: 4, unread: 2, readSeq: 2, lastMessage: world.message(4)))
        try await database.store(conversation: world.conversation(lastSeq: 5, unread: 3, readSeq: 2, lastMessage: world.message(5)))
        let stored = try await row(database)
        #expect(stored.readSeq == 5 && stored.unreadCount == 1 && stored.lastSeq == 6 && stored.lastMessage?.seq == 6)
    }

    /// A view taken between an answer that is ahead and the row: it moves the row's seq and last
    /// message, but its older watermark and count do not undo the answer; events the answer
    /// counted still do not count again.
    @Test func aViewBetweenTheRowAndAnAnswerAheadKeepsTheAnswersCount() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: world.conversation(lastSeq: 5, unread: 2, readSeq: 3, lastMessage: world.message(5)))
        try await database.apply(
            ownRead: ReadResponse(readSeq: 8, unreadCount: 0, lastSeq: 8), in: world.conversationId, userId: world.me)
        try await database.store(conversation: world.conversation(lastSeq: 6, unread: 3, readSeq: 3, lastMessage: world.message(6)))
        var stored = try await row(database)
        #expect(stored.lastSeq == 6 && stored.lastMessage?.seq == 6)
        #expect(stored.readSeq == 8 && stored.unreadCount == 0)
        for seq in Int64(7)...8 { _ = try await database.applyToListRow(world.message(seq), changeSeq: seq, viewer: world.me) }
        stored = try await row(database)
        #expect(stored.lastSeq == 8 && stored.unreadCount == 0)
        _ = try await database.applyToListRow(world.message(9), changeSeq: 9, viewer: world.me)
        #expect(try await row(database).unreadCount == 1)
    }

    /// Two answers out of order: the later read's answer first, then the earlier one (lower
    /// watermark, older seq), which must change nothing.
    @Test func anEarlierReadsAnswerArrivingLastChangesNothing() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: world.conversation(lastSeq: 6, unread: 4, readSeq: 2))
        try await database.apply(
            ownRead: ReadResponse(readSeq: 6, unreadCount: 0, lastSeq: 6), in: world.conversationId, userId: world.me)
        try await database.apply(
            ownRead: ReadResponse(readSeq: 4, unreadCount: 2, lastSeq: 6), in: world.conversationId, userId: world.me)
        try await database.apply(
            ownRead: ReadResponse(readSeq: 3, unreadCount: 2, lastSeq: 4), in: world.conversationId, userId: world.me)
        let stored = try await row(database)
        #expect(stored.readSeq == 6 && stored.unreadCount == 0)
        #expect(stored.members.first { $0.userId == world.me }?.readSeq == 6, "my own member watermark follows the read")
    }

    // MARK: What the row applied after an older view counts as

    /// A view taken at seq 5 (watermark 3: messages 4 and 5 unread, count 2) arrives after the
    /// row applied one more change; the badge is the view's count adjusted by that change alone.
    @Test(arguments: [
        RaceWindowCase("another sender's message counts", change: .send(.other), expected: 3),
        RaceWindowCase("a third member's message counts", change: .send(.third), expected: 3),
        RaceWindowCase("my own message does not count", change: .send(.me), expected: 2),
        RaceWindowCase("a system line does not count", change: .send(.system), expected: 2),
        RaceWindowCase("deleting an unread message takes it back", change: .delete(4), expected: 1),
        RaceWindowCase("deleting a message read at the view's watermark changes nothing", change: .delete(2), expected: 2),
        RaceWindowCase("deleting my own message changes nothing", change: .delete(5), expected: 1, mineAtFive: true),
        RaceWindowCase("an edit of an unread message changes nothing", change: .edit(4), expected: 2),
    ])
    func whatTheRowAppliedAfterAnOlderViewCountsAsTheServerWould(_ window: RaceWindowCase) async throws {
        let database = try LocalDatabase.inMemory()
        var server = RaceServer(world: world)
        for seq in Int64(1)...5 { server.send(from: window.mineAtFive && seq == 5 ? world.me : world.other) }
        server.read(upTo: 1)
        try await database.store(conversation: server.view())
        server.read(upTo: 3)
        let view = server.view()
        let applied = server.apply(window.change)
        let changeSeq = try #require(applied)
        _ = try await database.applyToListRow(server.changes[Int(changeSeq - 1)], changeSeq: changeSeq, viewer: world.me)
        try await database.store(conversation: view)
        let stored = try await row(database)
        #expect(stored.readSeq == 3, "\(window.label)")
        #expect(stored.unreadCount == window.expected, "\(window.label)")
        #expect(stored.unreadCount == server.unread(at: 6, readSeq: 3), "\(window.label): the brute-force count")
    }

    /// A message sent after the view and deleted after it too comes and goes without moving the
    /// badge the view set.
    @Test func aMessageCreatedAndDeletedAfterTheViewLeavesTheViewsCount() async throws {
        let database = try LocalDatabase.inMemory()
        var server = RaceServer(world: world)
        for _ in 1...3 { server.send(from: world.other) }
        try await database.store(conversation: server.view())
        server.read(upTo: 2)
        let view = server.view()
        let sent = server.send(from: world.other)
        let deletion = server.apply(.delete(sent.seq))
        let deleted = try #require(deletion)
        for seq in Int64(4)...deleted { _ = try await database.applyToListRow(server.event(seq), changeSeq: seq, viewer: world.me) }
        #expect(try await row(database).unreadCount == 3)
        try await database.store(conversation: view)
        let stored = try await row(database)
        #expect(stored.unreadCount == 1 && stored.readSeq == 2 && stored.lastSeq == deleted)
    }

    /// A list page (sync) taken before events the row applied is merged the same way as a
    /// single view: the read it carries counts, the events after it stay counted.
    @Test func aListPageOlderThanTheRowIsMergedLikeAView() async throws {
        let database = try LocalDatabase.inMemory()
        var server = RaceServer(world: world)
        for _ in 1...4 { server.send(from: world.other) }
        try await database.store(conversations: [server.view()], replacingAll: true)
        server.read(upTo: 4)
        let page = [server.view()]
        server.send(from: world.other)
        server.send(from: world.me)
        for seq in Int64(5)...6 { _ = try await database.applyToListRow(server.event(seq), changeSeq: seq, viewer: world.me) }
        try await database.store(conversations: page, replacingAll: true)
        let stored = try await row(database)
        #expect(stored.readSeq == 4 && stored.unreadCount == 1 && stored.lastSeq == 6)
    }

    // MARK: Beyond what the row remembers, across restarts

    /// A read snapshot older than everything the row still remembers applying cannot be merged
    /// exactly: the row says stale (the client then reads the conversation again) and keeps its
    /// own watermark and badge rather than guessing; the fresh view then sets both.
    @Test func aSnapshotBeyondTheRememberedWindowMakesTheRowStale() async throws {
        let database = try LocalDatabase.inMemory()
        var server = RaceServer(world: world)
        server.send(from: world.other)
        try await database.store(conversation: server.view())
        server.read(upTo: 1)
        let oldView = server.view()
        let oldAnswer = server.answer()
        let count = LocalDatabase.listChangeWindow + 10
        for _ in 0..<count { server.send(from: world.other) }
        for seq in Int64(2)...server.lastSeq {
            #expect(try await database.applyToListRow(server.event(seq), changeSeq: seq, viewer: world.me) == .applied)
        }
        let before = try await row(database)
        #expect(before.unreadCount == Int(count) + 1 && before.readSeq == 0)
        #expect(try await database.store(conversation: oldView) == .stale)
        #expect(try await database.apply(ownRead: oldAnswer, in: world.conversationId, userId: world.me) == .stale)
        let after = try await row(database)
        #expect(after.readSeq == 0 && after.unreadCount == before.unreadCount && after.lastSeq == server.lastSeq)
        #expect(try await database.store(conversation: server.view()) == .applied)
        let fresh = try await row(database)
        #expect(fresh.readSeq == 1 && fresh.unreadCount == Int(count))
        // A view just inside the window still merges exactly.
        server.read(upTo: server.lastSeq - 5)
        let inside = server.view()
        for _ in 0..<3 { server.send(from: world.third) }
        for seq in server.lastSeq - 2...server.lastSeq {
            _ = try await database.applyToListRow(server.event(seq), changeSeq: seq, viewer: world.me)
        }
        #expect(try await database.store(conversation: inside) == .applied)
        #expect(try await row(database).unreadCount == server.unread(at: server.lastSeq, readSeq: server.readSeq))
    }

    /// The app is killed between a read answer that is ahead of the row and the events it
    /// counted: after the restart those events still do not count twice, and a view behind the
    /// row still merges with what was applied before the restart.
    @Test func whatTheBadgeAlreadyCountedSurvivesARestart() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("parley-unread-race-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("cache.sqlite").path
        var server = RaceServer(world: world)
        for _ in 1...3 { server.send(from: world.other) }
        do {
            let database = try LocalDatabase.open(path: path)
            try await database.store(conversation: server.view())
            server.send(from: world.other)
            server.send(from: world.other)
            server.read(upTo: 3)
            try await database.apply(ownRead: server.answer(), in: world.conversationId, userId: world.me)
        }
        let reopened = try LocalDatabase.open(path: path)
        for seq in Int64(4)...5 { _ = try await reopened.applyToListRow(server.event(seq), changeSeq: seq, viewer: world.me) }
        var stored = try await row(reopened)
        #expect(stored.lastSeq == 5 && stored.readSeq == 3 && stored.unreadCount == 2)
        // A view taken at 5 after a read elsewhere, delivered after message 6 and a restart.
        server.read(upTo: 5)
        let view = server.view()
        server.send(from: world.third)
        _ = try await reopened.applyToListRow(server.event(6), changeSeq: 6, viewer: world.me)
        let again = try LocalDatabase.open(path: path)
        try await again.store(conversation: view)
        stored = try await row(again)
        #expect(stored.lastSeq == 6 && stored.readSeq == 5 && stored.unreadCount == 1)
    }

    /// A cache written by the previous app version (no read bookkeeping in its conversations
    /// table) is rebuilt on open, and the rebuilt one merges reads at once.
    @Test func aCacheFromBeforeTheReadBookkeepingIsRebuilt() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("parley-unread-race-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("cache.sqlite").path
        do {
            let database = try LocalDatabase.open(path: path)
            try await database.writer.write { db in
                try db.execute(sql: """
                    DROP TABLE conversations;
                    DROP TABLE list_changes;
                    CREATE TABLE conversations (
                        id TEXT PRIMARY KEY NOT NULL, body TEXT NOT NULL, last_activity_at INTEGER NOT NULL,
                        last_seq INTEGER NOT NULL, read_seq INTEGER NOT NULL DEFAULT 0, synced_seq INTEGER,
                        has_older INTEGER NOT NULL DEFAULT 1);
                    UPDATE cache_meta SET value = '2' WHERE key = 'cache_version';
                    """)
            }
        }
        #expect(LocalDatabase.cacheVersion > 2, "the cache above is older than this build's")
        let reopened = try LocalDatabase.open(path: path)
        try await reopened.store(conversation: world.conversation(lastSeq: 5, unread: 3, readSeq: 2, lastMessage: world.message(5)))
        _ = try await reopened.applyToListRow(world.message(6), changeSeq: 6, viewer: world.me)
        try await reopened.store(conversation: world.conversation(lastSeq: 5, unread: 0, readSeq: 5, lastMessage: world.message(5)))
        let stored = try await row(reopened)
        #expect(stored.readSeq == 5 && stored.unreadCount == 1 && stored.lastSeq == 6)
    }

    /// Forgetting a conversation forgets what its row remembered: when it comes back (added
    /// again), an old view's read is weighed against the new row only.
    @Test func aForgottenConversationStartsAfresh() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: world.conversation(lastSeq: 5, unread: 5, readSeq: 0))
        for seq in Int64(6)...8 { _ = try await database.applyToListRow(world.message(seq), changeSeq: seq, viewer: world.me) }
        try await database.forget(conversations: [world.conversationId])
        #expect(try await database.conversation(world.conversationId) == nil)
        let remaining = try await database.writer.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM list_changes WHERE conversation_id = ?", arguments: [world.conversationId.description])
        }
        #expect(remaining == 0)
        try await database.store(conversation: world.conversation(lastSeq: 9, unread: 1, readSeq: 8))
        try await database.store(conversation: world.conversation(lastSeq: 7, unread: 0, readSeq: 7))
        let stored = try await row(database)
        #expect(stored.lastSeq == 9 && stored.readSeq == 8 && stored.unreadCount == 1, "a view older than the new row's does not count")
    }

    // MARK: Old servers

    /// An answer without `lastSeq` (an older server) is taken as it is, as before: its count
    /// replaces the badge when its watermark is not below the row's, and is ignored otherwise.
    @Test func anAnswerWithoutItsSeqIsTakenAsItIs() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: world.conversation(lastSeq: 6, unread: 4, readSeq: 2))
        try await database.apply(ownRead: ReadResponse(readSeq: 5, unreadCount: 1), in: world.conversationId, userId: world.me)
        var stored = try await row(database)
        #expect(stored.readSeq == 5 && stored.unreadCount == 1)
        try await database.apply(ownRead: ReadResponse(readSeq: 4, unreadCount: 2), in: world.conversationId, userId: world.me)
        stored = try await row(database)
        #expect(stored.readSeq == 5 && stored.unreadCount == 1, "a lower watermark is ignored")
        _ = try await database.applyToListRow(world.message(7), changeSeq: 7, viewer: world.me)
        #expect(try await row(database).unreadCount == 2)
    }

    /// The wire: an old server's answer decodes with no seq; a new one's carries it; an answer
    /// without it encodes without the key (old clients decode either, they ignore unknown keys).
    @Test func theAnswersSeqIsOptionalOnTheWire() throws {
        let decoder = WireCoding.makeDecoder()
        let old = try decoder.decode(ReadResponse.self, from: Data(#"{"readSeq":5,"unreadCount":1}"#.utf8))
        #expect(old.readSeq == 5 && old.unreadCount == 1 && old.lastSeq == nil)
        let new = try decoder.decode(ReadResponse.self, from: Data(#"{"readSeq":5,"unreadCount":1,"lastSeq":6}"#.utf8))
        #expect(new.lastSeq == 6)
        let encoded = try JSONSerialization.jsonObject(with: WireCoding.makeEncoder().encode(ReadResponse(readSeq: 5, unreadCount: 1))) as? [String: Any]
        #expect(encoded?.keys.sorted() == ["readSeq", "unreadCount"])
        let withSeq = try JSONSerialization.jsonObject(
            with: WireCoding.makeEncoder().encode(ReadResponse(readSeq: 5, unreadCount: 1, lastSeq: 6))) as? [String: Any]
        #expect(withSeq?.keys.sorted() == ["lastSeq", "readSeq", "unreadCount"])
        #expect((withSeq?["lastSeq"] as? NSNumber)?.int64Value == 6)
        // Struct the way an old client would decode it: only the two fields it knows.
        struct OldReadResponse: Decodable { var readSeq: Int64; var unreadCount: Int }
        let seenByOld = try decoder.decode(OldReadResponse.self, from: WireCoding.makeEncoder().encode(ReadResponse(readSeq: 5, unreadCount: 1, lastSeq: 6)))
        #expect(seenByOld.readSeq == 5 && seenByOld.unreadCount == 1)
    }

    // MARK: Every order of small scripts

    /// Every order of a script's events (kept in their order) and its read answers and views
    /// (in any order among themselves and the events): after each arrival the badge is the
    /// brute-force count at what the row has seen, the watermark is the newest read delivered,
    /// and at the end the row equals the server.
    @Test(arguments: RaceScript.all)
    func everyOrderOfAnswersViewsAndEventsKeepsTheBadgeExact(_ script: RaceScript) async throws {
        var server = RaceServer(world: world)
        for step in script.before { _ = server.perform(step) }
        let initial = server.view()
        var events: [Int64] = []
        var snapshots: [RaceSnapshot] = []
        for step in script.steps {
            switch server.perform(step) {
            case .change(let seq): events.append(seq)
            case .snapshot(let snapshot): snapshots.append(snapshot)
            case .nothing: break
            }
        }
        let orders = RaceOrders.interleavings(events: events.count, snapshots: snapshots.count)
        #expect(orders.count == RaceOrders.count(events: events.count, snapshots: snapshots.count), "\(script.label)")
        for order in orders {
            let database = try LocalDatabase.inMemory()
            try await database.store(conversation: initial)
            var checker = RaceChecker(world: world, readSeq: initial.readSeq, answeredSeq: initial.lastSeq)
            var nextEvent = 0
            for arrival in order {
                let label = "\(script.label) \(order.map(\.description).joined(separator: " "))"
                switch arrival {
                case .event:
                    let seq = events[nextEvent]
                    nextEvent += 1
                    #expect(try await database.applyToListRow(server.event(seq), changeSeq: seq, viewer: world.me) == .applied, "\(label)")
                case .snapshot(let index):
                    try await checker.deliver(snapshots[index], to: database, conversationId: world.conversationId)
                }
                checker.check(try await row(database), against: server, label)
            }
            let final = try await row(database)
            #expect(final.lastSeq == server.lastSeq && final.readSeq == server.readSeq, "\(script.label): ends at the server's state")
            #expect(final.unreadCount == server.unread(at: server.lastSeq, readSeq: server.readSeq), "\(script.label): ends at the server's count")
        }
    }

    // MARK: Seeded runs

    /// Seeded runs: sends by everyone (me, others, system lines), edits, deletes, reads here (an
    /// answer) and on other devices (a view), list syncs (a view); events go out in order, one
    /// in ten is lost (the row goes stale and reads the conversation again, as the client
    /// does); answers and views are held back a random while and arrive in any order. After
    /// every arrival the badge is the brute-force count, and the row ends at the server's state.
    @Test(arguments: [UInt64(11), 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22])
    func seededInterleavingsMatchTheBruteForceCount(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        var server = RaceServer(world: world)
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: server.view())
        var checker = RaceChecker(world: world, readSeq: 0, answeredSeq: 0)
        var pendingEvents: [Int64] = []
        var heldBack: [RaceSnapshot] = []
        var delivered: [Int64] = []
        var stale = 0, lateSnapshots = 0, answersAhead = 0

        func deliverEvent(_ seq: Int64) async throws {
            delivered.append(seq)
            if try await database.applyToListRow(server.event(seq), changeSeq: seq, viewer: world.me) == .stale {
                stale += 1
                try await checker.deliver(.view(server.view()), to: database, conversationId: world.conversationId)
            }
        }

        for step in 0..<220 {
            let roll = Int.random(in: 0..<24, using: &random)
            let action: RaceStep
            switch roll {
            case 0..<5: action = .send(.other)
            case 5..<7: action = .send(.third)
            case 7..<9: action = .send(.me)
            case 9: action = .send(.system)
            case 10..<12: action = .edit(Int64.random(in: 1...max(1, server.lastSeq), using: &random))
            case 12..<14:
                // Mostly a message still unread (the delete that moves the badge), else any.
                let unread = server.state(at: server.lastSeq).filter { $0.seq > server.readSeq && $0.deletedAt == nil && $0.type != .system }
                let target = unread.randomElement(using: &random)?.seq ?? Int64.random(in: 1...max(1, server.lastSeq), using: &random)
                action = .delete(target)
            case 14..<17: action = .readHere(Int64.random(in: server.readSeq...server.lastSeq, using: &random))
            case 17..<19: action = .readElsewhere(Int64.random(in: server.readSeq...server.lastSeq, using: &random))
            case 19: action = .view
            default: action = .none
            }
            switch server.perform(action) {
            case .change(let seq): pendingEvents.append(seq)
            case .snapshot(let snapshot): heldBack.append(snapshot)
            case .nothing: break
            }
            // Events in order (often a few behind), now and then one lost.
            while !pendingEvents.isEmpty, Int.random(in: 0..<5, using: &random) < 2 {
                let seq = pendingEvents.removeFirst()
                if Int.random(in: 0..<10, using: &random) == 0 { continue }
                try await deliverEvent(seq)
                checker.check(try await row(database), against: server, "seed \(seed) step \(step) event \(seq)")
            }
            // Answers and views: any of those held back, in any order.
            while !heldBack.isEmpty, Int.random(in: 0..<3, using: &random) == 0 {
                let snapshot = heldBack.remove(at: Int.random(in: 0..<heldBack.count, using: &random))
                let rowSeq = try await row(database).lastSeq
                if snapshot.lastSeq < rowSeq { lateSnapshots += 1 }
                if case .answer = snapshot, snapshot.lastSeq > rowSeq { answersAhead += 1 }
                try await checker.deliver(snapshot, to: database, conversationId: world.conversationId)
                checker.check(try await row(database), against: server, "seed \(seed) step \(step) \(snapshot)")
            }
        }
        while !pendingEvents.isEmpty { try await deliverEvent(pendingEvents.removeFirst()) }
        for snapshot in heldBack.shuffled(using: &random) {
            try await checker.deliver(snapshot, to: database, conversationId: world.conversationId)
            checker.check(try await row(database), against: server, "seed \(seed) the end \(snapshot)")
        }
        // The next sync reads the conversation when its last event was lost.
        if try await row(database).lastSeq < server.lastSeq {
            try await checker.deliver(.view(server.view()), to: database, conversationId: world.conversationId)
        }
        let final = try await row(database)
        #expect(final.lastSeq == server.lastSeq && final.readSeq == server.readSeq, "seed \(seed)")
        #expect(stale > 0, "seed \(seed): no lost event was ever noticed")
        #expect(final.unreadCount == server.unread(at: server.lastSeq, readSeq: server.readSeq), "seed \(seed)")
        #expect(lateSnapshots > 0, "seed \(seed): no answer or view ever arrived behind the row")
        #expect(answersAhead > 0, "seed \(seed): no answer ever arrived ahead of the row")
        #expect(delivered.count > 50, "seed \(seed): too few events to mean anything")
    }
}

// MARK: - The model

/// The people and builders of these tests: a group of me, `other` and `third`.
struct RaceWorld: Sendable {
    let me = EntityID()
    let other = EntityID()
    let third = EntityID()
    let conversationId = EntityID()
    let start = Date(millisecondsSince1970: 1_796_000_000_000)

    var people: [EntityID] { [me, other, third] }

    func conversation(lastSeq: Int64, unread: Int, readSeq: Int64, lastMessage: Message? = nil) -> Conversation {
        Conversation(
            id: conversationId, type: .group, name: "race", participantIds: people, createdAt: start,
            lastActivityAt: lastMessage?.createdAt ?? start, lastSeq: lastSeq, lastMessage: lastMessage, unreadCount: unread,
            readSeq: readSeq, members: people.map { Member(userId: $0, readSeq: 0, deliveredSeq: 0) })
    }

    func message(_ seq: Int64, from sender: EntityID? = nil, type: MessageType = .text) -> Message {
        Message(
            id: EntityID(), conversationId: conversationId, seq: seq, updatedSeq: seq, senderId: sender ?? other,
            clientMessageId: "race-\(seq)", type: type, text: "m\(seq)", createdAt: start.addingTimeInterval(Double(seq)))
    }
}

/// Who sends a message in a script.
enum RaceSender: Sendable, CustomStringConvertible {
    case me, other, third, system
    var description: String {
        switch self {
        case .me: "me"
        case .other: "other"
        case .third: "third"
        case .system: "system"
        }
    }
}

/// One thing happening on the server.
enum RaceStep: Sendable, CustomStringConvertible {
    case send(RaceSender)
    case edit(Int64)
    case delete(Int64)
    /// A read on this device: its answer comes back.
    case readHere(Int64)
    /// A read on another device: this device gets the view.
    case readElsewhere(Int64)
    /// A view with no read (a list sync, a rename's view).
    case view
    case none

    var description: String {
        switch self {
        case .send(let sender): "send(\(sender))"
        case .edit(let seq): "edit(\(seq))"
        case .delete(let seq): "delete(\(seq))"
        case .readHere(let seq): "readHere(\(seq))"
        case .readElsewhere(let seq): "readElsewhere(\(seq))"
        case .view: "view"
        case .none: "none"
        }
    }
}

/// What the server sends about reads: a read's answer or a conversation view.
enum RaceSnapshot: Sendable, CustomStringConvertible {
    case answer(ReadResponse)
    case view(Conversation)

    var lastSeq: Int64 {
        switch self {
        case .answer(let answer): answer.lastSeq ?? 0
        case .view(let view): view.lastSeq
        }
    }

    var readSeq: Int64 {
        switch self {
        case .answer(let answer): answer.readSeq
        case .view(let view): view.readSeq
        }
    }

    var description: String {
        switch self {
        case .answer(let answer): "answer(read \(answer.readSeq) at \(answer.lastSeq ?? -1): \(answer.unreadCount))"
        case .view(let view): "view(read \(view.readSeq) at \(view.lastSeq): \(view.unreadCount))"
        }
    }
}

/// The server's side, brute force: every change as the message it left, and my watermark.
struct RaceServer {
    let world: RaceWorld
    /// `changes[k - 1]` is the message as change `k` left it.
    var changes: [Message] = []
    var readSeq: Int64 = 0

    init(world: RaceWorld) { self.world = world }

    var lastSeq: Int64 { Int64(changes.count) }

    /// Every message as it was right after change `seq`, in seq order (a seed replays the same).
    func state(at seq: Int64) -> [Message] {
        var latest: [EntityID: Message] = [:]
        for message in changes.prefix(Int(seq)) { latest[message.id] = message }
        return latest.values.sorted { $0.seq < $1.seq }
    }

    /// The contract's count: others' messages, not system, not deleted, above the watermark.
    func unread(at seq: Int64, readSeq: Int64) -> Int {
        state(at: seq).filter { $0.seq > readSeq && $0.senderId != world.me && $0.type != .system && $0.deletedAt == nil }.count
    }

    func newest(at seq: Int64) -> Message? { state(at: seq).max { $0.seq < $1.seq } }

    /// The event of change `seq`.
    func event(_ seq: Int64) -> Message { changes[Int(seq - 1)] }

    func view() -> Conversation {
        world.conversation(lastSeq: lastSeq, unread: unread(at: lastSeq, readSeq: readSeq), readSeq: readSeq, lastMessage: newest(at: lastSeq))
    }

    func answer() -> ReadResponse {
        ReadResponse(readSeq: readSeq, unreadCount: unread(at: lastSeq, readSeq: readSeq), lastSeq: lastSeq)
    }

    @discardableResult
    mutating func send(from sender: EntityID, type: MessageType = .text) -> Message {
        let message = world.message(lastSeq + 1, from: sender, type: type)
        changes.append(message)
        return message
    }

    /// Reads up to `seq` (clamped; the watermark only rises).
    mutating func read(upTo seq: Int64) { readSeq = max(readSeq, min(seq, lastSeq)) }

    /// An edit or delete of the message with seq `target` (nil: not allowed: gone, a system line,
    /// or no such message); returns the change's seq.
    mutating func change(_ target: Int64, delete: Bool) -> Int64? {
        guard var message = state(at: lastSeq).first(where: { $0.seq == target }), message.deletedAt == nil, message.type != .system else {
            return nil
        }
        let seq = lastSeq + 1
        message.updatedSeq = seq
        if delete {
            message.text = ""
            message.deletedAt = world.start.addingTimeInterval(Double(seq))
        } else {
            message.text = "edited \(seq)"
            message.editedAt = world.start.addingTimeInterval(Double(seq))
        }
        changes.append(message)
        return seq
    }

    /// Applies a send, edit or delete; returns its change seq.
    mutating func apply(_ step: RaceStep) -> Int64? {
        if case .change(let seq) = perform(step) { return seq }
        return nil
    }

    enum Outcome { case change(Int64), snapshot(RaceSnapshot), nothing }

    mutating func perform(_ step: RaceStep) -> Outcome {
        switch step {
        case .send(let who):
            let sender = switch who {
            case .me: world.me
            case .other: world.other
            case .third: world.third
            case .system: world.other
            }
            return .change(send(from: sender, type: who == .system ? .system : .text).seq)
        case .edit(let target):
            return change(target, delete: false).map(Outcome.change) ?? .nothing
        case .delete(let target):
            return change(target, delete: true).map(Outcome.change) ?? .nothing
        case .readHere(let seq):
            read(upTo: seq)
            return .snapshot(.answer(answer()))
        case .readElsewhere(let seq):
            read(upTo: seq)
            return .snapshot(.view(view()))
        case .view:
            return .snapshot(.view(view()))
        case .none:
            return .nothing
        }
    }
}

/// What the row must show after each arrival: the watermark is the highest delivered (answers
/// and views only carry watermarks the server had, which only rise), and the badge is the
/// server's count at the furthest seq the row has seen, its own or an answer's.
struct RaceChecker {
    let world: RaceWorld
    var readSeq: Int64
    var answeredSeq: Int64

    mutating func deliver(_ snapshot: RaceSnapshot, to database: LocalDatabase, conversationId: EntityID) async throws {
        readSeq = max(readSeq, snapshot.readSeq)
        switch snapshot {
        case .answer(let answer):
            answeredSeq = max(answeredSeq, answer.lastSeq ?? 0)
            try await database.apply(ownRead: answer, in: conversationId, userId: world.me)
        case .view(let view):
            try await database.store(conversation: view)
        }
    }

    func check(_ stored: Conversation, against server: RaceServer, _ label: String) {
        let seen = max(stored.lastSeq, answeredSeq)
        #expect(stored.readSeq == readSeq, "\(label): watermark")
        #expect(stored.unreadCount == server.unread(at: seen, readSeq: readSeq), "\(label): badge at \(seen), read \(readSeq)")
        #expect(stored.lastMessage?.id == server.newest(at: stored.lastSeq)?.id, "\(label): last message at \(stored.lastSeq)")
    }
}

/// One change the row applies after an older view, and the badge it must then show.
struct RaceWindowCase: Sendable, CustomTestStringConvertible {
    let label: String
    let change: RaceStep
    let expected: Int
    let mineAtFive: Bool

    init(_ label: String, change: RaceStep, expected: Int, mineAtFive: Bool = false) {
        self.label = label
        self.change = change
        self.expected = expected
        self.mineAtFive = mineAtFive
    }

    var testDescription: String { label }
}

/// A small script: what happened before the row was stored, then the steps whose events and
/// snapshots are delivered in every order.
struct RaceScript: Sendable, CustomTestStringConvertible {
    let label: String
    let before: [RaceStep]
    let steps: [RaceStep]

    var testDescription: String { label }

    static let all: [RaceScript] = [
        RaceScript(
            label: "race 1: the answer counted the next message",
            before: [.send(.other), .send(.other), .send(.other), .send(.other), .send(.other), .readElsewhere(5)],
            steps: [.send(.other), .readHere(5)]),
        RaceScript(
            label: "the answer was taken before the next message",
            before: [.send(.other), .send(.other), .send(.other), .send(.other), .send(.other), .readElsewhere(2)],
            steps: [.readHere(5), .send(.other)]),
        RaceScript(
            label: "race 2: another device's read, then a message",
            before: [.send(.other), .send(.other), .send(.other), .send(.other), .send(.other), .readElsewhere(2)],
            steps: [.readElsewhere(5), .send(.other), .send(.third)]),
        RaceScript(
            label: "deletes of read and unread messages around a read",
            before: [.send(.other), .send(.other), .send(.third), .send(.other)],
            steps: [.readElsewhere(2), .delete(3), .delete(1), .send(.other), .readHere(5)]),
        RaceScript(
            label: "my own messages and system lines between reads",
            before: [.send(.other), .send(.other), .send(.other)],
            steps: [.send(.me), .readHere(4), .send(.system), .send(.third), .readElsewhere(5), .send(.other)]),
        RaceScript(
            label: "a message sent and deleted after the view",
            before: [.send(.other), .send(.other)],
            steps: [.readElsewhere(2), .send(.other), .delete(3), .send(.third)]),
        RaceScript(
            label: "two reads here and one elsewhere crossing",
            before: [.send(.other), .send(.other), .send(.other), .send(.other)],
            steps: [.readHere(2), .send(.other), .readElsewhere(4), .send(.other), .readHere(6)]),
        RaceScript(
            label: "edits, a list sync and a partial read",
            before: [.send(.other), .send(.third), .send(.other)],
            steps: [.edit(2), .view, .readHere(2), .send(.other), .edit(4), .readElsewhere(3)]),
        RaceScript(
            label: "a read that does not move, answered with the current count",
            before: [.send(.other), .send(.other), .send(.other), .readElsewhere(3)],
            steps: [.send(.other), .readHere(1), .send(.other), .delete(4)]),
    ]
}

/// Arrivals of a run: the next event, or one of the snapshots.
enum RaceArrival: Sendable, Equatable, CustomStringConvertible {
    case event
    case snapshot(Int)
    var description: String {
        switch self {
        case .event: "e"
        case .snapshot(let index): "s\(index)"
        }
    }
}

enum RaceOrders {
    /// Every sequence of `events` events (in their order) and `snapshots` snapshots (in any order).
    static func interleavings(events: Int, snapshots: Int) -> [[RaceArrival]] {
        var all: [[RaceArrival]] = []
        func extend(_ prefix: [RaceArrival], eventsLeft: Int, unused: Set<Int>) {
            if eventsLeft == 0 && unused.isEmpty { return all.append(prefix) }
            if eventsLeft > 0 { extend(prefix + [.event], eventsLeft: eventsLeft - 1, unused: unused) }
            for index in unused.sorted() { extend(prefix + [.snapshot(index)], eventsLeft: eventsLeft, unused: unused.subtracting([index])) }
        }
        extend([], eventsLeft: events, unused: Set(0..<snapshots))
        return all
    }

    /// (events + snapshots)! / events!, counted independently.
    static func count(events: Int, snapshots: Int) -> Int {
        snapshots == 0 ? 1 : (events + 1...events + snapshots).reduce(1, *)
    }
}
