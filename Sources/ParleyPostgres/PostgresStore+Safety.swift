import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

/// Blocks, reports and the audit log.
extension PostgresStore {
    /// The users a blocker blocks, by name.
    public func blockedUsers(by blocker: EntityID) async throws -> [User] {
        let logger = self.logger
        return try await single { c in
            try await c.all(
                """
                SELECT \(unescaped: PostgresRows.userColumns(of: "u"))
                FROM blocks b JOIN users u ON u.id = b.blocked_id
                WHERE b.blocker_id = \(blocker.uuid) ORDER BY lower(u.display_name COLLATE "C"), u.id
                """, logger
            ).map(PostgresRows.user)
        }
    }

    /// A user's blocks, both ways, in one read.
    public func blockRelations(of userId: EntityID) async throws -> BlockRelations {
        let logger = self.logger
        return try await single { c in
            var relations = BlockRelations()
            for row in try await c.all(
                "SELECT blocker_id, blocked_id FROM blocks WHERE blocker_id = \(userId.uuid) OR blocked_id = \(userId.uuid)", logger)
            {
                let (blocker, blocked) = try row.decode((UUID, UUID).self)
                if blocker == userId.uuid { relations.blocks.insert(EntityID(blocked)) } else { relations.blockedBy.insert(EntityID(blocker)) }
            }
            return relations
        }
    }

    /// Stores a report.
    public func createReport(_ report: Report, organizationId: EntityID) async throws {
        let logger = self.logger
        try await single { c in
            try await c.run(
                """
                INSERT INTO reports (id, organization_id, reporter_id, message_id, conversation_id, user_id, reason, status, created_at)
                VALUES (\(report.id.uuid), \(organizationId.uuid), \(report.reporterId.uuid), \(report.messageId?.uuid),
                        \(report.conversationId?.uuid), \(report.userId?.uuid), \(report.reason), \(report.status.rawValue),
                        \(report.createdAt.millisecondsSince1970))
                """, logger)
        }
    }

    /// A page of an organization's reports, newest first.
    public func reports(organizationId: EntityID, status: ReportStatus?, before: EntityID?, limit: Int) async throws -> (reports: [Report], hasMore: Bool) {
        let logger = self.logger
        return try await single { c in
            let rows = try await c.all(
                """
                SELECT \(unescaped: Self.reportColumns) FROM reports
                WHERE organization_id = \(organizationId.uuid) AND (\(status?.rawValue)::text IS NULL OR status = \(status?.rawValue))
                AND (\(before?.uuid)::uuid IS NULL OR id < \(before?.uuid))
                ORDER BY id DESC LIMIT \(limit + 1)
                """, logger)
            return (try rows.prefix(limit).map(Self.report), rows.count > limit)
        }
    }

    /// Moves a report of the organization to a status.
    public func setReportStatus(
        _ status: ReportStatus, reportId: EntityID, organizationId: EntityID, by handler: EntityID, at date: Date
    ) async throws -> Report? {
        let logger = self.logger
        return try await single { c in
            try await c.first(
                """
                UPDATE reports SET status = \(status.rawValue), handled_by = \(handler.uuid), handled_at = \(date.millisecondsSince1970)
                WHERE id = \(reportId.uuid) AND organization_id = \(organizationId.uuid)
                RETURNING \(unescaped: Self.reportColumns)
                """, logger
            ).map(Self.report)
        }
    }

    /// Appends an audit entry.
    public func recordAudit(_ entry: AuditEntry, organizationId: EntityID) async throws {
        let logger = self.logger
        try await single { c in
            try await c.run(
                """
                INSERT INTO audit_log (id, organization_id, actor_id, action, target_id, at, detail)
                VALUES (\(entry.id.uuid), \(organizationId.uuid), \(entry.actorId.uuid), \(entry.action), \(entry.targetId),
                        \(entry.at.millisecondsSince1970), \(entry.detail))
                """, logger)
        }
    }

    /// A page of an organization's audit log, newest first.
    public func auditEntries(organizationId: EntityID, before: EntityID?, limit: Int) async throws -> (entries: [AuditEntry], hasMore: Bool) {
        let logger = self.logger
        return try await single { c in
            let rows = try await c.all(
                """
                SELECT id, actor_id, action, target_id, at, detail FROM audit_log
                WHERE organization_id = \(organizationId.uuid) AND (\(before?.uuid)::uuid IS NULL OR id < \(before?.uuid))
                ORDER BY id DESC LIMIT \(limit + 1)
                """, logger)
            let entries = try rows.prefix(limit).map { row in
                let (id, actor, action, target, at, detail) = try row.decode((UUID, UUID, String, String?, Int64, String?).self)
                return AuditEntry(
                    id: EntityID(id), actorId: EntityID(actor), action: action, targetId: target, at: Date(millisecondsSince1970: at),
                    detail: detail)
            }
            return (entries, rows.count > limit)
        }
    }

    private static let reportColumns = "id, reporter_id, message_id, conversation_id, user_id, reason, status, created_at"

    private static func report(_ row: PostgresRow) throws -> Report {
        let (id, reporter, message, conversation, user, reason, status, createdAt) = try row.decode(
            (UUID, UUID, UUID?, UUID?, UUID?, String, String, Int64).self)
        return Report(
            id: EntityID(id), reporterId: EntityID(reporter), messageId: message.map(EntityID.init),
            conversationId: conversation.map(EntityID.init), userId: user.map(EntityID.init), reason: reason,
            status: ReportStatus(rawValue: status) ?? .open, createdAt: Date(millisecondsSince1970: createdAt))
    }
}
