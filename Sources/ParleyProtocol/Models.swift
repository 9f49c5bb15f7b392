import Foundation

/// What a user may do in their organization.
public enum UserRole: String, Codable, Sendable, Equatable {
    /// Manages invites, allowed domains, roles and deactivation.
    case admin
    /// Everyone else.
    case member
}

/// An organization: everyone in it sees each other; nobody outside sees anything (v1.1).
public struct Organization: Codable, Sendable, Equatable, Identifiable {
    /// The organization's id.
    public var id: EntityID
    /// Its name; registration and login match it without case.
    public var name: String
    /// Email domains whose addresses may join without an invite (whole domains, lowercase).
    public var allowedEmailDomains: [String]
    /// When the organization was created.
    public var createdAt: Date
    /// Messages older than this many days are deleted (v1.4); absent: kept for ever.
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

/// A code that admits new users to an organization (v1.1).
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
    /// `admin` or `member` of their organization (absent from servers before v1.1).
    public var role: UserRole?

    /// A user as the wire carries it.
    public init(
        id: EntityID, organizationId: EntityID, email: String, displayName: String,
        isOnline: Bool = false, lastSeenAt: Date? = nil, role: UserRole? = nil
    ) {
        self.role = role
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
    /// How many participants the conversation has (v1.2). Above the server's large-group size
    /// `participantIds` and `members` are left out on the wire (they decode empty); page them
    /// with `GET /conversations/{id}/participants`.
    public var memberCount: Int
    /// Messages mentioning the caller above `readSeq`, not deleted (v1.3).
    public var mentionCount: Int
    /// Whether the caller muted the conversation (v1.3): no push but mentions; unread still counts.
    public var muted: Bool
    /// When the caller's mute ends by itself; absent for a mute until turned off (v1.3).
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
    /// v1.2 shape of a large group; `memberCount` stays).
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

    /// Decodes v1 (no `memberCount`: the participants counted) and v1.2 (lists left out).
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

/// The kind of a message.
public enum MessageType: String, Codable, Sendable, CaseIterable {
    /// Sent by users: plain text, an attachment of some kind, or a shared location.
    case text, image, video, audio, file, location
    /// Written by the server only (renames, membership changes).
    case system

    /// Whether this type carries an attachment.
    public var carriesAttachment: Bool {
        switch self {
        case .image, .video, .audio, .file: true
        case .text, .location, .system: false
        }
    }
}

/// An uploaded file a message refers to.
public struct Attachment: Codable, Sendable, Equatable, Identifiable {
    /// The attachment's id.
    public var id: EntityID
    /// The file name given at upload.
    public var name: String
    /// The MIME type declared at upload.
    public var contentType: String
    /// The size in bytes.
    public var size: Int64
    /// Where to download it (`/api/v1/attachments/{id}`).
    public var url: String
    /// Width in pixels (PNG, GIF and JPEG images).
    public var width: Int?
    /// Height in pixels (PNG, GIF and JPEG images).
    public var height: Int?
    /// Playing time in milliseconds, when known.
    public var durationMs: Int?

    /// An attachment as the wire carries it.
    public init(
        id: EntityID, name: String, contentType: String, size: Int64, url: String,
        width: Int? = nil, height: Int? = nil, durationMs: Int? = nil
    ) {
        self.id = id
        self.name = name
        self.contentType = contentType
        self.size = size
        self.url = url
        self.width = width
        self.height = height
        self.durationMs = durationMs
    }
}

/// A message, numbered by its conversation's gapless sequence.
public struct Message: Codable, Sendable, Equatable, Identifiable {
    /// The message's id.
    public var id: EntityID
    /// The conversation it belongs to.
    public var conversationId: EntityID
    /// The seq the message took when it was created; its place in the conversation.
    public var seq: Int64
    /// The seq of the message's latest change (equal to `seq` until edited, deleted or reacted to).
    public var updatedSeq: Int64
    /// Who sent it (for a `system` message, who made the change).
    public var senderId: EntityID
    /// The sender's temporary id, unique per sender: what makes retries safe.
    public var clientMessageId: String
    /// What kind of message it is.
    public var type: MessageType
    /// The trimmed text; may be empty for non-text types, and is emptied on delete.
    public var text: String
    /// The message of the same conversation this one replies to.
    public var replyToId: EntityID?
    /// The file of an `image`, `video`, `audio` or `file` message.
    public var attachment: Attachment?
    /// Extra string pairs (a location's `latitude` and `longitude`, a system message's `action`).
    public var metadata: [String: String]?
    /// Emoji to the users who reacted with it.
    public var reactions: [String: [EntityID]]
    /// When the message was stored.
    public var createdAt: Date
    /// When the text was last edited; absent if never.
    public var editedAt: Date?
    /// When the message was deleted; it stays as a tombstone with its `seq`.
    public var deletedAt: Date?
    /// The message this one is a forwarded copy of (an extension of the contract).
    public var forwardedFromId: EntityID?
    /// The root of the thread this message replies in (v1.3); absent for the conversation's own timeline.
    public var threadRootId: EntityID?
    /// A thread root's replies so far (v1.3); absent until the first reply.
    public var thread: ThreadSummary?
    /// The participants the message mentions (v1.3); absent when none.
    public var mentions: [EntityID]?
    /// When the message was pinned (v1.3); absent when it is not.
    public var pinnedAt: Date?
    /// Who pinned it (v1.3).
    public var pinnedBy: EntityID?
    /// The link preview the server read for the message's first URL (v1.3); texts are data, never markup.
    public var preview: LinkPreview?
    /// Who deleted it (v1.4): the sender, or an admin moderating; absent when not deleted or
    /// when retention or erasure removed it.
    public var deletedBy: EntityID?
    /// True in the views and events of a user who blocks the sender (v1.4); absent otherwise.
    public var senderBlocked: Bool?

    /// A message as the wire carries it.
    public init(
        id: EntityID, conversationId: EntityID, seq: Int64, updatedSeq: Int64, senderId: EntityID,
        clientMessageId: String, type: MessageType, text: String, replyToId: EntityID? = nil,
        attachment: Attachment? = nil, metadata: [String: String]? = nil,
        reactions: [String: [EntityID]] = [:], createdAt: Date, editedAt: Date? = nil,
        deletedAt: Date? = nil, forwardedFromId: EntityID? = nil, threadRootId: EntityID? = nil,
        thread: ThreadSummary? = nil, mentions: [EntityID]? = nil, pinnedAt: Date? = nil, pinnedBy: EntityID? = nil,
        preview: LinkPreview? = nil, deletedBy: EntityID? = nil, senderBlocked: Bool? = nil
    ) {
        self.deletedBy = deletedBy
        self.senderBlocked = senderBlocked
        self.threadRootId = threadRootId
        self.thread = thread
        self.mentions = mentions
        self.pinnedAt = pinnedAt
        self.pinnedBy = pinnedBy
        self.preview = preview
        self.id = id
        self.conversationId = conversationId
        self.seq = seq
        self.updatedSeq = updatedSeq
        self.senderId = senderId
        self.clientMessageId = clientMessageId
        self.type = type
        self.text = text
        self.replyToId = replyToId
        self.attachment = attachment
        self.metadata = metadata
        self.reactions = reactions
        self.createdAt = createdAt
        self.editedAt = editedAt
        self.deletedAt = deletedAt
        self.forwardedFromId = forwardedFromId
    }

    private enum CodingKeys: String, CodingKey {
        case id, conversationId, seq, updatedSeq, senderId, clientMessageId, type, text
        case replyToId, attachment, metadata, reactions, createdAt, editedAt, deletedAt, forwardedFromId
        case threadRootId, thread, mentions, pinnedAt, pinnedBy, preview, deletedBy, senderBlocked
    }

    /// Decodes leniently: a missing `reactions` is empty and a missing `text` is "".
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(EntityID.self, forKey: .id)
        conversationId = try c.decode(EntityID.self, forKey: .conversationId)
        seq = try c.decode(Int64.self, forKey: .seq)
        updatedSeq = try c.decodeIfPresent(Int64.self, forKey: .updatedSeq) ?? seq
        senderId = try c.decode(EntityID.self, forKey: .senderId)
        clientMessageId = try c.decode(String.self, forKey: .clientMessageId)
        type = try c.decode(MessageType.self, forKey: .type)
        text = try c.decodeIfPresent(String.self, forKey: .text) ?? ""
        replyToId = try c.decodeIfPresent(EntityID.self, forKey: .replyToId)
        attachment = try c.decodeIfPresent(Attachment.self, forKey: .attachment)
        metadata = try c.decodeIfPresent([String: String].self, forKey: .metadata)
        reactions = try c.decodeIfPresent([String: [EntityID]].self, forKey: .reactions) ?? [:]
        createdAt = try c.decode(Date.self, forKey: .createdAt)
        editedAt = try c.decodeIfPresent(Date.self, forKey: .editedAt)
        deletedAt = try c.decodeIfPresent(Date.self, forKey: .deletedAt)
        forwardedFromId = try c.decodeIfPresent(EntityID.self, forKey: .forwardedFromId)
        threadRootId = try c.decodeIfPresent(EntityID.self, forKey: .threadRootId)
        thread = try c.decodeIfPresent(ThreadSummary.self, forKey: .thread)
        mentions = try c.decodeIfPresent([EntityID].self, forKey: .mentions)
        pinnedAt = try c.decodeIfPresent(Date.self, forKey: .pinnedAt)
        pinnedBy = try c.decodeIfPresent(EntityID.self, forKey: .pinnedBy)
        preview = try c.decodeIfPresent(LinkPreview.self, forKey: .preview)
        deletedBy = try c.decodeIfPresent(EntityID.self, forKey: .deletedBy)
        senderBlocked = try c.decodeIfPresent(Bool.self, forKey: .senderBlocked)
    }
}

/// A thread root's replies (v1.3): how many, and the newest.
public struct ThreadSummary: Codable, Sendable, Equatable {
    /// How many replies the thread has, deleted ones included (they stay in it as tombstones).
    public var replyCount: Int
    /// When the newest reply was sent.
    public var lastReplyAt: Date
    /// The newest reply's seq.
    public var lastReplySeq: Int64

    /// A summary from its parts.
    public init(replyCount: Int, lastReplyAt: Date, lastReplySeq: Int64) {
        self.replyCount = replyCount
        self.lastReplyAt = lastReplyAt
        self.lastReplySeq = lastReplySeq
    }
}

/// What the server read from a message's first link (v1.3): plain text, at most 300 characters each.
public struct LinkPreview: Codable, Sendable, Equatable {
    /// The URL fetched (the message's first http(s) URL).
    public var url: String
    /// The page's `og:title` or `<title>`.
    public var title: String?
    /// The page's `og:description` or meta description.
    public var description: String?
    /// The page's `og:image`, absolute; clients load it through their media cache.
    public var imageUrl: String?
    /// The page's `og:site_name`.
    public var siteName: String?

    /// A preview from its parts.
    public init(url: String, title: String? = nil, description: String? = nil, imageUrl: String? = nil, siteName: String? = nil) {
        self.url = url
        self.title = title
        self.description = description
        self.imageUrl = imageUrl
        self.siteName = siteName
    }
}
