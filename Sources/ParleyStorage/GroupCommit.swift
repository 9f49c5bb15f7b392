import Synchronization

/// The answer to one queued job, once its transaction has committed.
final class CommitTicket<Output: Sendable>: Sendable {
    private let state = Mutex<(result: Result<Output, any Error>?, waiters: [CheckedContinuation<Output, any Error>])>((nil, []))

    func complete(_ result: Result<Output, any Error>) {
        let waiters = state.withLock { state in
            state.result = result
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    /// Waits for the job's result.
    var value: Output {
        get async throws {
            try await withCheckedThrowingContinuation { continuation in
                let ready = state.withLock { state -> Result<Output, any Error>? in
                    if let result = state.result { return result }
                    state.waiters.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        }
    }
}

/// Coalesces concurrent writes into one transaction (group commit).
///
/// Jobs are queued in lanes (by a key, e.g. the conversation): each lane has one committer, so
/// jobs of one key commit in the order they were enqueued, while lanes commit in parallel. The
/// first job of an idle lane starts a commit at once, so a lone send waits for nothing; jobs
/// that arrive while the lane commits go together in its next transaction. Each job still gets
/// its own result: the executor runs each in a savepoint, so one job's error does not undo the
/// others. Every caller is answered only after the transaction that holds its write committed.
final class GroupCommit<Job: Sendable, Output: Sendable>: Sendable {
    /// Runs a batch in one transaction; returns one result per job, in order.
    typealias Executor = @Sendable ([Job]) async -> [Result<Output, any Error>]

    /// Runs right after the commit of a job that succeeded, in commit order, before any
    /// caller is answered (fan-out in seq order hangs here).
    typealias OnCommit = @Sendable (Output) -> Void

    private typealias Entry = (job: Job, ticket: CommitTicket<Output>, onCommit: OnCommit?)

    private struct Lane {
        var queue: [Entry] = []
        var committing = false
    }

    private let lanes: Mutex<[Lane]>
    private let laneCount: Int
    private let execute: Executor
    private let maxBatch: Int
    /// How many transactions ran and how many jobs they carried (for benchmarks).
    private let counters = Mutex<(batches: Int, jobs: Int)>((0, 0))
    /// Told each batch's size and how long its transaction took (metrics).
    private let observer = HandlerSlot<@Sendable (Int, Duration) -> Void>()

    /// Calls `observer` after every batch with its size and its transaction's duration.
    func observe(_ observer: @escaping @Sendable (Int, Duration) -> Void) {
        self.observer.set(observer)
    }

    /// `lanes` transactions may be committing at once: 1 for SQLite (one writer); more for
    /// PostgreSQL, which runs transactions in parallel and shares WAL flushes among them.
    init(maxBatch: Int = 512, lanes: Int = 1, execute: @escaping Executor) {
        self.maxBatch = maxBatch
        laneCount = max(1, lanes)
        self.lanes = Mutex(Array(repeating: Lane(), count: max(1, lanes)))
        self.execute = execute
    }

    /// Transactions committed and jobs carried so far.
    var batchStats: (batches: Int, jobs: Int) { counters.withLock { $0 } }

    /// Queues a job now (jobs with the same key commit in this order) and returns its ticket;
    /// `onCommit` runs once its transaction has committed, in commit order among the jobs of
    /// its lane.
    func enqueue(_ job: Job, key: Int = 0, onCommit: OnCommit? = nil) -> CommitTicket<Output> {
        let ticket = CommitTicket<Output>()
        let index = Int(UInt(bitPattern: key) % UInt(laneCount))
        let startCommitting = lanes.withLock { lanes in
            lanes[index].queue.append((job, ticket, onCommit))
            guard !lanes[index].committing else { return false }
            lanes[index].committing = true
            return true
        }
        if startCommitting {
            Task { await self.drain(index) }
        }
        return ticket
    }

    /// Queues a job and returns its result once its transaction has committed.
    func submit(_ job: Job, key: Int = 0) async throws -> Output {
        try await enqueue(job, key: key).value
    }

    private func drain(_ index: Int) async {
        while true {
            let batch = lanes.withLock { lanes -> [Entry] in
                guard !lanes[index].queue.isEmpty else {
                    lanes[index].committing = false
                    return []
                }
                let batch = Array(lanes[index].queue.prefix(maxBatch))
                lanes[index].queue.removeFirst(batch.count)
                return batch
            }
            guard !batch.isEmpty else { return }
            let started = ContinuousClock.now
            let results = await execute(batch.map(\.job))
            observer.function?(batch.count, ContinuousClock.now - started)
            counters.withLock {
                $0.batches += 1
                $0.jobs += batch.count
            }
            let outcomes = batch.indices.map { index in index < results.count ? results[index] : .failure(GroupCommitError()) }
            // Committed: announce in commit order from this one task, then answer the callers.
            for (item, outcome) in zip(batch, outcomes) {
                if case .success(let output) = outcome { item.onCommit?(output) }
            }
            for (item, outcome) in zip(batch, outcomes) { item.ticket.complete(outcome) }
        }
    }
}

/// An executor answered fewer results than jobs (a bug, reported rather than hung).
struct GroupCommitError: Error {}

/// A store whose queued writes (sends, receipts) go through group commit.
public protocol GroupCommitting {
    /// Writes committed and the transactions that carried them.
    var writeBatchStats: (batches: Int, writes: Int) { get }
}

extension SQLiteStore: GroupCommitting {}
extension PostgresStore: GroupCommitting {}
