import Foundation

// Request and answer bodies of the message, receipt, device, search and upload routes
// (the account and conversation ones are in HTTPBodies.swift).

/// `GET /conversations/{id}/messages`: a page ascending by seq.
public struct MessagesPage: Codable, Sendable, Equatable {
    /// The messages, ascending by seq.
    public var messages: [Message]
    /// Whether more messages lie beyond this page in the direction asked for.
    public var hasMore: Bool

    /// A page with these messages.
    public init(messages: [Message], hasMore: Bool) {
        self.messages = messages
        self.hasMore = hasMore
    }
}

/// `GET /conversations/{id}/changes`: the catch-up feed, ascending by updatedSeq.
public struct ChangesPage: Codable, Sendable, Equatable {
    /// Messages with `updatedSeq` above `since`, each in its latest state.
    public var messages: [Message]
    /// The conversation's counter now.
    public var lastSeq: Int64
    /// Whether to ask again with `since` = the last `updatedSeq` returned.
    public var hasMore: Bool

    /// A page with these changes.
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
    /// The sender's id for it (1–128 characters): a repeat returns the stored message.
    public var clientMessageId: String
    /// Trimmed by the server; a `text` message needs 1–5000 characters.
    public var text: String
    /// Defaults to `text`; `system` is refused.
    public var type: MessageType?
    /// A message of the same conversation this one replies to.
    public var replyToId: EntityID?
    /// An attachment the sender uploaded; needed by `image`, `video`, `audio` and `file`.
    public var attachmentId: EntityID?
    /// Up to 32 string pairs; a `location` message needs `latitude` and `longitude`.
    public var metadata: [String: String]?
    /// Forward: copy this message (which the sender can read) instead of giving content.
    public var forwardOf: EntityID?
    /// A reply in the thread of this root message of the same conversation.
    public var threadRootId: EntityID?
    /// Participants the text mentions (the client resolves "@name"), at most 50.
    public var mentions: [EntityID]?

    /// A send with these fields; nil fields are left out.
    public init(
        conversationId: EntityID? = nil, clientMessageId: String, text: String,
        type: MessageType? = nil, replyToId: EntityID? = nil, attachmentId: EntityID? = nil,
        metadata: [String: String]? = nil, forwardOf: EntityID? = nil, threadRootId: EntityID? = nil,
        mentions: [EntityID]? = nil
    ) {
        self.threadRootId = threadRootId
        self.mentions = mentions
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
        case threadRootId, mentions
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
        threadRootId = try c.decodeIfPresent(EntityID.self, forKey: .threadRootId)
        mentions = try c.decodeIfPresent([EntityID].self, forKey: .mentions)
    }
}

/// `GET /conversations/{id}/threads/{rootId}`: the root and a page of its replies.
public struct ThreadPage: Codable, Sendable, Equatable {
    /// The thread's root message, as it is now.
    public var root: Message
    /// Replies, ascending by seq.
    public var messages: [Message]
    /// Whether more replies lie beyond this page in the direction asked for.
    public var hasMore: Bool

    /// A page of a thread.
    public init(root: Message, messages: [Message], hasMore: Bool) {
        self.root = root
        self.messages = messages
        self.hasMore = hasMore
    }
}

/// `PUT /conversations/{id}/settings` and its answer: the caller's own settings.
public struct ConversationSettings: Codable, Sendable, Equatable {
    /// Whether the conversation is muted for the caller.
    public var muted: Bool
    /// When a mute ends by itself; absent for a mute until turned off.
    public var mutedUntil: Date?

    /// Settings from their parts.
    public init(muted: Bool, mutedUntil: Date? = nil) {
        self.muted = muted
        self.mutedUntil = mutedUntil
    }
}

/// `POST /conversations/{id}/pins`.
public struct PinRequest: Codable, Sendable, Equatable {
    /// The message to pin.
    public var messageId: EntityID

    /// A pin of this message.
    public init(messageId: EntityID) { self.messageId = messageId }
}

/// `GET /conversations/{id}/pins`: pinned messages, newest pin first.
public struct PinsResponse: Codable, Sendable, Equatable {
    /// The pinned messages.
    public var messages: [Message]

    /// A list of pinned messages.
    public init(messages: [Message]) { self.messages = messages }
}

/// `PATCH /conversations/{id}/messages/{messageId}`.
public struct EditMessageRequest: Codable, Sendable, Equatable {
    /// The new text, under the same rules as for sending.
    public var text: String

    /// A request with this text.
    public init(text: String) { self.text = text }
}

