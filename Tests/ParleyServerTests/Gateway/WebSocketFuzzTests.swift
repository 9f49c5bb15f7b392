import Foundation
import NIOCore
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Synchronization
import Testing
import WSClient

/// Seeded mutations of every WebSocket command, pipelined on one connection as an attacker or a
/// broken client would send them: wrong types, missing and extra keys, huge numbers, deep
/// nesting, invalid UTF-8 and binary frames, frames just under and over the payload limit, ping
/// floods. The server must not crash or answer `internal`; every frame with an id gets exactly
/// one reply; the connection stays usable; and what was stored is exactly what was acknowledged,
/// in a gapless sequence.
@Suite struct WebSocketFuzzTests {
    /// Frames per run: 1,500 beside the rest of the suite; `.ci/run` runs 10,000 on their own
    /// (PARLEY_FUZZ_FRAMES).
    static var frameCount: Int { Int(ProcessInfo.processInfo.environment["PARLEY_FUZZ_FRAMES"] ?? "") ?? 1500 }

    /// A frame to send and whether it carries a usable id.
    enum Frame: Sendable {
        case text(String, id: String?)
        case binary([UInt8])
    }

    struct Mutator {
        var random: SeededGenerator
        let conversationId: String
        var counter = 0

        mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &random)] }

        /// A valid command's `data`, by type.
        mutating func validData(_ type: String) -> [String: Any]? {
            counter += 1
            switch type {
            case "message.send": return ["conversationId": conversationId, "clientMessageId": "fz-\(counter)", "text": "fuzz \(counter)"]
            case "typing": return ["conversationId": conversationId, "isTyping": Bool.random(using: &random)]
            case "read": return ["conversationId": conversationId, "upToSeq": Int.random(in: 0...5, using: &random)]
            case "delivered": return ["conversationId": conversationId, "upToSeq": Int.random(in: 0...5, using: &random)]
            case "focus": return ["conversationId": conversationId]
            default: return nil
            }
        }

        mutating func weirdValue() -> Any {
            pick([
                NSNull(), 0, -1, 1e308, -1e308, Int64.max, Int64.min, "9223372036854775808", "", String(repeating: "x", count: 5000),
                [1, 2, 3], ["nested": ["deeper": [true]]], true, "not-a-uuid", "00000000-0000-0000-0000-000000000000",
                "\u{0000}nul", "\u{202E}rtl", "😀", 3.5,
            ] as [Any])
        }

        mutating func next() -> Frame {
            counter += 1
            let id = "f\(counter)"
            let type = pick(["message.send", "typing", "read", "delivered", "focus", "ping", "nope", ""])
            var frame: [String: Any] = ["id": id, "type": type]
            if let data = validData(type) { frame["data"] = data }
            switch Int.random(in: 0..<14, using: &random) {
            case 0:  // a key's value of another type
                if var data = frame["data"] as? [String: Any], let key = data.keys.sorted().randomElement(using: &random) {
                    data[key] = weirdValue()
                    frame["data"] = data
                }
            case 1:  // a missing key
                if var data = frame["data"] as? [String: Any], let key = data.keys.sorted().randomElement(using: &random) {
                    data[key] = nil
                    frame["data"] = data
                }
            case 2:  // extra keys, at both levels
                frame["extra"] = weirdValue()
                if var data = frame["data"] as? [String: Any] {
                    data["unexpected"] = weirdValue()
                    frame["data"] = data
                }
            case 3:  // data of the wrong shape
                frame["data"] = weirdValue()
            case 4:  // deep nesting
                let depth = pick([64, 512, 5000])
                let nested = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
                return .text(#"{"id":"\#(id)","type":"message.send","data":\#(nested)}"#, id: id)
            case 5:  // the id itself is wrong
                frame["id"] = pick([NSNull(), 42, "", ["a"]] as [Any])
                return .text(Self.json(frame), id: nil)
            case 6:  // not JSON, or not an object
                // A frame broken after its id still gets its reply addressed to it.
                let text = pick(["", "null", "[]", "42", "{", #"{"id":"\#(id)""#, "\u{0001}\u{0002}"])
                return .text(text, id: text.contains(id) ? id : nil)
            case 7:  // invalid UTF-8 (only a binary frame can carry it)
                return .binary([0x7B, 0x22, 0x69, 0x64, 0x22, 0x3A, 0x22, 0xFF, 0xFE, 0x22, 0x7D])
            case 8:  // just under and just over the payload limit
                let over = Bool.random(using: &random)
                let size = Limits.maxPayloadBytes + (over ? 10 : -200)
                let head = #"{"id":"\#(id)","type":"ping","pad":""#
                return .text(head + String(repeating: "a", count: max(0, size - head.utf8.count - 2)) + #""}"#, id: id)
            case 9:  // a text far beyond the message limit
                frame["type"] = "message.send"
                frame["data"] = ["conversationId": conversationId, "clientMessageId": "big-\(counter)",
                                 "text": String(repeating: "é", count: Limits.maxTextCharacters + 1)]
            case 10:  // a conversation that is not the sender's
                if var data = frame["data"] as? [String: Any] {
                    data["conversationId"] = EntityID().description
                    frame["data"] = data
                }
            default:
                break
            }
            return .text(Self.json(frame), id: id)
        }

        static func json(_ object: [String: Any]) -> String {
            guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.fragmentsAllowed]) else { return "{}" }
            return String(decoding: data, as: UTF8.self)
        }
    }

    /// Replies by id, and replies without one.
    final class Replies: Sendable {
        /// What a reply said.
        struct Reply: Sendable {
            var errorCode: String?
            var seq: Int64?
            var text: String?
        }

        struct State: Sendable {
            var byId: [String: [Reply]] = [:]
            var withoutId: [Reply] = []
            /// Acknowledged sends: seq → text (a retry answers the same seq).
            var acceptedSends: [Int64: String] = [:]
        }

        let state = Mutex(State())

        func record(_ text: String) {
            guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else { return }
            guard object.keys.contains("replyTo") || object["error"] != nil && object["type"] == nil else { return }
            let data = object["data"] as? [String: Any]
            let reply = Reply(
                errorCode: (object["error"] as? [String: Any])?["code"] as? String,
                seq: (data?["seq"] as? Int).map(Int64.init), text: data?["text"] as? String)
            let id = object["replyTo"] as? String
            state.withLock { state in
                if let id {
                    state.byId[id, default: []].append(reply)
                    if let seq = reply.seq, let text = reply.text { state.acceptedSends[seq] = text }
                } else {
                    state.withoutId.append(reply)
                }
            }
        }
    }

    @Test func mutatedCommandsGetOneReplyEachStoreNothingHalfWrittenAndLeaveTheConnectionUsable() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        var mutator = Mutator(random: SeededGenerator(seed: 20261124), conversationId: direct.id.description)
        var generated = (0..<Self.frameCount).map { _ in mutator.next() }
        // A flood of pings in the middle.
        generated.insert(contentsOf: (0..<200).map { Frame.text(#"{"id":"ping-\#($0)","type":"ping"}"#, id: "ping-\($0)") }, at: generated.count / 2)
        let frames = generated
        let expectedIds = frames.compactMap { if case .text(_, let id) = $0 { id } else { nil } }
        let replies = Replies()

        let url = server.baseURL.absoluteString.replacingOccurrences(of: "http://", with: "ws://") + "/api/v1/ws"
        let configuration = WebSocketClientConfiguration(
            maxFrameSize: 1 << 20, additionalHeaders: [.authorization: "Bearer \(alice.token)"], autoPing: .disabled)
        _ = try await WebSocketClient.connect(url: url, configuration: configuration, logger: .init(label: "fuzz")) { inbound, outbound, _ in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        if case .text(let text) = message { replies.record(text) }
                    }
                }
                for frame in frames {
                    switch frame {
                    case .text(let text, _): try await outbound.write(.text(text))
                    case .binary(let bytes): try await outbound.write(.binary(ByteBuffer(bytes: bytes)))
                    }
                }
                // Then a valid command: the connection still works after all of it.
                try await outbound.write(.text(#"{"id":"last","type":"message.send","data":{"conversationId":"\#(direct.id)","clientMessageId":"last","text":"still here"}}"#))
                try? await waitFor("a reply to every command", timeout: .seconds(120)) {
                    replies.state.withLock { state in state.byId["last"] != nil && expectedIds.allSatisfy { state.byId[$0] != nil } }
                }
                try await outbound.close(.normalClosure, reason: nil)
                group.cancelAll()
            }
        }

        let state = replies.state.withLock { $0 }
        let missing = expectedIds.filter { state.byId[$0] == nil }
        let missingFrames = frames.compactMap { frame -> String? in
            if case .text(let text, let id?) = frame, missing.prefix(4).contains(id) { String(text.prefix(300)) } else { nil }
        }
        #expect(missing.isEmpty, "\(missing.count) frames with an id got no reply, e.g. \(missingFrames)")
        let doubled = state.byId.filter { $0.value.count != 1 }
        #expect(doubled.isEmpty, "replies per id must be one: \(doubled.keys.prefix(5))")
        let all = state.byId.values.flatMap { $0 } + state.withoutId
        let internals = all.filter { $0.errorCode == "internal" }
        #expect(internals.isEmpty, "internal errors: \(internals.prefix(3))")
        let codes = Set(all.compactMap(\.errorCode))
        #expect(codes.isSubset(of: ["invalid_request", "payload_too_large", "not_found", "forbidden"]), "\(codes)")
        #expect(state.byId["last"]?.first?.text == "still here")
        #expect(state.withoutId.count == frames.count(where: { if case .text(_, nil) = $0 { true } else if case .binary = $0 { true } else { false } }))

        // Nothing half-written: the conversation holds exactly the acknowledged sends, gapless.
        let stored = try await bob.api.messages(direct.id, limit: 200).messages
        var all_ = stored
        var before = stored.first?.seq
        while let first = before, first > 1 {
            let older = try await bob.api.messages(direct.id, before: first, limit: 200).messages
            if older.isEmpty { break }
            all_ = older + all_
            before = older.first?.seq
        }
        #expect(Dictionary(uniqueKeysWithValues: all_.map { ($0.seq, $0.text) }) == state.acceptedSends)
        #expect(all_.map(\.seq) == Array(1...Int64(all_.count)))
        // And the server still serves everyone.
        #expect(try await bob.api.conversation(direct.id).lastSeq == Int64(all_.count))
    }
}
