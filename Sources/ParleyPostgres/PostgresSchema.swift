import Foundation
import Logging
import PostgresNIO
import ParleyStorage

/// The PostgreSQL schema as numbered migrations, recorded in `parley_schema_migrations`.
///
/// A shipped migration is never edited, only followed. The tables mirror the SQLite ones
/// (SQLiteSchema) column for column so both stores answer alike: timestamps are `bigint`
/// milliseconds since 1970 (the precision the wire keeps), ids are `uuid` (whose ordering is
/// the ordering of SQLite's lowercase UUID text), and the full-text index is a generated
/// `tsvector` over the message text with the language-neutral `simple` configuration.
enum PostgresSchema {
    struct Migration: Sendable {
        let version: Int32
        let name: String
        /// One statement each: the extended query protocol runs one statement per query.
        let statements: [String]
    }

    /// The key of the transaction-scoped advisory lock migrations take ("parley" in ASCII), so
    /// several servers starting at once on one database migrate one after the other.
    static let advisoryLockKey: Int64 = 0x70_61_72_6C_65_79

    static let migrations: [Migration] = [
        Migration(version: 1, name: "v1-core", statements: [
            """
            CREATE TABLE organizations (
                id uuid PRIMARY KEY,
                name text NOT NULL,
                name_key text NOT NULL UNIQUE,
                created_at bigint NOT NULL
            )
            """,
            """
            CREATE TABLE users (
                id uuid PRIMARY KEY,
                organization_id uuid NOT NULL REFERENCES organizations(id),
                email text NOT NULL,
                display_name text NOT NULL,
                password_hash text NOT NULL,
                created_at bigint NOT NULL,
                last_seen_at bigint,
                CONSTRAINT users_organization_email UNIQUE (organization_id, email)
            )
            """,
            """
            CREATE TABLE conversations (
                id uuid PRIMARY KEY,
                organization_id uuid NOT NULL REFERENCES organizations(id),
                type text NOT NULL CHECK (type IN ('direct', 'group')),
                name text,
                direct_key text UNIQUE,
                created_at bigint NOT NULL,
                last_activity_at bigint NOT NULL,
                last_seq bigint NOT NULL DEFAULT 0 CHECK (last_seq >= 0)
            )
            """,
            """
            CREATE TABLE participants (
                conversation_id uuid NOT NULL REFERENCES conversations(id),
                user_id uuid NOT NULL REFERENCES users(id),
                joined_at bigint NOT NULL,
                read_seq bigint NOT NULL DEFAULT 0,
                delivered_seq bigint NOT NULL DEFAULT 0,
                PRIMARY KEY (conversation_id, user_id)
            )
            """,
            "CREATE INDEX participants_by_user ON participants(user_id)",
            """
            CREATE TABLE messages (
                id uuid PRIMARY KEY,
                conversation_id uuid NOT NULL REFERENCES conversations(id),
                seq bigint NOT NULL CHECK (seq > 0),
                updated_seq bigint NOT NULL,
                sender_id uuid NOT NULL REFERENCES users(id),
                client_message_id text NOT NULL,
                type text NOT NULL,
                text text NOT NULL,
                reply_to_id uuid,
                attachment_id uuid,
                metadata_json text,
                created_at bigint NOT NULL,
                edited_at bigint,
                deleted_at bigint,
                CONSTRAINT messages_conversation_seq UNIQUE (conversation_id, seq),
                CONSTRAINT messages_sender_client_id UNIQUE (sender_id, client_message_id)
            )
            """,
            "CREATE UNIQUE INDEX messages_by_updated_seq ON messages(conversation_id, updated_seq)",
            """
            CREATE TABLE reactions (
                message_id uuid NOT NULL REFERENCES messages(id),
                emoji text NOT NULL,
                user_id uuid NOT NULL REFERENCES users(id),
                created_at bigint NOT NULL,
                PRIMARY KEY (message_id, emoji, user_id)
            )
            """,
        ]),
        Migration(version: 2, name: "v2-message-operations", statements: [
            "ALTER TABLE messages ADD COLUMN forwarded_from_id uuid",
            "ALTER TABLE messages ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED",
            "CREATE INDEX messages_search ON messages USING gin (search_vector)",
        ]),
        Migration(version: 3, name: "v3-attachments", statements: [
            """
            CREATE TABLE attachments (
                id uuid PRIMARY KEY,
                uploader_id uuid NOT NULL REFERENCES users(id),
                organization_id uuid NOT NULL REFERENCES organizations(id),
                name text NOT NULL,
                content_type text NOT NULL,
                size bigint NOT NULL,
                sha256 text NOT NULL,
                width integer,
                height integer,
                created_at bigint NOT NULL
            )
            """,
            "CREATE INDEX messages_by_attachment ON messages(attachment_id) WHERE attachment_id IS NOT NULL",
        ]),
        Migration(version: 4, name: "v4-devices", statements: [
            """
            CREATE TABLE devices (
                token text PRIMARY KEY,
                user_id uuid NOT NULL REFERENCES users(id),
                platform text NOT NULL,
                environment text NOT NULL CHECK (environment IN ('sandbox', 'production')),
                registered_at bigint NOT NULL
            )
            """,
            "CREATE INDEX devices_by_user ON devices(user_id)",
        ]),
        Migration(version: 5, name: "v5-signing-keys", statements: [
            """
            CREATE TABLE signing_keys (
                kid text PRIMARY KEY,
                secret text NOT NULL,
                created_at bigint NOT NULL,
                retired_at bigint
            )
            """,
        ]),
        Migration(version: 6, name: "v6-health", statements: [
            "CREATE TABLE parley_health (id bigserial PRIMARY KEY, checked_at bigint NOT NULL, filler bytea)",
        ]),
        Migration(version: 7, name: "v7-membership", statements: [
            "ALTER TABLE users ADD COLUMN role text NOT NULL DEFAULT 'member' CHECK (role IN ('admin', 'member'))",
            "ALTER TABLE users ADD COLUMN deactivated_at bigint",
            "ALTER TABLE organizations ADD COLUMN allowed_email_domains text NOT NULL DEFAULT '[]'",
            """
            UPDATE users SET role = 'admin' WHERE id IN (
                SELECT DISTINCT ON (organization_id) id FROM users ORDER BY organization_id, created_at, id)
            """,
            """
            CREATE TABLE invites (
                code text PRIMARY KEY,
                organization_id uuid NOT NULL REFERENCES organizations(id),
                email text,
                max_uses integer NOT NULL,
                uses integer NOT NULL DEFAULT 0,
                expires_at bigint NOT NULL,
                created_by uuid NOT NULL REFERENCES users(id),
                created_at bigint NOT NULL
            )
            """,
            "CREATE INDEX invites_by_organization ON invites(organization_id)",
        ]),
        Migration(version: 8, name: "v8-unread-counters", statements: [
            "ALTER TABLE conversations ADD COLUMN countable bigint NOT NULL DEFAULT 0",
            "ALTER TABLE participants ADD COLUMN own_countable bigint NOT NULL DEFAULT 0",
            "ALTER TABLE participants ADD COLUMN unread_base bigint NOT NULL DEFAULT 0",
            "ALTER TABLE participants ADD COLUMN countable_at_base bigint NOT NULL DEFAULT 0",
            "ALTER TABLE participants ADD COLUMN own_at_base bigint NOT NULL DEFAULT 0",
            "ALTER TABLE participants ADD COLUMN base_seq bigint NOT NULL DEFAULT 0",
            """
            UPDATE conversations c SET countable = (
                SELECT count(*) FROM messages m WHERE m.conversation_id = c.id AND m.deleted_at IS NULL AND m.type <> 'system')
            """,
            """
            UPDATE participants p SET own_countable = (
                SELECT count(*) FROM messages m
                WHERE m.conversation_id = p.conversation_id AND m.sender_id = p.user_id AND m.deleted_at IS NULL AND m.type <> 'system')
            """,
            """
            UPDATE participants p SET
                unread_base = (
                    SELECT count(*) FROM messages m
                    WHERE m.conversation_id = p.conversation_id AND m.seq > p.read_seq AND m.sender_id <> p.user_id
                    AND m.deleted_at IS NULL AND m.type <> 'system'),
                countable_at_base = c.countable, own_at_base = p.own_countable, base_seq = c.last_seq
            FROM conversations c WHERE c.id = p.conversation_id
            """,
        ]),
        // The incremental conversation list (see the SQLite schema's v9).
        Migration(version: 9, name: "v9-list-sync", statements: [
            "ALTER TABLE conversations ADD COLUMN changed_at bigint NOT NULL DEFAULT 0",
            "ALTER TABLE participants ADD COLUMN view_changed_at bigint NOT NULL DEFAULT 0",
            """
            CREATE TABLE departures (
                user_id uuid NOT NULL, conversation_id uuid NOT NULL, left_at bigint NOT NULL,
                PRIMARY KEY (user_id, conversation_id))
            """,
        ]),
        // Attachment bytes in the database, so every node serves every attachment (PostgresBlobs).
        Migration(version: 10, name: "v10-blobs", statements: [
            "CREATE TABLE blobs (name text PRIMARY KEY, length bigint NOT NULL)",
            """
            CREATE TABLE blob_chunks (
                name text NOT NULL, start bigint NOT NULL, data bytea NOT NULL,
                PRIMARY KEY (name, start))
            """,
            // Media is compressed already: store the pieces as they are, out of line.
            "ALTER TABLE blob_chunks ALTER COLUMN data SET STORAGE EXTERNAL",
        ]),
        // Sign-in sessions ended by logout: their tokens are refused until they expire.
        Migration(version: 11, name: "v11-revoked-sessions", statements: [
            """
            CREATE TABLE revoked_sessions (
                session_id text PRIMARY KEY, user_id uuid NOT NULL, revoked_at bigint NOT NULL, expires_at bigint NOT NULL)
            """,
            "CREATE INDEX revoked_sessions_expiry ON revoked_sessions (expires_at)",
        ]),
        // Sign-ins renewed by rotating refresh tokens, kept as hashes.
        Migration(version: 12, name: "v12-sign-in-sessions", statements: [
            """
            CREATE TABLE sign_in_sessions (
                id text PRIMARY KEY, user_id uuid NOT NULL, organization_id uuid NOT NULL, token_hash text NOT NULL,
                previous_hash text, label text, created_at bigint NOT NULL, last_used_at bigint NOT NULL,
                rotated_at bigint, expires_at bigint NOT NULL, ended_at bigint)
            """,
            "CREATE INDEX sign_in_sessions_user ON sign_in_sessions (user_id, created_at)",
        ]),
        // Domain joins waiting for the link mailed to the address.
        Migration(version: 13, name: "v13-pending-registrations", statements: [
            """
            CREATE TABLE pending_registrations (
                token_hash text PRIMARY KEY, organization_id uuid NOT NULL, organization_name text NOT NULL, email text NOT NULL,
                display_name text NOT NULL, password_hash text NOT NULL, created_at bigint NOT NULL, expires_at bigint NOT NULL)
            """,
            "CREATE INDEX pending_registrations_email ON pending_registrations (organization_id, email)",
        ]),
        // Threads, mentions, mute, pins and link previews (see SQLiteSchema's v14: the same design).
        Migration(version: 14, name: "v14-threads-mentions-pins", statements: [
            """
            ALTER TABLE messages ADD COLUMN thread_root_id uuid, ADD COLUMN thread_reply_count bigint NOT NULL DEFAULT 0,
                ADD COLUMN thread_last_reply_at bigint, ADD COLUMN thread_last_reply_seq bigint, ADD COLUMN mentions_json text,
                ADD COLUMN pinned_at bigint, ADD COLUMN pinned_by uuid, ADD COLUMN preview_json text
            """,
            "CREATE INDEX messages_by_thread ON messages (thread_root_id, seq) WHERE thread_root_id IS NOT NULL",
            "CREATE INDEX messages_pinned ON messages (conversation_id, pinned_at) WHERE pinned_at IS NOT NULL",
            """
            ALTER TABLE participants ADD COLUMN thread_unread bigint NOT NULL DEFAULT 0,
                ADD COLUMN mention_unread bigint NOT NULL DEFAULT 0, ADD COLUMN muted boolean NOT NULL DEFAULT false,
                ADD COLUMN muted_until bigint
            """,
            """
            CREATE TABLE thread_members (
                root_id uuid NOT NULL, user_id uuid NOT NULL, conversation_id uuid NOT NULL, PRIMARY KEY (root_id, user_id))
            """,
            "CREATE INDEX thread_members_by_user ON thread_members (conversation_id, user_id)",
            """
            CREATE TABLE mentions (
                message_id uuid NOT NULL, user_id uuid NOT NULL, conversation_id uuid NOT NULL, seq bigint NOT NULL,
                PRIMARY KEY (message_id, user_id))
            """,
            "CREATE INDEX mentions_by_user ON mentions (conversation_id, user_id, seq)",
        ]),
        // Which copy of the data this is (see SQLiteSchema's v15).
        Migration(version: 15, name: "v15-store-identity", statements: [
            "CREATE TABLE store_identity (id integer PRIMARY KEY CHECK (id = 1), store_id text NOT NULL)",
            "INSERT INTO store_identity (id, store_id) VALUES (1, replace(gen_random_uuid()::text, '-', ''))",
        ]),
        // A conversation's muted members through an index (see SQLiteSchema's v16).
        Migration(version: 16, name: "v16-muted-members", statements: [
            "CREATE INDEX participants_muted ON participants (conversation_id) WHERE muted",
        ]),
        // Blocks, reports, the audit log and who deleted a message (see SQLiteSchema's v17).
        Migration(version: 17, name: "v17-trust-and-safety", statements: [
            """
            CREATE TABLE blocks (
                blocker_id uuid NOT NULL, blocked_id uuid NOT NULL, created_at bigint NOT NULL,
                PRIMARY KEY (blocker_id, blocked_id))
            """,
            "CREATE INDEX blocks_by_blocked ON blocks (blocked_id, blocker_id)",
            """
            CREATE TABLE reports (
                id uuid PRIMARY KEY, organization_id uuid NOT NULL, reporter_id uuid NOT NULL, message_id uuid,
                conversation_id uuid, user_id uuid, reason text NOT NULL, status text NOT NULL, created_at bigint NOT NULL,
                handled_by uuid, handled_at bigint)
            """,
            "CREATE INDEX reports_by_organization ON reports (organization_id, status, id)",
            """
            CREATE TABLE audit_log (
                id uuid PRIMARY KEY, organization_id uuid NOT NULL, actor_id uuid NOT NULL, action text NOT NULL,
                target_id text, at bigint NOT NULL, detail text)
            """,
            "CREATE INDEX audit_by_organization ON audit_log (organization_id, id)",
            "ALTER TABLE messages ADD COLUMN deleted_by uuid",
            "ALTER TABLE organizations ADD COLUMN message_retention_days integer",
            "CREATE TABLE attachment_orphans (attachment_id uuid PRIMARY KEY)",
        ]),
        // People's pictures (see SQLiteSchema's v18).
        Migration(version: 18, name: "v18-avatars", statements: [
            "ALTER TABLE users ADD COLUMN avatar_id uuid",
            "CREATE INDEX users_avatar ON users (avatar_id) WHERE avatar_id IS NOT NULL",
        ]),
    ]

