import Foundation
import Logging
import ParleyProtocol
import PostgresNIO

extension PostgresStore {
    /// One transaction; a direct pair's insert conflicts on `direct_key` (waiting for a racing
    /// creator's commit) and then returns the existing conversation.
    public func createConversation(_ new: NewConversation) async throws -> ConversationChange {
        let logger = self.logger
        return try await write { c in
            let others = Set(new.participantIds).subtracting([new.creatorId])
            try await Self.requireSameOrganization(c, userIds: others, organizationId: new.organizationId, logger)
            var directKey: String?
            if new.type == .direct {
                guard others.count == 1, new.participantIds.count == 1 else {
                    throw APIError.invalid("A direct conversation has exactly one other participant")
                }
                directKey = ([new.creatorId] + others).map(\.description).sorted().joined(separator: ":")
            }
            let id = UUID()
            let now = new.now.millisecondsSince1970
            // A direct conversation created by both of its pair at once: one insert wins, the
            // other finds it (the unique direct_key decides, waiting for the winner's commit).
            let inserted = try await c.first(
                """
                INSERT INTO conversations (id, organization_id, type, name, direct_key, created_at, last_activity_at)
                VALUES (\(id), \(new.organizationId.uuid), \(new.type.rawValue), \(new.name), \(directKey), \(now), \(now))
                ON CONFLICT (direct_key) DO NOTHING RETURNING id
                """, logger)
            guard inserted != nil else {
                let existing = try await c.first("SELECT id FROM conversations WHERE direct_key = \(directKey)", logger)!
                let conversation = try await PostgresRows.view(c, id: try existing.decode(UUID.self), viewer: new.creatorId.uuid, logger)!
                return ConversationChange(conversation: conversation, created: false, audience: [])
            }
            let userIds = ([new.creatorId] + others.sorted()).map(\.uuid)
            try await c.run(
                """
                INSERT INTO participants (conversation_id, user_id, joined_at, view_changed_at)
                SELECT \(id), u, \(now), \(unescaped: PostgresRows.nowMilliseconds) FROM unnest(\(userIds)::uuid[]) AS u
                """, logger)
            let conversation = try await PostgresRows.view(c, id: id, viewer: new.creatorId.uuid, logger)!
            return ConversationChange(conversation: conversation, created: true, audience: conversation.participantIds)
        }
    }

    /// One snapshot: the viewer's conversation ids by activity, then their views together.
    public func conversations(viewer: EntityID) async throws -> [Conversation] {
        let logger = self.logger
        return try await read { c in
            let ids = try await c.all(
                """
                SELECT c.id FROM conversations c JOIN participants p ON p.conversation_id = c.id
                WHERE p.user_id = \(viewer.uuid) ORDER BY c.last_activity_at DESC, c.id
                """, logger
            ).map { try $0.decode(UUID.self) }
            return try await PostgresRows.views(c, ids: ids, viewer: viewer.uuid, logger)
        }
    }

    /// One snapshot: the participant check, then the full view.
    public func conversation(id: EntityID, viewer: EntityID) async throws -> Conversation? {
        let logger = self.logger
        return try await read { c in
            guard try await PostgresRows.isParticipant(c, id.uuid, viewer.uuid, logger) else { return nil }
            return try await PostgresRows.view(c, id: id.uuid, viewer: viewer.uuid, logger)
        }
    }

    /// Reads the full views in one snapshot, then leaves out the member lists above `limit`
    /// (they are read all the same).
    public func conversationViews(id: EntityID, viewers: [EntityID], listingMembersUpTo limit: Int) async throws -> [EntityID: Conversation] {
        // The lists are read and left out here (a cheaper member-less read is still to do).
        try await fullViews(id: id, viewers: viewers).mapValues { $0.listingMembers(upTo: limit) }
    }

