import Foundation
import Synchronization
import ParleyStorage

/// Runs a rule to completion on the calling thread, inside the caller's synchronous work,
/// without blocking that thread on anything.
///
/// The chat rules are written once, as `async` functions over a ``StoreTransaction`` (PostgreSQL's
/// primitives are round trips). SQLite's transactions are synchronous closures on GRDB's
/// writer thread, and a GRDB `Database` may only be used there, inside the closure. SQLite's
/// primitives are synchronous, so a rule over them never really suspends: the store starts the
/// rule as a task whose executor preference is an ``InlineExecutor``, and runs that task's
/// jobs right here, inside the transaction, one after the other, until none is left.
///
/// A rule over a transaction awaits only the transaction (the contract of
/// ``StoreTransaction``): when the jobs run out before the rule has finished, it awaited
/// something elsewhere (an actor, a sleep), which would use the `Database` outside its
/// closure. That is a programming error, stopped here rather than waited for: nothing ever
/// blocks the writer's thread (no semaphore, no condition), and `InlineExecutorTests` shows
/// both sides.
enum InlineAsync {
    /// Runs `body` on this thread and returns its result (or throws its error).
    static func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let executor = InlineExecutor()
        let outcome = Outcome<T>()
        let task = Task(executorPreference: executor) {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            outcome.state.withLock { $0 = result }
        }
        executor.runQueuedJobs()
        guard let result = outcome.state.withLock({ $0 }) else {
            task.cancel()
            preconditionFailure("A rule inside a store transaction awaited work outside the transaction")
        }
        return try result.get()
    }
}

/// Where the task leaves its result for the thread that ran it.
private final class Outcome<T: Sendable>: Sendable {
    let state = Mutex<Result<T, any Error>?>(nil)
}

/// A task executor whose jobs run on the thread that calls ``runQueuedJobs()``.
final class InlineExecutor: TaskExecutor, Sendable {
    private let jobs = Mutex<[UnownedJob]>([])

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
    }

    /// Runs every job queued so far, and each one those jobs queue, until none is left.
    func runQueuedJobs() {
        let me = asUnownedTaskExecutor()
        while let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
            job.runSynchronously(on: me)
        }
    }
}
