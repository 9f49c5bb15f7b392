import Foundation

/// Data of `hello`, the first frame on every connection.
public struct HelloEvent: Codable, Sendable, Equatable {
    public var user: User
    /// Identifies this connection in the server's logs.
    public var sessionId: String
    /// The client should send something at least this often; silence for twice as long drops it.
    public var heartbeatSeconds: Int

    public init(user: User, sessionId: String, heartbeatSeconds: Int) {
        self.user = user
        self.sessionId = sessionId
        self.heartbeatSeconds = heartbeatSeconds
    }
}

/// Data of `message.created` and `message.updated`.
public struct MessageEvent: Codable, Sendable, Equatable {
    public var message: Message

    public init(message: Message) { self.message = message }
}

/// Data of `conversation.updated`.
public struct ConversationEvent: Codable, Sendable, Equatable {
    public var conversation: Conversation

    public init(conversation: Conversation) { self.conversation = conversation }
}

/// Data of the `typing` event.
public struct TypingEvent: Codable, Sendable, Equatable {
    public var conversationId: EntityID
    public var userId: EntityID
    public var isTyping: Bool

    public init(conversationId: EntityID, userId: EntityID, isTyping: Bool) {
        self.conversationId = conversationId
        self.userId = userId
        self.isTyping = isTyping
    }
}

/// Data of the `receipt` event: one member's watermarks after a change.
public struct ReceiptEvent: Codable, Sendable, Equatable {
    public var conversationId: EntityID
    public var userId: EntityID
    public var readSeq: Int64
    public var deliveredSeq: Int64

    public init(conversationId: EntityID, userId: EntityID, readSeq: Int64, deliveredSeq: Int64) {
        self.conversationId = conversationId
        self.userId = userId
        self.readSeq = readSeq
        self.deliveredSeq = deliveredSeq
    }
}

/// Data of the `presence` event.
public struct PresenceEvent: Codable, Sendable, Equatable {
    public var userId: EntityID
    public var isOnline: Bool
    public var lastSeenAt: Date?
    /// The conversation the user is looking at; only sent to its participants.
    public var conversationId: EntityID?

    public init(userId: EntityID, isOnline: Bool, lastSeenAt: Date? = nil, conversationId: EntityID? = nil) {
        self.userId = userId
        self.isOnline = isOnline
        self.lastSeenAt = lastSeenAt
        self.conversationId = conversationId
    }
}

/// Data of `receipt.summary` (v1.2): in a large group, instead of each member's `receipt`,
/// how many members have read and received up to the conversation's newest seq.
/// v1.2: new messages in a large group, one frame for every member (`conversation.activity`).
///
/// Sent in place of each member's own `conversation.updated` view after new messages, so the
/// server reads and encodes nothing per member. A client applies it to the conversation it
/// keeps: the newer `lastSeq` wins; unread counts follow from the `message.created` events it
/// applied (another sender's countable message above its `readSeq` adds one), and a client that
/// finds `lastSeq` beyond what it applied has missed events and reads the conversation again.
public struct ConversationActivityEvent: Codable, Sendable, Equatable {
    public var conversationId: EntityID
    /// The conversation's sequence after the newest message.
    public var lastSeq: Int64
    public var lastActivityAt: Date
    /// The newest message.
    public var lastMessage: Message

    public init(conversationId: EntityID, lastSeq: Int64, lastActivityAt: Date, lastMessage: Message) {
        self.conversationId = conversationId
        self.lastSeq = lastSeq
        self.lastActivityAt = lastActivityAt
        self.lastMessage = lastMessage
    }
}

public struct ReceiptSummaryEvent: Codable, Sendable, Equatable {
    public var conversationId: EntityID
    /// The newest seq the counts are for.
    public var seq: Int64
    public var readCount: Int
    public var deliveredCount: Int

    public init(conversationId: EntityID, seq: Int64, readCount: Int, deliveredCount: Int) {
        self.conversationId = conversationId
        self.seq = seq
        self.readCount = readCount
        self.deliveredCount = deliveredCount
    }
}

/// Data of `typing.summary` (v1.2): in a large group, how many members are typing when more
/// than the few named in `typing` events are.
public struct TypingSummaryEvent: Codable, Sendable, Equatable {
    public var conversationId: EntityID
    public var count: Int

    public init(conversationId: EntityID, count: Int) {
        self.conversationId = conversationId
        self.count = count
    }
}

/// An event the server pushes without being asked (`{"type", "data"}`, no id).
public enum ServerEvent: Codable, Sendable, Equatable {
    case hello(HelloEvent)
    case messageCreated(MessageEvent)
    case messageUpdated(MessageEvent)
    case conversationUpdated(ConversationEvent)
    case typing(TypingEvent)
    case receipt(ReceiptEvent)
    case presence(PresenceEvent)
    case receiptSummary(ReceiptSummaryEvent)
    case typingSummary(TypingSummaryEvent)
    case conversationActivity(ConversationActivityEvent)

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
        }
    }

    private enum CodingKeys: String, CodingKey { case type, data }

    /// Thrown for an event type this version does not know; readers skip such frames.
    public struct UnknownType: Error, Sendable { public var type: String }

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
        default: throw UnknownType(type: type)
        }
    }

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
        }
    }
}
