import Foundation
import ParleyProtocol
import Testing

/// The APNs notification of a new message: what the lock screen shows, what the app routes
/// on when it is opened, and that APNs accepts it at all (at most 4,096 bytes).
@Suite struct ProtocolPushPayloadTests {
    static let alice = EntityID("6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01")!
    static let conversationId = EntityID("0B5E2C1A-77A4-4F63-8C1E-5F7D8E9A0B12")!
    static let messageId = EntityID("99999999-8888-4777-8666-555555555555")!
    /// APNs refuses a larger payload with 413 `PayloadTooLarge`, and the notification is lost.
    static let apnsLimit = 4_096

    static func message(_ type: MessageType = .text, text: String, attachmentName: String? = nil) -> Message {
        Message(
            id: messageId, conversationId: conversationId, seq: 3, updatedSeq: 3, senderId: alice, clientMessageId: "c",
            type: type, text: text,
            attachment: attachmentName.map { Attachment(id: alice, name: $0, contentType: "application/pdf", size: 1, url: "/a") },
            createdAt: Date(millisecondsSince1970: 0))
    }

    /// The bytes the server sends (PushService encodes with a plain encoder, slashes unescaped).
    static func encoded(_ payload: PushNotificationPayload) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return try encoder.encode(payload)
    }

    /// A message without text still says what it is, so the lock screen never shows an
    /// empty notification.
    @Test(arguments: [
        (MessageType.image, "", nil, "📷 Photo"), (.video, " ", nil, "🎬 Video"), (.audio, "\n", nil, "🎤 Voice message"),
        (.file, "", "report.pdf", "📎 report.pdf"), (.file, "", nil, "📎 File"), (.location, "", nil, "📍 Location"),
        (.text, "", nil, "New message"), (.system, "", nil, "New message"), (.image, "  my cat  ", nil, "my cat"),
        (.file, "\t see attached \n", "x.pdf", "see attached"),
    ] as [(MessageType, String, String?, String)])
    func bodiesSayWhatTheMessageIs(type: MessageType, text: String, attachmentName: String?, body: String) {
        let payload = PushNotificationPayload(message: Self.message(type, text: text, attachmentName: attachmentName), senderName: "Alice", badge: 1)
        #expect(payload.aps.alert.body == body)
    }

    /// Long texts are cut to 240 characters with "…" at the end, counting user-perceived
    /// characters (an emoji with a skin tone is one), and never inside one.
    @Test(arguments: [
        (String(repeating: "a", count: 240), String(repeating: "a", count: 240)),
        (String(repeating: "a", count: 241), String(repeating: "a", count: 239) + "…"),
        (String(repeating: "👍🏽", count: 241), String(repeating: "👍🏽", count: 239) + "…"),
        (String(repeating: "e\u{301}", count: 300), String(repeating: "e\u{301}", count: 239) + "…"),
        ("  " + String(repeating: "b", count: 240) + "  ", String(repeating: "b", count: 240)),
    ])
    func longTextsAreCutToTheLimit(text: String, body: String) {
        let payload = PushNotificationPayload(message: Self.message(text: text), senderName: "Alice", badge: nil)
        #expect(payload.aps.alert.body == body)
        #expect(payload.aps.alert.body.count <= PushNotificationPayload.maxBodyCharacters)
    }

    /// A merged burst says how many messages it stands for; a single message has no subtitle.
    @Test(arguments: [(1, nil), (2, "2 new messages"), (37, "37 new messages")] as [(Int, String?)])
    func burstsCarryACountAndASubtitle(count: Int, subtitle: String?) throws {
        let payload = PushNotificationPayload(message: Self.message(text: "hi"), senderName: "Alice", badge: 4, messageCount: count)
        #expect(payload.aps.alert.subtitle == subtitle)
        #expect(payload.messageCount == count)
        let object = try #require(JSONSerialization.jsonObject(with: Self.encoded(payload)) as? [String: Any])
        #expect(object["messageCount"] as? Int == count)
        let alert = try #require((object["aps"] as? [String: Any])?["alert"] as? [String: Any])
        #expect(alert["subtitle"] as? String == subtitle)
        #expect(Set(alert.keys) == (subtitle == nil ? ["title", "body"] : ["title", "subtitle", "body"]))
    }

    /// The payload has the contract's keys and values: Apple's hyphenated keys, the thread and
    /// the routing ids lowercase, `type` fixed, no `badge` key when there is no badge.
    @Test func thePayloadHasTheContractsShape() throws {
        let payload = PushNotificationPayload(message: Self.message(text: "Lunch?"), senderName: "Alice", badge: 12)
        let object = try #require(JSONSerialization.jsonObject(with: Self.encoded(payload)) as? [String: Any])
        #expect(Set(object.keys) == ["aps", "conversationId", "messageId", "senderId", "type", "messageCount"])
        #expect(object["conversationId"] as? String == "0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12")
        #expect(object["messageId"] as? String == "99999999-8888-4777-8666-555555555555")
        #expect(object["senderId"] as? String == "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01")
        #expect(object["type"] as? String == "chat_message")
        let aps = try #require(object["aps"] as? [String: Any])
        #expect(Set(aps.keys) == ["alert", "badge", "sound", "thread-id", "category", "mutable-content"])
        #expect(aps["thread-id"] as? String == "0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12")
        #expect(aps["sound"] as? String == "default")
        #expect(aps["category"] as? String == "CHAT_MESSAGE")
        #expect(aps["mutable-content"] as? Int == 1)
        #expect(aps["badge"] as? Int == 12)
        #expect(aps["alert"] as? [String: String] == ["title": "Alice", "body": "Lunch?"])

        let noBadge = PushNotificationPayload(message: Self.message(text: "x"), senderName: "A", badge: nil)
        let text = String(decoding: try Self.encoded(noBadge), as: UTF8.self)
        #expect(!text.contains("badge"))
        #expect(!text.contains("null"))
        // The app's notification extension decodes what the server sent.
        #expect(try JSONDecoder().decode(PushNotificationPayload.self, from: Self.encoded(payload)) == payload)
    }

    /// 240 characters can be far more than APNs' 4 KB: 240 family emoji are 6,000 bytes, and a
    /// single character can carry thousands of combining marks. Such a message must still make
    /// a notification APNs accepts, cut at a character and ending in "…".
    @Test(arguments: [
        String(repeating: "👨‍👩‍👧‍👦", count: 240),
        String(repeating: "👨‍👩‍👧‍👦", count: 5000),
        "Z" + String(repeating: "\u{0336}\u{0489}", count: 3000),
        String(repeating: "a\u{0301}\u{0302}\u{0303}\u{0304}\u{0305}\u{0306}\u{0307}\u{0308}", count: 240),
        String(repeating: "\u{1}", count: 300),
        String(repeating: "\"", count: 240) + String(repeating: "漢", count: 5000),
    ])
    func heavyTextsStillFitInANotification(text: String) throws {
        let payload = PushNotificationPayload(message: Self.message(text: text), senderName: "Alice", badge: 99_999, messageCount: 99)
        let data = try Self.encoded(payload)
        #expect(data.count <= Self.apnsLimit, "\(data.count) bytes")
        let body = payload.aps.alert.body
        #expect(body.hasSuffix("…"))
        #expect(body.count <= PushNotificationPayload.maxBodyCharacters)
        let kept = body.dropLast()
        #expect(!kept.isEmpty)
        // Controls are shown as U+FFFD: the start of the text as a notification shows it.
        #expect(Limits.neutralized(text, keepingNewlines: true).unicodeScalars.starts(with: kept.unicodeScalars), "the body is the start of the text")
    }

    /// A display name is at most 100 characters, not 100 bytes: a name of decorated letters
    /// must not push the notification over the limit either.
    @Test func heavySenderNamesStillFit() throws {
        let name = String(repeating: "N" + String(repeating: "\u{0489}", count: 60), count: 100)
        let payload = PushNotificationPayload(message: Self.message(text: String(repeating: "👨‍👩‍👧‍👦", count: 240)), senderName: name, badge: 1, messageCount: 2)
        #expect(try Self.encoded(payload).count <= Self.apnsLimit)
        #expect(payload.aps.alert.title.unicodeScalars.starts(with: "N\u{0489}\u{0489}".unicodeScalars))
        #expect(payload.aps.alert.title.hasSuffix("…"))
        let plain = PushNotificationPayload(message: Self.message(text: "hi"), senderName: "Zoë Ångström-李", badge: 1)
        #expect(plain.aps.alert.title == "Zoë Ångström-李", "ordinary names are untouched")
    }

    /// Seeded: whatever the text and the sender's name, the payload fits in 4 KB, the body is at
    /// most 240 characters, and a text that fits is shown whole (trimmed), with its control
    /// characters (other than line breaks) shown as U+FFFD.
    @Test func randomTextsAlwaysFitAndShortOnesAreWhole() throws {
        var rng = ProtocolRandom(seed: 0xA9_45)
        let heavy = ["👨‍👩‍👧‍👦", "\u{0489}", "\u{0336}", "\"", "\\", "\u{1}", "\n", "漢", "a", " ", "🇫🇷", "e\u{301}"]
        for round in 0..<400 {
            let pieces = Int.random(in: 0...(round % 4 == 0 ? 6_000 : 200), using: &rng)
            let text = String((0..<pieces).map { _ in heavy.randomElement(using: &rng)! }.joined())
            let name = String((0..<Int.random(in: 1...150, using: &rng)).map { _ in heavy.randomElement(using: &rng)! }.joined())
            let type = MessageType.allCases.randomElement(using: &rng)!
            let payload = PushNotificationPayload(
                message: Self.message(type, text: text), senderName: name, badge: Int.random(in: 0...Int.max, using: &rng),
                messageCount: Int.random(in: 1...Int.max, using: &rng))
            let data = try Self.encoded(payload)
            #expect(data.count <= Self.apnsLimit, "round \(round): \(data.count) bytes")
            #expect(payload.aps.alert.body.count <= PushNotificationPayload.maxBodyCharacters, "round \(round)")
            let trimmed = Limits.trimmed(text)
            if !trimmed.isEmpty, trimmed.count <= PushNotificationPayload.maxBodyCharacters, trimmed.utf8.count <= 300 {
                #expect(payload.aps.alert.body == Limits.neutralized(trimmed, keepingNewlines: true), "round \(round)")
            }
            #expect(!payload.aps.alert.title.unicodeScalars.contains { $0.value < 0x20 }, "round \(round): no control in a title")
            #expect(!payload.aps.alert.body.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "round \(round): none in a body")
        }
    }
}
