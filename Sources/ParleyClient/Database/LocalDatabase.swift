import Foundation
import GRDB
import ParleyProtocol

/// The SDK's local SQLite database: the cache the screens open from, and the outbox that keeps
/// unsent messages across restarts.
///
/// Two kinds of tables live here. The outbox is durable state, changed only by named
/// migrations. Everything else is a cache of the server: when ``cacheVersion`` changes, the
/// cache tables are dropped and rebuilt (and the temporary messages restored from the
/// outbox), so an app update never crashes on an old cache and never loses an unsent message.
public struct LocalDatabase: Sendable {
    /// Bump when the cache tables change shape: old caches are rebuilt, not migrated.
    public static let cacheVersion = 6

    /// How much history the cache keeps (the newest 500, at most 7 days: enough to open any
    /// recent chat offline without the cache growing without bound).
    public struct Retention: Sendable, Equatable {
        /// How many confirmed messages each conversation keeps (the newest).
        public var maxMessagesPerConversation: Int
        /// Confirmed messages older than this are dropped.
        public var maxAge: Duration

        /// A retention of these limits; the defaults keep the newest 500, at most 7 days.
        public init(maxMessagesPerConversation: Int = 500, maxAge: Duration = .seconds(7 * 24 * 3600)) {
            self.maxMessagesPerConversation = maxMessagesPerConversation
            self.maxAge = maxAge
        }
    }

    let writer: any DatabaseWriter
    /// The retention applied by ``trim(now:sparing:)`` (the client runs it while syncing).
    public let retention: Retention

    /// Opens (creating if needed) the database file at `path`.
    public static func open(path: String, retention: Retention = Retention()) throws -> LocalDatabase {
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            // WAL + NORMAL: a commit survives the app being killed (the outbox's promise); only
            // a power loss can take the last commits, and the server still has what was sent.
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        let pool = try DatabasePool(path: path, configuration: configuration)
        return try LocalDatabase(writer: pool, retention: retention)
    }

    /// A database in memory (tests, previews).
    public static func inMemory(retention: Retention = Retention()) throws -> LocalDatabase {
        try LocalDatabase(writer: try DatabaseQueue(), retention: retention)
    }

    init(writer: any DatabaseWriter, retention: Retention) throws {
        self.writer = writer
        self.retention = retention
        try Self.durableMigrator.migrate(writer)
        try writer.write { db in try Self.prepareCache(db) }
    }

