import Foundation
import Synchronization
import Logging
import NIOSSL
import ParleyProtocol
import PostgresNIO
import ParleyStorage

/// Transactions for the chat rules, group commit (batches of sends and receipts in one
/// transaction each, conversations locked in one statement, a failing write rerun with
/// savepoints).
extension PostgresStore {
    // MARK: Transactions and group commit

    /// Tells `observer` each group commit's size and transaction time (see ``writeBatchStats``).
    public func observeSendBatches(_ observer: @escaping @Sendable (Int, Duration) -> Void) { writes.observe(observer) }

    /// Runs `body` in one transaction on a pooled connection.
    public func writing<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) async throws -> T) async throws -> T {
        let logger = self.logger
        return try await write { c in try await body(PostgresTransaction(c, logger: logger)) }
    }

    /// Runs `body` in one read-only, repeatable-read transaction (one snapshot).
    public func reading<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) async throws -> T) async throws -> T {
        let logger = self.logger
        return try await read { c in try await body(PostgresTransaction(c, logger: logger)) }
    }

    /// Queues the write in its conversation's lane (see ``writeBatch(_:client:logger:)``).
    public func enqueueWrite<T: Sendable>(
        in conversationId: EntityID, sending draft: MessageDraft?, onCommit: @escaping @Sendable (T) -> Void,
        _ body: @escaping @Sendable (any StoreTransaction) async throws -> T
    ) -> PendingWrite<T> {
        writes.enqueueWrite(in: conversationId, sending: draft, key: conversationId.hashValue, onCommit: onCommit, body)
    }

    /// Writes of a group commit in one transaction. Conversations are locked in id order
    /// before any write, so two nodes' batches can never wait on each other in a cycle. The
    /// batch's plain sends (see ``PlainSends/drafts(of:in:)``) are stored by one statement
    /// first, so a batch of 64 sends is a handful of round trips, not 64; their rules run as
    /// usual on what it found.
    ///
    /// A refused write (a rule's `ChatError`) is refused before it writes anything, so it needs
    /// no savepoint: its error is its answer and the batch goes on (a savepoint each would cost
    /// two more round trips per send). That is checked, not trusted: a job refused after a
    /// statement that may write (``WriteTally``) aborts the transaction like any failure.
    /// Anything else that fails (a retry that raced its original, a database error) aborts it
    /// too, and the batch runs again with a savepoint per write, so one failure cannot undo the
    /// others, and a refused job's writes roll back with its savepoint.
    static func writeBatch(
        _ jobs: [QueuedWrite], client: PostgresClient, stranded: StrandedWrites, logger: Logger
    ) async -> [Result<any Sendable, any Error>] {
        let order = jobs.indices.sorted {
            (jobs[$0].conversationId.uuid.uuidString, $0) < (jobs[$1].conversationId.uuid.uuidString, $1)
        }
        do {
            return try await client.withConnection { c in
                try await stranded.run(on: c) {
                    try await c.inTransaction(logger: logger) { c -> [Result<any Sendable, any Error>] in
                        var results = [Result<any Sendable, any Error>](repeating: .failure(GroupCommitError()), count: jobs.count)
                        let locked = try await lockAll(jobs, on: c, logger: logger)
                        // Plain sends in one statement: each rule then finds its draft's outcome.
                        let plain = PlainSends.drafts(of: jobs, in: order)
                        let prefetched = plain.count > 1 ? try await PostgresRows.insertPlainSends(c, plain, logger) : [:]
                        let tx = PostgresTransaction(c, logger: logger, locked: locked, prefetched: prefetched)
                        // One tally for the batch, set once: each job's share is the count's move.
                        let tally = WriteTally()
                        return try await WriteTally.$current.withValue(tally) {
                            for index in order {
                                let written = tally.writes
                                do {
                                    results[index] = .success(try await jobs[index].run(tx))
                                } catch let refused as ChatError where jobs.count > 1 {
                                    guard tally.writes == written else { throw RefusedAfterWriting(refusal: refused) }
                                    results[index] = .failure(refused)
                                }
                            }
                            return results
                        }
                    }
                }
            }
        } catch where jobs.count > 1 {
            return await writeWithSavepoints(jobs, order: order, client: client, stranded: stranded, logger: logger)
        } catch {
            // The transaction itself failed: nothing of the batch was written.
            return jobs.map { _ in .failure(error) }
        }
    }

    /// The slow path of a batch whose transaction failed: each write in a savepoint (a failed
    /// one rolls back alone, its seq included).
    private static func writeWithSavepoints(
        _ jobs: [QueuedWrite], order: [Int], client: PostgresClient, stranded: StrandedWrites, logger: Logger
    ) async -> [Result<any Sendable, any Error>] {
        do {
            return try await client.withConnection { c in
                try await stranded.run(on: c) {
                    try await c.inTransaction(logger: logger) { c -> [Result<any Sendable, any Error>] in
                        var results = [Result<any Sendable, any Error>](repeating: .failure(GroupCommitError()), count: jobs.count)
                        let tx = PostgresTransaction(c, logger: logger, locked: try await lockAll(jobs, on: c, logger: logger))
                        for index in order {
                            try await c.run("SAVEPOINT write", logger)
                            do {
                                results[index] = .success(try await jobs[index].run(tx))
                                try await c.run("RELEASE SAVEPOINT write", logger)
                            } catch {
                                try await c.run("ROLLBACK TO SAVEPOINT write", logger)
                                results[index] = .failure(error)
                            }
                        }
                        return results
                    }
                }
            }
        } catch {
            return jobs.map { _ in .failure(error) }
        }
    }

    /// Locks every conversation of a batch, before any of its writes (and outside their
    /// savepoints, so a rolled-back write does not release its conversation's lock).
    private static func lockAll(_ jobs: [QueuedWrite], on c: PostgresConnection, logger: Logger) async throws -> Set<UUID> {
        try await PostgresRows.lockConversations(c, Array(Set(jobs.map(\.conversationId.uuid))), logger)
    }
}

/// Statements that may have written, counted while a job of a group commit runs, so a job
/// refused after writing is caught (see ``PostgresStore/writeBatch(_:client:stranded:logger:)``).
/// A statement counts unless it starts with `SELECT` (reads and row locks); prepared
/// statements (the sends) always count.
final class WriteTally: Sendable {
    @TaskLocal static var current: WriteTally?
    private let count = Atomic(0)

    var writes: Int { count.load(ordering: .relaxed) }

    func note(_ query: PostgresQuery) {
        let start = query.sql.utf8.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x09 || $0 == 0x0D }
        if !start.starts(with: "SELECT".utf8), !start.starts(with: "select".utf8) { noteWrite() }
    }

    func noteWrite() { count.add(1, ordering: .relaxed) }
}
