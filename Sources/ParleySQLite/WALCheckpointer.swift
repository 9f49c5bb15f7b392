import Foundation
import GRDB
import Synchronization
import ParleyStorage

/// Moves the write-ahead log back into the database file off the commit path.
///
/// SQLite's automatic checkpoint runs inside the commit that crosses its threshold: that send
/// (and every send queued behind it on the one writer) waited for the copy and its fsync, which
/// was the p99 of `parley bench latency` (4.4 ms against 1.4 ms without). Here the writer's
/// automatic checkpoint is pushed out to a safety net (``safetyNetPages``, for writes that do
/// not call ``noteWrite()``), and a separate connection runs a passive checkpoint shortly after
/// writes: passive never blocks the writer or the readers, it copies what no reader still needs.
final class WALCheckpointer: Sendable {
    /// The writer's own automatic checkpoint, kept as a bound on the log should this one fall
    /// behind (about 40 MB of 4 KiB pages).
    static let safetyNetPages = 10_000

    private let connection: DatabaseQueue
    private let delay: Duration
    private let state = Mutex<(scheduled: Bool, closed: Bool, runs: Int)>((false, false, 0))

    /// A checkpointer on its own connection to the database at `path`.
    ///
    /// `delay` is 100 ms: at 1,000 messages/s over 1,000 connections a checkpoint every 500 ms
    /// put the send's p99 at 13-15 ms (the copy and the database file's fsync beside the
    /// writer's WAL fsyncs on one disk); every 50-250 ms kept it at 5-8.5 ms (docs/benchmarks.md).
    init(path: String, delay: Duration = .milliseconds(100)) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(1)
        connection = try DatabaseQueue(path: path, configuration: configuration)
        self.delay = delay
    }

    /// Checkpoints completed so far (for tests and benchmarks).
    var runs: Int { state.withLock { $0.runs } }

    /// Something was committed: a checkpoint runs after `delay` (one for all the writes meanwhile).
    func noteWrite() {
        let start = state.withLock { state -> Bool in
            guard !state.scheduled, !state.closed else { return false }
            state.scheduled = true
            return true
        }
        guard start else { return }
        Task.detached { [self] in
            try? await Task.sleep(for: delay)
            await checkpoint()
        }
    }

    /// A passive checkpoint now, on the connection's own queue (not blocking a thread of the
    /// concurrency pool for the copy and its fsync).
    func checkpoint() async {
        state.withLock { $0.scheduled = false }
        // Passive: never waits for the writer or readers; what it cannot copy yet, the next run will.
        // Whether the checkpointer is closed is asked on the connection's queue, which `close()`
        // also goes through: asked before, a close could land between the question and the
        // checkpoint, and SQLite's checkpoint on a closed connection is a crash, not an error.
        let ran = (try? await connection.writeWithoutTransaction { [self] db -> Bool in
            guard !state.withLock({ $0.closed }), db.sqliteConnection != nil else { return false }
            try db.checkpoint(.passive)
            return true
        }) ?? true
        if ran { state.withLock { $0.runs += 1 } }
    }

    /// Stops scheduling and closes the connection.
    func close() throws {
        state.withLock { $0.closed = true }
        try connection.close()
    }
}
