import Foundation
import GRDB
import ParleyProtocol
import ParleyStorage

/// Blocks, reports and the audit log.
extension SQLiteStore {
    /// The users a blocker blocks, by name.
    public func blockedUsers(by blocker: EntityID) async throws -> [User] {
        try await writer.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT u.* FROM blocks b JOIN users u ON u.id = b.blocked_id
                    WHERE b.blocker_id = ? ORDER BY u.display_name COLLATE NOCASE, u.id
                    """,
                arguments: [blocker.description]
            ).map(SQLiteRows.user)
        }
    }

    /// A user's blocks, both ways, in one read.
    public func blockRelations(of userId: EntityID) async throws -> BlockRelations {
        try await writer.read { db in
            let id = userId.description
            let rows = try Row.fetchAll(
                db, sql: "SELECT blocker_id, blocked_id FROM blocks WHERE blocker_id = ?1 OR blocked_id = ?1", arguments: [id])
            var relations = BlockRelations()
            for row in rows {
                let blocker: String = row[0], blocked: String = row[1]
                if blocker == id { relations.blocks.insert(try SQLiteRows.id(blocked)) } else { relations.blockedBy.insert(try SQLiteRows.id(blocker)) }
            }
            return relations
        }
    }

    /// Stores a report.
    public func createReport(_ report: Report, organizationId: EntityID) async throws {
        try await writer.write { db in
            try db.execute(
                sql: """
                    INSERT INTO reports (id, organization_id, reporter_id, message_id, conversation_id, user_id, reason, status, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    report.id.description, organizationId.description, report.reporterId.description, report.messageId?.description,
                    report.conversationId?.description, report.userId?.description, report.reason, report.status.rawValue,
                    report.createdAt.millisecondsSince1970,
                ])
        }
    }

    /// A page of an organization's reports, newest first.
    public func reports(organizationId: EntityID, status: ReportStatus?, before: EntityID?, limit: Int) async throws -> (reports: [Report], hasMore: Bool) {
        try await writer.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM reports WHERE organization_id = ?1 AND (?2 IS NULL OR status = ?2) AND (?3 IS NULL OR id < ?3)
                    ORDER BY id DESC LIMIT ?4
                    """,
                arguments: [organizationId.description, status?.rawValue, before?.description, limit + 1])
            let reports = try rows.prefix(limit).map(Self.report)
            return (reports, rows.count > limit)
        }
    }

    /// Moves a report of the organization to a status.
    public func setReportStatus(
        _ status: ReportStatus, reportId: EntityID, organizationId: EntityID, by handler: EntityID, at date: Date
    ) async throws -> Report? {
        try await writer.write { db in
            try Row.fetchOne(
                db,
                sql: """
                    UPDATE reports SET status = ?, handled_by = ?, handled_at = ? WHERE id = ? AND organization_id = ? RETURNING *
                    """,
                arguments: [status.rawValue, handler.description, date.millisecondsSince1970, reportId.description, organizationId.description]
            ).map(Self.report)
        }
    }

    /// Appends an audit entry.
    public func recordAudit(_ entry: AuditEntry, organizationId: EntityID) async throws {
        try await writer.write { db in
            try db.execute(
                sql: "INSERT INTO audit_log (id, organization_id, actor_id, action, target_id, at, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
                arguments: [
                    entry.id.description, organizationId.description, entry.actorId.description, entry.action, entry.targetId,
                    entry.at.millisecondsSince1970, entry.detail,
                ])
        }
    }

    /// A page of an organization's audit log, newest first.
    public func auditEntries(organizationId: EntityID, before: EntityID?, limit: Int) async throws -> (entries: [AuditEntry], hasMore: Bool) {
        try await writer.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT * FROM audit_log WHERE organization_id = ?1 AND (?2 IS NULL OR id < ?2) ORDER BY id DESC LIMIT ?3",
                arguments: [organizationId.description, before?.description, limit + 1])
            let entries = try rows.prefix(limit).map { row in
                AuditEntry(
                    id: try SQLiteRows.id(row["id"]), actorId: try SQLiteRows.id(row["actor_id"]), action: row["action"],
                    targetId: row["target_id"], at: Date(millisecondsSince1970: row["at"]), detail: row["detail"])
            }
            return (entries, rows.count > limit)
        }
    }

    private static func report(_ row: Row) throws -> Report {
        Report(
            id: try SQLiteRows.id(row["id"]), reporterId: try SQLiteRows.id(row["reporter_id"]),
            messageId: (row["message_id"] as String?).flatMap(EntityID.init),
            conversationId: (row["conversation_id"] as String?).flatMap(EntityID.init),
            userId: (row["user_id"] as String?).flatMap(EntityID.init), reason: row["reason"],
            status: ReportStatus(rawValue: row["status"]) ?? .open, createdAt: Date(millisecondsSince1970: row["created_at"]))
    }
}
