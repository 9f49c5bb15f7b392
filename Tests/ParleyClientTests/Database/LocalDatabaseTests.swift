import Foundation
import GRDB
@testable import ParleyClient
import ParleyProtocol
import Testing

/// The merge rules, the outbox transitions and retention, on a real SQLite database.
@Suite struct LocalDatabaseTests {
    let me = EntityID()
    let other = EntityID()
    let conversationId = EntityID()
    let start = Date(millisecondsSince1970: 1_795_000_000_000)

    func conversation(lastSeq: Int64, unread: Int = 0, members: [Member]? = nil) -> Conversation {
        Conversation(
            id: conversationId, type: .direct, participantIds: [me, other], createdAt: start, lastActivityAt: start,
            lastSeq: lastSeq, unreadCount: unread, readSeq: 0,
            members: members ?? [Member(userId: me, readSeq: 0, deliveredSeq: 0), Member(userId: other, readSeq: 0, deliveredSeq: 0)])
    }

    func message(_ seq: Int64, from sender: EntityID? = nil, cmid: String? = nil, text: String = "t", updatedSeq: Int64? = nil) -> Message {
        Message(
            id: EntityID(), conversationId: conversationId, seq: seq, updatedSeq: updatedSeq ?? seq, senderId: sender ?? other,
            clientMessageId: cmid ?? "c\(seq)", type: .text, text: text, createdAt: start.addingTimeInterval(Double(seq)))
    }

    func tracked(_ database: LocalDatabase, lastSeq: Int64 = 0) async throws {
        try await database.applyInitialPage(MessagesPage(messages: [], hasMore: false), conversation: conversation(lastSeq: lastSeq))
    }

    @Test func temporaryMessageIsReplacedByItsStoredCopyExactlyOnce() async throws {
        let database = try LocalDatabase.inMemory()
        try await tracked(database)
        let pending = try await database.enqueue(
            SendMessageRequest(clientMessageId: "tmp-1", text: " hello "), in: conversationId, senderId: me, now: start)
        #expect(pending.delivery == .sending && pending.text == "hello" && pending.seq == nil)
        #expect(try await database.outboxCount() == 1)
        var shown = try await database.messages(in: conversationId, viewer: me)
        #expect(shown.map(\.id) == [pending.id])

        var stored = message(1, from: me, cmid: "tmp-1", text: "hello")
        stored.id = EntityID()
        // The reply and the event both arrive; the second is a no-op.
        try await database.apply([stored])
        #expect(try await database.applyLive(stored, changeSeq: 1) == .applied)
        shown = try await database.messages(in: conversationId, viewer: me)
        #expect(shown.count == 1 && shown[0].id == pending.id && shown[0].seq == 1 && shown[0].delivery == .sent)
        #expect(try await database.outboxCount() == 0)
        #expect(try await database.syncedSeq(conversationId) == 1)
    }

    @Test func newerUpdatesWinAndOlderOnesAreIgnored() async throws {
        let database = try LocalDatabase.inMemory()
        try await tracked(database, lastSeq: 0)
        let original = message(1, text: "first")
        var edited = original
        edited.text = "edited"
        edited.updatedSeq = 3
        try await database.apply([original, edited, original])
        #expect(try await database.messages(in: conversationId, viewer: me).map(\.text) == ["edited"])
    }

    @Test func liveEventsAfterAGapAreNotApplied() async throws {
        let database = try LocalDatabase.inMemory()
        try await tracked(database, lastSeq: 2)
        #expect(try await database.applyLive(message(3), changeSeq: 3) == .applied)
        #expect(try await database.applyLive(message(5), changeSeq: 5) == .gap)
        #expect(try await database.messages(in: conversationId, viewer: me).map(\.seq) == [3])
        #expect(try await database.syncedSeq(conversationId) == 3)
        let page = ChangesPage(messages: [message(4), message(5)], lastSeq: 5, hasMore: false)
        #expect(try await database.apply(changes: page, in: conversationId, since: 3) == 5)
        #expect(try await database.messages(in: conversationId, viewer: me).map(\.seq) == [3, 4, 5])
        let unknown = Message(
            id: EntityID(), conversationId: EntityID(), seq: 1, updatedSeq: 1, senderId: other, clientMessageId: "x",
            type: .text, text: "t", createdAt: start)
        #expect(try await database.applyLive(unknown, changeSeq: 1) == .untracked)
    }