    /// The outbox: never dropped, only migrated.
    static var durableMigrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-outbox") { db in
            try db.execute(sql: """
                CREATE TABLE outbox (
                    position INTEGER PRIMARY KEY AUTOINCREMENT,
                    client_message_id TEXT NOT NULL UNIQUE,
                    conversation_id TEXT NOT NULL,
                    sender_id TEXT NOT NULL,
                    request TEXT NOT NULL,
                    queued_at INTEGER NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    next_attempt_at INTEGER NOT NULL DEFAULT 0,
                    state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'failed')),
                    failure TEXT
                );
                CREATE INDEX outbox_by_conversation ON outbox(conversation_id, position);
                CREATE TABLE cache_meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL);
                """)
        }
        migrator.registerMigration("v2-outbox-preparations") { db in
            try db.execute(sql: """
                ALTER TABLE outbox ADD COLUMN preparations TEXT NOT NULL DEFAULT '[]';
                ALTER TABLE outbox ADD COLUMN context TEXT NOT NULL DEFAULT '{}';
                CREATE TABLE hidden_messages (
                    sender_id TEXT NOT NULL,
                    client_message_id TEXT NOT NULL,
                    PRIMARY KEY (sender_id, client_message_id)
                );
                """)
        }
        migrator.registerMigration("v3-pending-changes") { db in
            // Edits and reactions made while offline, sent in order when the server answers.
            try db.execute(sql: """
                CREATE TABLE pending_changes (
                    position INTEGER PRIMARY KEY AUTOINCREMENT,
                    conversation_id TEXT NOT NULL,
                    message_id TEXT NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('edit', 'react', 'unreact')),
                    value TEXT NOT NULL,
                    attempts INTEGER NOT NULL DEFAULT 0
                );
                """)
        }
        migrator.registerMigration("v4-pending-revokes") { db in
            // Messages the user deleted while they were on their way (perhaps already stored):
            // deleted on the server once they have an id there.
            try db.execute(sql: """
                CREATE TABLE pending_revokes (
                    sender_id TEXT NOT NULL,
                    client_message_id TEXT NOT NULL,
                    conversation_id TEXT NOT NULL,
                    PRIMARY KEY (sender_id, client_message_id)
                );
                """)
        }
        migrator.registerMigration("v5-outbox-queued-heads") { db in
            // Each conversation's oldest queued message by index seeks: with thousands queued,
            // reading the heads scanned the whole outbox once per entry (82 % of a client's CPU).
            try db.execute(sql: "CREATE INDEX outbox_queued ON outbox(state, conversation_id, position)")
        }
        return migrator
    }

    /// Creates the cache tables, or rebuilds them when their version is not this build's.
    static func prepareCache(_ db: Database) throws {
        let stored = try String.fetchOne(db, sql: "SELECT value FROM cache_meta WHERE key = 'cache_version'")
        guard stored != String(cacheVersion) else { return }
        for table in ["messages", "conversations", "users", "list_changes"] {
            try db.execute(sql: "DROP TABLE IF EXISTS \(table)")
        }
        try db.execute(sql: """
            CREATE TABLE users (
                id TEXT PRIMARY KEY NOT NULL,
                organization_id TEXT NOT NULL,
                email TEXT NOT NULL,
                display_name TEXT NOT NULL,
                is_online INTEGER NOT NULL DEFAULT 0,
                last_seen_at INTEGER,
                avatar_url TEXT
            );
            CREATE TABLE conversations (
                id TEXT PRIMARY KEY NOT NULL,
                body TEXT NOT NULL,
                last_activity_at INTEGER NOT NULL,
                last_seq INTEGER NOT NULL,
                read_seq INTEGER NOT NULL DEFAULT 0,
                synced_seq INTEGER,
                has_older INTEGER NOT NULL DEFAULT 1,
                counted_seq INTEGER NOT NULL DEFAULT 0,
                read_at INTEGER NOT NULL DEFAULT 0,
                log_from INTEGER NOT NULL DEFAULT 0
            );
            CREATE TABLE list_changes (
                conversation_id TEXT NOT NULL,
                change_seq INTEGER NOT NULL,
                message_seq INTEGER NOT NULL,
                is_delete INTEGER NOT NULL,
                PRIMARY KEY (conversation_id, change_seq)
            ) WITHOUT ROWID;
            CREATE TABLE messages (
                sender_id TEXT NOT NULL,
                client_message_id TEXT NOT NULL,
                conversation_id TEXT NOT NULL,
                id TEXT UNIQUE,
                seq INTEGER,
                updated_seq INTEGER,
                type TEXT NOT NULL,
                text TEXT NOT NULL,
                reply_to_id TEXT,
                extras TEXT,
                created_at INTEGER NOT NULL,
                edited_at INTEGER,
                deleted_at INTEGER,
                state TEXT NOT NULL CHECK (state IN ('sending', 'failed', 'confirmed')),
                failure TEXT,
                local_order INTEGER NOT NULL DEFAULT 0,
                thread_root_id TEXT,
                pinned_at INTEGER,
                PRIMARY KEY (sender_id, client_message_id)
            );
            CREATE INDEX messages_by_seq ON messages(conversation_id, seq);
            CREATE INDEX messages_by_thread ON messages(thread_root_id, seq) WHERE thread_root_id IS NOT NULL;
            CREATE INDEX messages_pinned ON messages(conversation_id, pinned_at) WHERE pinned_at IS NOT NULL;
            """)
        try db.execute(
            sql: "INSERT OR REPLACE INTO cache_meta (key, value) VALUES ('cache_version', ?)", arguments: [String(cacheVersion)])
        // Unsent messages live in the outbox; show them again in the rebuilt cache.
        try restoreTemporaryMessages(db)
    }

    /// A small setting kept beside the cache (survives cache rebuilds).
    func setting(_ key: String) async throws -> String? {
        try await writer.read { db in
            try String.fetchOne(db, sql: "SELECT value FROM cache_meta WHERE key = ?", arguments: [key])
        }
    }

    /// Sets (or with nil, removes) a setting.
    func setSetting(_ key: String, to value: String?) async throws {
        try await writer.write { db in
            if let value {
                try db.execute(sql: "INSERT OR REPLACE INTO cache_meta (key, value) VALUES (?, ?)", arguments: [key, value])
            } else {
                try db.execute(sql: "DELETE FROM cache_meta WHERE key = ?", arguments: [key])
            }
        }
    }

    /// Drops the whole cache (e.g. on logout); the outbox is kept unless `includingOutbox`.
    public func reset(includingOutbox: Bool = false) async throws {
        try await writer.write { db in
            try db.execute(sql: "DELETE FROM cache_meta WHERE key = 'cache_version'")
            if includingOutbox { try db.execute(sql: "DELETE FROM outbox") }
            try Self.prepareCache(db)
        }
    }
}

extension LocalDatabase {
    /// Makes every write fail as a full or broken disk would (SQLite's `query_only`), reads
    /// still working: for the tests of what the client does when it cannot record an outcome.
    package func refuseWrites(_ refuse: Bool) async throws {
        try await writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA query_only = \(refuse ? 1 : 0)") }
    }
}