/// `POST /conversations/{id}/messages/{messageId}/reactions`.
public struct ReactionRequest: Codable, Sendable, Equatable {
    /// The reaction: 1–8 characters, no whitespace.
    public var emoji: String

    /// A request with this emoji.
    public init(emoji: String) { self.emoji = emoji }
}

/// `POST /conversations/{id}/read` and the `read` command: a watermark or a batch of ids.
public struct ReadRequest: Codable, Sendable, Equatable {
    /// Set on the WebSocket command; taken from the path over HTTP.
    public var conversationId: EntityID?
    /// Read everything up to this seq (clamped to `lastSeq`); give it or `messageIds`, not both.
    public var upToSeq: Int64?
    /// A batch of message ids, resolved to the highest seq among them.
    public var messageIds: [EntityID]?

    /// A read; give `upToSeq` or `messageIds`.
    public init(conversationId: EntityID? = nil, upToSeq: Int64? = nil, messageIds: [EntityID]? = nil) {
        self.conversationId = conversationId
        self.upToSeq = upToSeq
        self.messageIds = messageIds
    }
}

/// The answer to a read: the caller's watermark and unread count after it.
public struct ReadResponse: Codable, Sendable, Equatable {
    /// The caller's read watermark after the read.
    public var readSeq: Int64
    /// The caller's unread count after the read.
    public var unreadCount: Int
    /// The conversation's `lastSeq` the count was taken at: it counts every change up to this
    /// seq, so a client whose row is behind does not count the events still on their way again,
    /// and one whose row is ahead adds what it applied after it. Nil from servers before it was
    /// sent (the client then takes the count as it is).
    public var lastSeq: Int64?

    /// An answer with this watermark and count, taken at `lastSeq` when given.
    public init(readSeq: Int64, unreadCount: Int, lastSeq: Int64? = nil) {
        self.readSeq = readSeq
        self.unreadCount = unreadCount
        self.lastSeq = lastSeq
    }
}

/// The APNs environment a device token belongs to.
public enum PushEnvironment: String, Codable, Sendable {
    /// `api.sandbox.push.apple.com` or `api.push.apple.com`.
    case sandbox, production
}

/// `POST /devices`.
public struct RegisterDeviceRequest: Codable, Sendable, Equatable {
    /// Only `ios` is accepted.
    public var platform: String
    /// The APNs device token: 32–200 hex characters.
    public var token: String
    /// The APNs environment the token belongs to.
    public var environment: PushEnvironment

    /// A registration; the platform defaults to `ios`.
    public init(platform: String = "ios", token: String, environment: PushEnvironment) {
        self.platform = platform
        self.token = token
        self.environment = environment
    }
}

/// One hit of `GET /search`.
public struct SearchResult: Codable, Sendable, Equatable {
    /// The conversation the hit is in.
    public var conversationId: EntityID
    /// The message's seq.
    public var seq: Int64
    /// The message that matched.
    public var message: Message
    /// The matching text with the hits between `[` and `]`, shortened around them.
    public var snippet: String

    /// A hit with these fields.
    public init(conversationId: EntityID, seq: Int64, message: Message, snippet: String) {
        self.conversationId = conversationId
        self.seq = seq
        self.message = message
        self.snippet = snippet
    }
}

/// `GET /search?q=&conversationId=&limit=&offset=`: newest first.
public struct SearchResponse: Codable, Sendable, Equatable {
    /// The hits, newest first.
    public var results: [SearchResult]
    /// The `offset` of the next page, absent on the last one.
    public var nextOffset: Int?

    /// An answer; no `nextOffset` (the last page) by default.
    public init(results: [SearchResult], nextOffset: Int? = nil) {
        self.results = results
        self.nextOffset = nextOffset
    }
}

/// `POST /attachments/uploads`: opens a resumable upload.
public struct UploadRequest: Codable, Sendable, Equatable {
    /// The file name.
    public var name: String
    /// The file's MIME type (one of the accepted attachment types).
    public var contentType: String
    /// The file's total size in bytes.
    public var size: Int64

    /// A request with these fields.
    public init(name: String, contentType: String, size: Int64) {
        self.name = name
        self.contentType = contentType
        self.size = size
    }
}

/// How far a resumable upload got.
public struct UploadStatus: Codable, Sendable, Equatable {
    /// The upload's id, for the chunk and `complete` routes.
    public var uploadId: EntityID
    /// Bytes received so far: the offset of the next chunk.
    public var received: Int64
    /// The file's total size in bytes.
    public var size: Int64

    /// A status with these fields.
    public init(uploadId: EntityID, received: Int64, size: Int64) {
        self.uploadId = uploadId
        self.received = received
        self.size = size
    }
}
