import Foundation
import ParleyProtocol
import Testing

/// The hand-written frames are the bytes Foundation's encoder writes for the same values (with
/// sorted keys: without, its key order is not fixed from one run to the next).
@Suite struct FastWireTests {
    static let alice = EntityID("6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01")!
    static let conversation = EntityID("0B5E2C1A-77A4-4F63-8C1E-5F7D8E9A0B12")!

    /// Every control character, the characters JSON escapes, `/`, DEL, non-ASCII, the line and
    /// paragraph separators, an emoji with a modifier, a combining accent, and the empty string.
    static let texts: [String] = [
        "", "hello", "say \"hi\"", #"back\slash"#, "a/b</script>", "\u{7F}", "caf\u{E9}", "e\u{301}",
        "\u{2028}\u{2029}", "👍🏽 ok", "tab\tnew\nline\rret", "\u{0}\u{1}\u{8}\u{B}\u{C}\u{1B}[31m\u{1F}",
        String((0..<32).map { Character(Unicode.Scalar(UInt8($0))) }), String(repeating: "x", count: 5000),
    ]

    static func message(text: String, variant: Int) -> Message {
        var message = Message(
            id: EntityID(), conversationId: conversation, seq: Int64(variant * 1_000_003), updatedSeq: Int64(variant * 1_000_003 + variant),
            senderId: alice, clientMessageId: "tmp-\(variant)-\"\(text.prefix(3))", type: MessageType.allCases[variant % MessageType.allCases.count],
            text: text, createdAt: Date(millisecondsSince1970: 1_795_000_000_123 + Int64(variant) * 86_399_999))
        if variant % 2 == 1 { message.replyToId = EntityID() }
        if variant % 3 == 1 {
            message.attachment = Attachment(
                id: EntityID(), name: "photo \(text.prefix(4)).jpg", contentType: "image/jpeg", size: 123_456_789,
                url: "/api/v1/attachments/x", width: variant % 2 == 0 ? 640 : nil, height: 480, durationMs: variant % 4 == 0 ? 1500 : nil)
        }
        if variant % 4 == 2 { message.metadata = ["lat\(text.prefix(2))": "52.1"] }
        if variant % 5 == 3 { message.reactions = [text.isEmpty ? "👍" : String(text.prefix(2)): [alice, conversation]] }
        if variant % 3 == 2 { message.editedAt = Date(millisecondsSince1970: 1_795_000_100_007) }
        if variant % 7 == 5 { message.deletedAt = Date(millisecondsSince1970: 10) }
        if variant % 4 == 3 { message.forwardedFromId = EntityID() }
        return message
    }

    static var cases: [Message] {
        texts.enumerated().flatMap { index, text in (0..<8).map { message(text: text, variant: index * 8 + $0) } }
    }

    @Test func eventsAreTheBytesOfTheCodableEncoder() throws {
        let encoder = Self.sortedEncoder()
        for message in Self.cases {
            for event in [ServerEvent.messageCreated(MessageEvent(message: message)), .messageUpdated(MessageEvent(message: message))] {
                let expected = try encoder.encode(event)
                let fast = try #require(FastWire.event(event))
                #expect(String(decoding: fast, as: UTF8.self) == String(decoding: expected, as: UTF8.self))
                #expect(fast == Array(expected))
            }
        }
        #expect(FastWire.event(.typing(TypingEvent(conversationId: Self.conversation, userId: Self.alice, isTyping: true))) == nil)
    }

    @Test func conversationViewsAreTheBytesOfTheCodableEncoder() throws {
        let encoder = Self.sortedEncoder()
        for (index, text) in Self.texts.enumerated() {
            let members = (0..<(index % 4)).map { Member(userId: EntityID(), readSeq: Int64($0 * 7), deliveredSeq: Int64($0 * 9)) }
            let conversation = Conversation(
                id: EntityID(), type: index % 2 == 0 ? .group : .direct, name: index % 3 == 0 ? nil : text,
                participantIds: members.map(\.userId), createdAt: Date(millisecondsSince1970: 1_000 + Int64(index)),
                lastActivityAt: Date(millisecondsSince1970: 1_795_000_000_999), lastSeq: Int64(index * 31),
                lastMessage: index % 2 == 1 ? Self.message(text: text, variant: index) : nil,
                unreadCount: index * 1_000, readSeq: Int64(index), members: members)
            for view in [conversation, conversation.listingMembers(upTo: 1)] {
                let event = ServerEvent.conversationUpdated(ConversationEvent(conversation: view))
                #expect(try FastWire.event(event) == Array(encoder.encode(event)))
                let decoded = try WireCoding.makeDecoder().decode(ServerEvent.self, from: Data(try #require(FastWire.event(event))))
                #expect(decoded == event, "memberCount and the lists round-trip")
            }
        }
    }

    @Test func repliesAreTheBytesOfTheCodableEncoder() throws {
        let encoder = Self.sortedEncoder()
        for message in Self.cases {
            for replyTo in ["c-1", "", "q\"\\\n", nil] as [String?] {
                let expected = try encoder.encode(ReplyFrame(replyTo: replyTo, data: message))
                #expect(FastWire.messageReply(replyTo: replyTo, message) == Array(expected))
            }
        }
    }

    static func sortedEncoder() -> JSONEncoder {
        let encoder = WireCoding.makeEncoder()
        encoder.outputFormatting.insert(.sortedKeys)
        return encoder
    }

    /// Several reactions and metadata keys: sorted like Foundation sorts them, and the values
    /// decode to the same message.
    @Test func dictionariesWithSeveralKeysAreSortedAndDecodeTheSame() throws {
        var message = Self.message(text: "hi", variant: 1)
        message.reactions = ["👍": [Self.alice], "🎉": [Self.conversation, Self.alice], "a": [], "\"": [Self.alice]]
        message.metadata = ["z": "1", "a": "2\n", "m": ""]
        let event = ServerEvent.messageCreated(MessageEvent(message: message))
        #expect(try FastWire.event(event) == Array(Self.sortedEncoder().encode(event)))
        let decoded = try WireCoding.makeDecoder().decode(ServerEvent.self, from: Data(try #require(FastWire.event(event))))
        #expect(decoded == event)
        let reply = try WireCoding.makeDecoder().decode(ReplyFrame<Message>.self, from: Data(FastWire.messageReply(replyTo: "r", message)))
        #expect(reply == ReplyFrame(replyTo: "r", data: message))
    }

    @Test func idsAreLowercaseAndOrderedLikeTheirText() {
        let ids = (0..<500).map { _ in EntityID() } + [Self.alice, Self.conversation]
        for id in ids {
            #expect(id.description == id.uuid.uuidString.lowercased())
            #expect(EntityID(id.description) == id)
        }
        #expect(ids.sorted().map(\.description) == ids.map(\.description).sorted())
    }
}
