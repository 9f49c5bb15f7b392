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
}

