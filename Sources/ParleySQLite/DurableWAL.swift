import GRDB

/// A GRDB pool whose writer fsyncs the log at every commit (`synchronous = FULL`).
///
/// GRDB's `DatabasePool` puts its writer in WAL mode after `prepareDatabase` has run, and sets
/// `synchronous = NORMAL` as it does: a FULL set in `prepareDatabase` is undone, and commits
/// reach the disk only at the next checkpoint (a power loss could take acknowledged writes).
/// FULL is therefore set on the writer once the pool is open, and read back.
public enum DurableWAL {
    /// SQLite's number for `synchronous = FULL`.
    static let full = 2

    /// Opens the pool at `path` and makes its writer's commits durable.
    public static func pool(path: String, configuration: Configuration) throws -> DatabasePool {
        let pool = try DatabasePool(path: path, configuration: configuration)
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            guard try Int.fetchOne(db, sql: "PRAGMA synchronous") == full else {
                throw DatabaseError(message: "could not make commits durable (PRAGMA synchronous = FULL) at path: \(path)")
            }
        }
        return pool
    }
}
