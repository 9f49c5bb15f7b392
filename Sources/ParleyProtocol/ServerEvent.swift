import Foundation

/// Data of `hello`, the first frame on every connection.
public struct HelloEvent: Codable, Sendable, Equatable {
    /// The connected user.
    public var user: User
    /// Identifies this connection in the server's logs.
    public var sessionId: String
    /// The client should send something at least this often; silence for twice as long drops it.
    public var heartbeatSeconds: Int
    /// Which copy of the server's data this is. It changes only when the server is restored
    /// from a backup: a client that had cached what another copy served (possibly more than
    /// this one has) starts its cache again. Absent from older servers.
    public var storeId: String?

    /// A hello with these fields.
    public init(user: User, sessionId: String, heartbeatSeconds: Int, storeId: String? = nil) {
        self.user = user
        self.sessionId = sessionId
        self.heartbeatSeconds = heartbeatSeconds
        self.storeId = storeId
    }
}

/// Data of `message.created` and `message.updated`.
public struct MessageEvent: Codable, Sendable, Equatable {
    /// The message in its current state.
    public var message: Message

    /// An event carrying this message.
    public init(message: Message) { self.message = message }
}

/// Data of `conversation.updated`.
public struct ConversationEvent: Codable, Sendable, Equatable {
    /// The conversation as the receiving user sees it.
    public var conversation: Conversation

    /// An event carrying this conversation.
    public init(conversation: Conversation) { self.conversation = conversation }
}

/// Data of the `typing` event.
public struct TypingEvent: Codable, Sendable, Equatable {
    /// The conversation typed in.
    public var conversationId: EntityID
    /// Who is typing.
    public var userId: EntityID
    /// False once they stop, or 3 s after their last `true`.
    public var isTyping: Bool

    /// An event with these fields.
    public init(conversationId: EntityID, userId: EntityID, isTyping: Bool) {
        self.conversationId = conversationId
        self.userId = userId
        self.isTyping = isTyping
    }
}

/// Data of the `receipt` event: one member's watermarks after a change.
public struct ReceiptEvent: Codable, Sendable, Equatable {
    /// The conversation the watermarks are in.
    public var conversationId: EntityID
    /// The member whose watermarks changed.
    public var userId: EntityID
    /// Everything up to this seq is read.
    public var readSeq: Int64
    /// Everything up to this seq is received.
    public var deliveredSeq: Int64

    /// An event with these fields.
    public init(conversationId: EntityID, userId: EntityID, readSeq: Int64, deliveredSeq: Int64) {
        self.conversationId = conversationId
        self.userId = userId
        self.readSeq = readSeq
        self.deliveredSeq = deliveredSeq
    }
}

/// Data of the `user.updated` event.
public struct UserEvent: Codable, Sendable, Equatable {
    /// The user as they are now (without presence: `presence` events carry that).
    public var user: User
    /// An event carrying this user.
    public init(user: User) { self.user = user }
}

/// Data of the `presence` event.
public struct PresenceEvent: Codable, Sendable, Equatable {
    /// The user whose presence changed.
    public var userId: EntityID
    /// Whether the user has a live connection.
    public var isOnline: Bool
    /// When their last connection closed; sent when they go offline.
    public var lastSeenAt: Date?
    /// The conversation the user is looking at; only sent to its participants.
    public var conversationId: EntityID?

    /// An event with these fields; the optional ones are absent by default.
    public init(userId: EntityID, isOnline: Bool, lastSeenAt: Date? = nil, conversationId: EntityID? = nil) {
        self.userId = userId
        self.isOnline = isOnline
        self.lastSeenAt = lastSeenAt
        self.conversationId = conversationId
    }
}

/// New messages in a large group, one frame for every member (`conversation.activity`).
///
/// Sent in place of each member's own `conversation.updated` view after new messages, so the
/// server reads and encodes nothing per member. A client applies it to the conversation it
/// keeps: the newer `lastSeq` wins; unread counts follow from the `message.created` events it
/// applied (another sender's countable message above its `readSeq` adds one), and a client that
/// finds `lastSeq` beyond what it applied has missed events and reads the conversation again.
public struct ConversationActivityEvent: Codable, Sendable, Equatable {
    /// The conversation with new messages.
    public var conversationId: EntityID
    /// The conversation's sequence after the newest message.
    public var lastSeq: Int64
    /// When the newest message was sent.
    public var lastActivityAt: Date
    /// The newest message.
    public var lastMessage: Message

    /// An event with these fields.
    public init(conversationId: EntityID, lastSeq: Int64, lastActivityAt: Date, lastMessage: Message) {
        self.conversationId = conversationId
        self.lastSeq = lastSeq
        self.lastActivityAt = lastActivityAt
        self.lastMessage = lastMessage
    }
}

/// Data of `receipt.summary`: in a large group, instead of each member's `receipt`,
/// how many members have read and received up to the conversation's newest seq.
public struct ReceiptSummaryEvent: Codable, Sendable, Equatable {
    /// The conversation the counts are for.
    public var conversationId: EntityID
    /// The newest seq the counts are for.
    public var seq: Int64
    /// Members whose `readSeq` reaches `seq`.
    public var readCount: Int
    /// Members whose `deliveredSeq` reaches `seq`.
    public var deliveredCount: Int

