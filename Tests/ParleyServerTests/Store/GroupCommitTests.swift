import Foundation
import NIOCore
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Synchronization
import Testing

/// Group commit on its own, with an executor the test holds: lanes keep their order, batches
/// form while a lane is busy, every caller gets its own answer after its batch, and
/// `onCommit` runs before any answer of its batch.
@Suite struct GroupCommitTests {
    /// An executor that records its batches and waits for the test to let each one commit.
    final class HeldExecutor: Sendable {
        let batches = Mutex<[[Int]]>([])
        private let gates = Mutex<[CheckedContinuation<Void, Never>]>([])

        func execute(_ jobs: [Int]) async -> [Result<Int, any Error>] {
            await withCheckedContinuation { continuation in
                batches.withLock { $0.append(jobs) }
                gates.withLock { $0.append(continuation) }
            }
            return jobs.map { $0 < 0 ? .failure(Refused(job: $0)) : .success($0 * 10) }
        }

        var waiting: Int { gates.withLock { $0.count } }

        /// Lets the oldest waiting batch commit.
        func commitOne() {
            let gate = gates.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            gate?.resume()
        }
    }

    struct Refused: Error { let job: Int }

    /// Closed until `open()`; then every waiter, and every later one, goes on.
    final class Gate: Sendable {
        private let state = Mutex<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

        func wait() async {
            await withCheckedContinuation { continuation in
                let open = state.withLock { state in
                    if !state.open { state.waiters.append(continuation) }
                    return state.open
                }
                if open { continuation.resume() }
            }
        }

        func open() {
            let waiters = state.withLock { state in
                state.open = true
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            waiters.forEach { $0.resume() }
        }
    }

    final class Log: Sendable {
        let entries = Mutex<[String]>([])
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    @Test func aBusyLaneGathersTheNextBatchAndAnswersEachJobAfterItsCommit() async throws {
        let executor = HeldExecutor()
        let commit = GroupCommit<Int, Int>(maxBatch: 3) { await executor.execute($0) }
        let log = Log()
        // The first job of an idle lane starts a transaction at once, alone.
        let first = commit.enqueue(1) { log.add("commit \($0)") }
        try await waitFor("the first batch") { executor.waiting == 1 }
        // Meanwhile five more arrive (one refused): they wait for the lane, then go three and two.
        let rest = [2, -3, 4, 5, 6].map { job in (job, commit.enqueue(job) { log.add("commit \($0)") }) }
        #expect(executor.batches.withLock { $0 } == [[1]])
        executor.commitOne()
        #expect(try await first.value == 10)
        try await waitFor("the second batch") { executor.waiting == 1 }
        #expect(executor.batches.withLock { $0 } == [[1], [2, -3, 4]], "at most maxBatch, in queued order")
        executor.commitOne()
        try await waitFor("the third batch") { executor.waiting == 1 }
        executor.commitOne()
        for (job, ticket) in rest {
            if job < 0 {
                await #expect(throws: Refused.self) { try await ticket.value }
            } else {
                #expect(try await ticket.value == job * 10)
            }
        }
        #expect(executor.batches.withLock { $0 } == [[1], [2, -3, 4], [5, 6]])
        #expect(log.all == ["commit 10", "commit 20", "commit 40", "commit 50", "commit 60"], "a refused job runs nothing at commit")
        #expect(commit.batchStats == (batches: 3, jobs: 6))
    }

    @Test func lanesCommitInParallelEachInItsOwnOrder() async throws {
        let executor = HeldExecutor()
        let commit = GroupCommit<Int, Int>(maxBatch: 64, lanes: 2) { await executor.execute($0) }
        // Keys 0 and 1 fall in different lanes: both start at once.
        let a = commit.enqueue(1, key: 0)
        let b = commit.enqueue(2, key: 1)
        try await waitFor("both lanes committing") { executor.waiting == 2 }
        let a2 = commit.enqueue(3, key: 0)
        let a3 = commit.enqueue(5, key: 2)  // lane 0 again
        executor.commitOne()
        executor.commitOne()
        let (first, second) = (try await a.value, try await b.value)
        #expect(first == 10 && second == 20)
        try await waitFor("lane 0's next batch") { executor.waiting == 1 }
        #expect(executor.batches.withLock { $0.last } == [3, 5], "lane 0 kept its order")
        executor.commitOne()
        let (third, fourth) = (try await a2.value, try await a3.value)
        #expect(third == 30 && fourth == 50)
    }

    @Test func anExecutorAnsweringTooFewResultsFailsTheRestInsteadOfHanging() async throws {
        // The first batch waits until all four are queued: the rest form a batch behind it
        // (or join it), so some batch holds more than one job.
        let gate = Gate()
        let held = GroupCommit<Int, Int>(maxBatch: 8) { jobs in
            await gate.wait()
            return Array(jobs.prefix(1).map { .success($0) })
        }
        let tickets = (0..<4).map { held.enqueue($0) }
        gate.open()
        var answered = 0, failed = 0
        for ticket in tickets {
            do { _ = try await ticket.value; answered += 1 } catch is GroupCommitError { failed += 1 }
        }
        #expect(answered + failed == 4 && answered >= 1 && failed >= 1, "each batch answers its first job, fails the rest")
    }
}

/// The heartbeat's judgement, on explicit times: silent only when nothing arrived since the
/// ping while the server was asking for bytes the whole time.
@Suite struct ConnectionLivenessTests {
    static func at(_ ms: Int64) -> NIODeadline { .uptimeNanoseconds(UInt64(1_000_000_000 + ms * 1_000_000)) }

    @Test func silenceCountsOnlyWhileTheServerReads() {
        let liveness = ConnectionLiveness(now: Self.at(0))
        liveness.wantsRead(at: Self.at(1))
        // Waiting since before the ping, nothing since: silent.
        #expect(liveness.isSilent(since: Self.at(100)))
        // Any bytes after the ping: alive, whatever they were.
        liveness.received(at: Self.at(150))
        #expect(!liveness.isSilent(since: Self.at(100)))
        // The server asked again only after the ping: the client cannot be blamed yet.
        liveness.wantsRead(at: Self.at(200))
        #expect(!liveness.isSilent(since: Self.at(180)))
        #expect(liveness.isSilent(since: Self.at(250)))
    }

    @Test func aPausedReaderIsNeverSilent() {
        let liveness = ConnectionLiveness(now: Self.at(0))
        liveness.wantsRead(at: Self.at(1))
        liveness.received(at: Self.at(2))
        // Bytes came and the server did not ask for more (its reader is paused): no verdict,
        // however long the pause.
        #expect(!liveness.isSilent(since: Self.at(10)))
        #expect(!liveness.isSilent(since: Self.at(60_000)))
        // Asking again starts the clock from then; repeated asks do not move it back or forth.
        liveness.wantsRead(at: Self.at(70_000))
        liveness.wantsRead(at: Self.at(80_000))
        #expect(!liveness.isSilent(since: Self.at(69_999)))
        #expect(liveness.isSilent(since: Self.at(75_000)))
    }
}
