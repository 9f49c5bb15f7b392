import Foundation

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

    /// The type of a message that sends a file of this MIME type: a picture, a video or a
    /// sound shown as such, anything else as a file.
    public static func forAttachment(contentType: String) -> MessageType {
        let type = contentType.lowercased()
        if type.hasPrefix("image/") { return .image }
        if type.hasPrefix("video/") { return .video }
        if type.hasPrefix("audio/") { return .audio }
        return .file
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

    /// Where the attachment `id` is downloaded, relative to the server: `/api/v1/attachments/{id}`.
    public static func path(of id: EntityID) -> String { "/api/v1/attachments/\(id)" }

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
    /// The root of the thread this message replies in; absent for the conversation's own timeline.
    public var threadRootId: EntityID?
    /// A thread root's replies so far; absent until the first reply.
    public var thread: ThreadSummary?
    /// The participants the message mentions; absent when none.
    public var mentions: [EntityID]?
    /// When the message was pinned; absent when it is not.
    public var pinnedAt: Date?
    /// Who pinned it.
    public var pinnedBy: EntityID?
    /// The link preview the server read for the message's first URL; texts are data, never markup.
    public var preview: LinkPreview?
    /// Who deleted it: the sender, or an admin moderating; absent when not deleted or
    /// when retention or erasure removed it.
    public var deletedBy: EntityID?
    /// True in the views and events of a user who blocks the sender; absent otherwise.
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

/// A thread root's replies: how many, and the newest.
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

/// What the server read from a message's first link: plain text, at most 300 characters each.
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
