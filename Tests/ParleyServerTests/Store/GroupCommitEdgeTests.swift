import Foundation
import ParleyProtocol
@testable import ParleyStorage
import ParleyTestSupport
import Synchronization
import Testing

/// Edges of the group commit and of the list cursor: lane keys from any hash (negative ones
/// included) keep a key's jobs in one ordered lane, every caller waiting on a job is answered
/// once, the observer sees every batch, and a malformed cursor from a client is refused rather
/// than misread.
@Suite struct GroupCommitEdgeTests {
    typealias Gate = GroupCommitTests.Gate
    typealias Log = GroupCommitTests.Log

    @Test func extremeKeysPickALaneAndKeepTheirOrder() async throws {
        let log = Log()
        let commit = GroupCommit<Int, Int>(maxBatch: 2, lanes: 3) { jobs in
            jobs.map { .success($0) }
        }
        // Conversation ids hash to any Int: the lowest and negative ones must not trap.
        let keys = [Int.min, -1, 0, Int.max, -7]
        var tickets: [(Int, CommitTicket<Int>)] = []
        for round in 0..<4 {
            for (lane, key) in keys.enumerated() {
                let job = lane * 100 + round
                tickets.append((job, commit.enqueue(job, key: key) { log.add("\(key):\($0)") }))
            }
        }
        for (job, ticket) in tickets { #expect(try await ticket.value == job) }
        // Each key's commits ran in the order its jobs were queued.
        for (lane, key) in keys.enumerated() {
            let mine = log.all.filter { $0.hasPrefix("\(key):") }
            #expect(mine == (0..<4).map { "\(key):\(lane * 100 + $0)" })
        }
        #expect(commit.batchStats.jobs == 20)
    }

    @Test func everyWaiterOfAJobIsAnsweredOnceEvenAfterTheCommit() async throws {
        let gate = Gate()
        let commit = GroupCommit<Int, String>(maxBatch: 8) { jobs in
            await gate.wait()
            return jobs.map { $0 == 2 ? .failure(GroupCommitTests.Refused(job: $0)) : .success("job \($0)") }
        }
        let ticket = commit.enqueue(1)
        let refused = commit.enqueue(2)
        async let early = withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<5 { group.addTask { try await ticket.value } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        gate.open()
        #expect(try await early == Array(repeating: "job 1", count: 5))
        // A waiter that comes after the commit is answered at once, with the same answer.
        #expect(try await ticket.value == "job 1")
        for _ in 0..<2 {
            await #expect(throws: GroupCommitTests.Refused.self) { try await refused.value }
        }
    }

    @Test func theObserverSeesEveryBatchAndTheirSizesAddUp() async throws {
        let sizes = Mutex<[Int]>([])
        let gate = Gate()
        let commit = GroupCommit<Int, Int>(maxBatch: 4) { jobs in
            await gate.wait()
            return jobs.map { .success($0) }
        }
        commit.observe { size, duration in
            #expect(duration >= .zero)
            sizes.withLock { $0.append(size) }
        }
        let tickets = (0..<11).map { commit.enqueue($0) }
        gate.open()
        for (job, ticket) in tickets.enumerated() { #expect(try await ticket.value == job) }
        let seen = sizes.withLock { $0 }
        #expect(seen.reduce(0, +) == 11)
        #expect(seen.allSatisfy { (1...4).contains($0) }, "no batch above maxBatch: \(seen)")
        #expect(seen.count == commit.batchStats.batches)
        // A replaced observer is the only one told from then on.
        let replaced = Mutex<Int>(0)
        commit.observe { _, _ in replaced.withLock { $0 += 1 } }
        _ = try await commit.submit(99)
        #expect(replaced.withLock { $0 } == 1)
        #expect(sizes.withLock { $0.count } == seen.count)
    }

    @Test func aBatchOfOneCommitsEachJobAlone() async throws {
        let batches = Mutex<[[Int]]>([])
        let commit = GroupCommit<Int, Int>(maxBatch: 1) { jobs in
            batches.withLock { $0.append(jobs) }
            return jobs.map { .success($0 + 1) }
        }
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            for job in 0..<10 { group.addTask { try await commit.submit(job) } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(results.sorted() == Array(1...10))
        #expect(batches.withLock { $0 }.allSatisfy { $0.count == 1 })
        #expect(commit.batchStats == (batches: 10, jobs: 10))
    }

    // MARK: List cursors

    @Test func aCursorRoundTripsItsWireForm() throws {
        let id = EntityID()
        for ms: Int64 in [0, 1_760_000_000_250, -5, Int64.max] {
            let cursor = ListCursor(lastActivityMs: ms, id: id)
            #expect(cursor.wire == "\(ms).\(id)")
            #expect(ListCursor(cursor.wire) == cursor)
        }
    }

    @Test func aMalformedCursorIsRefused() {
        let id = EntityID()
        let malformed = [
            "", ".", "12", "12.", ".\(id)", "abc.\(id)", "1.5.\(id)", "12.not-an-id", "12.\(id).extra", " 12.\(id)",
            "99999999999999999999.\(id)", "12,\(id)", "12.\(id.description.dropLast())",
        ]
        for text in malformed { #expect(ListCursor(text) == nil, "\(text)") }
        // Upper-case hex is still the same id (clients may echo it so).
        #expect(ListCursor("12.\(id.description.uppercased())")?.id == id)
    }
}