    /// An event with these fields.
    public init(conversationId: EntityID, seq: Int64, readCount: Int, deliveredCount: Int) {
        self.conversationId = conversationId
        self.seq = seq
        self.readCount = readCount
        self.deliveredCount = deliveredCount
    }
}

/// Data of `typing.summary`: in a large group, how many members are typing when more
/// than the few named in `typing` events are.
public struct TypingSummaryEvent: Codable, Sendable, Equatable {
    /// The conversation typed in.
    public var conversationId: EntityID
    /// How many members are typing in all.
    public var count: Int

    /// An event with these fields.
    public init(conversationId: EntityID, count: Int) {
        self.conversationId = conversationId
        self.count = count
    }
}

/// An event the server pushes without being asked (`{"type", "data"}`, no id).
public enum ServerEvent: Codable, Sendable, Equatable {
    /// `hello`: the first frame on every connection.
    case hello(HelloEvent)
    /// `message.created`: a new message.
    case messageCreated(MessageEvent)
    /// `message.updated`: a message was edited, deleted or reacted to.
    case messageUpdated(MessageEvent)
    /// `conversation.updated`: the receiver's view of a conversation after a change.
    case conversationUpdated(ConversationEvent)
    /// `typing`: someone started or stopped typing.
    case typing(TypingEvent)
    /// `receipt`: a member's watermarks moved.
    case receipt(ReceiptEvent)
    /// `presence`: a user came online, went offline or changed focus.
    case presence(PresenceEvent)
    /// `receipt.summary`: a large group's read and delivered counts.
    case receiptSummary(ReceiptSummaryEvent)
    /// `typing.summary`: how many members of a large group are typing.
    case typingSummary(TypingSummaryEvent)
    /// `conversation.activity`: new messages in a large group.
    case conversationActivity(ConversationActivityEvent)
    /// `user.updated`: someone in the organization changed their name or picture.
    case userUpdated(UserEvent)

    /// The `type` string of the frame.
    public var type: String {
        switch self {
        case .hello: "hello"
        case .messageCreated: "message.created"
        case .messageUpdated: "message.updated"
        case .conversationUpdated: "conversation.updated"
        case .typing: "typing"
        case .receipt: "receipt"
        case .presence: "presence"
        case .receiptSummary: "receipt.summary"
        case .typingSummary: "typing.summary"
        case .conversationActivity: "conversation.activity"
        case .userUpdated: "user.updated"
        }
    }

    private enum CodingKeys: String, CodingKey { case type, data }

    /// Thrown for an event type this version does not know; readers skip such frames.
    public struct UnknownType: Error, Sendable {
        /// The frame's `type`, as the server sent it.
        public var type: String
    }

    /// Decodes `data` by the frame's `type`; throws ``UnknownType`` for a type it does not know.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let type = try c.decode(String.self, forKey: .type)
        switch type {
        case "hello": self = .hello(try c.decode(HelloEvent.self, forKey: .data))
        case "message.created": self = .messageCreated(try c.decode(MessageEvent.self, forKey: .data))
        case "message.updated": self = .messageUpdated(try c.decode(MessageEvent.self, forKey: .data))
        case "conversation.updated": self = .conversationUpdated(try c.decode(ConversationEvent.self, forKey: .data))
        case "typing": self = .typing(try c.decode(TypingEvent.self, forKey: .data))
        case "receipt": self = .receipt(try c.decode(ReceiptEvent.self, forKey: .data))
        case "presence": self = .presence(try c.decode(PresenceEvent.self, forKey: .data))
        case "receipt.summary": self = .receiptSummary(try c.decode(ReceiptSummaryEvent.self, forKey: .data))
        case "typing.summary": self = .typingSummary(try c.decode(TypingSummaryEvent.self, forKey: .data))
        case "conversation.activity": self = .conversationActivity(try c.decode(ConversationActivityEvent.self, forKey: .data))
        case "user.updated": self = .userUpdated(try c.decode(UserEvent.self, forKey: .data))
        default: throw UnknownType(type: type)
        }
    }

    /// Writes `{"type", "data"}`.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type, forKey: .type)
        switch self {
        case .hello(let data): try c.encode(data, forKey: .data)
        case .messageCreated(let data), .messageUpdated(let data): try c.encode(data, forKey: .data)
        case .conversationUpdated(let data): try c.encode(data, forKey: .data)
        case .typing(let data): try c.encode(data, forKey: .data)
        case .receipt(let data): try c.encode(data, forKey: .data)
        case .presence(let data): try c.encode(data, forKey: .data)
        case .receiptSummary(let data): try c.encode(data, forKey: .data)
        case .typingSummary(let data): try c.encode(data, forKey: .data)
        case .conversationActivity(let data): try c.encode(data, forKey: .data)
        case .userUpdated(let data): try c.encode(data, forKey: .data)
        }
    }
}
