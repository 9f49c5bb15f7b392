import Foundation
import ParleyProtocol
import Testing

/// `FastFrameReader` reads a frame only when Foundation's decoder reads the same frame from
/// the same bytes; everything else it leaves to Foundation (nil). The plain sends clients
/// write must take the fast way, or it buys nothing.
@Suite struct FastFrameReaderTests {
    private static func foundation(_ text: String) -> ClientFrame? {
        try? WireCoding.makeDecoder().decode(ClientFrame.self, from: Data(text.utf8))
    }

    private static func encoded(_ frame: ClientFrame) throws -> String {
        String(decoding: try WireCoding.makeEncoder().encode(frame), as: UTF8.self)
    }

    private static func sendFrame(_ rng: inout ProtocolRandom) -> ClientFrame {
        let request = SendMessageRequest(
            conversationId: ProtocolSamples.id(&rng), clientMessageId: ProtocolSamples.nonEmptyString(&rng),
            text: ProtocolSamples.string(&rng), type: rng.chance(30) ? MessageType.allCases.randomElement(using: &rng) : nil,
            replyToId: rng.chance(20) ? ProtocolSamples.id(&rng) : nil, attachmentId: rng.chance(10) ? ProtocolSamples.id(&rng) : nil,
            forwardOf: rng.chance(10) ? ProtocolSamples.id(&rng) : nil, threadRootId: rng.chance(20) ? ProtocolSamples.id(&rng) : nil)
        return ClientFrame(id: ProtocolSamples.nonEmptyString(&rng), command: .sendMessage(request))
    }

    /// What the SDK's encoder writes for a send (every field, every awkward character) is read
    /// here, and equals what Foundation reads.
    @Test func encodedSendsTakeTheFastWayAndMatchFoundation() throws {
        var rng = ProtocolRandom(seed: 11)
        for round in 0..<2_000 {
            let frame = Self.sendFrame(&rng)
            let text = try Self.encoded(frame)
            let fast = try #require(FastFrameReader.sendFrame(text), "round \(round): \(text)")
            #expect(fast == frame, "round \(round)")
            #expect(fast == Self.foundation(text), "round \(round)")
        }
    }

    /// Hand-written spellings of one send: other key orders, white space everywhere JSON
    /// allows it, every escape (a surrogate pair among them), a missing text, upper-case ids.
    @Test func handWrittenSpellingsMatchFoundation() throws {
        let c = "0f8fad5b-d9cb-469f-a165-70867728950e"
        let frames = [
            #"{"id":"1","type":"message.send","data":{"conversationId":"\#(c)","clientMessageId":"t1","text":"hi"}}"#,
            #"{"data":{"text":"hi","clientMessageId":"t1","conversationId":"\#(c)"},"type":"message.send","id":"1"}"#,
            " \r\n\t{ \"id\" : \"1\" ,\n \"type\":\"message.send\",\"data\" :\t{ \"conversationId\":\"\(c)\" , \"clientMessageId\" : \"t1\" } } \n",
            #"{"id":"\u0031","type":"message\u002esend","data":{"conversationId":"\#(c.uppercased())","clientMessageId":"t\/1","text":"\"q\" \\ \/ \b\f\n\r\t \u00e9 \ud83d\ude00 \u2028"}}"#,
            #"{"id":"x","type":"message.send","data":{"conversationId":"\#(c)","clientMessageId":"t","type":"image","attachmentId":"\#(c)","replyToId":"\#(c)","forwardOf":"\#(c)"}}"#,
            #"{"id":"é漢👍","type":"message.send","data":{"clientMessageId":"t","text":"no conversation id"}}"#,
            #"{"id":"t","type":"message.send","data":{"threadRootId":"\#(c)","conversationId":"\#(c)","clientMessageId":"t","text":"in a thread"}}"#,
        ]
        for text in frames {
            let fast = try #require(FastFrameReader.sendFrame(text), "\(text)")
            #expect(fast == Self.foundation(text), "\(text)")
        }
        let last = try #require(FastFrameReader.sendFrame(frames[3]))
        guard case .sendMessage(let request) = last.command else { Issue.record("not a send"); return }
        #expect(request.text == "\"q\" \\ / \u{8}\u{C}\n\r\t é 😀 \u{2028}")
        #expect(request.clientMessageId == "t/1")
    }

