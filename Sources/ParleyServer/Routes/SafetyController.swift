import Foundation
import Hummingbird
import ParleyProtocol
import ParleyStorage
import ParleyRules

/// Reports and the audit log: any member reports a message they can read or a user of
/// their organization; admins list and handle reports and read the audit log. Admin routes
/// answer members 403; other organizations' reports do not exist (404).
struct SafetyController: Sendable {
    let store: any ParleyStore
    let chat: ChatService
    let membership: MembershipService

    func addRoutes(to group: RouterGroup<ParleyRequestContext>) {
        group.post("reports", use: report)
        group.get("organization/reports", use: reports)
        group.patch("organization/reports/:id", use: handle)
        group.get("organization/audit", use: audit)
    }

    /// `POST /reports {messageId?, userId?, reason}` → 201 `{id, status: "open"}`.
    @Sendable func report(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let identity = try context.requireIdentity()
        let body = try await request.decodeJSON(CreateReportRequest.self)
        try chat.limits?.enforce(.send, identity.userId.description)
        let now = chat.now()
        let report = try await store.reading { tx in try await ReportRules.report(body, by: identity, now: now, in: tx) }
        try await store.createReport(report, organizationId: identity.organizationId)
        context.logger.notice("Report made", metadata: ["reportId": "\(report.id)", "by": "\(identity.userId)"])
        return try JSONResponse.make(ReportCreatedResponse(id: report.id), status: .created)
    }

    /// `GET /organization/reports?status=&before=&limit=` (admins): newest first, each with the
    /// reported message as it is now.
    @Sendable func reports(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try await membership.requireAdmin(context)
        var status: ReportStatus?
        if let text = request.uri.queryParameters.get("status") {
            guard let parsed = ReportStatus(rawValue: String(text)) else { throw ChatError.invalid("status is open, resolved or dismissed") }
            status = parsed
        }
        let limit = try request.pageLimit(default: 50, max: 200)
        let page = try await store.reports(
            organizationId: identity.organizationId, status: status, before: try request.entityIDQuery("before"), limit: limit)
        let ids = page.reports.compactMap(\.messageId)
        let messages = try await store.reading { tx in
            var found: [EntityID: Message] = [:]
            for id in ids { found[id] = try await tx.message(id) }
            return found
        }
        let reports = page.reports.map { report in
            var report = report
            report.message = report.messageId.flatMap { messages[$0] }
            return report
        }
        return try JSONResponse.make(ReportsResponse(reports: reports, hasMore: page.hasMore))
    }

    /// `PATCH /organization/reports/{id} {status}` (admins): the report as handled; on record.
    @Sendable func handle(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let identity = try await membership.requireAdmin(context)
        let id = try context.parameters.entityID("id", what: "Report")
        let body = try await request.decodeJSON(UpdateReportRequest.self)
        guard let report = try await store.setReportStatus(
            body.status, reportId: id, organizationId: identity.organizationId, by: identity.userId, at: chat.now())
        else { throw ChatError.notFound("Report") }
        let action: AuditLog.Action = switch body.status {
        case .resolved: .reportResolved
        case .dismissed: .reportDismissed
        case .open: .reportReopened
        }
        try await chat.audit.record(action, by: identity, target: id.description)
        return try JSONResponse.make(report)
    }

    /// `GET /organization/audit?before=&limit=` (admins): newest first.
    @Sendable func audit(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try await membership.requireAdmin(context)
        let limit = try request.pageLimit(default: 50, max: 200)
        let page = try await store.auditEntries(
            organizationId: identity.organizationId, before: try request.entityIDQuery("before"), limit: limit)
        return try JSONResponse.make(AuditResponse(entries: page.entries, hasMore: page.hasMore))
    }
}
