import GRDB
import ParleyStorage

/// The SQLite schema as named migrations; a shipped migration is never edited, only followed.
///
/// Timestamps are integer milliseconds since 1970; ids are lowercase UUID text. The schema
/// mirrors the PostgreSQL one table for table so both stores answer alike.
enum SQLiteSchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-core") { db in
            try db.execute(sql: """
                CREATE TABLE organizations (
                    id TEXT PRIMARY KEY NOT NULL,
                    name TEXT NOT NULL,
                    name_key TEXT NOT NULL UNIQUE,
                    created_at INTEGER NOT NULL
                );
                CREATE TABLE users (
                    id TEXT PRIMARY KEY NOT NULL,
                    organization_id TEXT NOT NULL REFERENCES organizations(id),
                    email TEXT NOT NULL,
                    display_name TEXT NOT NULL,
                    password_hash TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    last_seen_at INTEGER,
                    UNIQUE (organization_id, email)
                );
                CREATE TABLE conversations (
                    id TEXT PRIMARY KEY NOT NULL,
                    organization_id TEXT NOT NULL REFERENCES organizations(id),
                    type TEXT NOT NULL CHECK (type IN ('direct', 'group')),
                    name TEXT,
                    direct_key TEXT UNIQUE,
                    created_at INTEGER NOT NULL,
                    last_activity_at INTEGER NOT NULL,
                    last_seq INTEGER NOT NULL DEFAULT 0 CHECK (last_seq >= 0)
                );
                CREATE TABLE participants (
                    conversation_id TEXT NOT NULL REFERENCES conversations(id),
                    user_id TEXT NOT NULL REFERENCES users(id),
                    joined_at INTEGER NOT NULL,
                    read_seq INTEGER NOT NULL DEFAULT 0,
                    delivered_seq INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (conversation_id, user_id)
                ) WITHOUT ROWID;
                CREATE INDEX participants_by_user ON participants(user_id);
                CREATE TABLE messages (
                    id TEXT PRIMARY KEY NOT NULL,
                    conversation_id TEXT NOT NULL REFERENCES conversations(id),
                    seq INTEGER NOT NULL CHECK (seq > 0),
                    updated_seq INTEGER NOT NULL,
                    sender_id TEXT NOT NULL REFERENCES users(id),
                    client_message_id TEXT NOT NULL,
                    type TEXT NOT NULL,
                    text TEXT NOT NULL,
                    reply_to_id TEXT,
                    attachment_id TEXT,
                    metadata_json TEXT,
                    created_at INTEGER NOT NULL,
                    edited_at INTEGER,
                    deleted_at INTEGER,
                    UNIQUE (conversation_id, seq),
                    UNIQUE (sender_id, client_message_id)
                );
                CREATE UNIQUE INDEX messages_by_updated_seq ON messages(conversation_id, updated_seq);
                CREATE TABLE reactions (
                    message_id TEXT NOT NULL REFERENCES messages(id),
                    emoji TEXT NOT NULL,
                    user_id TEXT NOT NULL REFERENCES users(id),
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (message_id, emoji, user_id)
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v2-message-operations") { db in
            try db.execute(sql: """
                ALTER TABLE messages ADD COLUMN forwarded_from_id TEXT;
                CREATE VIRTUAL TABLE messages_fts USING fts5(text, content = 'messages', content_rowid = 'rowid');
                CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
                    INSERT INTO messages_fts (rowid, text) VALUES (new.rowid, new.text);
                END;
                CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
                    INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
                END;
                CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN
                    INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
                    INSERT INTO messages_fts (rowid, text) VALUES (new.rowid, new.text);
                END;
                INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
                """)
        }
        migrator.registerMigration("v3-attachments") { db in
            try db.execute(sql: """
                CREATE TABLE attachments (
                    id TEXT PRIMARY KEY NOT NULL,
                    uploader_id TEXT NOT NULL REFERENCES users(id),
                    organization_id TEXT NOT NULL REFERENCES organizations(id),
                    name TEXT NOT NULL,
                    content_type TEXT NOT NULL,
                    size INTEGER NOT NULL,
                    sha256 TEXT NOT NULL,
                    width INTEGER,
                    height INTEGER,
                    created_at INTEGER NOT NULL
                );
                CREATE INDEX messages_by_attachment ON messages(attachment_id) WHERE attachment_id IS NOT NULL;
                """)
        }
        migrator.registerMigration("v4-devices") { db in
            try db.execute(sql: """
                CREATE TABLE devices (
                    token TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL REFERENCES users(id),
                    platform TEXT NOT NULL,
                    environment TEXT NOT NULL CHECK (environment IN ('sandbox', 'production')),
                    registered_at INTEGER NOT NULL
                );
                CREATE INDEX devices_by_user ON devices(user_id);
                """)
        }
        migrator.registerMigration("v5-signing-keys") { db in
            try db.execute(sql: """
                CREATE TABLE signing_keys (
                    kid TEXT PRIMARY KEY NOT NULL,
                    secret TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    retired_at INTEGER
                );
                """)
        }
        migrator.registerMigration("v6-health") { db in
            try db.execute(sql: "CREATE TABLE parley_health (id INTEGER PRIMARY KEY, checked_at INTEGER NOT NULL, filler BLOB)")
        }
        migrator.registerMigration("v7-membership") { db in
            try db.execute(sql: """
                ALTER TABLE users ADD COLUMN role TEXT NOT NULL DEFAULT 'member' CHECK (role IN ('admin', 'member'));
                ALTER TABLE users ADD COLUMN deactivated_at INTEGER;
                ALTER TABLE organizations ADD COLUMN allowed_email_domains TEXT NOT NULL DEFAULT '[]';
                UPDATE users SET role = 'admin' WHERE id IN (
                    SELECT (SELECT u.id FROM users u WHERE u.organization_id = o.id ORDER BY u.created_at, u.id LIMIT 1)
                    FROM organizations o);
                CREATE TABLE invites (
                    code TEXT PRIMARY KEY NOT NULL,
                    organization_id TEXT NOT NULL REFERENCES organizations(id),
                    email TEXT,
                    max_uses INTEGER NOT NULL,
                    uses INTEGER NOT NULL DEFAULT 0,
                    expires_at INTEGER NOT NULL,
                    created_by TEXT NOT NULL REFERENCES users(id),
                    created_at INTEGER NOT NULL
                );
                CREATE INDEX invites_by_organization ON invites(organization_id);
                """)
        }
        migrator.registerMigration("v8-unread-counters") { db in
            // Unread counts from a row instead of a COUNT over the unread messages (see
            // SQLiteRows.unreadCount): the conversation counts its countable messages (not
            // system, not deleted), each member their own, and each member keeps a base taken
            // at their last read.
            try db.execute(sql: """
                ALTER TABLE conversations ADD COLUMN countable INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE participants ADD COLUMN own_countable INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE participants ADD COLUMN unread_base INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE participants ADD COLUMN countable_at_base INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE participants ADD COLUMN own_at_base INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE participants ADD COLUMN base_seq INTEGER NOT NULL DEFAULT 0;
                UPDATE conversations SET countable = (
                    SELECT COUNT(*) FROM messages m
                    WHERE m.conversation_id = conversations.id AND m.deleted_at IS NULL AND m.type != 'system');
                UPDATE participants SET own_countable = (
                    SELECT COUNT(*) FROM messages m
                    WHERE m.conversation_id = participants.conversation_id AND m.sender_id = participants.user_id
                    AND m.deleted_at IS NULL AND m.type != 'system');
                UPDATE participants SET
                    unread_base = (
                        SELECT COUNT(*) FROM messages m
                        WHERE m.conversation_id = participants.conversation_id AND m.seq > participants.read_seq
                        AND m.sender_id != participants.user_id AND m.deleted_at IS NULL AND m.type != 'system'),
                    countable_at_base = (SELECT c.countable FROM conversations c WHERE c.id = participants.conversation_id),
                    own_at_base = own_countable,
                    base_seq = (SELECT c.last_seq FROM conversations c WHERE c.id = participants.conversation_id);
                """)
        }
        migrator.registerMigration("v9-list-sync") { db in
            // The incremental conversation list: when each conversation's shared view last
            // changed, when each member's own part of it did, and whom a conversation lost.
            try db.execute(sql: """
                ALTER TABLE conversations ADD COLUMN changed_at INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE participants ADD COLUMN view_changed_at INTEGER NOT NULL DEFAULT 0;
                CREATE TABLE departures (
                    user_id TEXT NOT NULL,
                    conversation_id TEXT NOT NULL,
                    left_at INTEGER NOT NULL,
                    PRIMARY KEY (user_id, conversation_id)
                );
                """)
        }
        migrator.registerMigration("v10-search-per-transaction") { db in
            // New messages are indexed once per write transaction by the store
            // (SQLiteTransaction.indexNewMessages), not by a trigger per insert. An edit or a
            // delete updates the index only for a row it holds (FTS5 keeps one docsize row per
            // indexed row): a row inserted earlier in the same transaction is indexed at its
            // end, with its text as it is then.
            try db.execute(sql: """
                DROP TRIGGER messages_fts_insert;
                DROP TRIGGER messages_fts_update;
                DROP TRIGGER messages_fts_delete;
                CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages
                WHEN EXISTS (SELECT 1 FROM messages_fts_docsize WHERE id = old.rowid) BEGIN
                    INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
                END;
                CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages
                WHEN EXISTS (SELECT 1 FROM messages_fts_docsize WHERE id = old.rowid) BEGIN
                    INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
                    INSERT INTO messages_fts (rowid, text) VALUES (new.rowid, new.text);
                END;
                """)
        }
        migrator.registerMigration("v11-revoked-sessions") { db in
            // Sign-in sessions ended by logout: their tokens are refused until they expire.
            try db.execute(sql: """
                CREATE TABLE revoked_sessions (
                    session_id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL,
                    revoked_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL
                );
                CREATE INDEX revoked_sessions_expiry ON revoked_sessions (expires_at);
                """)
        }
        migrator.registerMigration("v12-sign-in-sessions") { db in
            // Sign-ins renewed by rotating refresh tokens, kept as hashes.
            try db.execute(sql: """
                CREATE TABLE sign_in_sessions (
                    id TEXT PRIMARY KEY NOT NULL,
                    user_id TEXT NOT NULL,
                    organization_id TEXT NOT NULL,
                    token_hash TEXT NOT NULL,
                    previous_hash TEXT,
                    label TEXT,
                    created_at INTEGER NOT NULL,
                    last_used_at INTEGER NOT NULL,
                    rotated_at INTEGER,
                    expires_at INTEGER NOT NULL,
                    ended_at INTEGER
                );
                CREATE INDEX sign_in_sessions_user ON sign_in_sessions (user_id, created_at);
                """)
        }
        migrator.registerMigration("v13-pending-registrations") { db in
            // Domain joins waiting for the link mailed to the address.
            try db.execute(sql: """
                CREATE TABLE pending_registrations (
                    token_hash TEXT PRIMARY KEY NOT NULL,
                    organization_id TEXT NOT NULL,
                    organization_name TEXT NOT NULL,
                    email TEXT NOT NULL,
                    display_name TEXT NOT NULL,
                    password_hash TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL
                );
                CREATE INDEX pending_registrations_email ON pending_registrations (organization_id, email);
                """)
        }
        migrator.registerMigration("v14-threads-mentions-pins") { db in
            // Threads, mentions, mute, pins and link previews. A thread reply is not counted in
            // the conversation's `countable` (it is unread only to the thread's members):
            // `thread_unread` and `mention_unread` are each member's own counts, moved per
            // thread member and per mentioned user when a message is sent, taken again at a read.
            try db.execute(sql: """
                ALTER TABLE messages ADD COLUMN thread_root_id TEXT;
                ALTER TABLE messages ADD COLUMN thread_reply_count INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE messages ADD COLUMN thread_last_reply_at INTEGER;
                ALTER TABLE messages ADD COLUMN thread_last_reply_seq INTEGER;
                ALTER TABLE messages ADD COLUMN mentions_json TEXT;
                ALTER TABLE messages ADD COLUMN pinned_at INTEGER;
                ALTER TABLE messages ADD COLUMN pinned_by TEXT;
                ALTER TABLE messages ADD COLUMN preview_json TEXT;
                CREATE INDEX messages_by_thread ON messages(thread_root_id, seq) WHERE thread_root_id IS NOT NULL;
                CREATE INDEX messages_pinned ON messages(conversation_id, pinned_at) WHERE pinned_at IS NOT NULL;
                ALTER TABLE participants ADD COLUMN thread_unread INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE participants ADD COLUMN mention_unread INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE participants ADD COLUMN muted INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE participants ADD COLUMN muted_until INTEGER;
                CREATE TABLE thread_members (
                    root_id TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    conversation_id TEXT NOT NULL,
                    PRIMARY KEY (root_id, user_id)
                ) WITHOUT ROWID;
                CREATE INDEX thread_members_by_user ON thread_members(conversation_id, user_id);
                CREATE TABLE mentions (
                    message_id TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    conversation_id TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    PRIMARY KEY (message_id, user_id)
                ) WITHOUT ROWID;
                CREATE INDEX mentions_by_user ON mentions(conversation_id, user_id, seq);
                """)
        }
        migrator.registerMigration("v15-store-identity") { db in
            // Which copy of the data this is: made with the database, made anew by `parley
            // restore`, sent in `hello` so a client whose cache is ahead of a restored copy
            // starts its cache again instead of keeping messages the copy never had.
            try db.execute(sql: """
                CREATE TABLE store_identity (id INTEGER PRIMARY KEY CHECK (id = 1), store_id TEXT NOT NULL);
                INSERT INTO store_identity (id, store_id) VALUES (1, lower(hex(randomblob(16))));
                """)
        }
        migrator.registerMigration("v16-muted-members") { db in
            // Push asks for a conversation's muted members on each message: read through this
            // index it costs the muted members, not every member of a 300-member group.
            try db.execute(sql: "CREATE INDEX participants_muted ON participants(conversation_id) WHERE muted != 0")
        }
        migrator.registerMigration("v17-trust-and-safety") { db in
            // Deleted messages leave their attachments in attachment_orphans, which the
            // collector removes once no message refers to them (a forward may still).
            // Blocks are read by the blocked user's id on every send of theirs (who blocks the
            // sender: their unread counts skip it) and by the blocker's for their views.
            try db.execute(sql: """
                CREATE TABLE blocks (
                    blocker_id TEXT NOT NULL,
                    blocked_id TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (blocker_id, blocked_id)
                ) WITHOUT ROWID;
                CREATE INDEX blocks_by_blocked ON blocks(blocked_id, blocker_id);
                CREATE TABLE reports (
                    id TEXT PRIMARY KEY,
                    organization_id TEXT NOT NULL,
                    reporter_id TEXT NOT NULL,
                    message_id TEXT,
                    conversation_id TEXT,
                    user_id TEXT,
                    reason TEXT NOT NULL,
                    status TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    handled_by TEXT,
                    handled_at INTEGER
                );
                CREATE INDEX reports_by_organization ON reports(organization_id, status, id);
                CREATE TABLE audit_log (
                    id TEXT PRIMARY KEY,
                    organization_id TEXT NOT NULL,
                    actor_id TEXT NOT NULL,
                    action TEXT NOT NULL,
                    target_id TEXT,
                    at INTEGER NOT NULL,
                    detail TEXT
                );
                CREATE INDEX audit_by_organization ON audit_log(organization_id, id);
                ALTER TABLE messages ADD COLUMN deleted_by TEXT;
                ALTER TABLE organizations ADD COLUMN message_retention_days INTEGER;
                CREATE TABLE attachment_orphans (attachment_id TEXT PRIMARY KEY) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v18-avatars") { db in
            // A user's picture: an attachment of theirs. Downloads ask whether an attachment is
            // someone's picture (through the index), and so does the attachment collector.
            try db.execute(sql: """
                ALTER TABLE users ADD COLUMN avatar_id TEXT;
                CREATE INDEX users_avatar ON users(avatar_id) WHERE avatar_id IS NOT NULL;
                """)
        }
        return migrator
    }
}
