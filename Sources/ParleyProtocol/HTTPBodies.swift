import Foundation

/// `POST /auth/register`: creates the organization when its name is new.
public struct RegisterRequest: Codable, Sendable, Equatable {
    public var organization: String
    public var email: String
    public var password: String
    public var displayName: String
    /// Needed to join an existing organization unless the email's domain is allowed there.
    public var inviteCode: String?

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
    public var organization: Organization
    public init(organization: Organization) { self.organization = organization }
}

/// `PATCH /organization`.
public struct UpdateOrganizationRequest: Codable, Sendable, Equatable {
    public var allowedEmailDomains: [String]
    public init(allowedEmailDomains: [String]) { self.allowedEmailDomains = allowedEmailDomains }
}

/// `POST /organization/invites`.
public struct CreateInviteRequest: Codable, Sendable, Equatable {
    public var email: String?
    /// Default 1.
    public var maxUses: Int?
    /// Default 168 (a week).
    public var expiresInHours: Int?
    public init(email: String? = nil, maxUses: Int? = nil, expiresInHours: Int? = nil) {
        self.email = email
        self.maxUses = maxUses
        self.expiresInHours = expiresInHours
    }
}

/// `POST /organization/invites` answer.
public struct InviteResponse: Codable, Sendable, Equatable {
    public var invite: Invite
    public init(invite: Invite) { self.invite = invite }
}

/// `GET /organization/invites` answer.
public struct InvitesResponse: Codable, Sendable, Equatable {
    public var invites: [Invite]
    public init(invites: [Invite]) { self.invites = invites }
}

/// `PATCH /users/{id}`.
public struct UpdateUserRequest: Codable, Sendable, Equatable {
    public var role: UserRole
    public init(role: UserRole) { self.role = role }
}

/// `PATCH /users/{id}` answer.
public struct UserResponse: Codable, Sendable, Equatable {
    public var user: User
    public init(user: User) { self.user = user }
}

/// `POST /auth/login`.
public struct LoginRequest: Codable, Sendable, Equatable {
    public var organization: String
    public var email: String
    public var password: String

    public init(organization: String, email: String, password: String) {
        self.organization = organization
        self.email = email
        self.password = password
    }
}

/// `POST /auth/logout`: stops push to this device (`deviceToken`), or to every device of the
/// user when it is absent. Access tokens are stateless: the client forgets its own.
public struct LogoutRequest: Codable, Sendable, Equatable {
    public var deviceToken: String?

    public init(deviceToken: String? = nil) {
        self.deviceToken = deviceToken
    }
}

/// The answer to register and login: a bearer token and the user it stands for.
public struct AuthResponse: Codable, Sendable, Equatable {
    public var token: String
    public var user: User

    public init(token: String, user: User) {
        self.token = token
        self.user = user
    }
}

/// `GET /users?q=`: the caller's organization only.
public struct UsersResponse: Codable, Sendable, Equatable {
    public var users: [User]

    public init(users: [User]) { self.users = users }
}

/// `POST /conversations`.
public struct CreateConversationRequest: Codable, Sendable, Equatable {
    public var type: ConversationType
    /// The other participants; the caller is always added.
    public var participantIds: [EntityID]
    public var name: String?

    public init(type: ConversationType, participantIds: [EntityID], name: String? = nil) {
        self.type = type
        self.participantIds = participantIds
        self.name = name
    }
}

/// `GET /conversations`: newest activity first.
public struct ConversationsResponse: Codable, Sendable, Equatable {
    public var conversations: [Conversation]
    /// v1.2: more conversations follow (the list is paged: at 200 without `limit`).
    public var hasMore: Bool?
    /// v1.2 (`limit`/`before` given): the `before` of the next page.
    public var nextBefore: String?
    /// v1.2 (`limit`/`before` given): give it as `changedSince` to get what changed after
    /// this answer. Keep the first page's: later pages may have moved on.
    public var syncToken: String?

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
    public var conversations: [Conversation]
    public var removedIds: [EntityID]
    public var syncToken: String

