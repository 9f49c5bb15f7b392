import Foundation
import ParleyProtocol

/// splitmix64, the same generator as ParleyTestSupport's `SeededGenerator` (this test target
/// links ParleyProtocol only), so a failing seed can be run again.
struct ProtocolRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &self) < percent }
}

/// Random wire values built from the strings that break hand-written JSON and sorting.
enum ProtocolSamples {
    /// Pieces of text users really send, and the ones that break escaping or key order:
    /// quotes, backslashes, every short escape, other control characters, DEL, C1, the line and
    /// paragraph separators, a BOM, the replacement character, the last scalar, precomposed and
    /// decomposed accents (equal as Swift strings, different bytes), skin tones, ZWJ families,
    /// flags, right-to-left text and its override, a zero-width space, and JSON-looking text.
    static let pieces: [String] = [
        "\"", "\\", "/", "\n", "\r", "\t", "\u{8}", "\u{C}", "\u{0}", "\u{1}", "\u{B}", "\u{1B}", "\u{1F}",
        "\u{7F}", "\u{80}", "\u{85}", "\u{A0}", "\u{2028}", "\u{2029}", "\u{FEFF}", "\u{FFFD}", "\u{FFFF}",
        "\u{10FFFF}", "\u{E000}", "\u{E9}", "e\u{301}", "\u{C5}", "A\u{30A}", "\u{212B}", "f", "E", "👍",
        "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷", "漢字", "עברית", "\u{202E}", "\u{200B}", "</script>", "\\u0041", "{}",
        "[", ":", ",", " ", "a", "Z", "0", "9", "10", "_", "~", "hello world",
    ]

    /// A string of up to `maxPieces` pieces (empty sometimes).
    static func string(_ rng: inout ProtocolRandom, maxPieces: Int = 6) -> String {
        let count = Int.random(in: 0...maxPieces, using: &rng)
        return (0..<count).map { _ in pieces.randomElement(using: &rng)! }.joined()
    }

    /// A non-empty string (dictionary keys, names).
    static func nonEmptyString(_ rng: inout ProtocolRandom) -> String {
        let text = string(&rng, maxPieces: 4)
        return text.isEmpty ? pieces.randomElement(using: &rng)! : text
    }

    static func id(_ rng: inout ProtocolRandom) -> EntityID {
        let a = rng.next(), b = rng.next()
        func byte(_ word: UInt64, _ index: Int) -> UInt8 { UInt8(truncatingIfNeeded: word >> (8 * index)) }
        return EntityID(UUID(uuid: (
            byte(a, 0), byte(a, 1), byte(a, 2), byte(a, 3), byte(a, 4), byte(a, 5), byte(a, 6), byte(a, 7),
            byte(b, 0), byte(b, 1), byte(b, 2), byte(b, 3), byte(b, 4), byte(b, 5), byte(b, 6), byte(b, 7))))
    }

    /// Milliseconds from year 0001 to 9999, both sides of 1970, some on whole seconds and days.
    static func milliseconds(_ rng: inout ProtocolRandom) -> Int64 {
        let ms = Int64.random(in: -62_135_596_800_000...253_402_300_799_999, using: &rng)
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return ms - ms % 1000
        case 1: return ms - ms % 86_400_000
        default: return ms
        }
    }

    static func date(_ rng: inout ProtocolRandom) -> Date { Date(millisecondsSince1970: milliseconds(&rng)) }

    /// Sequence numbers and counts, the extremes included.
    static func int64(_ rng: inout ProtocolRandom) -> Int64 {
        switch Int.random(in: 0..<6, using: &rng) {
        case 0: [0, 1, -1, Int64.max, Int64.min].randomElement(using: &rng)!
        case 1: Int64.random(in: Int64.min...Int64.max, using: &rng)
        default: Int64.random(in: 0...1_000_000, using: &rng)
        }
    }

    static func attachment(_ rng: inout ProtocolRandom) -> Attachment {
        Attachment(
            id: id(&rng), name: string(&rng), contentType: ["image/png", "video/mp4", "application/octet-stream", string(&rng)].randomElement(using: &rng)!,
            size: int64(&rng), url: "/api/v1/attachments/\(id(&rng))",
            width: rng.chance(50) ? Int(int64(&rng)) : nil, height: rng.chance(50) ? Int(int64(&rng)) : nil,
            durationMs: rng.chance(50) ? Int(int64(&rng)) : nil)
    }

    static func message(_ rng: inout ProtocolRandom) -> Message {
        var metadata: [String: String]?
        if rng.chance(40) {
            metadata = [:]
            for _ in 0..<Int.random(in: 0...6, using: &rng) { metadata![nonEmptyString(&rng)] = string(&rng) }
        }
        var reactions: [String: [EntityID]] = [:]
        if rng.chance(50) {
            for _ in 0..<Int.random(in: 1...5, using: &rng) {
                reactions[nonEmptyString(&rng)] = (0..<Int.random(in: 0...3, using: &rng)).map { _ in id(&rng) }
            }
        }
        return Message(
            id: id(&rng), conversationId: id(&rng), seq: int64(&rng), updatedSeq: int64(&rng), senderId: id(&rng),
            clientMessageId: string(&rng), type: MessageType.allCases.randomElement(using: &rng)!,
            text: rng.chance(5) ? String(repeating: string(&rng, maxPieces: 3) + "x", count: 700) : string(&rng, maxPieces: 12),
            replyToId: rng.chance(30) ? id(&rng) : nil, attachment: rng.chance(30) ? attachment(&rng) : nil,
            metadata: metadata, reactions: reactions, createdAt: date(&rng),
            editedAt: rng.chance(30) ? date(&rng) : nil, deletedAt: rng.chance(20) ? date(&rng) : nil,
            forwardedFromId: rng.chance(20) ? id(&rng) : nil)
    }

    /// A conversation whose lists are complete, or (a large group's shape) left out.
    static func conversation(_ rng: inout ProtocolRandom) -> Conversation {
        let members = (0..<Int.random(in: 0...6, using: &rng)).map { _ in
            Member(userId: id(&rng), readSeq: int64(&rng), deliveredSeq: int64(&rng))
        }
        let large = rng.chance(25)
        return Conversation(
            id: id(&rng), type: rng.chance(50) ? .direct : .group, name: rng.chance(60) ? string(&rng) : nil,
            participantIds: large ? [] : members.map(\.userId), createdAt: date(&rng), lastActivityAt: date(&rng),
            lastSeq: int64(&rng), lastMessage: rng.chance(60) ? message(&rng) : nil,
            unreadCount: Int(int64(&rng)), readSeq: int64(&rng), members: large ? [] : members,
            memberCount: large ? Int.random(in: 101...100_000, using: &rng) : nil)
    }

    /// `WireCoding`'s encoder with sorted keys: the bytes FastWire must write.
    static func sortedEncoder() -> JSONEncoder {
        let encoder = WireCoding.makeEncoder()
        encoder.outputFormatting.insert(.sortedKeys)
        return encoder
    }

    /// Text with every non-ASCII scalar spelled out, for readable failure messages.
    static func visible(_ bytes: some Sequence<UInt8>) -> String {
        String(decoding: Array(bytes), as: UTF8.self).unicodeScalars.map {
            $0.value >= 0x20 && $0.value < 0x7F ? String($0) : "<U+\(String($0.value, radix: 16, uppercase: true))>"
        }.joined()
    }
}
