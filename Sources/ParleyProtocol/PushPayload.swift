import Foundation

/// The APNs payload of a new-message notification (see the contract's "Push (APNs)").
///
/// `aps` drives what iOS shows; the top-level ids let the app route to the conversation and
/// sync it first when the notification is opened.
public struct PushNotificationPayload: Codable, Sendable, Equatable {
    /// Apple's part.
    public struct APS: Codable, Sendable, Equatable {
        /// Title (the sender's name), body (the text), and when several messages were merged, a subtitle.
        public struct Alert: Codable, Sendable, Equatable {
            public var title: String
            public var subtitle: String?
            public var body: String

            public init(title: String, subtitle: String? = nil, body: String) {
                self.title = title
                self.subtitle = subtitle
                self.body = body
            }
        }

        public var alert: Alert
        /// The user's total unread count.
        public var badge: Int?
        public var sound: String
        /// Groups notifications by conversation.
        public var threadId: String
        public var category: String
        public var mutableContent: Int

        public init(alert: Alert, badge: Int?, threadId: String, sound: String = "default", category: String = "CHAT_MESSAGE", mutableContent: Int = 1) {
            self.alert = alert
            self.badge = badge
            self.sound = sound
            self.threadId = threadId
            self.category = category
            self.mutableContent = mutableContent
        }

        enum CodingKeys: String, CodingKey {
            case alert, badge, sound, category
            case threadId = "thread-id"
            case mutableContent = "mutable-content"
        }
    }

    public var aps: APS
    public var conversationId: EntityID
    public var messageId: EntityID
    public var senderId: EntityID
    /// Always "chat_message".
    public var type: String
    /// How many new messages this notification stands for (more than 1 when a burst was merged).
    public var messageCount: Int

    public init(aps: APS, conversationId: EntityID, messageId: EntityID, senderId: EntityID, messageCount: Int = 1) {
        self.aps = aps
        self.conversationId = conversationId
        self.messageId = messageId
        self.senderId = senderId
        self.type = "chat_message"
        self.messageCount = messageCount
    }

    /// The longest body sent (APNs allows 4 KB for the whole payload; a lock screen shows far less).
    public static let maxBodyCharacters = 240

    /// The payload for a message: sender's name as title, the text (or what the attachment is) as body.
    public init(message: Message, senderName: String, badge: Int?, messageCount: Int = 1) {
        var body = message.text.trimmingCharacters(in: .whitespacesAndNewlines)
        if body.isEmpty {
            body = switch message.type {
            case .image: "📷 Photo"
            case .video: "🎬 Video"
            case .audio: "🎤 Voice message"
            case .file: "📎 \(message.attachment?.name ?? "File")"
            case .location: "📍 Location"
            case .text, .system: "New message"
            }
        }
        if body.count > Self.maxBodyCharacters {
            body = String(body.prefix(Self.maxBodyCharacters - 1)) + "…"
        }
        self.init(
            aps: APS(
                alert: APS.Alert(title: senderName, subtitle: messageCount > 1 ? "\(messageCount) new messages" : nil, body: body),
                badge: badge, threadId: message.conversationId.description),
            conversationId: message.conversationId, messageId: message.id, senderId: message.senderId,
            messageCount: messageCount)
    }
}
