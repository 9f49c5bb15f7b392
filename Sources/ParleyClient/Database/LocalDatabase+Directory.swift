import Foundation
import GRDB
import ParleyProtocol

/// The cached directory: the people of the organization, their names, pictures and presence,
/// for screens that open offline.
extension LocalDatabase {
    /// Stores the directory (names for offline screens). Users in `keepingPresenceOf` keep the
    /// presence the cache has (a live event newer than this snapshot set it).
    public func store(users: [User], keepingPresenceOf fresher: Set<EntityID> = []) async throws {
        try await writer.write { db in
            for user in users {
                // A live event newer than the snapshot set these users' presence: keep it.
                let presence = fresher.contains(user.id) ? "" : ", is_online = excluded.is_online, last_seen_at = excluded.last_seen_at"
                try db.execute(
                    sql: """
                        INSERT INTO users (id, organization_id, email, display_name, is_online, last_seen_at, avatar_url)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT(id) DO UPDATE SET organization_id = excluded.organization_id,
                            email = excluded.email, display_name = excluded.display_name, avatar_url = excluded.avatar_url\(presence)
                        """,
                    arguments: [
                        user.id.description, user.organizationId.description, user.email, user.displayName, user.isOnline,
                        user.lastSeenAt?.millisecondsSince1970, user.avatarUrl,
                    ])
            }
        }
    }

    /// The cached directory.
    public func users() async throws -> [User] {
        try await writer.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM users ORDER BY display_name").map(Self.user)
        }
    }

    /// One person of the cached directory, if cached.
    public func user(_ id: EntityID) async throws -> User? {
        try await writer.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM users WHERE id = ?", arguments: [id.description]).map(Self.user)
        }
    }

    private static func user(_ row: Row) throws -> User {
        User(
            id: try id(row["id"]), organizationId: try id(row["organization_id"]), email: row["email"],
            displayName: row["display_name"], isOnline: row["is_online"],
            lastSeenAt: (row["last_seen_at"] as Int64?).map(Date.init(millisecondsSince1970:)),
            avatarUrl: row["avatar_url"])
    }

    /// Applies a presence event to the cached directory.
    public func apply(presence: PresenceEvent) async throws {
        try await writer.write { db in
            try db.execute(
                sql: "UPDATE users SET is_online = ?, last_seen_at = COALESCE(?, last_seen_at) WHERE id = ?",
                arguments: [presence.isOnline, presence.lastSeenAt?.millisecondsSince1970, presence.userId.description])
        }
    }

    /// Applies a `user.updated` event: the name and picture change, presence stays as the
    /// presence events left it (the event's is not live). Someone not cached yet is added.
    public func apply(profile user: User) async throws {
        try await writer.write { db in
            try db.execute(
                sql: """
                    INSERT INTO users (id, organization_id, email, display_name, is_online, last_seen_at, avatar_url)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT(id) DO UPDATE SET display_name = excluded.display_name, avatar_url = excluded.avatar_url
                    """,
                arguments: [
                    user.id.description, user.organizationId.description, user.email, user.displayName, user.isOnline,
                    user.lastSeenAt?.millisecondsSince1970, user.avatarUrl,
                ])
        }
    }
}
