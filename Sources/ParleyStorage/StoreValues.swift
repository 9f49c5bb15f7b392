import Foundation
import ParleyProtocol

/// A validated message ready to be stored (the chat layer has checked text, type and limits).
public struct MessageDraft: Sendable, Equatable {
    /// The conversation to send into.
    public var conversationId: EntityID
    /// The user sending it.
    public var senderId: EntityID
    /// The sender's own id for the message; a repeated `(senderId, clientMessageId)` returns the original.
    public var clientMessageId: String
    /// The message type.
    public var type: MessageType
    /// The trimmed text (empty for a forward, which copies the source's).
    public var text: String
    /// The message this one replies to, if any.
    public var replyToId: EntityID?
    /// The uploaded attachment it carries, if any.
    public var attachmentId: EntityID?
    /// Extra key-value pairs (a location's coordinates, a system message's `action`), if any.
    public var metadata: [String: String]?
    /// Forward: the message to copy (the store checks the sender can read it).
    public var forwardedFromId: EntityID?
    /// The thread root it replies in (the rules check it).
    public var threadRootId: EntityID?
    /// The participants it mentions, without repeats, in the order given (the rules check them).
    public var mentions: [EntityID] = []
    /// When it was sent: the message's `createdAt` and the conversation's new activity time.
    public var now: Date

    /// A draft with every field; the optional ones default to nil.
    public init(
        conversationId: EntityID, senderId: EntityID, clientMessageId: String, type: MessageType,
        text: String, replyToId: EntityID? = nil, attachmentId: EntityID? = nil,
        metadata: [String: String]? = nil, forwardedFromId: EntityID? = nil, threadRootId: EntityID? = nil,
        mentions: [EntityID] = [], now: Date
    ) {
        self.forwardedFromId = forwardedFromId
        self.threadRootId = threadRootId
        self.mentions = mentions
        self.conversationId = conversationId
        self.senderId = senderId
        self.clientMessageId = clientMessageId
        self.type = type
        self.text = text
        self.replyToId = replyToId
        self.attachmentId = attachmentId
        self.metadata = metadata
        self.now = now
    }
}

/// What a send did: the stored message, whether this call created it, and who to tell.
public struct SendResult: Sendable, Equatable {
    /// The stored message (the original when the pair existed).
    public var message: Message
    /// False when the `(senderId, clientMessageId)` pair existed: nothing was written.
    public var created: Bool
    /// Everyone in the conversation at commit time.
    public var participantIds: [EntityID]
    /// A thread reply's root as the reply left it (its new count, at the next seq), to announce after the reply.
    public var rootUpdate: Message? = nil

    /// A send's outcome.
    public init(message: Message, created: Bool, participantIds: [EntityID], rootUpdate: Message? = nil) {
        self.message = message
        self.created = created
        self.participantIds = participantIds
        self.rootUpdate = rootUpdate
    }
}

/// What a conversation change did, for the answer and for fan-out.
public struct ConversationChange: Sendable, Equatable {
    /// The conversation as the caller sees it after the change.
    public var conversation: Conversation
    /// True when a conversation was created (false for an existing direct one).
    public var created: Bool
    /// The system message the change wrote, if it changed anything.
    public var systemMessage: Message?
    /// Everyone to tell: participants after the change plus anyone removed by it.
    public var audience: [EntityID]

    /// A conversation change's outcome.
    public init(conversation: Conversation, created: Bool, systemMessage: Message? = nil, audience: [EntityID]) {
        self.conversation = conversation
        self.created = created
        self.systemMessage = systemMessage
        self.audience = audience
    }
}

/// What a receipt did to one member's watermarks.
public struct WatermarkChange: Sendable, Equatable {
    /// The member's watermarks after the change.
    public var member: Member
    /// The member's unread count after the change.
    public var unreadCount: Int
    /// False when the watermarks were already at or past the target (nothing written).
    public var changed: Bool
    /// Everyone in the conversation, to send the receipt to.
    public var participantIds: [EntityID]
    /// The conversation's last seq when the count was taken (the count covers every change up to it).
    public var lastSeq: Int64 = 0

    /// A receipt's outcome.
    public init(member: Member, unreadCount: Int, changed: Bool, participantIds: [EntityID], lastSeq: Int64 = 0) {
        self.member = member
        self.unreadCount = unreadCount
        self.changed = changed
        self.participantIds = participantIds
        self.lastSeq = lastSeq
    }
}

/// What an edit, delete or reaction did to a message.
public struct MessageChange: Sendable, Equatable {
    /// The message after the request.
    public var message: Message
    /// False when it changed nothing (no seq taken, nobody told).
    public var changed: Bool
    /// Everyone in the conversation.
    public var participantIds: [EntityID]

    /// A message change's outcome.
    public init(message: Message, changed: Bool, participantIds: [EntityID]) {
        self.message = message
        self.changed = changed
        self.participantIds = participantIds
    }
}

/// A change to one message.
public enum MessageEdit: Sendable, Equatable {
    /// New text (sender only).
    case text(String)
    /// Delete: empties text, metadata and attachment; keeps the seq as a tombstone (sender only).
    case delete
    /// Add (true) or remove (false) the caller's reaction with an emoji.
    case reaction(String, add: Bool)
}