    public init(conversations: [Conversation], removedIds: [EntityID], syncToken: String) {
        self.conversations = conversations
        self.removedIds = removedIds
        self.syncToken = syncToken
    }
}

/// `PATCH /conversations/{id}`.
public struct RenameConversationRequest: Codable, Sendable, Equatable {
    public var name: String

    public init(name: String) { self.name = name }
}

/// `POST /conversations/{id}/participants`.
public struct AddParticipantsRequest: Codable, Sendable, Equatable {
    public var userIds: [EntityID]

    public init(userIds: [EntityID]) { self.userIds = userIds }
}

/// `GET /conversations/{id}/participants?after=&limit=` (v1.2): members by user id.
public struct ParticipantsPage: Codable, Sendable, Equatable {
    public var participants: [Member]
    public var hasMore: Bool

    public init(participants: [Member], hasMore: Bool) {
        self.participants = participants
        self.hasMore = hasMore
    }
}

/// `GET /conversations/{id}/messages/{messageId}/reads?after=&limit=` (v1.2): who has read a
/// message, by user id.
public struct ReadersPage: Codable, Sendable, Equatable {
    public var userIds: [EntityID]
    public var hasMore: Bool

    public init(userIds: [EntityID], hasMore: Bool) {
        self.userIds = userIds
        self.hasMore = hasMore
    }
}

/// `GET /conversations/{id}/messages`: a page ascending by seq.
public struct MessagesPage: Codable, Sendable, Equatable {
    public var messages: [Message]
    /// Whether more messages lie beyond this page in the direction asked for.
    public var hasMore: Bool

    public init(messages: [Message], hasMore: Bool) {
        self.messages = messages
        self.hasMore = hasMore
    }
}

/// `GET /conversations/{id}/changes`: the catch-up feed, ascending by updatedSeq.
public struct ChangesPage: Codable, Sendable, Equatable {
    public var messages: [Message]
    /// The conversation's counter now.
    public var lastSeq: Int64
    /// Whether to ask again with `since` = the last `updatedSeq` returned.
    public var hasMore: Bool

    public init(messages: [Message], lastSeq: Int64, hasMore: Bool) {
        self.messages = messages
        self.lastSeq = lastSeq
        self.hasMore = hasMore
    }
}

/// `POST /conversations/{id}/messages`, and the data of the `message.send` command
/// (which adds `conversationId`).
public struct SendMessageRequest: Codable, Sendable, Equatable {
    /// Set on the WebSocket command; taken from the path over HTTP.
    public var conversationId: EntityID?
    public var clientMessageId: String
    public var text: String
    public var type: MessageType?
    public var replyToId: EntityID?
    public var attachmentId: EntityID?
    public var metadata: [String: String]?
    /// Forward: copy this message (which the sender can read) instead of giving content.
    public var forwardOf: EntityID?

    public init(
        conversationId: EntityID? = nil, clientMessageId: String, text: String,
        type: MessageType? = nil, replyToId: EntityID? = nil, attachmentId: EntityID? = nil,
        metadata: [String: String]? = nil, forwardOf: EntityID? = nil
    ) {
        self.conversationId = conversationId
        self.clientMessageId = clientMessageId
        self.text = text
        self.type = type
        self.replyToId = replyToId
        self.attachmentId = attachmentId
        self.metadata = metadata
        self.forwardOf = forwardOf
    }

    private enum CodingKeys: String, CodingKey {
        case conversationId, clientMessageId, text, type, replyToId, attachmentId, metadata, forwardOf
    }

