import Foundation

/// `POST /auth/register`: creates the organization when its name is new.
public struct RegisterRequest: Codable, Sendable, Equatable {
    /// The organization to join, or to create when the name is new.
    public var organization: String
    /// Trimmed and lowercased; must look like `local@domain.tld`.
    public var email: String
    /// 8–128 characters; stored only as a bcrypt hash.
    public var password: String
    /// The name others see (1–100 characters).
    public var displayName: String
    /// Needed to join an existing organization unless the email's domain is allowed there.
    public var inviteCode: String?

    /// A registration with these fields; no invite code by default.
    public init(organization: String, email: String, password: String, displayName: String, inviteCode: String? = nil) {
        self.organization = organization
        self.email = email
        self.password = password
        self.displayName = displayName
        self.inviteCode = inviteCode
    }
}

/// `GET` / `PATCH /organization` answer.
public struct OrganizationResponse: Codable, Sendable, Equatable {
    /// The caller's organization.
    public var organization: Organization
    /// An answer with this organization.
    public init(organization: Organization) { self.organization = organization }
}

/// `PATCH /organization`.
public struct UpdateOrganizationRequest: Codable, Sendable, Equatable {
    /// The domains to allow (at most 50); each is trimmed, lowercased and loses a leading `@`;
    /// absent: unchanged.
    public var allowedEmailDomains: [String]?
    /// What to do with the message retention (v1.4): absent, unchanged.
    public var retention: RetentionChange?

    /// How a request changes the retention.
    public enum RetentionChange: Sendable, Equatable {
        /// Delete messages older than this many days (at least 1).
        case days(Int)
        /// Keep messages for ever (`null` on the wire).
        case off
    }

    /// A request with these domains and, optionally, a retention change.
    public init(allowedEmailDomains: [String]? = nil, retention: RetentionChange? = nil) {
        self.allowedEmailDomains = allowedEmailDomains
        self.retention = retention
    }

    private enum CodingKeys: String, CodingKey { case allowedEmailDomains, messageRetentionDays }

    /// Reads `messageRetentionDays`: a number, `null` (off), or absent (unchanged).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        allowedEmailDomains = try c.decodeIfPresent([String].self, forKey: .allowedEmailDomains)
        if c.contains(.messageRetentionDays) {
            retention = try c.decodeNil(forKey: .messageRetentionDays) ? .off : .days(try c.decode(Int.self, forKey: .messageRetentionDays))
        }
    }

    /// Writes `messageRetentionDays` only when it changes.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(allowedEmailDomains, forKey: .allowedEmailDomains)
        switch retention {
        case .days(let days): try c.encode(days, forKey: .messageRetentionDays)
        case .off: try c.encodeNil(forKey: .messageRetentionDays)
        case nil: break
        }
    }
}

/// `POST /organization/invites`.
public struct CreateInviteRequest: Codable, Sendable, Equatable {
    /// When set, only this address may use the invite.
    public var email: String?
    /// Default 1.
    public var maxUses: Int?
    /// Default 168 (a week).
    public var expiresInHours: Int?
    /// A request; nil fields take the server's defaults.
    public init(email: String? = nil, maxUses: Int? = nil, expiresInHours: Int? = nil) {
        self.email = email
        self.maxUses = maxUses
        self.expiresInHours = expiresInHours
    }
}

/// `POST /organization/invites` answer.
public struct InviteResponse: Codable, Sendable, Equatable {
    /// The invite created.
    public var invite: Invite
    /// An answer with this invite.
    public init(invite: Invite) { self.invite = invite }
}

/// `GET /organization/invites` answer.
public struct InvitesResponse: Codable, Sendable, Equatable {
    /// The organization's invites, newest first.
    public var invites: [Invite]
    /// An answer with these invites.
    public init(invites: [Invite]) { self.invites = invites }
}

/// `PATCH /users/{id}`.
public struct UpdateUserRequest: Codable, Sendable, Equatable {
    /// The role to give the user.
    public var role: UserRole
    /// A request with this role.
    public init(role: UserRole) { self.role = role }
}

/// `PATCH /users/{id}` answer.
public struct UserResponse: Codable, Sendable, Equatable {
    /// The user after the change.
    public var user: User
    /// An answer with this user.
    public init(user: User) { self.user = user }
}

/// `POST /auth/login`.
public struct LoginRequest: Codable, Sendable, Equatable {
    /// The organization's name, matched without case.
    public var organization: String
    /// The user's email, matched without case.
    public var email: String
    /// The user's password.
    public var password: String