/// An uploaded file's record; the bytes live in the data directory under `sha256`.
public struct StoredAttachment: Sendable, Equatable {
    /// The attachment's id.
    public var id: EntityID
    /// The user who uploaded it.
    public var uploaderId: EntityID
    /// The uploader's organization.
    public var organizationId: EntityID
    /// The file name given with the upload.
    public var name: String
    /// The checked content type.
    public var contentType: String
    /// The size in bytes.
    public var size: Int64
    /// Hex SHA-256 of the content: the file's name on disk.
    public var sha256: String
    /// The width in pixels, when known.
    public var width: Int?
    /// The height in pixels, when known.
    public var height: Int?
    /// When the attachment was recorded.
    public var createdAt: Date

    /// An attachment record as a store keeps it.
    public init(
        id: EntityID, uploaderId: EntityID, organizationId: EntityID, name: String, contentType: String, size: Int64,
        sha256: String, width: Int? = nil, height: Int? = nil, createdAt: Date
    ) {
        self.id = id
        self.uploaderId = uploaderId
        self.organizationId = organizationId
        self.name = name
        self.contentType = contentType
        self.size = size
        self.sha256 = sha256
        self.width = width
        self.height = height
        self.createdAt = createdAt
    }

    /// The wire form.
    public var wire: Attachment {
        Attachment(
            id: id, name: name, contentType: contentType, size: size, url: Attachment.path(of: id),
            width: width, height: height)
    }
}

/// A new conversation to create.
public struct NewConversation: Sendable, Equatable {
    /// The organization it belongs to (the creator's).
    public var organizationId: EntityID
    /// The user creating it.
    public var creatorId: EntityID
    /// Direct or group.
    public var type: ConversationType
    /// A group's name; nil for a direct conversation or an unnamed group.
    public var name: String?
    /// The other participants (the creator is always added).
    public var participantIds: [EntityID]
    /// When it is created.
    public var now: Date

    /// A new conversation with every field; `name` defaults to nil.
    public init(
        organizationId: EntityID, creatorId: EntityID, type: ConversationType, name: String? = nil,
        participantIds: [EntityID], now: Date
    ) {
        self.organizationId = organizationId
        self.creatorId = creatorId
        self.type = type
        self.name = name
        self.participantIds = participantIds
        self.now = now
    }
}
/// What authentication needs to know of a user, cached by the server.
public struct UserState: Sendable, Equatable {
    /// The organization the user belongs to.
    public var organizationId: EntityID
    /// False once the user has been deactivated.
    public var isActive: Bool
    /// A user's state from its parts.
    public init(organizationId: EntityID, isActive: Bool) {
        self.organizationId = organizationId
        self.isActive = isActive
    }
}

extension ParleyStore {
    /// Registers with the open rule (any organization by name): store tests and tools.
    public func register(organization: String, email: String, displayName: String, passwordHash: String, now: Date) async throws -> User {
        try await register(
            Registration(organization: organization, email: email, displayName: displayName, passwordHash: passwordHash, now: now)
        ) { organization, _ in Admission(role: organization == nil ? .admin : .member) }
    }

    /// A store without batches has nothing to tell.
    public func observeSendBatches(_ observer: @escaping @Sendable (Int, Duration) -> Void) {}
}

/// Where a page of the conversation list ends: the last conversation's activity time and id
/// (the list is ordered by activity, newest first, then by id). On the wire: `"<ms>.<id>"`.
public struct ListCursor: Sendable, Equatable {
    /// The last conversation's activity time, in milliseconds since 1970.
    public var lastActivityMs: Int64
    /// The last conversation's id.
    public var id: EntityID

    /// A cursor after the conversation with this activity time and id.
    public init(lastActivityMs: Int64, id: EntityID) {
        self.lastActivityMs = lastActivityMs
        self.id = id
    }

    /// Parses the wire form; nil when malformed.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", maxSplits: 1)
        guard parts.count == 2, let ms = Int64(parts[0]), let id = EntityID(String(parts[1])) else { return nil }
        self.init(lastActivityMs: ms, id: id)
    }

    /// The wire form, `"<ms>.<id>"`.
    public var wire: String { "\(lastActivityMs).\(id)" }
}

/// Whom a user blocks and who blocks them, as the block directory keeps it.
public struct BlockRelations: Sendable, Equatable {
    /// The users this user blocks.
    public var blocks: Set<EntityID>
    /// The users who block this user.
    public var blockedBy: Set<EntityID>

    /// Relations from their two sides.
    public init(blocks: Set<EntityID> = [], blockedBy: Set<EntityID> = []) {
        self.blocks = blocks
        self.blockedBy = blockedBy
    }
}

/// A message by id and conversation (what a sweep needs to take its conversation first).
public struct MessageRef: Sendable, Equatable {
    /// The message.
    public var id: EntityID
    /// Its conversation.
    public var conversationId: EntityID

    /// A reference from its parts.
    public init(id: EntityID, conversationId: EntityID) {
        self.id = id
        self.conversationId = conversationId
    }
}
