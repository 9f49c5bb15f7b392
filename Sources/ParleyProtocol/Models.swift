import Foundation

/// What a user may do in their organization.
public enum UserRole: String, Codable, Sendable, Equatable {
    /// Manages invites, allowed domains, roles and deactivation.
    case admin
    /// Everyone else.
    case member
}

/// An organization: everyone in it sees each other; nobody outside sees anything.
public struct Organization: Codable, Sendable, Equatable, Identifiable {
    /// The organization's id.
    public var id: EntityID
    /// Its name; registration and login match it without case.
    public var name: String
    /// Email domains whose addresses may join without an invite (whole domains, lowercase).
    public var allowedEmailDomains: [String]
    /// When the organization was created.
    public var createdAt: Date
    /// Messages older than this many days are deleted; absent: kept for ever.
    public var messageRetentionDays: Int?

    /// An organization with these fields.
    public init(id: EntityID, name: String, allowedEmailDomains: [String], createdAt: Date, messageRetentionDays: Int? = nil) {
        self.id = id
        self.name = name
        self.allowedEmailDomains = allowedEmailDomains
        self.createdAt = createdAt
        self.messageRetentionDays = messageRetentionDays
    }
}

/// A code that admits new users to an organization.
public struct Invite: Codable, Sendable, Equatable {
    /// The secret to register with (long and random).
    public var code: String
    /// The organization it admits to.
    public var organizationId: EntityID
    /// When set, only this address may use it.
    public var email: String?
    /// How many registrations it admits in all.
    public var maxUses: Int
    /// How many registrations have used it so far.
    public var uses: Int
    /// After this it admits nobody.
    public var expiresAt: Date
    /// The admin who made it.
    public var createdBy: EntityID

    /// An invite with these fields.
    public init(code: String, organizationId: EntityID, email: String?, maxUses: Int, uses: Int, expiresAt: Date, createdBy: EntityID) {
        self.code = code
        self.organizationId = organizationId
        self.email = email
        self.maxUses = maxUses
        self.uses = uses
        self.expiresAt = expiresAt
        self.createdBy = createdBy
    }
}

/// A person in an organization, as the directory and the gateway show them.
public struct User: Codable, Sendable, Equatable, Identifiable {
    /// The user's id.
    public var id: EntityID
    /// The organization the user belongs to.
    public var organizationId: EntityID
    /// The address they sign in with, trimmed and lowercased.
    public var email: String
    /// The name others see (1–100 characters).
    public var displayName: String
    /// Whether the user has at least one live connection.
    public var isOnline: Bool
    /// When the user's last connection closed; absent if never seen or online.
    public var lastSeenAt: Date?
    /// `admin` or `member` of their organization (absent from older servers).
    public var role: UserRole?
    /// Their picture: an image attachment every member of the organization may download
    /// (`/api/v1/attachments/{id}`, immutable, so a new picture is a new URL); absent when
    /// they have none.
    public var avatarUrl: String?

    /// A user as the wire carries it.
    public init(
        id: EntityID, organizationId: EntityID, email: String, displayName: String,
        isOnline: Bool = false, lastSeenAt: Date? = nil, role: UserRole? = nil, avatarUrl: String? = nil
    ) {
        self.role = role
        self.avatarUrl = avatarUrl
        self.id = id
        self.organizationId = organizationId
        self.email = email
        self.displayName = displayName
        self.isOnline = isOnline
        self.lastSeenAt = lastSeenAt
    }
}

/// The kind of a conversation.
public enum ConversationType: String, Codable, Sendable, CaseIterable {
    /// Between exactly two users; at most one per pair; cannot be changed.
    case direct
    /// Any number of participants; can be renamed and change members.
    case group
}

/// One participant's watermarks in a conversation.
public struct Member: Codable, Sendable, Equatable {
    /// The participant these watermarks belong to.
    public var userId: EntityID
    /// "I have read everything up to this seq."
    public var readSeq: Int64
    /// "I have received everything up to this seq."
    public var deliveredSeq: Int64

    /// A member's watermarks.
    public init(userId: EntityID, readSeq: Int64, deliveredSeq: Int64) {
        self.userId = userId
        self.readSeq = readSeq
        self.deliveredSeq = deliveredSeq
    }
}

