import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

extension UnreadRaceTests {
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

    /// An answer without `lastSeq` (an older server) is taken as it is: its count
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
