import Foundation
import GRDB
import ParleyProtocol

extension SQLiteStore {
    /// One write transaction: checks the others' organization; a direct pair's existing
    /// conversation is found by its `direct_key`, otherwise the rows are inserted.
    public func createConversation(_ new: NewConversation) async throws -> ConversationChange {
        try await writer.write { db in
            let others = Set(new.participantIds).subtracting([new.creatorId])
            try Self.requireSameOrganization(db, userIds: others, organizationId: new.organizationId)
            var directKey: String?
            if new.type == .direct {
                guard others.count == 1, new.participantIds.count == 1 else {
                    throw APIError.invalid("A direct conversation has exactly one other participant")
                }
                directKey = ([new.creatorId] + others).map(\.description).sorted().joined(separator: ":")
                if let existing = try String.fetchOne(
                    db, sql: "SELECT id FROM conversations WHERE direct_key = ?", arguments: [directKey])
                {
                    let conversation = try Self.view(db, id: existing, viewer: new.creatorId)!
                    return ConversationChange(conversation: conversation, created: false, audience: [])
                }
            }
            let id = EntityID().description
            let now = new.now.millisecondsSince1970
            try db.execute(
                sql: """
                    INSERT INTO conversations (id, organization_id, type, name, direct_key, created_at, last_activity_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [id, new.organizationId.description, new.type.rawValue, new.name, directKey, now, now])
            for userId in [new.creatorId] + others.sorted() {
                try db.execute(
                    sql: "INSERT INTO participants (conversation_id, user_id, joined_at, view_changed_at) VALUES (?, ?, ?, \(SQLiteRows.nowMilliseconds))",
                    arguments: [id, userId.description, now])
            }
            let conversation = try Self.view(db, id: id, viewer: new.creatorId)!
            return ConversationChange(conversation: conversation, created: true, audience: conversation.participantIds)
        }
    }

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
            // Every member's unread count in one statement (each from its two rows), rather
            // than a statement per viewer.
            let unread = viewers.count == 1 ? [:] : Dictionary(
                try Row.fetchAll(
                    db.cachedStatement(sql: """
                        SELECT p.user_id, \(SQLiteRows.unreadExpression) AS unread
                        FROM participants p JOIN conversations c ON c.id = p.conversation_id WHERE p.conversation_id = ?
                        """),
                    arguments: [id.description]
                ).map { (try SQLiteRows.id($0["user_id"]), $0["unread"] as Int) },
                uniquingKeysWith: { first, _ in first })
            let members = Dictionary(base.members.map { ($0.userId, $0) }, uniquingKeysWith: { first, _ in first })
            var views: [EntityID: Conversation] = [:]
            for viewer in viewers {
                guard let member = members[viewer] else { continue }
                var view = base
                view.readSeq = member.readSeq
                view.unreadCount = viewer == first ? base.unreadCount : unread[viewer] ?? 0
                views[viewer] = view
            }
            return views
        }
    }

    /// The participant ids, in one read.
    public func participantIds(conversationId: EntityID) async throws -> [EntityID] {
        try await writer.read { db in try SQLiteRows.participantIds(db, conversationId.description) }
    }

    /// One write transaction: checks the group, updates the name and writes the system message;
    /// an unchanged name writes nothing.
    public func rename(conversationId: EntityID, by userId: EntityID, to name: String, now: Date) async throws -> ConversationChange {
        try await writer.write { db in
            let id = try Self.requireChangeableGroup(db, conversationId, by: userId)
            let current = try String.fetchOne(db, sql: "SELECT name FROM conversations WHERE id = ?", arguments: [id])
            guard current != name else { return try Self.unchanged(db, id, viewer: userId) }
            try db.execute(sql: "UPDATE conversations SET name = ? WHERE id = ?", arguments: [name, id])
            let system = try SQLiteRows.insertMessage(db, Self.systemDraft(
                conversationId, by: userId, text: "renamed the conversation to \"\(name)\"",
                metadata: ["action": "renamed", "name": name], now: now))
            let conversation = try Self.view(db, id: id, viewer: userId)!
            return ConversationChange(
                conversation: conversation, created: false, systemMessage: system, audience: conversation.participantIds)
        }
    }

    /// One write transaction: checks the group, the users' organization and the size limit,
    /// inserts the newcomers (clearing their departures), then writes the system message.
    public func addParticipants(conversationId: EntityID, by userId: EntityID, userIds: [EntityID], now: Date) async throws -> ConversationChange {
        try await writer.write { db in
            let id = try Self.requireChangeableGroup(db, conversationId, by: userId)
            let organizationId = try String.fetchOne(
                db, sql: "SELECT organization_id FROM conversations WHERE id = ?", arguments: [id])!
            try Self.requireSameOrganization(db, userIds: Set(userIds), organizationId: try SQLiteRows.id(organizationId))
            let existing = Set(try SQLiteRows.participantIds(db, id))
            let added = Set(userIds).subtracting(existing).sorted()
            guard !added.isEmpty else { return try Self.unchanged(db, id, viewer: userId) }
            guard existing.count + added.count <= Limits.maxGroupParticipants else {
                throw APIError.invalid("A group has at most \(Limits.maxGroupParticipants) participants")
            }
            let ms = now.millisecondsSince1970
            for user in added {
                try db.execute(
                    sql: "INSERT INTO participants (conversation_id, user_id, joined_at, view_changed_at) VALUES (?, ?, ?, \(SQLiteRows.nowMilliseconds))",
                    arguments: [id, user.description, ms])
                try db.execute(sql: "DELETE FROM departures WHERE user_id = ? AND conversation_id = ?", arguments: [user.description, id])
                // A newcomer's history is unread to them: their counters start from it (once, here).
                try SQLiteRows.rebase(db, id, user)
            }
            let list = added.map(\.description).joined(separator: ",")
            let system = try SQLiteRows.insertMessage(db, Self.systemDraft(
                conversationId, by: userId, text: "added \(added.count) participant\(added.count == 1 ? "" : "s")",
                metadata: ["action": "participants.added", "userIds": list], now: now))
            let conversation = try Self.view(db, id: id, viewer: userId)!
            return ConversationChange(
                conversation: conversation, created: false, systemMessage: system, audience: conversation.participantIds)
        }
    }

    /// One write transaction: writes the system message first, then deletes the participant's
    /// row and records the departure (for the list sync).
    public func removeParticipant(conversationId: EntityID, by userId: EntityID, userId removed: EntityID, now: Date) async throws -> ConversationChange {
        try await writer.write { db in
            let id = try Self.requireChangeableGroup(db, conversationId, by: userId)
            guard try SQLiteRows.isParticipant(db, id, removed) else { throw APIError.notFound("Participant") }
            // The system message is written first so the removed user's last seq covers it.
            let system = try SQLiteRows.insertMessage(db, Self.systemDraft(
                conversationId, by: userId, text: removed == userId ? "left the conversation" : "removed a participant",
                metadata: ["action": removed == userId ? "participant.left" : "participant.removed", "userId": removed.description],
                now: now))
            try db.execute(
                sql: "DELETE FROM participants WHERE conversation_id = ? AND user_id = ?",
                arguments: [id, removed.description])
            try db.execute(
                sql: "INSERT OR REPLACE INTO departures (user_id, conversation_id, left_at) VALUES (?, ?, \(SQLiteRows.nowMilliseconds))",
                arguments: [removed.description, id])
            let conversation = try Self.view(db, id: id, viewer: userId)!
            return ConversationChange(
                conversation: conversation, created: false, systemMessage: system,
                audience: conversation.participantIds + [removed])
        }
    }

    /// A large group's views without member lists: the conversation row and its last message
    /// once, then each viewer's own row (watermark and unread count), O(viewers), not O(members).
    static func largeGroupViews(_ db: Database, id: String, viewers: [EntityID], memberCount: Int) throws -> [EntityID: Conversation] {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM conversations WHERE id = ?"), arguments: [id]) else {
            return [:]
        }
        let lastMessage = try SQLiteRows.messages(
            db, where: "conversation_id = ?", arguments: [id, 1], order: "seq DESC", limitPlaceholder: true
        ).first
        var views: [EntityID: Conversation] = [:]
        for viewer in viewers {
            guard let own = try Row.fetchOne(
                db.cachedStatement(sql: """
                    SELECT p.read_seq, \(SQLiteRows.unreadExpression) AS unread
                    FROM participants p JOIN conversations c ON c.id = p.conversation_id
                    WHERE p.conversation_id = ? AND p.user_id = ?
                    """),
                arguments: [id, viewer.description])
            else { continue }
            views[viewer] = Conversation(
                id: try SQLiteRows.id(row["id"]), type: ConversationType(rawValue: row["type"]) ?? .group,
                name: row["name"], participantIds: [],
                createdAt: Date(millisecondsSince1970: row["created_at"]),
                lastActivityAt: Date(millisecondsSince1970: row["last_activity_at"]),
                lastSeq: row["last_seq"], lastMessage: lastMessage, unreadCount: own["unread"], readSeq: own["read_seq"],
                members: [], memberCount: memberCount)
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
        let readSeq = members.first { $0.userId == viewer }?.readSeq ?? 0
        let isMember = members.contains { $0.userId == viewer }
        let unread = isMember ? try SQLiteRows.unreadCount(db, id, viewer) : 0
        let lastMessage = try SQLiteRows.messages(
            db, where: "conversation_id = ?", arguments: [id, 1], order: "seq DESC", limitPlaceholder: true
        ).first
        return Conversation(
            id: try SQLiteRows.id(row["id"]), type: ConversationType(rawValue: row["type"]) ?? .group,
            name: row["name"], participantIds: members.map(\.userId),
            createdAt: Date(millisecondsSince1970: row["created_at"]),
            lastActivityAt: Date(millisecondsSince1970: row["last_activity_at"]),
            lastSeq: row["last_seq"], lastMessage: lastMessage, unreadCount: unread, readSeq: readSeq,
            members: members)
    }

    static func unchanged(_ db: Database, _ id: String, viewer: EntityID) throws -> ConversationChange {
        ConversationChange(conversation: try view(db, id: id, viewer: viewer)!, created: false, audience: [])
    }

    /// Checks the caller is in the conversation and that it is a group; returns its id text.
    static func requireChangeableGroup(_ db: Database, _ conversationId: EntityID, by userId: EntityID) throws -> String {
        let id = conversationId.description
        guard try SQLiteRows.isParticipant(db, id, userId) else { throw APIError.notFound("Conversation") }
        let type = try String.fetchOne(db, sql: "SELECT type FROM conversations WHERE id = ?", arguments: [id])
        guard type == ConversationType.group.rawValue else {
            throw APIError.invalid("A direct conversation cannot be changed")
        }
        return id
    }

    /// Unknown, deactivated and other organizations' users are alike "not found".
    static func requireSameOrganization(_ db: Database, userIds: Set<EntityID>, organizationId: EntityID) throws {
        for userId in userIds {
            let org = try String.fetchOne(
                db, sql: "SELECT organization_id FROM users WHERE id = ? AND deactivated_at IS NULL", arguments: [userId.description])
            guard org == organizationId.description else { throw APIError.notFound("User \(userId)") }
        }
    }

    static func systemDraft(_ conversationId: EntityID, by userId: EntityID, text: String, metadata: [String: String], now: Date) -> MessageDraft {
        MessageDraft(
            conversationId: conversationId, senderId: userId, clientMessageId: "system:\(EntityID())",
            type: .system, text: text, metadata: metadata, now: now)
    }
}