/// A conversation as one caller sees it (`unreadCount` and `readSeq` are the caller's own).
public struct Conversation: Codable, Sendable, Equatable, Identifiable {
    /// The conversation's id.
    public var id: EntityID
    /// Direct or group.
    public var type: ConversationType
    /// A group's name; absent for direct conversations and unnamed groups.
    public var name: String?
    /// Everyone in the conversation, the caller included (left out on the wire for a large group).
    public var participantIds: [EntityID]
    /// When the conversation was created.
    public var createdAt: Date
    /// When its newest message was sent (else its creation); edits do not move it.
    public var lastActivityAt: Date
    /// The conversation's sequence counter: the seq of its latest change.
    public var lastSeq: Int64
    /// The message with the highest seq, system messages included; absent before any.
    public var lastMessage: Message?
    /// The caller's unread count: others' messages, not deleted or `system`, above `readSeq`.
    public var unreadCount: Int
    /// The caller's read watermark: everything up to this seq is read.
    public var readSeq: Int64
    /// Each participant's watermarks (left out on the wire for a large group).
    public var members: [Member]
    /// How many participants the conversation has. Above the server's large-group size
    /// `participantIds` and `members` are left out on the wire (they decode empty); page them
    /// with `GET /conversations/{id}/participants`.
    public var memberCount: Int
    /// Messages mentioning the caller above `readSeq`, not deleted.
    public var mentionCount: Int
    /// Whether the caller muted the conversation: no push but mentions; unread still counts.
    public var muted: Bool
    /// When the caller's mute ends by itself; absent for a mute until turned off.
    public var mutedUntil: Date?

    /// Whether `participantIds` and `members` list everyone (false for a large group's
    /// conversation as the wire carries it).
    public var listsAllMembers: Bool { participantIds.count == memberCount }

    /// A conversation as the wire carries it; `memberCount` defaults to the participants given.
    public init(
        id: EntityID, type: ConversationType, name: String? = nil, participantIds: [EntityID],
        createdAt: Date, lastActivityAt: Date, lastSeq: Int64, lastMessage: Message? = nil,
        unreadCount: Int, readSeq: Int64, members: [Member], memberCount: Int? = nil,
        mentionCount: Int = 0, muted: Bool = false, mutedUntil: Date? = nil
    ) {
        self.memberCount = memberCount ?? participantIds.count
        self.mentionCount = mentionCount
        self.muted = muted
        self.mutedUntil = mutedUntil
        self.id = id
        self.type = type
        self.name = name
        self.participantIds = participantIds
        self.createdAt = createdAt
        self.lastActivityAt = lastActivityAt
        self.lastSeq = lastSeq
        self.lastMessage = lastMessage
        self.unreadCount = unreadCount
        self.readSeq = readSeq
        self.members = members
    }

    /// This conversation without its member lists when it has more than `limit` members (the
    /// shape of a large group on the wire; `memberCount` stays).
    public func listingMembers(upTo limit: Int) -> Conversation {
        guard memberCount > limit else { return self }
        var trimmed = self
        trimmed.participantIds = []
        trimmed.members = []
        return trimmed
    }

    private enum CodingKeys: String, CodingKey {
        case id, type, name, participantIds, createdAt, lastActivityAt, lastSeq, lastMessage, unreadCount, readSeq, members
        case memberCount, mentionCount, muted, mutedUntil
    }

    /// Decodes a conversation without `memberCount` (an older server's: the participants are
    /// counted) and a large group's (lists left out).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(EntityID.self, forKey: .id)
        type = try c.decode(ConversationType.self, forKey: .type)
        name = try c.decodeIfPresent(String.self, forKey: .name)
        participantIds = try c.decodeIfPresent([EntityID].self, forKey: .participantIds) ?? []
        createdAt = try c.decode(Date.self, forKey: .createdAt)
        lastActivityAt = try c.decode(Date.self, forKey: .lastActivityAt)
        lastSeq = try c.decode(Int64.self, forKey: .lastSeq)
        lastMessage = try c.decodeIfPresent(Message.self, forKey: .lastMessage)
        unreadCount = try c.decode(Int.self, forKey: .unreadCount)
        readSeq = try c.decode(Int64.self, forKey: .readSeq)
        members = try c.decodeIfPresent([Member].self, forKey: .members) ?? []
        memberCount = try c.decodeIfPresent(Int.self, forKey: .memberCount) ?? participantIds.count
        mentionCount = try c.decodeIfPresent(Int.self, forKey: .mentionCount) ?? 0
        muted = try c.decodeIfPresent(Bool.self, forKey: .muted) ?? false
        mutedUntil = try c.decodeIfPresent(Date.self, forKey: .mutedUntil)
    }

    /// Writes the member lists only when they are complete (see ``listingMembers(upTo:)``).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(type, forKey: .type)
        try c.encodeIfPresent(name, forKey: .name)
        if listsAllMembers {
            try c.encode(participantIds, forKey: .participantIds)
            try c.encode(members, forKey: .members)
        }
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(lastActivityAt, forKey: .lastActivityAt)
        try c.encode(lastSeq, forKey: .lastSeq)
        try c.encodeIfPresent(lastMessage, forKey: .lastMessage)
        try c.encode(unreadCount, forKey: .unreadCount)
        try c.encode(readSeq, forKey: .readSeq)
        try c.encode(memberCount, forKey: .memberCount)
        try c.encode(mentionCount, forKey: .mentionCount)
        try c.encode(muted, forKey: .muted)
        try c.encodeIfPresent(mutedUntil, forKey: .mutedUntil)
    }
}
