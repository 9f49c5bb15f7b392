import Foundation
import Synchronization
import Logging
import NIOSSL
import ParleyProtocol
import PostgresNIO
import ParleyStorage

/// The store on PostgreSQL, for several server processes sharing one database.
///
/// It answers exactly like ``SQLiteStore``. Where SQLite has one writer at a time, here every
/// transaction that changes a conversation first locks that conversation's row (`FOR UPDATE`,
/// or the `UPDATE ... RETURNING last_seq` that takes the next seq): writers of one
/// conversation run one after the other, on any process, while other conversations proceed in
/// parallel. That keeps the per-conversation seq gapless. Unique indexes back the other
/// invariants, and a retry racing its original (same `(senderId, clientMessageId)`) is settled
/// by `INSERT ... ON CONFLICT DO NOTHING` with a rollback, so it neither stores twice nor burns a seq.
///
/// The store owns its connection pool (a `PostgresClient`) and the task running it; call
/// ``close()`` once when done.
public final class PostgresStore: ParleyStore {
    package let client: PostgresClient
    package let logger: Logger
    private let runner: Task<Void, Never>
    /// Concurrent sends and receipts share one transaction (one commit) instead of one each.
    let writes: GroupCommit<QueuedWrite, any Sendable>
    /// Write transactions whose connection closed under them, given up on (see ``StrandedWrites``).
    let stranded = StrandedWrites()

    /// A store on a pool with this configuration; it connects lazily and does not migrate
    /// (use ``connect(url:logger:startTimeout:)``, or call ``migrate()`` before use).
    public init(configuration: PostgresClient.Configuration, logger: Logger) {
        let client = PostgresClient(
            configuration: configuration, backgroundLogger: QuietedLogMessages.quieting([QuietedLogMessages.leaseBeforeRun], in: logger))
        self.client = client
        self.logger = logger
        runner = Task { await client.run() }
        let stranded = stranded
        writes = GroupCommit(maxBatch: 64, lanes: Self.concurrentSendTransactions) { jobs in
            await Self.writeBatch(jobs, client: client, stranded: stranded, logger: logger)
        }
    }

    /// Send transactions in flight at once (one lane each, conversations spread over the lanes
    /// by id; each carries whatever its lane queued meanwhile).
    static let concurrentSendTransactions = 8

    /// Writes committed and the transactions that carried them (group commit's effect).
    public var writeBatchStats: (batches: Int, writes: Int) {
        let stats = writes.batchStats
        return (stats.batches, stats.jobs)
    }

    /// Connects to the database at `url` (see ``configuration(url:)``) and brings its schema up
    /// to date before returning, so a server using it never serves on an old schema.
    ///
    /// The pool retries a refused connection forever; at start that would hang silently, so
    /// without an answer within `startTimeout` this gives up with a ``ServerStartError``.
    public static func connect(
        url: String, logger: Logger = Logger(label: "parley.postgres"), startTimeout: Duration = .seconds(30)
    ) async throws -> PostgresStore {
        let store = PostgresStore(configuration: try configuration(url: url), logger: logger)
        // Whichever comes first, the migration's end or the timeout, answers; the other is not
        // waited for (a pool retrying a refused connection can take its time to wind down).
        let first = FirstOutcome<Void>()
        do {
            try await withCheckedThrowingContinuation { continuation in
                first.wait(continuation)
                Task {
                    do {
                        _ = try await store.migrate()
                        first.finish(.success(()))
                    } catch { first.finish(.failure(error)) }
                }
                Task {
                    try? await Task.sleep(for: startTimeout)
                    first.finish(.failure(ServerStartError(
                        "No usable answer from PostgreSQL at \(redacted(url)) within \(startTimeout) (see the log for each attempt)")))
                }
            }
            return store
        } catch {
            // The pool stops in the background; a migration still waiting then fails and ends.
            Task { try? await store.close() }
            throw error
        }
    }