    /// Decodes leniently: a missing `text` is "" (valid for non-text types).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        conversationId = try c.decodeIfPresent(EntityID.self, forKey: .conversationId)
        clientMessageId = try c.decode(String.self, forKey: .clientMessageId)
        text = try c.decodeIfPresent(String.self, forKey: .text) ?? ""
        type = try c.decodeIfPresent(MessageType.self, forKey: .type)
        replyToId = try c.decodeIfPresent(EntityID.self, forKey: .replyToId)
        attachmentId = try c.decodeIfPresent(EntityID.self, forKey: .attachmentId)
        metadata = try c.decodeIfPresent([String: String].self, forKey: .metadata)
        forwardOf = try c.decodeIfPresent(EntityID.self, forKey: .forwardOf)
    }
}

/// `PATCH /conversations/{id}/messages/{messageId}`.
public struct EditMessageRequest: Codable, Sendable, Equatable {
    public var text: String

    public init(text: String) { self.text = text }
}

/// `POST /conversations/{id}/messages/{messageId}/reactions`.
public struct ReactionRequest: Codable, Sendable, Equatable {
    public var emoji: String

    public init(emoji: String) { self.emoji = emoji }
}

/// `POST /conversations/{id}/read` and the `read` command: a watermark or a batch of ids.
public struct ReadRequest: Codable, Sendable, Equatable {
    /// Set on the WebSocket command; taken from the path over HTTP.
    public var conversationId: EntityID?
    public var upToSeq: Int64?
    /// A batch of message ids, resolved to the highest seq among them.
    public var messageIds: [EntityID]?

    public init(conversationId: EntityID? = nil, upToSeq: Int64? = nil, messageIds: [EntityID]? = nil) {
        self.conversationId = conversationId
        self.upToSeq = upToSeq
        self.messageIds = messageIds
    }
}

/// The answer to a read: the caller's watermark and unread count after it.
public struct ReadResponse: Codable, Sendable, Equatable {
    public var readSeq: Int64
    public var unreadCount: Int

    public init(readSeq: Int64, unreadCount: Int) {
        self.readSeq = readSeq
        self.unreadCount = unreadCount
    }
}

/// The APNs environment a device token belongs to.
public enum PushEnvironment: String, Codable, Sendable {
    case sandbox, production
}

/// `POST /devices`.
public struct RegisterDeviceRequest: Codable, Sendable, Equatable {
    public var platform: String
    public var token: String
    public var environment: PushEnvironment

    public init(platform: String = "ios", token: String, environment: PushEnvironment) {
        self.platform = platform
        self.token = token
        self.environment = environment
    }
}

/// One hit of `GET /search`.
public struct SearchResult: Codable, Sendable, Equatable {
    public var conversationId: EntityID
    public var seq: Int64
    public var message: Message
    /// The matching text with the hits between `[` and `]`, shortened around them.
    public var snippet: String

    public init(conversationId: EntityID, seq: Int64, message: Message, snippet: String) {
        self.conversationId = conversationId
        self.seq = seq
        self.message = message
        self.snippet = snippet
    }
}

/// `GET /search?q=&conversationId=&limit=&offset=`: newest first.
public struct SearchResponse: Codable, Sendable, Equatable {
    public var results: [SearchResult]
    /// The `offset` of the next page, absent on the last one.
    public var nextOffset: Int?

    public init(results: [SearchResult], nextOffset: Int? = nil) {
        self.results = results
        self.nextOffset = nextOffset
    }
}

/// `POST /attachments/uploads`: opens a resumable upload.
public struct UploadRequest: Codable, Sendable, Equatable {
    public var name: String
    public var contentType: String
    /// The file's total size in bytes.
    public var size: Int64

    public init(name: String, contentType: String, size: Int64) {
        self.name = name
        self.contentType = contentType
        self.size = size
    }
}

/// How far a resumable upload got.
public struct UploadStatus: Codable, Sendable, Equatable {
    public var uploadId: EntityID
    /// Bytes received so far: the offset of the next chunk.
    public var received: Int64
    public var size: Int64

    public init(uploadId: EntityID, received: Int64, size: Int64) {
        self.uploadId = uploadId
        self.received = received
        self.size = size
    }
}
