import Foundation
import ParleyProtocol

/// Where a message is on its way, as the chat screen shows it.
public enum Delivery: Sendable, Equatable {
    /// Written locally, in the outbox, not yet acknowledged.
    case sending
    /// Still in the outbox with no answer after ``ChatClient/sendTimeout``: shown as not sent.
    /// The outbox keeps retrying; the app may offer "retry now"
    /// (``ChatClient/retryNow()``).
    case notSent
    /// The server refused it; `reason` says why. The app can resend or discard it.
    case failed(reason: String)
    /// Stored by the server (one tick).
    case sent
    /// Every other member has received it.
    case delivered
    /// Every other member has read it (two ticks).
    case read
    /// Someone else's message.
    case received
}

/// A message as the SDK keeps it: a server message, or a temporary one still on its way.
///
/// Its identity (`id`) is the sender and the client's temp id, so a temporary message and the
/// server's copy are the same row: the swap never shows the message twice.
public struct LocalMessage: Sendable, Equatable, Identifiable {
    /// Who sent it.
    public var senderId: EntityID
    /// The id the sending client gave it.
    public var clientMessageId: String
    /// The conversation it belongs to.
    public var conversationId: EntityID
    /// The server's id, once stored there.
    public var serverId: EntityID?
    /// The server's seq, once stored there; nil while sending.
    public var seq: Int64?
    /// The seq of its latest version (its own seq until it changes), once stored there.
    public var updatedSeq: Int64?
    /// The message type.
    public var type: MessageType
    /// The text (empty once deleted).
    public var text: String
    /// The message this one replies to, if any.
    public var replyToId: EntityID?
    /// The attached file, if any.
    public var attachment: Attachment?
    /// Extra key-value pairs, if any.
    public var metadata: [String: String]?
    /// Who reacted, by emoji.
    public var reactions: [String: [EntityID]]
    /// When it was created (the server's time once stored).
    public var createdAt: Date
    /// When its text was last edited, if it was.
    public var editedAt: Date?
    /// When it was deleted, if it was.
    public var deletedAt: Date?
    /// The message this one forwards, if it is a forward.
    public var forwardedFromId: EntityID?
    /// The thread root this message replies in; nil in the conversation's timeline.
    public var threadRootId: EntityID?
    /// A root's replies so far.
    public var thread: ThreadSummary?
    /// Who the message mentions.
    public var mentions: [EntityID]
    /// When it was pinned, if it is.
    public var pinnedAt: Date?
    /// Who pinned it.
    public var pinnedBy: EntityID?
    /// The server's preview of its first link: plain texts, never markup.
    public var preview: LinkPreview?
    /// Who deleted it, when an admin (or its sender) did; nil for retention and erasure.
    public var deletedBy: EntityID?
    /// True when the viewer blocks its sender: screens show it folded away.
    public var senderBlocked: Bool = false
    /// Where it is on its way, as the screen shows it.
    public var delivery: Delivery

    /// Stable across the temporary → stored swap.
    public var id: String { Self.id(senderId: senderId, clientMessageId: clientMessageId) }

    /// The ``id`` of the message with this sender and client message id.
    public static func id(senderId: EntityID, clientMessageId: String) -> String { "\(senderId)/\(clientMessageId)" }

    /// Whether the server has it.
    public var isConfirmed: Bool { seq != nil }

    /// A stored server message, with the delivery state the caller worked out.
    public init(_ message: Message, delivery: Delivery) {
        senderId = message.senderId
        clientMessageId = message.clientMessageId
        conversationId = message.conversationId
        serverId = message.id
        seq = message.seq
        updatedSeq = message.updatedSeq
        type = message.type
        text = message.text
        replyToId = message.replyToId
        attachment = message.attachment
        metadata = message.metadata
        reactions = message.reactions
        createdAt = message.createdAt
        editedAt = message.editedAt
        deletedAt = message.deletedAt
        forwardedFromId = message.forwardedFromId
        threadRootId = message.threadRootId
        thread = message.thread
        mentions = message.mentions ?? []
        pinnedAt = message.pinnedAt
        pinnedBy = message.pinnedBy
        preview = message.preview
        deletedBy = message.deletedBy
        senderBlocked = message.senderBlocked ?? false
        self.delivery = delivery
    }