    private func fullViews(id: EntityID, viewers: [EntityID]) async throws -> [EntityID: Conversation] {
        guard let first = viewers.first else { return [:] }
        let logger = self.logger
        return try await read { c in
            guard let base = try await PostgresRows.view(c, id: id.uuid, viewer: first.uuid, logger) else { return [:] }
            let others = viewers.filter { $0 != first }.map(\.uuid)
            // Every other viewer's unread count in one statement, each from its row.
            var unread: [UUID: Int] = [:]
            if !others.isEmpty {
                for row in try await c.all(
                    """
                    SELECT p.user_id, \(unescaped: PostgresRows.unreadExpression)
                    FROM participants p JOIN conversations c ON c.id = p.conversation_id
                    WHERE p.conversation_id = \(id.uuid) AND p.user_id = ANY(\(others))
                    """, logger)
                {
                    let (user, count) = try row.decode((UUID, Int).self)
                    unread[user] = count
                }
            }
            var views: [EntityID: Conversation] = [:]
            for viewer in viewers {
                guard let member = base.members.first(where: { $0.userId == viewer }) else { continue }
                var view = base
                view.readSeq = member.readSeq
                view.unreadCount = viewer == first ? base.unreadCount : unread[viewer.uuid] ?? 0
                views[viewer] = view
            }
            return views
        }
    }

    /// The participant ids, in one statement.
    public func participantIds(conversationId: EntityID) async throws -> [EntityID] {
        let logger = self.logger
        return try await single { c in try await PostgresRows.participantIds(c, conversationId.uuid, logger) }
    }

    /// One transaction under the conversation's row lock (see ``requireChangeableGroup``); an
    /// unchanged name writes nothing.
    public func rename(conversationId: EntityID, by userId: EntityID, to name: String, now: Date) async throws -> ConversationChange {
        let logger = self.logger
        return try await write { c in
            let id = try await Self.requireChangeableGroup(c, conversationId, by: userId, logger)
            let current = try await c.first("SELECT name FROM conversations WHERE id = \(id)", logger)?.decode(String?.self)
            guard current != name else { return try await Self.unchanged(c, id, viewer: userId, logger) }
            try await c.run("UPDATE conversations SET name = \(name) WHERE id = \(id)", logger)
            let system = try await PostgresRows.insertSystemMessage(c, SQLiteStore.systemDraft(
                conversationId, by: userId, text: "renamed the conversation to \"\(name)\"",
                metadata: ["action": "renamed", "name": name], now: now), logger)
            let conversation = try await PostgresRows.view(c, id: id, viewer: userId.uuid, logger)!
            return ConversationChange(
                conversation: conversation, created: false, systemMessage: system, audience: conversation.participantIds)
        }
    }

    /// One transaction under the conversation's row lock: the newcomers inserted in one
    /// statement, their departures cleared and counters rebased, then the system message.
    public func addParticipants(conversationId: EntityID, by userId: EntityID, userIds: [EntityID], now: Date) async throws -> ConversationChange {
        let logger = self.logger
        return try await write { c in
            let id = try await Self.requireChangeableGroup(c, conversationId, by: userId, logger)
            let organizationId = try await c.first("SELECT organization_id FROM conversations WHERE id = \(id)", logger)!
                .decode(UUID.self)
            try await Self.requireSameOrganization(c, userIds: Set(userIds), organizationId: EntityID(organizationId), logger)
            let existing = Set(try await PostgresRows.participantIds(c, id, logger))
            let added = Set(userIds).subtracting(existing).sorted()
            guard !added.isEmpty else { return try await Self.unchanged(c, id, viewer: userId, logger) }
            guard existing.count + added.count <= Limits.maxGroupParticipants else {
                throw APIError.invalid("A group has at most \(Limits.maxGroupParticipants) participants")
            }
            let ms = now.millisecondsSince1970
            try await c.run(
                """
                INSERT INTO participants (conversation_id, user_id, joined_at, view_changed_at)
                SELECT \(id), u, \(ms), \(unescaped: PostgresRows.nowMilliseconds) FROM unnest(\(added.map(\.uuid))::uuid[]) AS u
                """, logger)
            try await c.run(
                "DELETE FROM departures WHERE conversation_id = \(id) AND user_id = ANY(\(added.map(\.uuid)))", logger)
            // Newcomers' history is unread to them: their counters start from it (once, here).
            try await PostgresRows.rebase(c, id, added.map(\.uuid), logger)
            let list = added.map(\.description).joined(separator: ",")
            let system = try await PostgresRows.insertSystemMessage(c, SQLiteStore.systemDraft(
                conversationId, by: userId, text: "added \(added.count) participant\(added.count == 1 ? "" : "s")",
                metadata: ["action": "participants.added", "userIds": list], now: now), logger)
            let conversation = try await PostgresRows.view(c, id: id, viewer: userId.uuid, logger)!
            return ConversationChange(
                conversation: conversation, created: false, systemMessage: system, audience: conversation.participantIds)
        }
    }

