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
            /// The sender's name.
            public var title: String
            /// "N new messages" when several were merged.
            public var subtitle: String?
            /// The text, or what the attachment is, cut to 240 characters.
            public var body: String

            /// An alert; no subtitle by default.
            public init(title: String, subtitle: String? = nil, body: String) {
                self.title = title
                self.subtitle = subtitle
                self.body = body
            }
        }

        /// What the notification shows.
        public var alert: Alert
        /// The user's total unread count.
        public var badge: Int?
        /// The sound to play (`default`).
        public var sound: String
        /// Groups notifications by conversation.
        public var threadId: String
        /// The notification category (`CHAT_MESSAGE`).
        public var category: String
        /// 1: a notification service extension may change the content before it is shown.
        public var mutableContent: Int

        /// Apple's part; the defaults are what every chat notification uses.
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

    /// What iOS shows.
    public var aps: APS
    /// The conversation of the message.
    public var conversationId: EntityID
    /// The newest message the notification stands for.
    public var messageId: EntityID
    /// Who sent that message.
    public var senderId: EntityID
    /// Always "chat_message".
    public var type: String
    /// How many new messages this notification stands for (more than 1 when a burst was merged).
    public var messageCount: Int

    /// A payload with these parts; `type` is always `chat_message`.
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

    /// The most bytes the body and the title take in the JSON (escapes counted). Characters do
    /// not bound bytes: an emoji family is 25 bytes and one character may carry any number of
    /// combining marks, and APNs refuses (and so drops) a payload over 4,096 bytes.
    public static let maxBodyJSONBytes = 2_000, maxTitleJSONBytes = 1_000

    /// `text` whole when its JSON string content fits in `maxJSONBytes`, else its longest
    /// prefix that fits with a closing "…" (whole characters; scalars of the first character
    /// only when not even that one fits).
    static func fitted(_ text: String, maxJSONBytes: Int) -> String {
        func cost(_ scalar: Unicode.Scalar) -> Int {
            switch scalar.value {
            case 0x22, 0x5C, 0x08, 0x09, 0x0A, 0x0C, 0x0D: 2
            case 0..<0x20: 6
            default: UTF8.width(scalar)
            }
        }
        if text.utf8.count * 6 <= maxJSONBytes || text.unicodeScalars.reduce(0, { $0 + cost($1) }) <= maxJSONBytes {
            return text
        }
        let budget = maxJSONBytes - 3  // "…" is 3 bytes
        var kept = String.UnicodeScalarView()
        var used = 0
        for character in text {
            let width = character.unicodeScalars.reduce(0) { $0 + cost($1) }
            if used + width <= budget {
                kept.append(contentsOf: character.unicodeScalars)
                used += width
                continue
            }
            if kept.isEmpty {
                for scalar in character.unicodeScalars {
                    guard used + cost(scalar) <= budget else { break }
                    kept.append(scalar)
                    used += cost(scalar)
                }
            }
            break
        }
        return String(kept) + "…"
    }

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
        // What others typed is shown by the system as text: no controls or direction overrides.
        body = Self.fitted(Limits.neutralized(body, keepingNewlines: true), maxJSONBytes: Self.maxBodyJSONBytes)
        self.init(
            aps: APS(
                alert: APS.Alert(
                    title: Self.fitted(Limits.neutralized(senderName), maxJSONBytes: Self.maxTitleJSONBytes),
                    subtitle: messageCount > 1 ? "\(messageCount) new messages" : nil, body: body),
                badge: badge, threadId: message.conversationId.description),
            conversationId: message.conversationId, messageId: message.id, senderId: message.senderId,
            messageCount: messageCount)
    }
}