    /// Every field, for the database's row reader.
    init(
        senderId: EntityID, clientMessageId: String, conversationId: EntityID, serverId: EntityID?, seq: Int64?,
        updatedSeq: Int64?, type: MessageType, text: String, replyToId: EntityID?, extras: MessageExtras?,
        createdAt: Date, editedAt: Date?, deletedAt: Date?, delivery: Delivery
    ) {
        self.senderId = senderId
        self.clientMessageId = clientMessageId
        self.conversationId = conversationId
        self.serverId = serverId
        self.seq = seq
        self.updatedSeq = updatedSeq
        self.type = type
        self.text = text
        self.replyToId = replyToId
        attachment = extras?.attachment
        metadata = extras?.metadata
        reactions = extras?.reactions ?? [:]
        forwardedFromId = extras?.forwardedFromId
        threadRootId = extras?.threadRootId
        thread = extras?.thread
        mentions = extras?.mentions ?? []
        pinnedAt = extras?.pinnedAt
        pinnedBy = extras?.pinnedBy
        preview = extras?.preview
        deletedBy = extras?.deletedBy
        senderBlocked = extras?.senderBlocked ?? false
        self.createdAt = createdAt
        self.editedAt = editedAt
        self.deletedAt = deletedAt
        self.delivery = delivery
    }

    /// A temporary message from a send request.
    init(pending request: SendMessageRequest, conversationId: EntityID, senderId: EntityID, createdAt: Date) {
        self.senderId = senderId
        clientMessageId = request.clientMessageId
        self.conversationId = conversationId
        type = request.type ?? .text
        text = Limits.trimmed(request.text)
        replyToId = request.replyToId
        metadata = request.metadata
        threadRootId = request.threadRootId
        mentions = request.mentions ?? []
        reactions = [:]
        self.createdAt = createdAt.wholeMilliseconds
        delivery = .sending
    }
}

/// The rarely-set fields, kept as one JSON column.
struct MessageExtras: Codable, Equatable {
    var attachment: Attachment?
    var metadata: [String: String]?
    var reactions: [String: [EntityID]]?
    var forwardedFromId: EntityID?
    var threadRootId: EntityID?
    var thread: ThreadSummary?
    var mentions: [EntityID]?
    var pinnedAt: Date?
    var pinnedBy: EntityID?
    var preview: LinkPreview?
    var deletedBy: EntityID?
    var senderBlocked: Bool?

    var isEmpty: Bool {
        attachment == nil && metadata == nil && (reactions?.isEmpty ?? true) && forwardedFromId == nil && threadRootId == nil
            && thread == nil && (mentions?.isEmpty ?? true) && pinnedAt == nil && preview == nil && deletedBy == nil
            && senderBlocked == nil
    }

    /// No extras.
    init() {}

    /// The extras of a stored message.
    init(_ message: Message) {
        attachment = message.attachment
        metadata = message.metadata
        reactions = message.reactions.isEmpty ? nil : message.reactions
        forwardedFromId = message.forwardedFromId
        threadRootId = message.threadRootId
        thread = message.thread
        mentions = message.mentions
        pinnedAt = message.pinnedAt
        pinnedBy = message.pinnedBy
        preview = message.preview
        deletedBy = message.deletedBy
        senderBlocked = message.senderBlocked == true ? true : nil
    }

    /// The extras of a message still on its way.
    init(pending message: LocalMessage) {
        attachment = message.attachment
        metadata = message.metadata
        threadRootId = message.threadRootId
        mentions = message.mentions.isEmpty ? nil : message.mentions
    }
}

/// The other members' lowest watermarks: a message of the viewer's is read when every other
/// member read it, i.e. when the lowest `readSeq` reaches it (and so for delivered).
struct Watermarks {
    let viewer: EntityID
    let read: Int64?
    let delivered: Int64?

    init(viewer: EntityID, members: [Member]) {
        self.viewer = viewer
        let others = members.filter { $0.userId != viewer }
        read = others.map(\.readSeq).min()
        delivered = others.map(\.deliveredSeq).min()
    }

    /// The status of a stored message.
    func delivery(seq: Int64, senderId: EntityID) -> Delivery {
        guard senderId == viewer else { return .received }
        guard let read, let delivered else { return .sent }
        if read >= seq { return .read }
        if delivered >= seq { return .delivered }
        return .sent
    }
}
