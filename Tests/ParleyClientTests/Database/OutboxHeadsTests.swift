import Foundation
import GRDB
import GRDBSQLite
@testable import ParleyClient
import ParleyProtocol
import Testing

/// The outbox's heads (each conversation's oldest queued message, which the SDK sends next):
/// right whatever is queued or failed, and read by index seeks, so a client with thousands of
/// messages queued does not scan its whole outbox for every send.
@Suite struct OutboxHeadsTests {
    let me = EntityID()
    let start = Date(millisecondsSince1970: 1_795_000_000_000)

    @Test func eachConversationsOldestQueuedEntryInQueueOrder() async throws {
        let database = try LocalDatabase.inMemory()
        let conversations = (0..<4).map { _ in EntityID() }
        // Interleaved: c0 c1 c2 c0 c1 c2 ...; the fourth conversation queues nothing.
        for n in 0..<30 {
            let conversation = conversations[n % 3]
            _ = try await database.enqueue(
                SendMessageRequest(clientMessageId: "m\(n)", text: "\(n)"), in: conversation, senderId: me, now: start.addingTimeInterval(Double(n)))
        }
        #expect(try await database.outboxHeads().map(\.request.clientMessageId) == ["m0", "m1", "m2"])
        // A refused head stays in the outbox as failed; the next queued one is the head.
        try await database.outboxRejected(clientMessageId: "m1", reason: "too long")
        #expect(try await database.outboxHeads().map(\.request.clientMessageId) == ["m0", "m2", "m4"])
        let heads = try await database.outboxHeads()
        #expect(heads.map(\.conversationId) == [conversations[0], conversations[2], conversations[1]])
    }

    /// SQLite's virtual-machine steps for reading the heads, counted (not timed): they barely
    /// grow from 100 queued messages to 3,000 (the query this replaced stepped through every
    /// queued message, and for each through its conversation's).
    @Test func readingTheHeadsCostsTheSameHoweverLongTheOutbox() async throws {
        func steps(queued count: Int) async throws -> Int {
            let database = try LocalDatabase.inMemory()
            let conversations = (0..<3).map { _ in EntityID() }
            for n in 0..<count {
                _ = try await database.enqueue(
                    SendMessageRequest(clientMessageId: "m\(n)", text: "\(n)"), in: conversations[n % 3], senderId: me, now: start)
            }
            return try await database.writer.read { db in
                let counter = StepCounter()
                let context = Unmanaged.passUnretained(counter).toOpaque()
                sqlite3_progress_handler(db.sqliteConnection, 1, { context in
                    Unmanaged<StepCounter>.fromOpaque(context!).takeUnretainedValue().steps += 1
                    return 0
                }, context)
                defer { sqlite3_progress_handler(db.sqliteConnection, 0, nil, nil) }
                let heads = try Row.fetchAll(db, sql: LocalDatabase.outboxHeadsSQL)
                return heads.count == 3 ? counter.steps : -1
            }
        }
        let small = try await steps(queued: 100)
        let large = try await steps(queued: 3000)
        #expect(small > 0 && large > 0, "three heads each time")
        #expect(large < small * 2, "\(small) steps with 100 queued, \(large) with 3,000")
    }
}

/// Counts SQLite's progress callbacks (one per virtual-machine step).
private final class StepCounter: @unchecked Sendable {
    var steps = 0
}
