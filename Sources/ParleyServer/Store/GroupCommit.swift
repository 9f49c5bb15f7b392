import Synchronization

/// Coalesces concurrent writes into one transaction (group commit).
///
/// The first job to arrive while a committer is free starts a commit at once, so a lone send
/// waits for nothing; jobs that arrive while every committer is busy wait and then go
/// together in the next transaction. Each job still gets its own result: the executor runs each in
/// a savepoint, so one job's error does not undo the others. Every caller is answered only
/// after the transaction that holds its write has committed.
final class GroupCommit<Job: Sendable, Output: Sendable>: Sendable {
    /// Runs a batch in one transaction; returns one result per job, in order.
    typealias Executor = @Sendable ([Job]) async -> [Result<Output, any Error>]

    private struct State {
        var queue: [(job: Job, continuation: CheckedContinuation<Output, any Error>)] = []
        var committing = 0
    }

    private let state = Mutex(State())
    private let execute: Executor
    private let maxBatch: Int
    private let maxConcurrent: Int
    /// How many transactions ran and how many jobs they carried (for benchmarks).
    private let counters = Mutex<(batches: Int, jobs: Int)>((0, 0))

    /// `maxConcurrent` transactions may be committing at once: 1 for SQLite (one writer); more
    /// for PostgreSQL, which runs transactions in parallel and shares WAL flushes among them.
    init(maxBatch: Int = 512, maxConcurrent: Int = 1, execute: @escaping Executor) {
        self.maxBatch = maxBatch
        self.maxConcurrent = max(1, maxConcurrent)
        self.execute = execute
    }

    /// Transactions committed and jobs carried so far.
    var batchStats: (batches: Int, jobs: Int) { counters.withLock { $0 } }

    /// Queues a job and returns its result once its transaction has committed.
    func submit(_ job: Job) async throws -> Output {
        try await withCheckedThrowingContinuation { continuation in
            let startCommitting = state.withLock { state in
                state.queue.append((job, continuation))
                guard state.committing < maxConcurrent else { return false }
                state.committing += 1
                return true
            }
            if startCommitting {
                Task { await self.drain() }
            }
        }
    }

    private func drain() async {
        while true {
            let batch = state.withLock { state -> [(job: Job, continuation: CheckedContinuation<Output, any Error>)] in
                guard !state.queue.isEmpty else {
                    state.committing -= 1
                    return []
                }
                let batch = Array(state.queue.prefix(maxBatch))
                state.queue.removeFirst(batch.count)
                return batch
            }
            guard !batch.isEmpty else { return }
            let results = await execute(batch.map(\.job))
            counters.withLock {
                $0.batches += 1
                $0.jobs += batch.count
            }
            for (index, item) in batch.enumerated() {
                item.continuation.resume(with: index < results.count ? results[index] : .failure(GroupCommitError()))
            }
        }
    }
}

/// An executor answered fewer results than jobs (a bug, reported rather than hung).
struct GroupCommitError: Error {}

/// A store whose sends go through group commit.
public protocol GroupCommitting {
    /// Sends committed and the transactions that carried them.
    var sendBatchStats: (batches: Int, sends: Int) { get }
}

extension SQLiteStore: GroupCommitting {}
extension PostgresStore: GroupCommitting {}
