import Foundation
import Synchronization
import Logging
import NIOSSL
import ParleyProtocol
import PostgresNIO

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
    let client: PostgresClient
    let logger: Logger
    private let runner: Task<Void, Never>
    /// Concurrent sends share one transaction (one commit) instead of one each.
    private let sends: GroupCommit<MessageDraft, SendResult>

    /// A store on a pool with this configuration; it connects lazily and does not migrate
    /// (use ``connect(url:logger:startTimeout:)``, or call ``migrate()`` before use).
    public init(configuration: PostgresClient.Configuration, logger: Logger) {
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        self.client = client
        self.logger = logger
        runner = Task { await client.run() }
        sends = GroupCommit(maxBatch: 64, lanes: Self.concurrentSendTransactions) { drafts in
            await Self.sendBatch(drafts, client: client, logger: logger)
        }
    }

    /// Send transactions in flight at once (one lane each, conversations spread over the lanes
    /// by id; each carries whatever its lane queued meanwhile).
    static let concurrentSendTransactions = 8

    /// Sends committed and the transactions that carried them (group commit's effect).
    public var sendBatchStats: (batches: Int, sends: Int) {
        let stats = sends.batchStats
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
        let first = FirstOutcome()
        let outcome: Result<Void, any Error>? = await withCheckedContinuation { continuation in
            first.set(continuation)
            Task {
                do {
                    try await store.migrate()
                    first.resume(.success(()))
                } catch {
                    first.resume(.failure(error))
                }
            }
            Task {
                try? await Task.sleep(for: startTimeout)
                first.resume(nil)
            }
        }
        switch outcome {
        case .success?:
            return store
        case .failure(let error)?:
            Task { try? await store.close() }
            throw error
        case nil:
            // The pool stops in the background; the waiting migration then fails and ends.
            Task { try? await store.close() }
            throw ServerStartError(
                "No usable answer from PostgreSQL at \(redacted(url)) within \(startTimeout) (see the log for each attempt)")
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

    static let emailTaken = APIError(.conflict, "A user with this email already exists in this organization")

    public func credentials(organization: String, email: String) async throws -> (user: User, passwordHash: String)? {
        let logger = self.logger
        let found: (User, String)? = try await single { c in
            guard let row = try await c.first(
                """
                SELECT u.id, u.organization_id, u.email, u.display_name, u.last_seen_at, u.role, u.password_hash
                FROM users u JOIN organizations o ON o.id = u.organization_id
                WHERE o.name_key = \(organization.lowercased()) AND u.email = \(email) AND u.deactivated_at IS NULL
                """, logger)
            else { return nil }
            let (id, org, email, name, lastSeen, role, hash) = try row.decode((UUID, UUID, String, String, Int64?, String, String).self)
            return (
                User(id: EntityID(id), organizationId: EntityID(org), email: email, displayName: name,
                     lastSeenAt: lastSeen.map(Date.init(millisecondsSince1970:)), role: UserRole(rawValue: role)),
                hash)
        }
        return found.map { (user: $0.0, passwordHash: $0.1) }
    }

    public func user(id: EntityID) async throws -> User? {
        let logger = self.logger
        return try await single { c in
            try await c.first(
                "SELECT \(unescaped: PostgresRows.userColumns) FROM users WHERE id = \(id.uuid) AND deactivated_at IS NULL", logger)
                .map(PostgresRows.user)
        }
    }

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

    public func setLastSeen(userId: EntityID, at date: Date) async throws {
        let logger = self.logger
        try await single { c in
            try await c.run("UPDATE users SET last_seen_at = \(date.millisecondsSince1970) WHERE id = \(userId.uuid)", logger)
        }
    }

    // MARK: Messages

    /// Thrown inside a send's transaction when the insert met an existing `(senderId,
    /// clientMessageId)`: the transaction rolls back (returning the seq it took) and the send
    /// answers with the original.
    struct RetryRace: Error {}

    public func send(_ draft: MessageDraft) async throws -> SendResult {
        try await enqueueSend(draft).result()
    }

    public func observeSendBatches(_ observer: @escaping @Sendable (Int, Duration) -> Void) { sends.observe(observer) }

    public func enqueueSend(_ draft: MessageDraft, onCommit: @escaping @Sendable (SendResult) -> Void) -> PendingSend {
        let ticket = sends.enqueue(draft, key: draft.conversationId.hashValue, onCommit: onCommit)
        return PendingSend { [self] in
            do {
                return try await ticket.value
            } catch is RetryRace {
                return try await original(of: draft)
            }
        }
    }

    /// The original of a retry that raced it (sent to another conversation at the same moment).
    private func original(of draft: MessageDraft) async throws -> SendResult {
        let logger = self.logger
        return try await read { c in
            guard let existing = try await c.first(
                """
                \(unescaped: PostgresRows.messageSelect)
                WHERE m.sender_id = \(draft.senderId.uuid) AND m.client_message_id = \(draft.clientMessageId)
                """, logger
            ).map(PostgresRows.message) else { throw APIError(.internal, "A clientMessageId conflict without its message") }
            guard existing.conversationId == draft.conversationId else {
                throw APIError(.conflict, "clientMessageId was already used in another conversation")
            }
            return SendResult(
                message: existing, created: false,
                participantIds: try await PostgresRows.participantIds(c, draft.conversationId.uuid, logger))
        }
    }

    /// Sends of a group commit in one transaction. Conversations are locked in id order, so two
    /// nodes' batches can never wait on each other in a cycle.
    ///
    /// A refused send (not a participant, a retry, a bad reply or forward) is refused before it
    /// writes anything, so it needs no savepoint: its error is its answer and the batch goes on
    /// (a savepoint each would cost two more round trips per send). Anything else that fails
    /// (a retry that raced its original, a database error) aborts the transaction, and the
    /// batch runs again with a savepoint per send, so one failure cannot undo the others.
    static func sendBatch(_ drafts: [MessageDraft], client: PostgresClient, logger: Logger) async -> [Result<SendResult, any Error>] {
        let order = drafts.indices.sorted {
            (drafts[$0].conversationId.uuid.uuidString, $0) < (drafts[$1].conversationId.uuid.uuidString, $1)
        }
        do {
            return try await client.withConnection { c in
                try await c.inTransaction(logger: logger) { c -> [Result<SendResult, any Error>] in
                    var results = [Result<SendResult, any Error>](repeating: .failure(GroupCommitError()), count: drafts.count)
                    let locked = try await lockAll(drafts, on: c, logger: logger)
                    for index in order {
                        do {
                            results[index] = .success(try await sendInTransaction(drafts[index], locked: locked, on: c, logger: logger))
                        } catch let refused as APIError where drafts.count > 1 {
                            results[index] = .failure(refused)
                        }
                    }
                    return results
                }
            }
        } catch where drafts.count > 1 {
            return await sendWithSavepoints(drafts, order: order, client: client, logger: logger)
        } catch {
            // The transaction itself failed: nothing of the batch was written.
            return drafts.map { _ in .failure(error) }
        }
    }

    /// The slow path of a batch whose transaction failed: each send in a savepoint (a failed
    /// one rolls back alone, its seq included).
    private static func sendWithSavepoints(
        _ drafts: [MessageDraft], order: [Int], client: PostgresClient, logger: Logger
    ) async -> [Result<SendResult, any Error>] {
        do {
            return try await client.withConnection { c in
                try await c.inTransaction(logger: logger) { c -> [Result<SendResult, any Error>] in
                    var results = [Result<SendResult, any Error>](repeating: .failure(GroupCommitError()), count: drafts.count)
                    let locked = try await lockAll(drafts, on: c, logger: logger)
                    for index in order {
                        try await c.run("SAVEPOINT send", logger)
                        do {
                            results[index] = .success(try await sendInTransaction(drafts[index], locked: locked, on: c, logger: logger))
                            try await c.run("RELEASE SAVEPOINT send", logger)
                        } catch {
                            try await c.run("ROLLBACK TO SAVEPOINT send", logger)
                            results[index] = .failure(error)
                        }
                    }
                    return results
                }
            }
        } catch {
            return drafts.map { _ in .failure(error) }
        }
    }

    /// Locks every conversation of a batch, before any of its sends (and outside their
    /// savepoints, so a rolled-back send does not release its conversation's lock).
    private static func lockAll(_ drafts: [MessageDraft], on c: PostgresConnection, logger: Logger) async throws -> Set<UUID> {
        try await PostgresRows.lockConversations(c, Array(Set(drafts.map(\.conversationId.uuid))), logger)
    }

    /// One send inside a transaction that holds its conversation's lock (`locked` are the
    /// batch's existing conversations): check, insert with the next seq. Every `APIError` it
    /// throws is thrown before it wrote anything (see ``sendBatch``).
    private static func sendInTransaction(
        _ draft: MessageDraft, locked: Set<UUID>, on c: PostgresConnection, logger: Logger
    ) async throws -> SendResult {
        let conversationId = draft.conversationId.uuid
        // The row lock came first: after it, any earlier send to this conversation has
        // committed, so the check below sees a retry's original.
        guard locked.contains(conversationId) else { throw APIError.notFound("Conversation") }
        let needsChecks = draft.replyToId != nil || draft.forwardedFromId != nil || draft.attachmentId != nil
        // A plain message: check and insert in one statement. Otherwise check, validate
        // the reply, forward or attachment, then insert.
        var insertion = try await PostgresRows.insertMessage(c, draft, guarded: true, checkOnly: needsChecks, logger)
        guard insertion.participantIds.contains(draft.senderId) else { throw APIError.notFound("Conversation") }
        if let existingId = insertion.existingId {
            let existing = try await PostgresRows.message(c, id: existingId, logger)!
            guard existing.conversationId == draft.conversationId else {
                throw APIError(.conflict, "clientMessageId was already used in another conversation")
            }
            return SendResult(message: existing, created: false, participantIds: insertion.participantIds)
        }
        if needsChecks {
            insertion = try await PostgresRows.insertMessage(c, try await Self.checked(c, draft, logger), guarded: false, logger)
        }
        guard let message = insertion.message, !insertion.lostRace else { throw RetryRace() }
        return SendResult(message: message, created: true, participantIds: insertion.participantIds)
    }

    /// Checks a reply's target, and fills a forward from its source or checks an attachment.
    private static func checked(_ c: PostgresConnection, _ draft: MessageDraft, _ logger: Logger) async throws -> MessageDraft {
        var draft = draft
        if let replyToId = draft.replyToId {
            let replyConversation = try await c.first(
                "SELECT conversation_id FROM messages WHERE id = \(replyToId.uuid)", logger)?.decode(UUID.self)
            guard replyConversation == draft.conversationId.uuid else {
                throw APIError.invalid("replyToId is not a message of this conversation")
            }
        }
        if let sourceId = draft.forwardedFromId {
            guard let source = try await PostgresRows.message(c, id: sourceId.uuid, logger),
                try await PostgresRows.isParticipant(c, source.conversationId.uuid, draft.senderId.uuid, logger)
            else { throw APIError.notFound("Message") }
            guard source.deletedAt == nil, source.type != .system else {
                throw APIError.invalid("Deleted and system messages cannot be forwarded")
            }
            draft.type = source.type
            draft.text = source.text
            draft.metadata = source.metadata
            draft.attachmentId = try await c.first(
                "SELECT attachment_id FROM messages WHERE id = \(sourceId.uuid)", logger
            )?.decode(UUID?.self).map(EntityID.init)
        } else if let attachmentId = draft.attachmentId {
            try await PostgresRows.requireAttachment(c, attachmentId, sender: draft.senderId, type: draft.type, logger)
        }
        return draft
    }

    public func messages(conversationId: EntityID, viewer: EntityID, before: Int64?, after: Int64?, limit: Int) async throws -> MessagesPage {
        let logger = self.logger
        return try await single { c in
            let id = conversationId.uuid
            guard try await PostgresRows.isParticipant(c, id, viewer.uuid, logger) else { throw APIError.notFound("Conversation") }
            // Without `after` the page is the newest before the anchor; with it, the oldest after it.
            let ascending = after != nil
            var page = try await c.all(
                """
                \(unescaped: PostgresRows.messageSelect)
                WHERE m.conversation_id = \(id)
                AND (\(after)::bigint IS NULL OR m.seq > \(after)) AND (\(before)::bigint IS NULL OR m.seq < \(before))
                ORDER BY m.seq \(unescaped: ascending ? "ASC" : "DESC") LIMIT \(limit + 1)
                """, logger
            ).map(PostgresRows.message)
            let hasMore = page.count > limit
            page = Array(page.prefix(limit))
            if !ascending { page.reverse() }
            return MessagesPage(messages: page, hasMore: hasMore)
        }
    }

    public func changes(conversationId: EntityID, viewer: EntityID, since: Int64, limit: Int) async throws -> ChangesPage {
        let logger = self.logger
        return try await read { c in
            let id = conversationId.uuid
            guard try await PostgresRows.isParticipant(c, id, viewer.uuid, logger) else { throw APIError.notFound("Conversation") }
            let lastSeq = try await c.first("SELECT last_seq FROM conversations WHERE id = \(id)", logger)?.decode(Int64.self) ?? 0
            let page = try await c.all(
                """
                \(unescaped: PostgresRows.messageSelect)
                WHERE m.conversation_id = \(id) AND m.updated_seq > \(since)
                ORDER BY m.updated_seq ASC LIMIT \(limit + 1)
                """, logger
            ).map(PostgresRows.message)
            return ChangesPage(messages: Array(page.prefix(limit)), lastSeq: lastSeq, hasMore: page.count > limit)
        }
    }
}

/// The first of several racing outcomes, delivered once to one waiting continuation.
private final class FirstOutcome: Sendable {
    private let state = Mutex<(continuation: CheckedContinuation<Result<Void, any Error>?, Never>?, done: Bool)>((nil, false))

    func set(_ continuation: CheckedContinuation<Result<Void, any Error>?, Never>) {
        state.withLock { $0.continuation = continuation }
    }

    func resume(_ outcome: Result<Void, any Error>?) {
        let continuation = state.withLock { state -> CheckedContinuation<Result<Void, any Error>?, Never>? in
            guard !state.done else { return nil }
            state.done = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: outcome)
    }
}