    /// Applies the migrations the database lacks, all in one transaction under the advisory lock;
    /// returns the versions it applied (empty when the schema was current).
    static func migrate(_ connection: PostgresConnection, logger: Logger) async throws -> [Int32] {
        try await connection.inTransaction(logger: logger) { connection in
            try await connection.run("SELECT pg_advisory_xact_lock(\(advisoryLockKey))", logger)
            try await connection.run(
                """
                CREATE TABLE IF NOT EXISTS parley_schema_migrations (
                    version integer PRIMARY KEY,
                    name text NOT NULL,
                    applied_at bigint NOT NULL
                )
                """, logger)
            var applied = Set<Int32>()
            for row in try await connection.all("SELECT version FROM parley_schema_migrations", logger) {
                applied.insert(try row.decode(Int32.self))
            }
            if let newest = applied.max(), newest > (migrations.last?.version ?? 0) {
                throw ServerStartError(
                    "The database's schema (version \(newest)) is newer than this server knows (\(migrations.last?.version ?? 0))")
            }
            var done: [Int32] = []
            for migration in migrations where !applied.contains(migration.version) {
                for statement in migration.statements {
                    try await connection.run(PostgresQuery(unsafeSQL: statement), logger)
                }
                let now = Date().millisecondsSince1970
                try await connection.run(
                    """
                    INSERT INTO parley_schema_migrations (version, name, applied_at)
                    VALUES (\(migration.version), \(migration.name), \(now))
                    """, logger)
                logger.info("Applied PostgreSQL migration", metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
                done.append(migration.version)
            }
            return done
        }
    }
}
