import Foundation
import ParleyProtocol
import Synchronization

/// The answer to one queued job, once its transaction has committed.
package final class CommitTicket<Output: Sendable>: Sendable {
    private let state = Mutex<(result: Result<Output, any Error>?, waiters: [CheckedContinuation<Output, any Error>])>((nil, []))

    package func complete(_ result: Result<Output, any Error>) {
        let waiters = state.withLock { state in
            state.result = result
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    /// Waits for the job's result.
    package var value: Output {
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
package final class GroupCommit<Job: Sendable, Output: Sendable>: Sendable {
    /// Runs a batch in one transaction; returns one result per job, in order.
    package typealias Executor = @Sendable ([Job]) async -> [Result<Output, any Error>]

    /// Runs right after the commit of a job that succeeded, in commit order, before any
    /// caller is answered (fan-out in seq order hangs here).
    package typealias OnCommit = @Sendable (Output) -> Void

    private typealias Entry = (job: Job, ticket: CommitTicket<Output>, onCommit: OnCommit?, trace: WriteTrace?)

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
    /// Numbers the transactions, for the traces of the writes they carried.
    private let batchNumbers = Atomic<Int>(0)
    /// Told each batch's size and how long its transaction took (metrics).
    private let observer = HandlerSlot<@Sendable (Int, Duration) -> Void>()

    /// Calls `observer` after every batch with its size and its transaction's duration.
    package func observe(_ observer: @escaping @Sendable (Int, Duration) -> Void) {
        self.observer.set(observer)
    }

    /// `lanes` transactions may be committing at once: 1 for SQLite (one writer); more for
    /// PostgreSQL, which runs transactions in parallel and shares WAL flushes among them.
    package init(maxBatch: Int = 512, lanes: Int = 1, execute: @escaping Executor) {
        self.maxBatch = maxBatch
        laneCount = max(1, lanes)
        self.lanes = Mutex(Array(repeating: Lane(), count: max(1, lanes)))
        self.execute = execute
    }

    /// Transactions committed and jobs carried so far.
    package var batchStats: (batches: Int, jobs: Int) { counters.withLock { $0 } }

    /// Queues a job now (jobs with the same key commit in this order) and returns its ticket;
    /// `onCommit` runs once its transaction has committed, in commit order among the jobs of
    /// its lane. A `trace` is told the transaction the job rode in.
    package func enqueue(_ job: Job, key: Int = 0, trace: WriteTrace? = nil, onCommit: OnCommit? = nil) -> CommitTicket<Output> {
        let ticket = CommitTicket<Output>()
        let index = Int(UInt(bitPattern: key) % UInt(laneCount))
        let startCommitting = lanes.withLock { lanes in
            lanes[index].queue.append((job, ticket, onCommit, trace))
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
    package func submit(_ job: Job, key: Int = 0) async throws -> Output {
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
            // Wall-clock times only when a write of the batch is traced (spans carry them).
            let traced = batch.contains { $0.trace != nil }
            let startedAt = traced ? WriteTrace.wallClock() : 0
            let results = await execute(batch.map(\.job))
            observer.function?(batch.count, ContinuousClock.now - started)
            if traced {
                let carried = CommitBatch(
                    number: batchNumbers.add(1, ordering: .relaxed).newValue, size: batch.count,
                    startedAt: startedAt, committedAt: WriteTrace.wallClock())
                for item in batch { item.trace?.committed(in: carried) }
            }
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

/// The transaction a traced write committed in: how many writes it carried and when it ran
/// (nanoseconds since 1970, as spans take them).
public struct CommitBatch: Sendable, Equatable {
    /// The transaction's number among this store's group commits.
    public let number: Int
    /// How many writes it carried.
    public let size: Int
    /// When it began and when it committed.
    public let startedAt: UInt64, committedAt: UInt64
}

/// What a traced write went through: when its rule ran inside the transaction, and which
/// transaction committed it. Made only while writes are traced (``enabled``), so an untraced
/// write pays one relaxed load.
public final class WriteTrace: Sendable {
    private static let on = Atomic<Bool>(false)
    private let state = Mutex<(ran: (start: UInt64, end: UInt64)?, batch: CommitBatch?)>((nil, nil))

    /// Whether queued writes are traced (the server turns it on with its spans).
    public static var enabled: Bool {
        get { on.load(ordering: .relaxed) }
        set { on.store(newValue, ordering: .relaxed) }
    }

    /// A trace for a write queued now, or nil when writes are not traced.
    static func begin() -> WriteTrace? { enabled ? WriteTrace() : nil }

    /// When the write's rule ran inside its transaction (nanoseconds since 1970).
    public var ran: (start: UInt64, end: UInt64)? { state.withLock { $0.ran } }
    /// The transaction that committed it (nil until it has, or if it failed).
    public var batch: CommitBatch? { state.withLock { $0.batch } }

    /// Runs the write's rule, noting when it started and ended.
    func timing<T>(_ body: () async throws -> T) async rethrows -> T {
        let start = Self.wallClock()
        defer {
            let end = Self.wallClock()
            state.withLock { $0.ran = (start, end) }
        }
        return try await body()
    }

    func committed(in batch: CommitBatch) { state.withLock { $0.batch = batch } }

    /// Nanoseconds since 1970 (the time spans are stamped with).
    static func wallClock() -> UInt64 { UInt64(Date().timeIntervalSince1970 * 1_000_000_000) }
}

/// The stores' queued writes: a job on the group commit, answered as a typed pending write.
extension GroupCommit where Job == QueuedWrite, Output == any Sendable {
    package func enqueueWrite<T: Sendable>(
        in conversationId: EntityID, sending draft: MessageDraft?, key: Int, onCommit: @escaping @Sendable (T) -> Void,
        _ body: @escaping @Sendable (any StoreTransaction) async throws -> T
    ) -> PendingWrite<T> {
        let trace = WriteTrace.begin()
        let job = QueuedWrite(conversationId: conversationId, sending: draft) { tx in
            guard let trace else { return try await body(tx) }
            return try await trace.timing { try await body(tx) }
        }
        let ticket = enqueue(job, key: key, trace: trace) { output in
            if let output = output as? T { onCommit(output) }
        }
        return PendingWrite(trace: trace) {
            guard let output = try await ticket.value as? T else { throw ChatError(.internal, "A queued write answered the wrong type") }
            return output
        }
    }
}

/// An executor answered fewer results than jobs (a bug, reported rather than hung).
package struct GroupCommitError: Error {
    package init() {}
}

/// A store whose queued writes (sends, receipts) go through group commit.
public protocol GroupCommitting {
    /// Writes committed and the transactions that carried them.
    var writeBatchStats: (batches: Int, writes: Int) { get }
}

