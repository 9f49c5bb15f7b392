import Foundation
import ParleyProtocol
import Testing

/// FastWire writes the frames of every message by hand; a client must get the same bytes as
/// Foundation's sorted encoder would write, whatever users put in texts, names, metadata and
/// reactions, and must decode them back to the same values.
@Suite struct ProtocolFastWireEquivalenceTests {
    static let decoder = WireCoding.makeDecoder()

    /// Seeded random messages (nasty text, optional fields present or not, extreme seqs and
    /// dates on both sides of 1970) in `message.created`/`message.updated`: same bytes as the
    /// Codable encoder, and they decode to the same event.
    @Test(arguments: 0..<8)
    func randomMessageEventsMatchTheCodableEncoder(batch: UInt64) throws {
        var rng = ProtocolRandom(seed: 0xFA57_0000 + batch)
        let encoder = ProtocolSamples.sortedEncoder()
        for round in 0..<150 {
            let message = ProtocolSamples.message(&rng)
            let event: ServerEvent = round % 2 == 0 ? .messageCreated(MessageEvent(message: message)) : .messageUpdated(MessageEvent(message: message))
            let expected = try encoder.encode(event)
            let fast = try #require(FastWire.event(event))
            let same = fast == Array(expected)
            #expect(
                same,
                "seed \(batch) round \(round):\n fast \(ProtocolSamples.visible(fast))\n json \(ProtocolSamples.visible(expected))")
            #expect(try Self.decoder.decode(ServerEvent.self, from: Data(fast)) == event, "seed \(batch) round \(round)")
        }
    }

    /// Seeded random conversation views (complete lists, or a large group's without them, with
    /// and without a last message and a name) in `conversation.updated`.
    @Test(arguments: 0..<6)
    func randomConversationViewsMatchTheCodableEncoder(batch: UInt64) throws {
        var rng = ProtocolRandom(seed: 0xC0_0000 + batch)
        let encoder = ProtocolSamples.sortedEncoder()
        for round in 0..<120 {
            let event = ServerEvent.conversationUpdated(ConversationEvent(conversation: ProtocolSamples.conversation(&rng)))
            let expected = try encoder.encode(event)
            let fast = try #require(FastWire.event(event))
            let same = fast == Array(expected)
            #expect(
                same,
                "seed \(batch) round \(round):\n fast \(ProtocolSamples.visible(fast))\n json \(ProtocolSamples.visible(expected))")
            #expect(try Self.decoder.decode(ServerEvent.self, from: Data(fast)) == event, "seed \(batch) round \(round)")
        }
    }

    /// Seeded `message.send` replies with random (and nasty, and absent) command ids.
    @Test(arguments: 0..<4)
    func randomSendRepliesMatchTheCodableEncoder(batch: UInt64) throws {
        var rng = ProtocolRandom(seed: 0x5E_0000 + batch)
        let encoder = ProtocolSamples.sortedEncoder()
        for round in 0..<150 {
            let message = ProtocolSamples.message(&rng)
            let replyTo: String? = rng.chance(15) ? nil : ProtocolSamples.string(&rng)
            let expected = try encoder.encode(ReplyFrame(replyTo: replyTo, data: message))
            let fast = FastWire.messageReply(replyTo: replyTo, message)
            let same = fast == Array(expected)
            #expect(same, "seed \(batch) round \(round):\n fast \(ProtocolSamples.visible(fast))\n json \(ProtocolSamples.visible(expected))")
            let decoded = try Self.decoder.decode(ReplyFrame<Message>.self, from: Data(fast))
            #expect(decoded == ReplyFrame(replyTo: replyTo, data: message))
        }
    }

    /// Metadata keys and reaction emoji in decomposed form (`e` + U+0301) sort among
    /// precomposed ones by their bytes, as Foundation sorts them, not by Swift's
    /// canonical-equivalence order (which puts `e\u{301}` after `f`).
    @Test(arguments: [
        ["e\u{301}", "f"], ["e\u{301}x", "\u{E9}"], ["A\u{30A}", "\u{C5}b", "B"], ["\u{212B}", "B"],
        ["\u{FFFD}", "👍"], ["\u{E000}", "\u{10000}"], ["a", "a\u{0}", "ab", ""], ["Z", "_", "a", "10", "9"],
    ])
    func dictionaryKeysAreSortedByTheirBytes(keys: [String]) throws {
        var message = FastWireFixture.message
        message.metadata = Dictionary(uniqueKeysWithValues: keys.map { ($0, "v") })
        message.reactions = Dictionary(uniqueKeysWithValues: keys.map { ($0, [FastWireFixture.alice]) })
        let event = ServerEvent.messageCreated(MessageEvent(message: message))
        let expected = try ProtocolSamples.sortedEncoder().encode(event)
        let fast = try #require(FastWire.event(event))
        let same = fast == Array(expected)
        #expect(same, "\n fast \(ProtocolSamples.visible(fast))\n json \(ProtocolSamples.visible(expected))")
        // And the byte order is the one written, for both dictionaries.
        let byteOrder = keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let text = String(decoding: fast, as: UTF8.self)
        let metadataPart = try #require(text.range(of: #""metadata":{"#)).upperBound
        var cursor = metadataPart
        for key in byteOrder {
            var quoted = [UInt8]()
            quoted.append(contentsOf: #"""#.utf8)
            quoted.append(contentsOf: key.replacingOccurrences(of: "\u{0}", with: "\\u0000").utf8)
            quoted.append(contentsOf: #"":"v""#.utf8)
            let found = try #require(
                text[cursor...].range(of: String(decoding: quoted, as: UTF8.self), options: .literal),
                "key \(ProtocolSamples.visible(key.utf8)) out of order")
            cursor = found.upperBound
        }
    }

    /// The thread, mention, pin and preview fields and a muted conversation with a mention
    /// count: the fast bytes are Foundation's, each field present and absent.
    @Test(arguments: 0..<8)
    func threadMentionPinAndPreviewFieldsMatchFoundation(mask: Int) throws {
        var message = FastWireFixture.message
        if mask & 1 != 0 {
            message.threadRootId = FastWireFixture.alice
            message.thread = ThreadSummary(replyCount: 3, lastReplyAt: message.createdAt, lastReplySeq: 12)
        }
        if mask & 2 != 0 {
            message.mentions = [FastWireFixture.alice, EntityID("00000000-0000-4000-8000-0000000000ee")!]
            message.pinnedAt = message.createdAt
            message.pinnedBy = FastWireFixture.alice
        }
        if mask & 4 != 0 {
            message.preview = LinkPreview(
                url: "https://example.com/a?b=\"c\"", title: "T <b>", description: mask & 1 != 0 ? "D\u{2028}" : nil,
                imageUrl: "https://example.com/i.png", siteName: mask & 2 != 0 ? "Site" : nil)
        }
        let encoder = ProtocolSamples.sortedEncoder()
        let event = ServerEvent.messageCreated(MessageEvent(message: message))
        #expect(try #require(FastWire.event(event)) == Array(try encoder.encode(event)))
        #expect(try Self.decoder.decode(ServerEventEnvelopeProbe.self, from: Data(try #require(FastWire.event(event)))).data.message == message)
        var conversation = FastWireFixture.conversation
        conversation.mentionCount = mask
        conversation.muted = mask & 1 != 0
        conversation.mutedUntil = mask & 2 != 0 ? message.createdAt : nil
        let updated = ServerEvent.conversationUpdated(ConversationEvent(conversation: conversation))
        #expect(try #require(FastWire.event(updated)) == Array(try encoder.encode(updated)))
    }

    /// Each piece of nasty text alone, as the message's text, its client id, a metadata value,
    /// an attachment name and the reply's id: the escapes are Foundation's, one case at a time.
    @Test(arguments: ProtocolSamples.pieces)
    func everyNastyPieceIsEscapedLikeFoundation(piece: String) throws {
        var message = FastWireFixture.message
        message.text = "<" + piece + ">"
        message.clientMessageId = piece
        message.metadata = ["k": piece, piece.isEmpty ? "e" : piece: "v"]
        message.attachment = Attachment(id: FastWireFixture.alice, name: piece, contentType: piece, size: 1, url: "/a/" + piece)
        let encoder = ProtocolSamples.sortedEncoder()
        let event = ServerEvent.messageUpdated(MessageEvent(message: message))
        #expect(try #require(FastWire.event(event)) == Array(encoder.encode(event)), "\(ProtocolSamples.visible(piece.utf8))")
        #expect(FastWire.messageReply(replyTo: piece, message) == Array(try encoder.encode(ReplyFrame(replyTo: piece, data: message))))
    }

    /// Every scalar from U+0000 to U+00FF, one per message, and each with the others around it:
    /// a run boundary bug in the escaper (a byte lost or doubled next to an escape) shows here.
    @Test func everyLatin1ScalarNextToEveryEscapeMatches() throws {
        let encoder = ProtocolSamples.sortedEncoder()
        for value in 0..<0x100 {
            let scalar = String(Character(Unicode.Scalar(UInt8(value))))
            var message = FastWireFixture.message
            message.text = scalar + "\"" + scalar + "\\" + scalar + "\n" + scalar + "\u{1}" + scalar
            let event = ServerEvent.messageCreated(MessageEvent(message: message))
            #expect(try #require(FastWire.event(event)) == Array(encoder.encode(event)), "U+\(String(value, radix: 16))")
        }
    }

    /// The text of a message is exactly what the user sent once decoded: long runs of escapes,
    /// a 5,000-character emoji text, and text ending in an escape.
    @Test(arguments: [
        String(repeating: "\"", count: 5000), String(repeating: "\\", count: 4999) + "x", String(repeating: "👨‍👩‍👧‍👦", count: 5000),
        String(repeating: "\u{1}", count: 300), "ends with a quote\"", "ends with a backslash\\", "ends with a newline\n",
    ])
    func longAndEscapeHeavyTextsSurvive(text: String) throws {
        var message = FastWireFixture.message
        message.text = text
        let event = ServerEvent.messageCreated(MessageEvent(message: message))
        let fast = try #require(FastWire.event(event))
        #expect(fast == Array(try ProtocolSamples.sortedEncoder().encode(event)))
        guard case .messageCreated(let decoded) = try Self.decoder.decode(ServerEvent.self, from: Data(fast)) else {
            Issue.record("not a message.created")
            return
        }
        #expect(decoded.message.text.utf8.elementsEqual(text.utf8), "the exact bytes the sender typed come back")
    }

    /// The frame starts with `{"data":`, ends with `"type":"…"}` and names the event's type,
    /// so the client routes a hand-written frame like any other.
    @Test func framesCarryTheirEventType() throws {
        let message = FastWireFixture.message
        let created = try #require(FastWire.event(.messageCreated(MessageEvent(message: message))))
        let updated = try #require(FastWire.event(.messageUpdated(MessageEvent(message: message))))
        let conversation = try #require(FastWire.event(.conversationUpdated(ConversationEvent(conversation: FastWireFixture.conversation))))
        #expect(String(decoding: created, as: UTF8.self).hasPrefix(#"{"data":{"message":{"#))
        #expect(String(decoding: created, as: UTF8.self).hasSuffix(#"},"type":"message.created"}"#))
        #expect(String(decoding: updated, as: UTF8.self).hasSuffix(#"},"type":"message.updated"}"#))
        #expect(String(decoding: conversation, as: UTF8.self).hasPrefix(#"{"data":{"conversation":{"#))
        #expect(String(decoding: conversation, as: UTF8.self).hasSuffix(#"},"type":"conversation.updated"}"#))
        let header = try Self.decoder.decode(FrameHeader.self, from: Data(created))
        #expect(header.type == "message.created")
        #expect(header.id == nil)
        #expect(!header.isReply)
    }

    /// Only the three hot events are hand-written; every other event is left to the encoder
    /// (FastWire answers nil rather than writing something wrong).
    @Test func otherEventsAreNotHandWritten() {
        let id = FastWireFixture.alice
        let others: [ServerEvent] = [
            .hello(HelloEvent(user: User(id: id, organizationId: id, email: "a@b.c", displayName: "A"), sessionId: "s", heartbeatSeconds: 30)),
            .typing(TypingEvent(conversationId: id, userId: id, isTyping: true)),
            .receipt(ReceiptEvent(conversationId: id, userId: id, readSeq: 1, deliveredSeq: 2)),
            .presence(PresenceEvent(userId: id, isOnline: true)),
            .receiptSummary(ReceiptSummaryEvent(conversationId: id, seq: 1, readCount: 2, deliveredCount: 3)),
            .typingSummary(TypingSummaryEvent(conversationId: id, count: 4)),
            .conversationActivity(ConversationActivityEvent(
                conversationId: id, lastSeq: 1, lastActivityAt: FastWireFixture.date, lastMessage: FastWireFixture.message)),
        ]
        for event in others {
            #expect(FastWire.event(event) == nil, "\(event.type)")
        }
    }

    /// The exact bytes of a plain text message: key order, lowercase ids, millisecond dates,
    /// empty reactions as `{}` and no optional key at all when absent.
    @Test func aPlainMessageHasTheDocumentedBytes() throws {
        let fast = FastWire.messageReply(replyTo: "c1", FastWireFixture.message)
        let expected = #"{"data":{"clientMessageId":"tmp-1","conversationId":"0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12","#
            + #""createdAt":"2026-11-22T10:15:30.123Z","id":"00000000-0000-4000-8000-00000000000a","reactions":{},"#
            + #""senderId":"6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01","seq":7,"text":"hi","type":"text","updatedSeq":7},"#
            + #""ok":true,"replyTo":"c1"}"#
        #expect(String(decoding: fast, as: UTF8.self) == expected)
        #expect(String(decoding: FastWire.messageReply(replyTo: nil, FastWireFixture.message), as: UTF8.self).hasSuffix(#""ok":true,"replyTo":null}"#))
    }

    /// A conversation view has the documented bytes, with and without its member lists.
    @Test func aConversationViewHasTheDocumentedBytes() throws {
        let full = try #require(FastWire.event(.conversationUpdated(ConversationEvent(conversation: FastWireFixture.conversation))))
        let id = "00000000-0000-4000-8000-0000000000cc"
        let alice = FastWireFixture.alice.description
        #expect(String(decoding: full, as: UTF8.self) == #"{"data":{"conversation":{"createdAt":"2026-11-22T10:15:30.123Z","id":""#
            + id + #"","lastActivityAt":"2026-11-22T10:15:30.123Z","lastSeq":9,"memberCount":1,"members":[{"deliveredSeq":9,"readSeq":7,"userId":""#
            + alice + #""}],"mentionCount":0,"muted":false,"name":"Team \"A\"","participantIds":[""# + alice + #""],"readSeq":7,"type":"group","unreadCount":2}},"type":"conversation.updated"}"#)
        let large = try #require(FastWire.event(.conversationUpdated(ConversationEvent(conversation: FastWireFixture.conversation.listingMembers(upTo: 0)))))
        let text = String(decoding: large, as: UTF8.self)
        #expect(!text.contains("members\""))
        #expect(!text.contains("participantIds"))
        #expect(text.contains(#""memberCount":1,"mentionCount":0,"muted":false,"name""#))
    }
}

/// Fixed values for the byte-exact cases.
enum FastWireFixture {
    static let alice = EntityID("6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01")!
    static let conversationId = EntityID("0B5E2C1A-77A4-4F63-8C1E-5F7D8E9A0B12")!
    /// 2026-11-22T10:15:30.123Z
    static let date = Date(millisecondsSince1970: 1_795_342_530_123)
    static let message = Message(
        id: EntityID("00000000-0000-4000-8000-00000000000a")!, conversationId: conversationId, seq: 7, updatedSeq: 7,
        senderId: alice, clientMessageId: "tmp-1", type: .text, text: "hi", createdAt: date)
    static let conversation = Conversation(
        id: EntityID("00000000-0000-4000-8000-0000000000CC")!, type: .group, name: "Team \"A\"", participantIds: [alice],
        createdAt: date, lastActivityAt: date, lastSeq: 9, unreadCount: 2, readSeq: 7,
        members: [Member(userId: alice, readSeq: 7, deliveredSeq: 9)])
}

/// The `data.message` of a message event, to decode one back.
private struct ServerEventEnvelopeProbe: Decodable {
    struct Payload: Decodable { var message: Message }
    var data: Payload
}