    /// A login with these credentials.
    public init(organization: String, email: String, password: String) {
        self.organization = organization
        self.email = email
        self.password = password
    }
}

/// `POST /auth/logout`: stops push to this device (`deviceToken`), or to every device of the
/// user when it is absent. Access tokens are stateless: the client forgets its own.
public struct LogoutRequest: Codable, Sendable, Equatable {
    /// The APNs token to unregister; absent for every device of the user.
    public var deviceToken: String?

    /// A logout; no token means every device.
    public init(deviceToken: String? = nil) {
        self.deviceToken = deviceToken
    }
}

/// The answer to register, login and refresh: a short-lived bearer token, the refresh token
/// that renews it, and the user they stand for.
public struct AuthResponse: Codable, Sendable, Equatable {
    /// A bearer token (an HS256 JWT), valid minutes (15 by default): `expiresAt`.
    public var token: String
    /// The user the token stands for.
    public var user: User
    /// Renews the sign-in (`POST /auth/refresh {refreshToken}`) once: each renewal answers a
    /// new one and the old one stops working. A credential: kept where the app keeps secrets.
    /// Absent from servers before v1.4's sessions and from a bearer refresh of a session that
    /// has one already.
    public var refreshToken: String?
    /// When `token` expires.
    public var expiresAt: Date?
    /// When `refreshToken` expires if it is not used (each renewal moves it on).
    public var refreshExpiresAt: Date?

    /// An answer with this token and user.
    public init(token: String, user: User, refreshToken: String? = nil, expiresAt: Date? = nil, refreshExpiresAt: Date? = nil) {
        self.token = token
        self.user = user
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
        self.refreshExpiresAt = refreshExpiresAt
    }
}

/// The 202 answer to a registration that joins an organization by its email domain on a server
/// that proves addresses: a link went to `email`; opening it (`POST /auth/verify`) finishes.
public struct VerificationPending: Codable, Sendable, Equatable {
    /// Where the link went.
    public var email: String
    /// When the link stops working.
    public var expiresAt: Date

    /// An answer for this address.
    public init(email: String, expiresAt: Date) {
        self.email = email
        self.expiresAt = expiresAt
    }
}

/// `POST /auth/verify`: the token of the mailed link; answers as a registration does (201).
public struct VerifyEmailRequest: Codable, Sendable, Equatable {
    /// The token from the link (after `#verify=`).
    public var token: String

    /// A verification with this token.
    public init(token: String) { self.token = token }
}

/// `POST /auth/refresh`: with a refresh token, renews that sign-in (no `Authorization` needed);
/// without one, the bearer token is renewed within its session.
public struct RefreshRequest: Codable, Sendable, Equatable {
    /// The refresh token from the last login or renewal.
    public var refreshToken: String?

    /// A renewal with this refresh token (nil: by the bearer token).
    public init(refreshToken: String?) { self.refreshToken = refreshToken }
}

/// One sign-in of the caller (a device, a browser, a terminal), as `GET /auth/sessions` lists it.
public struct SignInSessionInfo: Codable, Sendable, Equatable {
    /// The session id (`sid` in its tokens).
    public var id: String
    /// What signed in (the client's User-Agent, shortened and neutralised), when it said.
    public var label: String?
    /// When the user signed in.
    public var createdAt: Date
    /// When the session last renewed its token.
    public var lastUsedAt: Date
    /// When it ends unless renewed.
    public var expiresAt: Date
    /// Whether the request listing it was made from this session.
    public var current: Bool

    /// A session with these fields.
    public init(id: String, label: String?, createdAt: Date, lastUsedAt: Date, expiresAt: Date, current: Bool) {
        self.id = id
        self.label = label
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.expiresAt = expiresAt
        self.current = current
    }
}

/// `GET /auth/sessions`: the caller's live sign-ins, newest first.
public struct SignInSessionsResponse: Codable, Sendable, Equatable {
    /// The sessions.
    public var sessions: [SignInSessionInfo]

    /// An answer with these sessions.
    public init(sessions: [SignInSessionInfo]) { self.sessions = sessions }
}

/// `POST /auth/ticket`: a one-use ticket for opening the WebSocket as `/ws?ticket=`, so a
/// browser's access token never goes into a URL (which proxies and servers log).
public struct SocketTicket: Codable, Sendable, Equatable {
    /// The ticket: valid for one upgrade within 30 seconds.
    public var ticket: String
    /// When it stops being accepted.
    public var expiresAt: Date

