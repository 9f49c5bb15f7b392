import Foundation
import GRDB
import ParleyProtocol
import ParleyStorage

extension SQLiteStore {
    /// One read: the viewer's conversation ids by activity, then each one's full view.
    public func conversations(viewer: EntityID) async throws -> [Conversation] {
        try await writer.read { db in
            let ids = try String.fetchAll(
                db,
                sql: """
                    SELECT c.id FROM conversations c JOIN participants p ON p.conversation_id = c.id
                    WHERE p.user_id = ? ORDER BY c.last_activity_at DESC, c.id
                    """,
                arguments: [viewer.description])
            return try ids.compactMap { try Self.view(db, id: $0, viewer: viewer) }
        }
    }

    /// One aggregate over the user's participant rows and their conversations' counters; a
    /// muted conversation adds nothing (the total is the app's badge).
    public func totalUnread(userId: EntityID) async throws -> Int {
        try await writer.read { db in
            try Int.fetchOne(
                db.cachedStatement(sql: """
                    SELECT COALESCE(SUM(\(ChatSQL.unreadCount)), 0)
                    FROM participants p JOIN conversations c ON c.id = p.conversation_id
                    WHERE p.user_id = ? AND NOT (p.muted != 0 AND (p.muted_until IS NULL OR p.muted_until > ?))
                    """),
                arguments: [userId.description, Date().millisecondsSince1970]) ?? 0
        }
    }

    /// One read: the participant check, then the full view.
    public func conversation(id: EntityID, viewer: EntityID) async throws -> Conversation? {
        try await writer.read { db in
            guard try SQLiteRows.isParticipant(db, id.description, viewer) else { return nil }
            return try Self.view(db, id: id.description, viewer: viewer)
        }
    }

    /// One read: above `limit` members, views without member lists (see ``largeGroupViews``);
    /// otherwise one full view, with the other viewers' unread counts in one statement.
    public func conversationViews(id: EntityID, viewers: [EntityID], listingMembersUpTo limit: Int) async throws -> [EntityID: Conversation] {
        guard let first = viewers.first else { return [:] }
        return try await writer.read { db in
            let memberCount = try Int.fetchOne(
                db.cachedStatement(sql: "SELECT COUNT(*) FROM participants WHERE conversation_id = ?"), arguments: [id.description]) ?? 0
            if memberCount > limit {
                return try Self.largeGroupViews(db, id: id.description, viewers: viewers, memberCount: memberCount)
            }
            guard let base = try Self.view(db, id: id.description, viewer: first) else { return [:] }
            // Every member's own part in one statement (each from its two rows), rather
            // than a statement per viewer.
            let own = viewers.count == 1 ? [:] : Dictionary(
                try Row.fetchAll(
                    db.cachedStatement(sql: """
                        SELECT p.user_id, \(SQLiteRows.ownColumns)
                        FROM participants p JOIN conversations c ON c.id = p.conversation_id WHERE p.conversation_id = ?
                        """),
                    arguments: [id.description]
                ).map { (try SQLiteRows.id($0["user_id"]), SQLiteRows.own($0)) },
                uniquingKeysWith: { first, _ in first })
            let members = Set(base.members.map(\.userId))
            var views: [EntityID: Conversation] = [:]
            for viewer in viewers where members.contains(viewer) {
                var view = base
                if viewer != first { own[viewer]?.apply(to: &view) }
                views[viewer] = view
            }
            return views
        }
    }

    /// The participant ids, in one read.
    public func participantIds(conversationId: EntityID) async throws -> [EntityID] {
        try await writer.read { db in try SQLiteRows.participantIds(db, conversationId.description) }
    }

    /// A large group's views without member lists: the conversation row and its last message
    /// once, then each viewer's own row (watermark and unread count), O(viewers), not O(members).
    static func largeGroupViews(_ db: Database, id: String, viewers: [EntityID], memberCount: Int) throws -> [EntityID: Conversation] {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM conversations WHERE id = ?"), arguments: [id]) else {
            return [:]
        }
        let lastMessage = try lastMessage(db, id)
        var views: [EntityID: Conversation] = [:]
        for viewer in viewers {
            guard let own = try SQLiteRows.own(db, id, viewer) else { continue }
            var view = Conversation(
                id: try SQLiteRows.id(row["id"]), type: ConversationType(rawValue: row["type"]) ?? .group,
                name: row["name"], participantIds: [],
                createdAt: Date(millisecondsSince1970: row["created_at"]),
                lastActivityAt: Date(millisecondsSince1970: row["last_activity_at"]),
                lastSeq: row["last_seq"], lastMessage: lastMessage, unreadCount: 0, readSeq: 0,
                members: [], memberCount: memberCount)
            own.apply(to: &view)
            views[viewer] = view
        }
        return views
    }

    // MARK: Shared pieces

    /// The conversation as `viewer` sees it; the viewer's own fields are zero if they are not in it.
    static func view(_ db: Database, id: String, viewer: EntityID) throws -> Conversation? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM conversations WHERE id = ?"), arguments: [id]) else {
            return nil
        }
        let memberRows = try Row.fetchAll(
            db.cachedStatement(
                sql: "SELECT user_id, read_seq, delivered_seq FROM participants WHERE conversation_id = ? ORDER BY joined_at, user_id"),
            arguments: [id])
        let members = try memberRows.map {
            Member(userId: try SQLiteRows.id($0["user_id"]), readSeq: $0["read_seq"], deliveredSeq: $0["delivered_seq"])
        }
        let isMember = members.contains { $0.userId == viewer }
        var view = Conversation(
            id: try SQLiteRows.id(row["id"]), type: ConversationType(rawValue: row["type"]) ?? .group,
            name: row["name"], participantIds: members.map(\.userId),
            createdAt: Date(millisecondsSince1970: row["created_at"]),
            lastActivityAt: Date(millisecondsSince1970: row["last_activity_at"]),
            lastSeq: row["last_seq"], lastMessage: try lastMessage(db, id), unreadCount: 0, readSeq: 0,
            members: members)
        if isMember { try SQLiteRows.own(db, id, viewer)?.apply(to: &view) }
        return view
    }

    /// The conversation's newest message outside threads (a thread reply is not the
    /// conversation's activity).
    static func lastMessage(_ db: Database, _ id: String) throws -> Message? {
        try SQLiteRows.messages(
            db, where: "conversation_id = ? AND thread_root_id IS NULL", arguments: [id, 1], order: "seq DESC", limitPlaceholder: true
        ).first
    }

}
