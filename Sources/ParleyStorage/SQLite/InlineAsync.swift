import Foundation
import Synchronization

/// Runs async code to completion on the calling thread.
///
/// The chat rules are written once, as `async` functions over a ``StoreTransaction`` (PostgreSQL's
/// primitives are round trips). SQLite's transactions are synchronous closures on GRDB's
/// writer thread, and a GRDB `Database` may only be used there, inside the closure. So the
/// SQLite store runs a rule as a task whose executor preference is an executor draining its
/// jobs right here: every job of the task (the SQLite primitives are synchronous, so the rule
/// never really waits) runs on the writer thread, inside the transaction, one after the other.
/// Should the task await something elsewhere (an actor), the drain blocks until its job comes
/// back. The thread is the store's writer, which blocks for a transaction anyway.
enum InlineAsync {
    /// Runs `body` on this thread and returns its result (or throws its error).
    static func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let executor = DrainingExecutor()
        let outcome = Outcome<T>()
        Task(executorPreference: executor) {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            outcome.state.withLock { $0 = result }
            executor.finish()
        }
        executor.drain()
        guard let result = outcome.state.withLock({ $0 }) else {
            fatalError("InlineAsync: the task ended without a result")
        }
        return try result.get()
    }
}

/// Where the task leaves its result for the draining thread.
private final class Outcome<T: Sendable>: Sendable {
    let state = Mutex<Result<T, any Error>?>(nil)
}

/// A task executor whose jobs run on the thread that calls ``drain()``, until ``finish()``.
private final class DrainingExecutor: TaskExecutor, @unchecked Sendable {
    // SAFETY: `jobs` and `finished` are only touched under `lock`; `ready` is a semaphore.
    private let lock = NSLock()
    private var jobs: [UnownedJob] = []
    private var finished = false
    private let ready = DispatchSemaphore(value: 0)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        lock.lock()
        jobs.append(job)
        lock.unlock()
        ready.signal()
    }

    /// Called by the task's last job: the drain returns once that job is done.
    func finish() {
        lock.lock()
        finished = true
        lock.unlock()
    }

    /// Runs jobs as they come until the task has finished.
    func drain() {
        let me = asUnownedTaskExecutor()
        while true {
            ready.wait()
            lock.lock()
            let job = jobs.isEmpty ? nil : jobs.removeFirst()
            lock.unlock()
            job?.runSynchronously(on: me)
            lock.lock()
            let done = finished && jobs.isEmpty
            lock.unlock()
            if done { return }
        }
    }
}
