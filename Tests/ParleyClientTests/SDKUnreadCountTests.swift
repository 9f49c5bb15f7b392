import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The list row's unread badge as live events move it (the client keeps its own row):
/// others' countable messages above the read watermark, not mine, not system lines, not deleted
/// ones; an event seen twice counts once; a missed event is noticed instead of guessed. Checked
/// against a brute-force count of the server's messages.
@Suite struct SDKUnreadCountTests {
    let world = SDKWorld()

    /// The contract's count over a set of messages.
    func bruteUnread(_ messages: some Sequence<Message>, readSeq: Int64) -> Int {
        messages.filter { $0.seq > readSeq && $0.senderId != world.me && $0.type != .system && $0.deletedAt == nil }.count
    }

    func row(_ database: LocalDatabase) async throws -> Conversation {
        try #require(try await database.conversation(world.conversationId))
    }

    /// One event at a time, each kind: what it does to the badge.
    @Test func eachKindOfChangeMovesTheBadgeAsTheContractSays() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: world.conversation(type: .group, lastSeq: 2, unread: 0, readSeq: 2))
        let steps: [(String, Message, Int64, Int)] = [
            ("another sender's message", world.message(3, cmid: "o3"), 3, 1),
            ("my own message", world.message(4, from: world.me, cmid: "m4"), 4, 1),
            ("a system line", world.message(5, from: world.third, cmid: "s5", type: .system), 5, 1),
            ("a third member's message", world.message(6, from: world.third, cmid: "t6"), 6, 2),
            ("an edit of an unread message", world.message(3, cmid: "o3", text: "edited", updatedSeq: 7), 7, 2),
            ("the same event again", world.message(6, from: world.third, cmid: "t6"), 6, 2),
            ("a delete of an unread message", world.message(3, cmid: "o3", updatedSeq: 8, deleted: true), 8, 1),
            ("a delete of my own message", world.message(4, from: world.me, cmid: "m4", updatedSeq: 9, deleted: true), 9, 1),
            ("the delete delivered twice", world.message(3, cmid: "o3", updatedSeq: 8, deleted: true), 8, 1),
        ]
        for (label, message, changeSeq, unread) in steps {
            #expect(try await database.applyToListRow(message, changeSeq: changeSeq, viewer: world.me) == .applied, "\(label)")
            let stored = try await row(database)
            #expect(stored.unreadCount == unread, "\(label)")
            #expect(stored.lastSeq == max(changeSeq, stored.lastSeq))
        }
        #expect(try await row(database).lastSeq == 9)
    }

    /// A sender the viewer blocks: their messages arrive marked `senderBlocked` and move
    /// neither the badge nor the mentions, nor do their deletes; they are kept, marked, in the
    /// cache for the screen to fold away.
    @Test func aBlockedSendersMessagesNeverMoveTheBadge() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: world.conversation(type: .group, lastSeq: 0))
        func blocked(_ message: Message) -> Message {
            var message = message
            message.senderBlocked = true
            return message
        }
        var mention = world.message(1, from: world.third, cmid: "b1")
        mention.mentions = [world.me]
        _ = try await database.applyToListRow(blocked(mention), changeSeq: 1, viewer: world.me)
        _ = try await database.applyToListRow(world.message(2, cmid: "o2"), changeSeq: 2, viewer: world.me)
        var stored = try await row(database)
        #expect(stored.unreadCount == 1 && stored.mentionCount == 0 && stored.lastMessage?.clientMessageId == "o2")
        _ = try await database.applyToListRow(
            blocked(world.message(1, from: world.third, cmid: "b1", updatedSeq: 3, deleted: true)), changeSeq: 3, viewer: world.me)
        stored = try await row(database)
        #expect(stored.unreadCount == 1 && stored.mentionCount == 0, "its delete takes nothing back")
        try await database.apply([blocked(world.message(4, from: world.third, cmid: "b4"))])
        let cached = try await database.messages(in: world.conversationId, viewer: world.me)
        #expect(cached.first { $0.clientMessageId == "b4" }?.senderBlocked == true)
    }

    /// A message I had already read (read on another device, the view came first) that is then
    /// deleted must not take the badge below what is really unread.
    @Test func deletingAMessageAlreadyReadDoesNotLowerTheBadge() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: world.conversation(lastSeq: 0))
        for seq in Int64(1)...4 {
            _ = try await database.applyToListRow(world.message(seq, cmid: "o\(seq)"), changeSeq: seq, viewer: world.me)
        }
        #expect(try await row(database).unreadCount == 4)
        // Read up to 2 elsewhere: the server's view arrives.
        try await database.store(conversation: world.conversation(lastSeq: 4, unread: 2, readSeq: 2))
        _ = try await database.applyToListRow(world.message(1, cmid: "o1", updatedSeq: 5, deleted: true), changeSeq: 5, viewer: world.me)
        #expect(try await row(database).unreadCount == 2, "message 1 was read: its delete changes nothing")
        _ = try await database.applyToListRow(world.message(3, cmid: "o3", updatedSeq: 6, deleted: true), changeSeq: 6, viewer: world.me)
        #expect(try await row(database).unreadCount == 1)
    }

    /// A change past the row's next seq is not applied (the badge would miss what came between):
    /// the row says stale, and the server's view then puts it right.
    @Test func aMissedEventMakesTheRowStaleInsteadOfGuessing() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: world.conversation(lastSeq: 3, unread: 1, readSeq: 2))
        #expect(try await database.applyToListRow(world.message(5), changeSeq: 5, viewer: world.me) == .stale)
        var stored = try await row(database)
        #expect(stored.lastSeq == 3 && stored.unreadCount == 1)
        try await database.store(conversation: world.conversation(lastSeq: 5, unread: 3, readSeq: 2, lastMessage: world.message(5)))
        #expect(try await database.applyToListRow(world.message(5), changeSeq: 5, viewer: world.me) == .applied)
        stored = try await row(database)
        #expect(stored.lastSeq == 5 && stored.unreadCount == 3)
        // A conversation not in the list at all is stale too (read it from the server).
        #expect(try await database.applyToListRow(world.message(1, in: EntityID()), changeSeq: 1, viewer: world.me) == .stale)
    }

    /// The list row follows the newest message: a new one replaces it, an edit or delete of it
    /// updates it in place, a change of an older message leaves it.
    @Test func theLastMessageFollowsNewAndChangedMessages() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: world.conversation(lastSeq: 0))
        let first = world.message(1, text: "one")
        let second = world.message(2, text: "two")
        _ = try await database.applyToListRow(first, changeSeq: 1, viewer: world.me)
        _ = try await database.applyToListRow(second, changeSeq: 2, viewer: world.me)
        var editedFirst = first
        editedFirst.text = "one!"
        editedFirst.updatedSeq = 3
        _ = try await database.applyToListRow(editedFirst, changeSeq: 3, viewer: world.me)
        #expect(try await row(database).lastMessage?.text == "two")
        var deletedSecond = second
        deletedSecond.text = ""
        deletedSecond.updatedSeq = 4
        deletedSecond.deletedAt = world.start.addingTimeInterval(10)
        _ = try await database.applyToListRow(deletedSecond, changeSeq: 4, viewer: world.me)
        let stored = try await row(database)
        #expect(stored.lastMessage?.id == second.id && stored.lastMessage?.deletedAt != nil)
        #expect(ChatPresentation.preview(stored, me: world.me, names: { _ in "Ada" }) == "This message was deleted")
        // An edit does not move the activity time (edits do not reorder the list).
        #expect(stored.lastActivityAt == second.createdAt)
    }

    /// A large group's activity frame: the next seq is applied with its message; one already
    /// seen changes nothing; a jump (frames folded or lost) makes the row stale.
    @Test func activityFramesApplyOnlyTheNextSeq() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: world.conversation(type: .group, lastSeq: 10, unread: 0, readSeq: 10))
        func activity(_ seq: Int64) -> ConversationActivityEvent {
            let message = world.message(seq, cmid: "a\(seq)")
            return ConversationActivityEvent(conversationId: world.conversationId, lastSeq: seq, lastActivityAt: message.createdAt, lastMessage: message)
        }
        #expect(try await database.apply(activity: activity(11), viewer: world.me) == .applied)
        #expect(try await database.apply(activity: activity(11), viewer: world.me) == .applied)
        #expect(try await database.apply(activity: activity(9), viewer: world.me) == .applied)
        #expect(try await row(database).unreadCount == 1)
        #expect(try await database.apply(activity: activity(14), viewer: world.me) == .stale)
        #expect(try await row(database).lastSeq == 11)
        let unknown = ConversationActivityEvent(conversationId: EntityID(), lastSeq: 1, lastActivityAt: world.start, lastMessage: world.message(1))
        #expect(try await database.apply(activity: unknown, viewer: world.me) == .stale)
    }

    /// Seeded runs of sends by everyone (me, others, system lines), edits, deletes, reads on
    /// this and other devices, duplicated events and lost ones (answered with the server's
    /// view, as the client does): after every step the badge equals the brute-force count at
    /// the row's own seq and watermark, never drifting and never negative, and the row ends at
    /// the server's seq and watermark.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6, 7, 8])
    func theBadgeNeverDriftsFromTheServersCount(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: world.conversation(type: .group, lastSeq: 0))
        var history = SDKLocalDatabaseOrderTests.History()
        var serverRead: Int64 = 0
        var pending: [(Message, Int64)] = []
        var delivered: [(Message, Int64)] = []
        var staleRows = 0

        func serverView() -> Conversation {
            let now = Int64(history.changes.count)
            let state = history.state(at: now).values
            let last = state.max { $0.seq < $1.seq }
            return world.conversation(
                type: .group, lastSeq: now, unread: bruteUnread(state, readSeq: serverRead), readSeq: serverRead, lastMessage: last)
        }

        func check(_ label: String) async throws {
            let stored = try await row(database)
            let state = history.state(at: stored.lastSeq).values
            #expect(stored.unreadCount == bruteUnread(state, readSeq: stored.readSeq), "seed \(seed) \(label): at \(stored.lastSeq), read \(stored.readSeq)")
            #expect(stored.unreadCount >= 0)
            #expect(stored.lastMessage?.id == state.max { $0.seq < $1.seq }?.id, "seed \(seed) \(label): last message")
        }

        func deliver(_ event: (Message, Int64)) async throws {
            delivered.append(event)
            if try await database.applyToListRow(event.0, changeSeq: event.1, viewer: world.me) == .stale {
                // The client reads the conversation again; what is still on its way is then old news.
                staleRows += 1
                try await database.store(conversation: serverView())
            }
        }

        for step in 0..<250 {
            let now = Int64(history.changes.count)
            switch Int.random(in: 0..<20, using: &random) {
            case 0..<11:
                let k = now + 1
                let sender = [world.me, world.other, world.third].randomElement(using: &random)!
                let type: MessageType = Int.random(in: 0..<8, using: &random) == 0 ? .system : .text
                let message = world.message(k, from: sender, cmid: "k\(k)", type: type)
                history.changes.append(message)
                pending.append((message, k))
            case 11..<15:
                let k = now + 1
                let live = history.state(at: now).values.filter { $0.deletedAt == nil && $0.type != .system }.sorted { $0.seq < $1.seq }
                guard var version = live.randomElement(using: &random) else { continue }
                version.updatedSeq = k
                if Bool.random(using: &random) {
                    version.text = "edited \(k)"
                    version.editedAt = world.start.addingTimeInterval(Double(k))
                } else {
                    version.text = ""
                    version.deletedAt = world.start.addingTimeInterval(Double(k))
                }
                history.changes.append(version)
                pending.append((version, k))
            case 15, 16:
                // Read somewhere once this device has every event: here (the read's answer) or
                // on another device (the server's view).
                guard pending.isEmpty, now > serverRead, try await row(database).lastSeq == now else { continue }
                serverRead = Int64.random(in: serverRead...now, using: &random)
                if Bool.random(using: &random) {
                    let unread = bruteUnread(history.state(at: now).values, readSeq: serverRead)
                    try await database.apply(ownRead: ReadResponse(readSeq: serverRead, unreadCount: unread), in: world.conversationId, userId: world.me)
                } else {
                    try await database.store(conversation: serverView())
                }
            default:
                // An event delivered again.
                if let old = delivered.randomElement(using: &random) {
                    #expect(try await database.applyToListRow(old.0, changeSeq: old.1, viewer: world.me) == .applied, "seed \(seed): a duplicate")
                }
            }
            // Events go out in order; one in ten is lost.
            while !pending.isEmpty, Bool.random(using: &random) {
                let event = pending.removeFirst()
                if Int.random(in: 0..<10, using: &random) == 0 { continue }
                try await deliver(event)
            }
            try await check("step \(step)")
        }
        while !pending.isEmpty { try await deliver(pending.removeFirst()) }
        try await check("end of the stream")
        // The next sync reads the list: a row whose last event was lost catches up there.
        if try await row(database).lastSeq < Int64(history.changes.count) {
            try await database.store(conversation: serverView())
        }
        try await check("after the sync")
        let final = try await row(database)
        #expect(final.lastSeq == Int64(history.changes.count) && final.readSeq == serverRead, "seed \(seed)")
        #expect(final.unreadCount == bruteUnread(history.state(at: final.lastSeq).values, readSeq: serverRead))
        #expect(staleRows > 0, "seed \(seed): lost events were never noticed")
    }
}
