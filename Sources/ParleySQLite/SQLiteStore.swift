import Foundation
import GRDB
import ParleyProtocol
import ParleyStorage

/// The embedded default store: one SQLite file in WAL mode, through GRDB.
///
/// SQLite has one writer at a time, so every write transaction sees the latest counter: the
/// seq taken by `UPDATE ... RETURNING` inside the insert's transaction is gapless by
/// construction, and unique indexes back every invariant.
public struct SQLiteStore: ParleyStore {
    let writer: any DatabaseWriter
    /// Concurrent sends and receipts share one transaction (one fsync) instead of one each.
    private let writes: GroupCommit<QueuedWrite, any Sendable>
    /// Checkpoints the log off the commit path (files only).
    let checkpointer: WALCheckpointer?

    /// Opens (creating if needed) the database file at `path` and migrates it; a write waits
    /// up to `busyTimeout` for another connection's lock.
    public init(path: String, busyTimeout: Duration = .seconds(10)) throws {
        var configuration = Configuration()
        configuration.busyMode = .timeout(busyTimeout.timeInterval)
        configuration.foreignKeysEnabled = true
        configuration.prepareDatabase { db in
            // Checkpoints run beside the writer (WALCheckpointer); this is only its safety net.
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(WALCheckpointer.safetyNetPages)")
            // What retention and erasure delete is overwritten, not left in free space.
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        // WAL with synchronous=FULL: a commit is on disk before the send is acknowledged.
        let pool = try DurableWAL.pool(path: path, configuration: configuration)
        try Self.migrate(pool)
        self.init(writer: pool, checkpointer: try WALCheckpointer(path: path))
    }

    /// Migrates, tolerating another store (or process) migrating the same file at the same time.
    ///
    /// GRDB reads which migrations are applied, then runs each in its own transaction: of two
    /// migrators starting together, the slower one fails a migration the other has just
    /// committed ("table already exists"). Its failed migration rolled back whole, so reading
    /// again and going on is safe; a real error fails every attempt and is thrown.
    private static func migrate(_ pool: DatabasePool) throws {
        var attempt = 0
        while true {
            do {
                try SQLiteSchema.migrator.migrate(pool)
                return
            } catch is DatabaseError where attempt < 10 {
                attempt += 1
                Thread.sleep(forTimeInterval: 0.02 * Double(attempt))
            }
        }
    }

    /// A store in memory, for tests that do not care about files.
    public static func inMemory() throws -> SQLiteStore {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = true
        let queue = try DatabaseQueue(configuration: configuration)
        try SQLiteSchema.migrator.migrate(queue)
        return SQLiteStore(writer: queue, checkpointer: nil)
    }

    private init(writer: any DatabaseWriter, checkpointer: WALCheckpointer?) {
        self.writer = writer
        self.checkpointer = checkpointer
        writes = GroupCommit { jobs in
            defer { checkpointer?.noteWrite() }
            return await Self.commitBatch(jobs, writer: writer)
        }
    }

    /// Runs a group commit's batch in one transaction, its rules on the writer's thread (see
    /// ``InlineAsync``).
    ///
    /// A rule refuses (throws a `ChatError`: not a participant, a bad reply or watermark)
    /// before it writes anything, so a refused job needs no savepoint: its error is its answer
    /// and the batch goes on. That is checked, not trusted: a job refused after it changed a
    /// row (SQLite's count of changed rows moved) aborts the transaction like any failure.
    /// Anything else (a write that fails, which the checks make exceptional) aborts it too,
    /// and the batch runs again with a savepoint per job, so one failure cannot undo the
    /// others, and a refused job's writes roll back with its savepoint.
    static func commitBatch(_ jobs: [QueuedWrite], writer: any DatabaseWriter) async -> [Result<any Sendable, any Error>] {
        do {
            return try await writer.write { db in
                let tx = SQLiteTransaction(db: db)
                return try InlineAsync.run {
                    var results: [Result<any Sendable, any Error>] = []
                    results.reserveCapacity(jobs.count)
                    for job in jobs {
                        let changed = tx.rowsChanged
                        do {
                            results.append(.success(try await job.run(tx)))
                        } catch let refused as ChatError {
                            guard tx.rowsChanged == changed else { throw RefusedAfterWriting(refusal: refused) }
                            results.append(.failure(refused))
                        }
                    }
                    try tx.indexNewMessages()
                    return results
                }
            }
        } catch {
            do {
                return try await writer.write { db in
                    let tx = SQLiteTransaction(db: db)
                    var results: [Result<any Sendable, any Error>] = []
                    for job in jobs {
                        do {
                            var output: (any Sendable)?
                            try db.inSavepoint {
                                let value: any Sendable = try InlineAsync.run { try await job.run(tx) }
                                output = value
                                return .commit
                            }
                            results.append(.success(output!))
                        } catch {
                            // SQLite rolled the whole transaction back (a full disk in a statement
                            // without a statement journal, such as a plain insert): nothing of the
                            // batch stands, so every job fails with this error.
                            guard db.isInsideTransaction else { throw error }
                            results.append(.failure(error))
                        }
                    }
                    try tx.indexNewMessages()
                    return results
                }
            } catch {
                // The transaction itself failed (disk full, I/O error): nothing was written.
                return jobs.map { _ in .failure(error) }
            }
        }
    }

    /// Writes committed and the transactions that carried them (group commit's effect).
    public var writeBatchStats: (batches: Int, writes: Int) {
        let stats = writes.batchStats
        return (stats.batches, stats.jobs)
    }

    /// Runs `body` in one write transaction on the writer's thread (see ``InlineAsync``).
    public func writing<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) async throws -> T) async throws -> T {
        defer { checkpointer?.noteWrite() }
        return try await writer.write { db in
            let tx = SQLiteTransaction(db: db)
            let result = try InlineAsync.run { try await body(tx) }
            try tx.indexNewMessages()
            return result
        }
    }

    /// Runs `body` in one read transaction (a WAL snapshot) on a reader's thread.
    public func reading<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) async throws -> T) async throws -> T {
        try await writer.read { db in
            let tx = SQLiteTransaction(db: db)
            return try InlineAsync.run { try await body(tx) }
        }
    }

    /// Queues the write on the group commit (one lane: SQLite has one writer), so queued
    /// writes commit in order; `onCommit` runs once their transaction has committed.
    public func enqueueWrite<T: Sendable>(
        in conversationId: EntityID, sending draft: MessageDraft?, onCommit: @escaping @Sendable (T) -> Void,
        _ body: @escaping @Sendable (any StoreTransaction) async throws -> T
    ) -> PendingWrite<T> {
        writes.enqueueWrite(in: conversationId, sending: draft, key: 0, onCommit: onCommit, body)
    }

    /// Closes the checkpointer, folds the WAL back into the database file (truncating it),
    /// then closes the pool (file stores).
    public func close() async throws {
        try checkpointer?.close()
        // Folds the WAL back into the database file, so a stopped server leaves one tidy file.
        // Another process's store on the same file may be checkpointing right now, and SQLite
        // answers that at once with SQLITE_BUSY (no busy wait): a few tries, then the file is
        // left as it is (tidiness only; every commit is already durable in the WAL).
        for attempt in 1...20 {
            do {
                // A store closed before (twice-called close) has no connection, and SQLite's
                // checkpoint on none is a crash, not an error.
                try await writer.writeWithoutTransaction { db in
                    if db.sqliteConnection != nil { _ = try db.checkpoint(.truncate) }
                }
                break
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY || error.resultCode == .SQLITE_LOCKED {
                if attempt == 20 { break }
                try? await Task.sleep(for: .milliseconds(50))
            }
        }
        if let pool = writer as? DatabasePool { try pool.close() }
    }

    // MARK: Users

    /// An active user found by organization name (case-insensitive) and exact email.
    public func credentials(organization: String, email: String) async throws -> (user: User, passwordHash: String)? {
        try await writer.read { db in
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT u.* FROM users u JOIN organizations o ON o.id = u.organization_id
                    WHERE o.name_key = ? AND u.email = ? AND u.deactivated_at IS NULL
                    """,
                arguments: [organization.lowercased(), email])
            return try row.map { (try SQLiteRows.user($0), $0["password_hash"]) }
        }
    }

    /// The user by id; nil for a deactivated user too.
    public func user(id: EntityID) async throws -> User? {
        try await writer.read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM users WHERE id = ? AND deactivated_at IS NULL"), arguments: [id.description])
                .map(SQLiteRows.user)
        }
    }

    /// A `LIKE` on display name or email (wildcards in `query` escaped) over active users, by
    /// display name (ASCII case folded), then email.
    public func users(organizationId: EntityID, matching query: String?, limit: Int) async throws -> [User] {
        try await writer.read { db in
            var sql = "SELECT * FROM users WHERE organization_id = ? AND deactivated_at IS NULL"
            var arguments: StatementArguments = [organizationId.description]
            if let query, !query.isEmpty {
                let pattern = "%" + query.replacing("\\", with: "\\\\").replacing("%", with: "\\%")
                    .replacing("_", with: "\\_") + "%"
                sql += " AND (display_name LIKE ? ESCAPE '\\' OR email LIKE ? ESCAPE '\\')"
                arguments += [pattern, pattern]
            }
            sql += " ORDER BY display_name COLLATE NOCASE, email LIMIT ?"
            arguments += [limit]
            return try Row.fetchAll(db, sql: sql, arguments: arguments).map(SQLiteRows.user)
        }
    }

    /// Sets the user's `last_seen_at` in its own write transaction.
    public func setLastSeen(userId: EntityID, at date: Date) async throws {
        try await writer.write { db in
            try db.execute(
                sql: "UPDATE users SET last_seen_at = ? WHERE id = ?",
                arguments: [date.millisecondsSince1970, userId.description])
        }
    }

    // MARK: Messages

    /// Tells `observer` each batch's size and transaction time (see ``writeBatchStats``).
    public func observeSendBatches(_ observer: @escaping @Sendable (Int, Duration) -> Void) { writes.observe(observer) }
}

extension SQLiteStore: GroupCommitting {}
