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
    /// What to do with the message retention: absent, unchanged.
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

/// `PATCH /users/me`: the caller's own name and picture. At least one field; a field left
/// out is left as it is.
public struct UpdateProfileRequest: Codable, Sendable, Equatable {
    /// The new display name (1–100 characters after trimming, no control characters).
    public var displayName: String?
    /// What to do with the picture: absent, unchanged.
    public var avatar: AvatarChange?

    /// How a request changes the picture.
    public enum AvatarChange: Sendable, Equatable {
        /// Show this image, which the caller uploaded (`POST /attachments`).
        case set(EntityID)
        /// No picture (`avatarId: null` on the wire).
        case remove
    }

    /// A request changing these fields.
    public init(displayName: String? = nil, avatar: AvatarChange? = nil) {
        self.displayName = displayName
        self.avatar = avatar
    }

    private enum CodingKeys: String, CodingKey { case displayName, avatarId }

    /// Reads `avatarId`: an attachment id, `null` (remove), or absent (unchanged).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        displayName = try c.decodeIfPresent(String.self, forKey: .displayName)
        if c.contains(.avatarId) {
            avatar = try c.decodeNil(forKey: .avatarId) ? .remove : .set(try c.decode(EntityID.self, forKey: .avatarId))
        }
    }

    /// Writes `avatarId` only when it changes.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(displayName, forKey: .displayName)
        switch avatar {
        case .set(let id): try c.encode(id, forKey: .avatarId)
        case .remove: try c.encodeNil(forKey: .avatarId)
        case nil: break
        }
    }
}

/// `PATCH /users/{id}` and `PATCH /users/me` answer.
public struct UserResponse: Codable, Sendable, Equatable {
    /// The user after the change.
    public var user: User
    /// An answer with this user.
    public init(user: User) { self.user = user }
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
    /// More conversations follow (the list is paged: at 200 without `limit`).
    public var hasMore: Bool?
    /// With `limit`/`before` given: the `before` of the next page.
    public var nextBefore: String?
    /// With `limit`/`before` given: give it as `changedSince` to get what changed after
    /// this answer. Keep the first page's: later pages may have moved on.
    public var syncToken: String?

    /// An answer; the paging and sync fields are absent by default.
    public init(conversations: [Conversation], hasMore: Bool? = nil, nextBefore: String? = nil, syncToken: String? = nil) {
        self.conversations = conversations
        self.hasMore = hasMore
        self.nextBefore = nextBefore
        self.syncToken = syncToken
    }
}

/// `GET /conversations?changedSince=TOKEN`: the conversations whose view changed since
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

/// `GET /conversations/{id}/participants?after=&limit=`: members by user id.
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

/// `GET /conversations/{id}/messages/{messageId}/reads?after=&limit=`: who has read a
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