    /// Frames outside the plain shape are Foundation's to read or refuse, with its own error.
    @Test func anythingElseIsLeftToFoundation() {
        let c = "0f8fad5b-d9cb-469f-a165-70867728950e"
        let send = #""type":"message.send""#
        let leftAlone = [
            #"{"id":"1","type":"typing","data":{"conversationId":"\#(c)","isTyping":true}}"#,
            #"{"id":"1","type":"ping"}"#,
            #"{"id":"1",\#(send),"data":{"conversationId":"\#(c)","clientMessageId":"t","metadata":{"a":"b"}}}"#,
            #"{"id":"1",\#(send),"data":{"conversationId":"\#(c)","clientMessageId":"t","extra":"x"}}"#,
            #"{"id":"1",\#(send),"extra":1,"data":{"conversationId":"\#(c)","clientMessageId":"t"}}"#,
            #"{"id":"1","id":"2",\#(send),"data":{"conversationId":"\#(c)","clientMessageId":"t"}}"#,
            #"{"id":"1",\#(send),"data":{"clientMessageId":"a","clientMessageId":"b"}}"#,
            #"{"id":"1",\#(send),"data":{"conversationId":null,"clientMessageId":"t"}}"#,
            #"{"id":1,\#(send),"data":{"clientMessageId":"t"}}"#,
            #"{"id":"1",\#(send),"data":{"conversationId":"not-a-uuid","clientMessageId":"t"}}"#,
            #"{"id":"1",\#(send),"data":{"clientMessageId":"t","type":"sticker"}}"#,
            #"{"id":"1",\#(send),"data":{"text":"no client id"}}"#,
            #"{"id":"1",\#(send),"data":{}}"#,
            #"{"id":"1",\#(send)}"#,
            #"{"id":"1",\#(send),"data":{"clientMessageId":"t","text":"lone \ud83d surrogate"}}"#,
            #"{"id":"1",\#(send),"data":{"clientMessageId":"t","text":"low \udc00 first"}}"#,
            #"{"id":"1",\#(send),"data":{"clientMessageId":"t","text":"bad \x escape"}}"#,
            #"{"id":"1",\#(send),"data":{"clientMessageId":"t","text":"short \u12"}}"#,
            "{\"id\":\"1\",\(send),\"data\":{\"clientMessageId\":\"t\",\"text\":\"raw\ttab\"}}",
            #"{"id":"1",\#(send),"data":{"clientMessageId":"t"}} trailing"#,
            #"{"id":"1",\#(send),"data":{"clientMessageId":"t"},}"#,
            #"{"id":"1",\#(send),"data":{"clientMessageId":"t"}"#,
            #"[{"id":"1",\#(send),"data":{"clientMessageId":"t"}}]"#,
            "\u{FEFF}{\"id\":\"1\",\(send),\"data\":{\"clientMessageId\":\"t\"}}",
            "",
            "{",
        ]
        for text in leftAlone {
            #expect(FastFrameReader.sendFrame(text) == nil, "\(text)")
        }
    }

    /// Seeded mutations of real frames (bytes dropped, doubled, swapped for JSON's own
    /// characters): whenever the reader reads one, Foundation reads the very same frame.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func mutatedFramesAreReadOnlyAsFoundationReadsThem(seed: UInt64) throws {
        var rng = ProtocolRandom(seed: seed)
        let specials: [UInt8] = Array(#"{}[]:,"\ u0123456789abcdefABCDEF/nrtbf-.e"#.utf8) + [0x09, 0x0A, 0x00, 0x1F, 0xC3, 0xA9]
        var read = 0
        for round in 0..<4_000 {
            var bytes = Array(try Self.encoded(Self.sendFrame(&rng)).utf8)
            for _ in 0..<Int.random(in: 1...3, using: &rng) where !bytes.isEmpty {
                let at = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: bytes.remove(at: at)
                case 1: bytes.insert(bytes[at], at: at)
                case 2: bytes[at] = specials.randomElement(using: &rng)!
                default: bytes.insert(specials.randomElement(using: &rng)!, at: at)
                }
            }
            // The gateway gets a String: broken UTF-8 never reaches the reader.
            guard let text = String(validating: bytes, as: UTF8.self) else { continue }
            guard let fast = FastFrameReader.sendFrame(text) else { continue }
            read += 1
            #expect(fast == Self.foundation(text), "seed \(seed) round \(round): \(text)")
        }
        // Most mutations break a frame, but some must survive, or nothing was compared.
        #expect(read > 100)
    }
}
