import Foundation

// MARK: Trust and safety

/// Where a report stands: new reports are `open`; an admin resolves or dismisses them.
public enum ReportStatus: String, Codable, Sendable, Equatable, CaseIterable {
    /// Not handled yet.
    case open
    /// An admin acted on it.
    case resolved
    /// An admin found nothing to act on.
    case dismissed
}

/// `POST /reports`: a message the caller can read, or a user of the organization, or both.
public struct CreateReportRequest: Codable, Sendable, Equatable {
    /// The reported message, if a message is reported.
    public var messageId: EntityID?
    /// The reported user, if a person is reported (a message's sender is taken from it otherwise).
    public var userId: EntityID?
    /// Why, 1–1000 characters after trimming.
    public var reason: String

    /// A report of a message, a user or both.
    public init(messageId: EntityID? = nil, userId: EntityID? = nil, reason: String) {
        self.messageId = messageId
        self.userId = userId
        self.reason = reason
    }
}

/// The answer to `POST /reports`: the report's id, and that it is open.
public struct ReportCreatedResponse: Codable, Sendable, Equatable {
    /// The new report's id.
    public var id: EntityID
    /// Always `open` for a new report.
    public var status: ReportStatus

    /// An answer for a new report.
    public init(id: EntityID, status: ReportStatus = .open) {
        self.id = id
        self.status = status
    }
}

/// A report as admins see it.
public struct Report: Codable, Sendable, Equatable, Identifiable {
    /// The report's id.
    public var id: EntityID
    /// Who reported.
    public var reporterId: EntityID
    /// The reported message, if any.
    public var messageId: EntityID?
    /// The reported message's conversation, if a message was reported.
    public var conversationId: EntityID?
    /// The reported user, if any (a reported message's sender otherwise).
    public var userId: EntityID?
    /// The reporter's words.
    public var reason: String
    /// Where it stands.
    public var status: ReportStatus
    /// When it was made.
    public var createdAt: Date
    /// The reported message as it is now (admins see it even where they are not participants).
    public var message: Message?

    /// A report from its parts.
    public init(
        id: EntityID, reporterId: EntityID, messageId: EntityID? = nil, conversationId: EntityID? = nil, userId: EntityID? = nil,
        reason: String, status: ReportStatus, createdAt: Date, message: Message? = nil
    ) {
        self.id = id
        self.reporterId = reporterId
        self.messageId = messageId
        self.conversationId = conversationId
        self.userId = userId
        self.reason = reason
        self.status = status
        self.createdAt = createdAt
        self.message = message
    }
}

/// `GET /organization/reports`: newest first.
public struct ReportsResponse: Codable, Sendable, Equatable {
    /// A page of reports.
    public var reports: [Report]
    /// Whether older reports follow (ask again with `before` = the last one's id).
    public var hasMore: Bool

    /// A page of reports.
    public init(reports: [Report], hasMore: Bool) {
        self.reports = reports
        self.hasMore = hasMore
    }
}

/// `PATCH /organization/reports/{id}`.
public struct UpdateReportRequest: Codable, Sendable, Equatable {
    /// The report's new status.
    public var status: ReportStatus

    /// A request to move a report to `status`.
    public init(status: ReportStatus) { self.status = status }
}

/// One admin action, as the audit log records it.
public struct AuditEntry: Codable, Sendable, Equatable, Identifiable {
    /// The entry's id (time-ordered).
    public var id: EntityID
    /// The admin who acted.
    public var actorId: EntityID
    /// What was done: `role.changed`, `user.deactivated`, `user.erased`, `invite.created`,
    /// `invite.deleted`, `domains.changed`, `retention.changed`, `report.resolved`,
    /// `report.dismissed`, `report.reopened`, `message.deleted`, `participant.removed`,
    /// `user.signed_out`.
    public var action: String
    /// What it was done to: a user's, message's or report's id, or an invite's code; absent for the organization itself.
    public var targetId: String?
    /// When.
    public var at: Date
    /// Short facts about it (the new role, the domains, a conversation's id).
    public var detail: String?

    /// An entry from its parts.
    public init(id: EntityID, actorId: EntityID, action: String, targetId: String? = nil, at: Date, detail: String? = nil) {
        self.id = id
        self.actorId = actorId
        self.action = action
        self.targetId = targetId
        self.at = at
        self.detail = detail
    }
}

/// `GET /organization/audit`: newest first.
public struct AuditResponse: Codable, Sendable, Equatable {
    /// A page of entries.
    public var entries: [AuditEntry]
    /// Whether older entries follow (ask again with `before` = the last one's id).
    public var hasMore: Bool

    /// A page of entries.
    public init(entries: [AuditEntry], hasMore: Bool) {
        self.entries = entries
        self.hasMore = hasMore
    }
}

/// `DELETE /users/me`: erasing one's own account is confirmed with the password.
public struct EraseAccountRequest: Codable, Sendable, Equatable {
    /// The account's password.
    public var password: String

    /// A confirmation with the password.
    public init(password: String) { self.password = password }
}
