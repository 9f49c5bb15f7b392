import Foundation
import ParleyProtocol

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Trust and safety: blocks and reports for everyone, report handling,
/// moderation and the audit log for admins.
extension ParleyAPI {
    /// Blocks a user of the organization: they cannot message the caller directly, the caller
    /// gets no typing, presence or push from them, and their group messages come marked
    /// `senderBlocked` and never count as unread. They are not told.
    public func block(_ userId: EntityID) async throws {
        let _: NoContent = try await request("POST", "users/\(userId)/block")
    }

    /// Ends a block (nothing happens if there was none).
    public func unblock(_ userId: EntityID) async throws {
        let _: NoContent = try await request("DELETE", "users/\(userId)/block")
    }

    /// The users the caller blocks, by name.
    public func blockedUsers() async throws -> [User] {
        let answer: UsersResponse = try await request("GET", "users/blocked")
        return answer.users
    }

    /// Reports a message the caller can read, a user of the organization, or both, for the
    /// organization's admins to handle; returns the new report's id.
    @discardableResult
    public func report(messageId: EntityID? = nil, userId: EntityID? = nil, reason: String) async throws -> EntityID {
        let answer: ReportCreatedResponse = try await request(
            "POST", "reports", body: CreateReportRequest(messageId: messageId, userId: userId, reason: reason))
        return answer.id
    }

    /// A page of the organization's reports, newest first (admins): of one status or all,
    /// older than the report `before`.
    public func reports(status: ReportStatus? = nil, before: EntityID? = nil, limit: Int? = nil) async throws -> ReportsResponse {
        try await request(
            "GET", "organization/reports",
            query: ["status": status?.rawValue, "before": before?.description, "limit": limit.map(String.init)])
    }

    /// Resolves, dismisses or reopens a report (admins).
    @discardableResult
    public func setReportStatus(_ status: ReportStatus, of reportId: EntityID) async throws -> Report {
        try await request("PATCH", "organization/reports/\(reportId)", body: UpdateReportRequest(status: status))
    }

    /// A page of the organization's audit log, newest first (admins).
    public func auditLog(before: EntityID? = nil, limit: Int? = nil) async throws -> AuditResponse {
        try await request("GET", "organization/audit", query: ["before": before?.description, "limit": limit.map(String.init)])
    }
}

/// Retention, export and erasure.
extension ParleyAPI {
    /// Deletes the organization's messages older than `days` from now on, or keeps them for
    /// ever with nil (admins).
    @discardableResult
    public func setMessageRetention(days: Int?) async throws -> Organization {
        let answer: OrganizationResponse = try await request(
            "PATCH", "organization", body: UpdateOrganizationRequest(retention: days.map { .days($0) } ?? .off))
        return answer.organization
    }

    /// Downloads the caller's data (a ZIP of profile, conversations, messages and uploads) to
    /// `file`, telling `progress` the bytes written so far; returns how many.
    @discardableResult
    public func exportData(to file: URL, progress: @Sendable (Int64) -> Void = { _ in }) async throws -> Int64 {
        try await download(path: "users/me/export", to: file, progress: progress)
    }

    /// Erases the caller's account, confirmed with their password: their messages become
    /// tombstones, their uploads go, and this client's tokens stop working.
    public func eraseAccount(password: String) async throws {
        let _: NoContent = try await request("DELETE", "users/me", body: EraseAccountRequest(password: password))
    }

    /// Erases a member (admins).
    public func erase(_ userId: EntityID) async throws {
        let _: NoContent = try await request("DELETE", "users/\(userId)", query: ["erase": "true"])
    }
}