    @Test func outboxIsFIFOPerConversationAndKeepsRejectedMessages() async throws {
        let database = try LocalDatabase.inMemory()
        try await tracked(database)
        let otherConversation = EntityID()
        for index in 1...3 {
            _ = try await database.enqueue(.init(clientMessageId: "a\(index)", text: "a"), in: conversationId, senderId: me, now: start)
        }
        _ = try await database.enqueue(.init(clientMessageId: "b1", text: "b"), in: otherConversation, senderId: me, now: start)
        var due = try await database.dueOutboxEntries(now: start)
        #expect(due.map(\.request.clientMessageId) == ["a1", "b1"])

        try await database.outboxAttemptFailed(clientMessageId: "a1", retryAt: start.addingTimeInterval(10))
        due = try await database.dueOutboxEntries(now: start)
        #expect(due.map(\.request.clientMessageId) == ["b1"], "a2 waits behind a1")
        #expect(try await database.nextOutboxAttempt()! <= start, "b1 is due now")
        due = try await database.dueOutboxEntries(now: start.addingTimeInterval(11))
        #expect(due.first?.request.clientMessageId == "a1" && due.first?.attempts == 1)

        try await database.outboxRejected(clientMessageId: "a1", reason: "text too long")
        due = try await database.dueOutboxEntries(now: start)
        #expect(due.map(\.request.clientMessageId) == ["a2", "b1"], "a refused message does not block the queue")
        let failed = try await database.message(senderId: me, clientMessageId: "a1", viewer: me)
        #expect(failed?.delivery == .failed(reason: "text too long"))

        #expect(try await database.resend(clientMessageId: "a1"))
        let shown = try await database.messages(in: conversationId, viewer: me).map(\.clientMessageId)
        #expect(shown == ["a2", "a3", "a1"], "a resent message goes to the end")
        #expect(try await database.discard(clientMessageId: "a3"))
        #expect(try await database.outboxCount() == 3)
    }

    @Test func statusFollowsTheOtherMembersWatermarks() async throws {
        let database = try LocalDatabase.inMemory()
        try await tracked(database)
        try await database.apply([message(1, from: me, cmid: "m1"), message(2, from: me, cmid: "m2"), message(3)])
        try await database.apply(receipt: ReceiptEvent(conversationId: conversationId, userId: other, readSeq: 0, deliveredSeq: 2))
        try await database.apply(receipt: ReceiptEvent(conversationId: conversationId, userId: other, readSeq: 1, deliveredSeq: 1))
        let shown = try await database.messages(in: conversationId, viewer: me)
        #expect(shown.map(\.delivery) == [.read, .delivered, .received])
    }

    @Test func retentionKeepsTheNewestAndNeverDropsUnsent() async throws {
        let database = try LocalDatabase.inMemory(retention: .init(maxMessagesPerConversation: 5, maxAge: .seconds(3600)))
        try await tracked(database)
        try await database.apply((1...8).map { message($0) })
        _ = try await database.enqueue(.init(clientMessageId: "unsent", text: "x"), in: conversationId, senderId: me, now: start)
        try await database.trim(now: start.addingTimeInterval(100))
        #expect(try await database.messages(in: conversationId, viewer: me, limit: 100).map { $0.seq ?? 0 } == [4, 5, 6, 7, 8, 0])
        #expect(try await database.hasOlder(conversationId))
        try await database.trim(now: start.addingTimeInterval(7200))
        #expect(try await database.messages(in: conversationId, viewer: me).map(\.clientMessageId) == ["unsent"])
    }

    @Test func aCacheVersionChangeRebuildsTheCacheAndKeepsTheOutbox() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("parley-client-\(UUID()).sqlite").path
        do {
            let database = try LocalDatabase.open(path: path)
            try await tracked(database)
            try await database.apply([message(1)])
            _ = try await database.enqueue(.init(clientMessageId: "keep-me", text: "queued"), in: conversationId, senderId: me, now: start)
            // An older app version wrote a different cache shape.
            try await database.writer.write { db in
                try db.execute(sql: "UPDATE cache_meta SET value = '0' WHERE key = 'cache_version'")
            }
        }
        let reopened = try LocalDatabase.open(path: path)
        #expect(try await reopened.conversations().isEmpty)
        #expect(try await reopened.outboxCount() == 1)
        let shown = try await reopened.messages(in: conversationId, viewer: me)
        #expect(shown.map(\.clientMessageId) == ["keep-me"] && shown[0].delivery == .sending)
    }

    @Test func removedConversationsLeaveTheCache() async throws {
        let database = try LocalDatabase.inMemory()
        try await tracked(database)
        try await database.apply([message(1)])
        try await database.store(conversations: [], replacingAll: true)
        #expect(try await database.conversations().isEmpty)
        #expect(try await database.messages(in: conversationId, viewer: me).isEmpty)
    }

    @Test func olderConversationViewsDoNotOverwriteNewerOnes() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(conversation: conversation(lastSeq: 5, unread: 3))
        try await database.store(conversation: conversation(lastSeq: 4, unread: 2))
        #expect(try await database.conversation(conversationId)?.unreadCount == 3)
        var read = conversation(lastSeq: 5, unread: 0)
        read.readSeq = 5
        try await database.store(conversation: read)
        #expect(try await database.conversation(conversationId)?.unreadCount == 0)
        // A view from before that read, arriving late, does not bring the badge back.
        try await database.store(conversation: conversation(lastSeq: 5, unread: 3))
        #expect(try await database.conversation(conversationId)?.unreadCount == 0)
    }
}
