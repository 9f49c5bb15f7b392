import Dispatch
import GRDB

/// Another writer holding a SQLite file's write lock (`BEGIN IMMEDIATE`), on a thread of its own
/// (not the tests' pool), until the test lets go: the server's writes and probes wait on it.
final class HeldWriteLock: Sendable {
    private let release = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    /// Takes the lock on the database file at `path`; returns once it is held.
    static func take(_ path: String) async throws -> HeldWriteLock {
        let lock = HeldWriteLock()
        let blocker = try DatabaseQueue(path: path)
        let locked = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            try? blocker.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                locked.signal()
                lock.release.wait()
                try db.execute(sql: "COMMIT")
            }
            lock.released.signal()
        }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { locked.wait(); continuation.resume() }
        }
        return lock
    }

    /// Lets go of the lock; returns once it is released.
    func letGo() async {
        release.signal()
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { self.released.wait(); continuation.resume() }
        }
    }
}