    /// The URL without its password, for messages and logs.
    public static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return "the database URL" }
        if components.password != nil { components.password = "***" }
        return components.string ?? "the database URL"
    }

    /// Applies the migrations the database lacks, in one transaction under an advisory lock so
    /// servers starting together on one database do not race; returns the versions applied.
    @discardableResult
    public func migrate() async throws -> [Int32] {
        try await client.withConnection { connection in
            try await PostgresSchema.migrate(connection, logger: logger)
        }
    }

    /// Stops the pool: cancels the task running it and waits until it has ended.
    public func close() async throws {
        runner.cancel()
        await runner.value
    }

    /// The pool configuration for a URL `postgres://user[:password]@host[:port]/database`
    /// (or `postgresql://`); user and password may be percent-encoded.
    ///
    /// The user defaults to `postgres`, the port to 5432 and the database to the server's
    /// default (the user's name). TLS follows the `sslmode` query item: `disable`, `prefer`
    /// (use TLS when the server offers it, verifying its certificate) or `require`
    /// (`verify-ca`/`verify-full` mean `require`). Without it, TLS is disabled for a loopback
    /// host (`localhost`, `127.x.x.x`, `::1`) and preferred otherwise.
    public static func configuration(url: String) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "postgres" || scheme == "postgresql"
        else { throw ServerStartError("A database URL looks like postgres://user[:password]@host[:port]/database") }
        guard let host = components.host, !host.isEmpty else {
            throw ServerStartError("The database URL names no host")
        }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let sslMode = components.queryItems?.first { $0.name == "sslmode" }?.value?.lowercased()
        let loopback = host == "localhost" || host.hasPrefix("127.") || host == "::1" || host == "[::1]"
        let tls: PostgresClient.Configuration.TLS
        switch sslMode {
        case "disable": tls = .disable
        case "require", "verify-ca", "verify-full": tls = .require(.makeClientConfiguration())
        case "prefer", "allow": tls = .prefer(.makeClientConfiguration())
        case nil: tls = loopback ? .disable : .prefer(.makeClientConfiguration())
        case let other?: throw ServerStartError("Unknown sslmode \(other) (use disable, prefer or require)")
        }
        var configuration = PostgresClient.Configuration(
            host: host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port: components.port ?? 5432,
            username: components.user.flatMap { $0.isEmpty ? nil : $0 } ?? "postgres",
            password: components.password, database: database.isEmpty ? nil : database, tls: tls)
        configuration.options.maximumConnections = 20
        // A transaction the server abandoned (StrandedWrites gave up on it: its connection
        // went silent) ends on PostgreSQL's side too, releasing its conversations' locks.
        configuration.options.additionalStartupParameters = [("idle_in_transaction_session_timeout", "10s")]
        return configuration
    }

    /// A write transaction on one leased connection (BEGIN ... COMMIT, rolled back on error):
    /// each statement is one round trip, so bodies keep statements few.
    func write<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await client.withConnection { connection in
            try await connection.inTransaction(logger: logger, body)
        }
    }

    /// A read of several statements that must see one snapshot (as SQLite's read transactions do).
    func read<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await client.withConnection { connection in
            try await connection.inTransaction("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", logger: logger, body)
        }
    }

    /// One statement on any pooled connection.
    func single<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await client.withConnection { connection in try await body(connection) }
    }

    // MARK: Users

    static let emailTaken = ChatError(.conflict, "A user with this email already exists in this organization")

    /// One statement: an active user by organization name (case-insensitive) and exact email.
    public func credentials(organization: String, email: String) async throws -> (user: User, passwordHash: String)? {
        let logger = self.logger
        let found: (User, String)? = try await single { c in
            guard let row = try await c.first(
                """
                SELECT u.password_hash, \(unescaped: PostgresRows.userColumns(of: "u"))
                FROM users u JOIN organizations o ON o.id = u.organization_id
                WHERE o.name_key = \(organization.lowercased()) AND u.email = \(email) AND u.deactivated_at IS NULL
                """, logger)
            else { return nil }
            return (try PostgresRows.user(row, skipping: 1), try row.makeRandomAccess()[0].decode(String.self))
        }
        return found.map { (user: $0.0, passwordHash: $0.1) }
    }

    /// The user by id, in one statement; nil for a deactivated user too.
    public func user(id: EntityID) async throws -> User? {
        let logger = self.logger
        return try await single { c in
            try await c.first(
                "SELECT \(unescaped: PostgresRows.userColumns) FROM users WHERE id = \(id.uuid) AND deactivated_at IS NULL", logger)
                .map(PostgresRows.user)
        }
    }

    /// Active users whose display name or email contains `query` (ASCII case folded, as
    /// SQLite's `LIKE`), by display name then email.
    public func users(organizationId: EntityID, matching query: String?, limit: Int) async throws -> [User] {
        let logger = self.logger
        // SQLite's LIKE and NOCASE fold ASCII letters only, and compare bytes: lower() under the
        // "C" collation does the same.
        let pattern = query.flatMap { $0.isEmpty ? nil : $0 }.map {
            "%" + $0.replacing("\\", with: "\\\\").replacing("%", with: "\\%").replacing("_", with: "\\_") + "%"
        }
        return try await single { c in
            try await c.all(
                """
                SELECT \(unescaped: PostgresRows.userColumns) FROM users
                WHERE organization_id = \(organizationId.uuid) AND deactivated_at IS NULL
                AND (\(pattern)::text IS NULL
                     OR lower(display_name COLLATE "C") LIKE lower(\(pattern) COLLATE "C") ESCAPE '\\'
                     OR lower(email COLLATE "C") LIKE lower(\(pattern) COLLATE "C") ESCAPE '\\')
                ORDER BY lower(display_name COLLATE "C"), email COLLATE "C"
                LIMIT \(limit)
                """, logger
            ).map(PostgresRows.user)
        }
    }

    /// Sets the user's `last_seen_at` in one statement.
    public func setLastSeen(userId: EntityID, at date: Date) async throws {
        let logger = self.logger
        try await single { c in
            try await c.run("UPDATE users SET last_seen_at = \(date.millisecondsSince1970) WHERE id = \(userId.uuid)", logger)
        }
    }
}

extension PostgresStore: GroupCommitting {}
