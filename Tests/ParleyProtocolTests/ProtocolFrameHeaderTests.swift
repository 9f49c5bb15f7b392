import Foundation
import ParleyProtocol
import Testing

/// The gateway routes every incoming frame by its header and, when the frame is broken,
/// still addresses the error reply to its id: a wrong id there answers someone else's
/// command; a missing one leaves the client's send waiting forever.
@Suite struct ProtocolFrameHeaderTests {
    static let decoder = WireCoding.makeDecoder()

    /// The decoder reads each header key leniently: a key of the wrong type is absent, not a
    /// failure (the gateway then answers `invalid_request` instead of dropping the frame).
    @Test(arguments: [
        (#"{"id":"c1","type":"ping"}"#, "c1", "ping", nil, nil),
        (#"{"id":1,"type":"ping"}"#, nil, "ping", nil, nil),
        (#"{"id":null,"type":7}"#, nil, nil, nil, nil),
        (#"{"id":["c1"],"type":{"x":1}}"#, nil, nil, nil, nil),
        (#"{"replyTo":"c9","ok":true,"data":{}}"#, nil, nil, "c9", true),
        (#"{"replyTo":null,"ok":false,"error":{}}"#, nil, nil, nil, false),
        (#"{"replyTo":5,"ok":"yes"}"#, nil, nil, nil, nil),
        (#"{"type":"message.created","data":{"id":"inner","type":"inner"}}"#, nil, "message.created", nil, nil),
        (#"{}"#, nil, nil, nil, nil),
    ] as [(String, String?, String?, String?, Bool?)])
    func headersAreReadLeniently(json: String, id: String?, type: String?, replyTo: String?, ok: Bool?) throws {
        let header = try Self.decoder.decode(FrameHeader.self, from: Data(json.utf8))
        #expect(header.id == id)
        #expect(header.type == type)
        #expect(header.replyTo == replyTo)
        #expect(header.ok == ok)
        #expect(header.isReply == (ok != nil))
    }

    /// Frames that are not objects have no header at all.
    @Test(arguments: ["[]", #""id""#, "42", "null", "", "{", "not json"])
    func nonObjectsHaveNoHeader(json: String) {
        #expect(throws: (any Error).self) { try Self.decoder.decode(FrameHeader.self, from: Data(json.utf8)) }
    }

    /// `scanId` on frames the decoder cannot read, or that hide look-alikes of the id.
    @Test(arguments: [
        (#"{"id":"x"}"#, "x"),
        ("\t\r\n {\n\"id\"\t:\r\n\"spaced\"\n}", "spaced"),
        (#"{"id":""}"#, ""),
        (#"{"id":"c-1","type":"message.send","data":{"text":"}}}]]]"}"#, "c-1"),
        (#"{"data":{"text":"{\"id\":\"fake\"}"},"id":"real"}"#, "real"),
        (#"{"text":"ends with a backslash\\","id":"after-escape"}"#, "after-escape"),
        (#"{"a":[{"id":"in-array"},{"b":{"id":"deeper"}}],"id":"top"}"#, "top"),
        (#"{"a":[[[[]]]],"b":{},"id":"after-empties"}"#, "after-empties"),
        (#"{"type":"id","data":"id","id":"k"}"#, "k"),
        (#"{"id":"first","id":"second"}"#, "first"),
        (#"{"id":"Unicode ✓ 👍🏽"}"#, "Unicode ✓ 👍🏽"),
        (#"{"id":"x","data":"# + String(repeating: "{\"a\":", count: 20_000), "x"),
        (#"{"type":"id"}"#, nil),
        (#"{"type":"id","x":"y"}"#, nil),
        (#"{"data":{"id":"inner"},"x":["id"]}"#, nil),
        (#"{"id":null}"#, nil),
        (#"{"id":true}"#, nil),
        (#"{"id":{"id":"nested"}}"#, nil),
        (#"{"id":"esc\"aped"}"#, nil),
        (#"{"id":"tab\tescape"}"#, nil),
        (#"{"i\u0064":"escaped-key"}"#, nil),
        (#"[{"id":"x"}]"#, nil),
        (#""id""#, nil),
        (#"{"id":"#, nil),
        (#"{"id""#, nil),
        (#"{"id" "x"}"#, nil),
        (#"{"a":"\"#, nil),
        (#"{}{"id":"second-object"}"#, nil),
        (#"{"a":1}}, "id":"after-close"}"#, nil),
        ("", nil),
        ("   ", nil),
    ] as [(String, String?)])
    func scanningFindsOnlyTheTopLevelId(json: String, id: String?) {
        #expect(FrameHeader.scanId(Data(json.utf8)) == id)
    }

    /// Bytes that are not UTF-8 around the id do not stop the scan; the id is read as text.
    @Test func invalidUTF8AroundTheIdIsSkipped() {
        var bytes = Array(#"{"junk":""#.utf8) + [0xFF, 0xFE, 0xC3] + Array(#"","id":"ok"}"#.utf8)
        #expect(FrameHeader.scanId(Data(bytes)) == "ok")
        bytes = Array(#"{"id":""#.utf8) + [0xC3, 0xA9] + Array(#""}"#.utf8)
        #expect(FrameHeader.scanId(Data(bytes)) == "é")
    }

    /// Seeded differential test: random frames (nested objects and arrays, nasty strings,
    /// numbers, literals, random whitespace, the id anywhere among the top-level keys or
    /// absent, decoy `id` keys inside) give the same id to `scanId` as the full decoder.
    @Test func scanningAgreesWithTheDecoderOnRandomFrames() throws {
        var rng = ProtocolRandom(seed: 0x5CA9)
        var withId = 0
        for round in 0..<600 {
            var members: [String] = (0..<Int.random(in: 0...5, using: &rng)).map { index in
                Self.member(key: "k\(index)", value: Self.value(&rng, depth: 0), rng: &rng)
            }
            var expected: String?
            if rng.chance(75) {
                let plain = ["c1", "", "a b", "é", "👍🏽", "x-\(round)", "123", "null", "{}", "id"]
                let id = plain.randomElement(using: &rng)!
                members.insert(Self.member(key: "id", value: try Self.string(id), rng: &rng), at: Int.random(in: 0...members.count, using: &rng))
                expected = id
                withId += 1
            }
            let json = Self.space(&rng) + "{" + members.joined(separator: ",") + "}" + Self.space(&rng)
            let header = try Self.decoder.decode(FrameHeader.self, from: Data(json.utf8))
            #expect(header.id == expected, "round \(round): decoder on \(json)")
            #expect(FrameHeader.scanId(Data(json.utf8)) == expected, "round \(round): \(json)")
        }
        #expect(withId > 400)
    }

    static func space(_ rng: inout ProtocolRandom) -> String {
        String((0..<Int.random(in: 0...2, using: &rng)).map { _ in [" ", "\n", "\t", "\r"].randomElement(using: &rng)! })
    }

    static func member(key: String, value: String, rng: inout ProtocolRandom) -> String {
        space(&rng) + "\"" + key + "\"" + space(&rng) + ":" + space(&rng) + value + space(&rng)
    }

    /// A JSON string literal as the wire encoder writes it.
    static func string(_ text: String) throws -> String {
        String(decoding: try WireCoding.makeEncoder().encode(text), as: UTF8.self)
    }

    /// A random JSON value; objects inside may have their own `id` keys (decoys).
    static func value(_ rng: inout ProtocolRandom, depth: Int) -> String {
        let kinds = depth > 3 ? 4 : 6
        switch Int.random(in: 0..<kinds, using: &rng) {
        case 0: return (try? string(ProtocolSamples.string(&rng))) ?? "\"\""
        case 1: return ["0", "-1", "3.25", "1e9", "-0.5E-3"].randomElement(using: &rng)!
        case 2: return ["true", "false", "null"].randomElement(using: &rng)!
        case 3: return (try? string(["id", "\"id\":\"x\"", "{\"id\":\"y\"}", "}", "]", "\\"].randomElement(using: &rng)!)) ?? "\"\""
        case 4:
            let items = (0..<Int.random(in: 0...3, using: &rng)).map { _ in space(&rng) + value(&rng, depth: depth + 1) + space(&rng) }
            return "[" + items.joined(separator: ",") + "]"
        default:
            let keys = ["id", "type", "data", "x", "id "]
            var used = Set<String>()
            var members: [String] = []
            for _ in 0..<Int.random(in: 0...3, using: &rng) {
                let key = keys.randomElement(using: &rng)!
                guard used.insert(key).inserted else { continue }
                members.append(member(key: key, value: value(&rng, depth: depth + 1), rng: &rng))
            }
            return "{" + members.joined(separator: ",") + "}"
        }
    }
}