    /// A ticket valid until `expiresAt`.
    public init(ticket: String, expiresAt: Date) {
        self.ticket = ticket
        self.expiresAt = expiresAt
    }
}

/// `GET /users?q=`: the caller's organization only.
public struct UsersResponse: Codable, Sendable, Equatable {
    /// The matching users, sorted by display name.
    public var users: [User]

    /// An answer with these users.
    public init(users: [User]) { self.users = users }
}

/// `POST /conversations`.
public struct CreateConversationRequest: Codable, Sendable, Equatable {
    /// Direct (exactly one other user) or group.
    public var type: ConversationType
    /// The other participants; the caller is always added.
    public var participantIds: [EntityID]
    /// A group's name (1–200 characters after trimming); a direct conversation takes none.
    public var name: String?

    /// A request with these fields; no name by default.
    public init(type: ConversationType, participantIds: [EntityID], name: String? = nil) {
        self.type = type
        self.participantIds = participantIds
        self.name = name
    }
}

/// `GET /conversations`: newest activity first.
public struct ConversationsResponse: Codable, Sendable, Equatable {
    /// The conversations of this page.
    public var conversations: [Conversation]
    /// v1.2: more conversations follow (the list is paged: at 200 without `limit`).
    public var hasMore: Bool?
    /// v1.2 (`limit`/`before` given): the `before` of the next page.
    public var nextBefore: String?
    /// v1.2 (`limit`/`before` given): give it as `changedSince` to get what changed after
    /// this answer. Keep the first page's: later pages may have moved on.
    public var syncToken: String?

    /// An answer; the v1.2 fields are absent by default.
    public init(conversations: [Conversation], hasMore: Bool? = nil, nextBefore: String? = nil, syncToken: String? = nil) {
        self.conversations = conversations
        self.hasMore = hasMore
        self.nextBefore = nextBefore
        self.syncToken = syncToken
    }
}

/// `GET /conversations?changedSince=TOKEN` (v1.2): the conversations whose view changed since
/// the token's answer (a few changed just before it may come again), and the ones the user left.
public struct ConversationChanges: Codable, Sendable, Equatable {
    /// The conversations whose view changed, as the caller sees them now.
    public var conversations: [Conversation]
    /// The conversations the caller left or was removed from.
    public var removedIds: [EntityID]
    /// Give it as the next `changedSince`.
    public var syncToken: String

    /// An answer with these changes.
    public init(conversations: [Conversation], removedIds: [EntityID], syncToken: String) {
        self.conversations = conversations
        self.removedIds = removedIds
        self.syncToken = syncToken
    }
}

/// `PATCH /conversations/{id}`.
public struct RenameConversationRequest: Codable, Sendable, Equatable {
    /// The new name (1–200 characters after trimming).
    public var name: String

    /// A request with this name.
    public init(name: String) { self.name = name }
}

/// `POST /conversations/{id}/participants`.
public struct AddParticipantsRequest: Codable, Sendable, Equatable {
    /// The users to add; those already in change nothing.
    public var userIds: [EntityID]

    /// A request with these users.
    public init(userIds: [EntityID]) { self.userIds = userIds }
}

/// `GET /conversations/{id}/participants?after=&limit=` (v1.2): members by user id.
public struct ParticipantsPage: Codable, Sendable, Equatable {
    /// Each participant's watermarks, ordered by user id.
    public var participants: [Member]
    /// Whether more follow; ask again with `after` = the last user id of this page.
    public var hasMore: Bool

    /// A page with these members.
    public init(participants: [Member], hasMore: Bool) {
        self.participants = participants
        self.hasMore = hasMore
    }
}

/// `GET /conversations/{id}/messages/{messageId}/reads?after=&limit=` (v1.2): who has read a
/// message, by user id.
public struct ReadersPage: Codable, Sendable, Equatable {
    /// Members whose `readSeq` reaches the message's seq, ordered by user id.
    public var userIds: [EntityID]
    /// Whether more follow; ask again with `after` = the last user id of this page.
    public var hasMore: Bool

    /// A page with these readers.
    public init(userIds: [EntityID], hasMore: Bool) {
        self.userIds = userIds
        self.hasMore = hasMore
    }
}

// MARK: Trust and safety (v1.4)

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

/// `DELETE /users/me` (v1.4): erasing one's own account is confirmed with the password.
public struct EraseAccountRequest: Codable, Sendable, Equatable {
    /// The account's password.
    public var password: String

    /// A confirmation with the password.
    public init(password: String) { self.password = password }
}