    /// One transaction under the conversation's row lock: the system message first, then the
    /// participant's row deleted and the departure upserted.
    public func removeParticipant(conversationId: EntityID, by userId: EntityID, userId removed: EntityID, now: Date) async throws -> ConversationChange {
        let logger = self.logger
        return try await write { c in
            let id = try await Self.requireChangeableGroup(c, conversationId, by: userId, logger)
            guard try await PostgresRows.isParticipant(c, id, removed.uuid, logger) else { throw APIError.notFound("Participant") }
            // The system message is written first so the removed user's last seq covers it.
            let system = try await PostgresRows.insertSystemMessage(c, SQLiteStore.systemDraft(
                conversationId, by: userId, text: removed == userId ? "left the conversation" : "removed a participant",
                metadata: ["action": removed == userId ? "participant.left" : "participant.removed", "userId": removed.description],
                now: now), logger)
            try await c.run("DELETE FROM participants WHERE conversation_id = \(id) AND user_id = \(removed.uuid)", logger)
            try await c.run(
                """
                INSERT INTO departures (user_id, conversation_id, left_at)
                VALUES (\(removed.uuid), \(id), \(unescaped: PostgresRows.nowMilliseconds))
                ON CONFLICT (user_id, conversation_id) DO UPDATE SET left_at = excluded.left_at
                """, logger)
            let conversation = try await PostgresRows.view(c, id: id, viewer: userId.uuid, logger)!
            return ConversationChange(
                conversation: conversation, created: false, systemMessage: system,
                audience: conversation.participantIds + [removed])
        }
    }

    // MARK: Shared pieces

    static func unchanged(_ c: PostgresConnection, _ id: UUID, viewer: EntityID, _ logger: Logger) async throws -> ConversationChange {
        ConversationChange(conversation: try await PostgresRows.view(c, id: id, viewer: viewer.uuid, logger)!, created: false, audience: [])
    }

    /// Locks the conversation, checks the caller is in it and that it is a group; returns its id.
    static func requireChangeableGroup(_ c: PostgresConnection, _ conversationId: EntityID, by userId: EntityID, _ logger: Logger) async throws -> UUID {
        let id = conversationId.uuid
        guard let row = try await c.first(
"SELECT type FROM conversations WHERE id = \(id) FOR UPDATE", logger)
        else { throw APIError.notFound("Conversation") }
        // Checked after the lock: a membership change committed while this waited is seen.
        guard try await PostgresRows.isParticipant(c, id, userId.uuid, logger) else { throw APIError.notFound("Conversation") }
        guard try row.decode(String.self) == ConversationType.group.rawValue else {
            throw APIError.invalid("A direct conversation cannot be changed")
        }
        return id
    }

    /// Unknown, deactivated and other organizations' users are alike "not found".
    static func requireSameOrganization(_ c: PostgresConnection, userIds: Set<EntityID>, organizationId: EntityID, _ logger: Logger) async throws {
        guard !userIds.isEmpty else { return }
        var organizations: [UUID: UUID] = [:]
        for row in try await c.all(
            "SELECT id, organization_id FROM users WHERE id = ANY(\(userIds.map(\.uuid))) AND deactivated_at IS NULL", logger)
        {
            let (id, org) = try row.decode((UUID, UUID).self)
            organizations[id] = org
        }
        for userId in userIds where organizations[userId.uuid] != organizationId.uuid {
            throw APIError.notFound("User \(userId)")
        }
    }
}
