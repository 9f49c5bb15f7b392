import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

extension PostgresStore {
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

    /// One aggregate over the user's participant rows and their conversations' counters; a
    /// muted conversation adds nothing (the total is the app's badge).
    public func totalUnread(userId: EntityID) async throws -> Int {
        let logger = self.logger
        return try await single { c in
            let row = try await c.first(
                """
                SELECT COALESCE(SUM(\(unescaped: ChatSQL.unreadCount)), 0)::bigint
                FROM participants p JOIN conversations c ON c.id = p.conversation_id WHERE p.user_id = \(userId.uuid)
                AND NOT (p.muted AND (p.muted_until IS NULL OR p.muted_until > \(Date().millisecondsSince1970)))
                """, logger)
            return Int(try row?.decode(Int64.self) ?? 0)
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
            // Every other viewer's own part in one statement, each from its row.
            var own: [UUID: OwnView] = [:]
            if !others.isEmpty {
                for row in try await c.all(
                    """
                    SELECT p.user_id, \(unescaped: PostgresRows.ownColumns)
                    FROM participants p JOIN conversations c ON c.id = p.conversation_id
                    WHERE p.conversation_id = \(id.uuid) AND p.user_id = ANY(\(others))
                    """, logger)
                {
                    own[try row.makeRandomAccess()[0].decode(UUID.self)] = try PostgresRows.own(row, at: 1)
                }
            }
            let members = Set(base.members.map(\.userId))
            var views: [EntityID: Conversation] = [:]
            for viewer in viewers where members.contains(viewer) {
                var view = base
                if viewer != first { own[viewer.uuid]?.apply(to: &view) }
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
}
