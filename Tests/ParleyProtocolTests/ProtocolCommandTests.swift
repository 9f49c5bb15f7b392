import Foundation
import ParleyProtocol
import Testing

/// Commands as the SDK writes them: whatever the ids and texts, the server reads back the
/// same command, and the header it routes on names the right id and type.
@Suite struct ProtocolCommandRoundTripTests {
    static func command(_ rng: inout ProtocolRandom) -> ClientCommand {
        let conversationId = ProtocolSamples.id(&rng)
        switch Int.random(in: 0..<7, using: &rng) {
        case 0:
            var metadata: [String: String]?
            if rng.chance(40) { metadata = [ProtocolSamples.nonEmptyString(&rng): ProtocolSamples.string(&rng)] }
            return .sendMessage(SendMessageRequest(
                conversationId: conversationId, clientMessageId: ProtocolSamples.string(&rng), text: ProtocolSamples.string(&rng, maxPieces: 20),
                type: rng.chance(50) ? MessageType.allCases.randomElement(using: &rng)! : nil,
                replyToId: rng.chance(30) ? ProtocolSamples.id(&rng) : nil, attachmentId: rng.chance(30) ? ProtocolSamples.id(&rng) : nil,
                metadata: metadata, forwardOf: rng.chance(20) ? ProtocolSamples.id(&rng) : nil))
        case 1: return .typing(TypingCommand(conversationId: conversationId, isTyping: rng.chance(50)))
        case 2: return .read(ReadRequest(conversationId: conversationId, upToSeq: ProtocolSamples.int64(&rng)))
        case 3: return .read(ReadRequest(conversationId: conversationId, messageIds: (0..<Int.random(in: 0...4, using: &rng)).map { _ in ProtocolSamples.id(&rng) }))
        case 4: return .delivered(DeliveredCommand(conversationId: conversationId, upToSeq: ProtocolSamples.int64(&rng)))
        case 5: return .focus(FocusCommand(conversationId: rng.chance(50) ? conversationId : nil))
        default: return .ping
        }
    }

    /// Seeded: random commands under random ids (quotes, backslashes, emoji, empty) decode to
    /// the same frame; the header and the id scan both find the id the reply must carry.
    @Test func randomCommandsRoundTripAndKeepTheirIds() throws {
        var rng = ProtocolRandom(seed: 0xC0_3D)
        let encoder = WireCoding.makeEncoder(), decoder = WireCoding.makeDecoder()
        for round in 0..<1_000 {
            let frame = ClientFrame(id: ProtocolSamples.string(&rng), command: Self.command(&rng))
            let data = try encoder.encode(frame)
            #expect(try decoder.decode(ClientFrame.self, from: data) == frame, "round \(round)")
            let header = try decoder.decode(FrameHeader.self, from: data)
            #expect(header.id == frame.id)
            #expect(header.type == frame.command.type)
            #expect(!header.isReply)
            let escaped = frame.id.unicodeScalars.contains { $0.value < 0x20 || $0 == "\"" || $0 == "\\" }
            #expect(FrameHeader.scanId(data) == (escaped ? nil : frame.id), "round \(round)")
        }
    }

    /// Seeded: replies carrying each kind of payload, positive or not, under random ids.
    @Test func randomRepliesRoundTrip() throws {
        var rng = ProtocolRandom(seed: 0x2E_91)
        let encoder = WireCoding.makeEncoder(), decoder = WireCoding.makeDecoder()
        for round in 0..<300 {
            let replyTo: String? = rng.chance(10) ? nil : ProtocolSamples.string(&rng)
            let error = ErrorInfo(code: ErrorCode.allCases.randomElement(using: &rng)!, message: ProtocolSamples.string(&rng),
                                  retryAfter: rng.chance(50) ? Int.random(in: 0...3600, using: &rng) : nil)
            let message: ReplyFrame<Message> = rng.chance(50) ? ReplyFrame(replyTo: replyTo, data: ProtocolSamples.message(&rng)) : ReplyFrame(replyTo: replyTo, error: error)
            #expect(try decoder.decode(ReplyFrame<Message>.self, from: encoder.encode(message)) == message, "round \(round)")
            let empty: ReplyFrame<EmptyPayload> = rng.chance(50) ? ReplyFrame(replyTo: replyTo, data: EmptyPayload()) : ReplyFrame(replyTo: replyTo, error: error)
            let data = try encoder.encode(empty)
            #expect(try decoder.decode(ReplyFrame<EmptyPayload>.self, from: data) == empty)
            let header = try decoder.decode(FrameHeader.self, from: data)
            #expect(header.isReply)
            #expect(header.replyTo == replyTo)
            #expect(header.id == nil && header.type == nil)
        }
    }
}

/// The limits the server checks and the SDK checks before sending: both sides must use the
/// contract's numbers, or the SDK lets through what the server then refuses.
@Suite struct ProtocolLimitsTests {
    @Test func limitsAreTheContractsNumbers() {
        #expect(Limits.maxPayloadBytes == 65_536)
        #expect(Limits.maxTextCharacters == 5000)
        #expect(Limits.maxClientMessageIdLength == 128)
        #expect(Limits.maxMetadataEntries == 32)
        #expect(Limits.maxConversationNameCharacters == 200)
        #expect(Limits.maxDisplayNameCharacters == 100)
        #expect(Limits.maxOrganizationCharacters == 100)
        #expect(Limits.passwordLength == 8...128)
        #expect(Limits.maxGroupParticipants == 1000)
        #expect(Limits.maxReadBatch == 500)
        #expect(Limits.messagesPageDefault == 50 && Limits.messagesPageMax == 200)
        #expect(Limits.participantsPageDefault == 100 && Limits.participantsPageMax == 500)
        #expect(Limits.changesPageDefault == 100 && Limits.changesPageMax == 500)
        #expect(PushNotificationPayload.maxBodyCharacters == 240)
    }

    /// Trimming removes leading and trailing whitespace and newlines of every kind (so a
    /// whitespace-only text is empty and refused) and keeps what is inside.
    @Test(arguments: [
        ("  hi  ", "hi"), ("\n\thi\r\n", "hi"), ("\u{A0}hi\u{A0}", "hi"), ("\u{3000}hi\u{2003}", "hi"), ("\u{2028}hi\u{2029}", "hi"),
        ("\u{85}hi\u{B}\u{C}", "hi"), ("a  b\n\nc", "a  b\n\nc"), (" \n\t\u{A0}\u{3000} ", ""), ("", ""), ("👍🏽 ", "👍🏽"),
        ("\u{1F}x\u{1F}", "\u{1F}x\u{1F}"),
    ])
    func trimmingIsUnicodeWhitespace(text: String, trimmed: String) {
        #expect(Limits.trimmed(text) == trimmed)
    }

    /// NUL anywhere is found (SQLite would cut the text there); look-alikes are not NUL.
    @Test(arguments: [("a\u{0}b", true), ("\u{0}", true), ("end\u{0}", true), ("", false), ("\u{2400}", false), ("\\0", false), ("\\u0000", false)])
    func nulIsFoundAnywhere(text: String, contains: Bool) {
        #expect(Limits.containsNul(text) == contains)
    }
}
