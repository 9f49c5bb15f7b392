import Foundation
import GRDB
import Logging
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing
import ParleySQLite
import ParleyPostgres

// MARK: - Fixtures

/// Fixed times: the stores keep milliseconds.
let t0 = Date(timeIntervalSince1970: 1_760_000_000.25)

/// Where a test's store lives: a temporary SQLite file or a fresh PostgreSQL database.
struct StoreFixture: Sendable {
    let kind: StoreKind
    let path: String?
    let database: TestDatabase?

    static func make(_ kind: StoreKind) async throws -> StoreFixture {
        switch kind {
        case .sqlite:
            let directory = TestServer.temporaryDirectory()
            return StoreFixture(kind: kind, path: (directory as NSString).appendingPathComponent("parley.sqlite"), database: nil)
        case .postgres:
            return StoreFixture(kind: kind, path: nil, database: try await TestDatabase.create())
        }
    }

    /// A store on this fixture's database, migrated.
    func open() async throws -> any ParleyStore {
        if let path { return try SQLiteStore(path: path) }
        var logger = Logger(label: "parley.test.store")
        logger.logLevel = .critical
        return try await PostgresStore.connect(url: database!.url, logger: logger, startTimeout: .seconds(120))
    }

    /// Makes every insert of a message whose text is LIKE `pattern` fail (a write error the
    /// store did not expect, as a broken disk or constraint would give), on either store.
    func poisonInserts(textLike pattern: String) async throws {
        try await execute(kind == .sqlite
            ? ["CREATE TRIGGER poison BEFORE INSERT ON messages WHEN NEW.text LIKE '\(pattern)' BEGIN SELECT RAISE(ABORT, 'poisoned'); END"]
            : [
                """
                CREATE FUNCTION poison() RETURNS trigger AS $$
                BEGIN IF NEW.text LIKE '\(pattern)' THEN RAISE EXCEPTION 'poisoned'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql
                """,
                "CREATE TRIGGER poison BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION poison()",
            ])
    }

    /// Runs SQL on the fixture's database beside the store (a trigger, a fault to inject).
    func execute(_ statements: [String]) async throws {
        if let path {
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in
                for sql in statements { try db.execute(sql: sql) }
            }
            try queue.close()
        } else {
            try await database!.execute(statements)
        }
    }

    func destroy() async {
        if let path { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        await database?.drop()
    }
}

/// Runs `body` on a fresh store of `kind`, closing and destroying it after.
func withStore(_ kind: StoreKind, _ body: (any ParleyStore, StoreFixture) async throws -> Void) async throws {
    let fixture = try await StoreFixture.make(kind)
    do {
        let store = try await fixture.open()
        do {
            try await body(store, fixture)
        } catch {
            try? await store.close()
            throw error
        }
        try await store.close()
    } catch {
        await fixture.destroy()
        throw error
    }
    await fixture.destroy()
}

func register(_ store: any ParleyStore, _ email: String, organization: String = "acme") async throws -> User {
    try await store.register(
        organization: organization, email: email, displayName: String(email.prefix { $0 != "@" }).capitalized,
        passwordHash: "hash", now: t0)
}

func direct(_ creator: User, _ other: User) -> NewConversation {
    NewConversation(organizationId: creator.organizationId, creatorId: creator.id, type: .direct, participantIds: [other.id], now: t0)
}

func createDirect(_ store: any ParleyStore, _ creator: User, _ other: User) async throws -> Conversation {
    try await store.createConversation(direct(creator, other)).conversation
}

func draft(_ conversationId: EntityID, _ sender: User, _ text: String, clientMessageId: String? = nil, at: Date = t0) -> MessageDraft {
    MessageDraft(
        conversationId: conversationId, senderId: sender.id, clientMessageId: clientMessageId ?? UUID().uuidString,
        type: .text, text: text, now: at)
}

func send(_ store: any ParleyStore, _ conversationId: EntityID, _ sender: User, _ text: String, at: Date = t0) async throws -> Message {
    let result = try await store.send(draft(conversationId, sender, text, at: at))
    #expect(result.created)
    return result.message
}

func expectNotFound<T>(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> T
) async throws {
    do {
        _ = try await body()
        Issue.record("expected not_found, got a result", sourceLocation: sourceLocation)
    } catch let error as ChatError {
        #expect(error.code == .notFound, sourceLocation: sourceLocation)
    }
}
