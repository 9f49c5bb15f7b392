import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

extension ContractBadInputTests {
    /// Each case is a bug users have hit somewhere: a 500 for a wrong type, a half-created
    /// group, a burnt seq, an edit of someone else's message, a read watermark moved by a
    /// refused receipt. The code must be exact and the data untouched.
    @Test(arguments: StoreKind.available)
    func everyRouteRefusesBadInputWithItsCodeAndChangesNothing(_ kind: StoreKind) async throws {
        let world = try await ContractWorld.build(kind)
        defer { Task { await world.server.stop() } }
        let extras = try await Self.extras(world)
        let cases = Self.cases(world, extras)
        #expect(cases.count > 150)
        var before = try await world.snapshot()
        for item in cases {
            var headers = item.headers
            if let token = token(item.who, world) { headers["Authorization"] = "Bearer \(token)" }
            let answer = try await world.server.exchange(item.method, item.path, body: item.body, headers: headers)
            expectContractError(answer, item.code, "\(item)")
            let after = try await world.snapshot()
            #expect(after == before, "\(item) changed what members read back")
            before = after
        }
    }

    /// Every route that reads a JSON body answers bodies over 64 KiB with 413, and empty,
    /// non-JSON and non-object bodies with 400, each storing nothing.
    @Test func everyJSONRouteRefusesOversizedEmptyAndNonObjectBodies() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let c = "conversations/\(world.direct.id)"
        let g = "conversations/\(world.group.id)"
        let message = world.directMessages[0].id
        let routes: [(String, String)] = [
            ("POST", "conversations"), ("PATCH", g), ("POST", "\(g)/participants"), ("POST", "\(c)/messages"),
            ("PATCH", "\(c)/messages/\(message)"), ("POST", "\(c)/messages/\(message)/reactions"), ("POST", "\(c)/read"),
            ("POST", "\(c)/delivered"), ("POST", "devices"), ("PATCH", "users/\(world.bob.id)"), ("PATCH", "organization"),
            ("POST", "organization/invites"), ("POST", "attachments/uploads"), ("POST", "auth/register"), ("POST", "auth/login"),
        ]
        let oversized = Data((#"{"text":""# + String(repeating: "x", count: Limits.maxPayloadBytes + 10) + #""}"#).utf8)
        let bodies: [(String, Data, ErrorCode)] = [
            ("oversized", oversized, .payloadTooLarge), ("empty", Data(), .invalidRequest), ("not JSON", Data("hello".utf8), .invalidRequest),
            ("array", Data("[]".utf8), .invalidRequest), ("null", Data("null".utf8), .invalidRequest),
            ("string", Data(#""text""#.utf8), .invalidRequest), ("truncated", Data(#"{"text":"#.utf8), .invalidRequest),
            ("invalid UTF-8", Data([0x7B, 0x22, 0x74, 0x22, 0x3A, 0x22, 0xFF, 0xFE, 0x22, 0x7D]), .invalidRequest),
        ]
        let before = try await world.snapshot()
        for (method, path) in routes {
            for (name, body, code) in bodies {
                let answer = try await world.server.exchange(method, path, token: world.alice.token, body: body)
                expectContractError(answer, code, "\(method) \(path) with a body \(name)")
            }
        }
        #expect(try await world.snapshot() == before)
        // The boundary itself: a send just under the limit whose text is within the contract is stored.
        let padding = String(repeating: " ", count: Limits.maxPayloadBytes - 200)
        let near = try await world.server.call(
            "POST", "\(c)/messages", token: world.alice.token, json: #"{"clientMessageId":"near","text":"\#(padding)ok"}"#)
        #expect(near.status == 201)
        #expect(try WireCoding.makeDecoder().decode(Message.self, from: near.body).text == "ok")
    }

    /// A body that is not UTF-8 is not JSON, wherever the bad bytes are: a Latin-1 client's
    /// body is refused even when the bytes sit in a key the server does not read: the decoder
    /// only checks the strings it decodes, so such a body would store a message or create an invite.
    @Test func invalidUTF8AnywhereInABodyIsRefusedAndStoresNothing() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let c = "conversations/\(world.direct.id)"
        let latin1: [UInt8] = [0x63, 0x61, 0x66, 0xE9]  // "café" in ISO 8859-1
        func body(_ valid: String) -> Data {
            Data(Array(valid.dropLast().utf8) + Array(#","note":""#.utf8) + latin1 + Array(#""}"#.utf8))
        }
        let before = try await world.snapshot()
        for (method, path, valid) in [
            ("POST", "\(c)/messages", #"{"clientMessageId":"latin","text":"ok"}"#),
            ("POST", "\(c)/read", #"{"upToSeq":5}"#),
            ("PATCH", "\(c)/messages/\(world.directMessages[0].id)", #"{"text":"changed"}"#),
            ("POST", "conversations", #"{"type":"group","participantIds":[],"name":"latin"}"#),
            ("POST", "organization/invites", #"{"maxUses":2}"#),
            ("PATCH", "conversations/\(world.group.id)", #"{"name":"Renamed"}"#),
            ("POST", "auth/register", #"{"organization":"acme","email":"latin@x.io","password":"long enough","displayName":"L"}"#),
        ] {
            let answer = try await world.server.exchange(method, path, token: world.alice.token, body: body(valid))
            expectContractError(answer, .invalidRequest, "\(method) \(path) with Latin-1 bytes in an unknown key")
        }
        #expect(try await world.snapshot() == before)
        #expect(try await world.alice.api.conversation(world.direct.id).lastSeq == 5)
        // The same body in UTF-8 is fine: the refusal is about the encoding alone.
        let utf8 = try await world.server.call(
            "POST", "\(c)/messages", token: world.alice.token, json: #"{"clientMessageId":"latin","text":"ok","note":"café"}"#)
        #expect(utf8.status == 201)
        #expect(try WireCoding.makeDecoder().decode(Message.self, from: utf8.body).seq == 6)
    }

    /// Extreme but valid numbers get exact answers rather than errors or overflows: a client
    /// catching up from a huge seq, or asking for a huge page, must not get a 500.
    @Test func extremeValidNumbersGetExactAnswers() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let server = world.server
        let c = "conversations/\(world.direct.id)"
        let decoder = WireCoding.makeDecoder()
        let lastSeq = try await world.alice.api.conversation(world.direct.id).lastSeq
        #expect(lastSeq == 5)

        let after = try await server.call("GET", "\(c)/messages?after=\(Int64.max)&limit=\(Int64.max)", token: world.alice.token)
        #expect(after.status == 200)
        let afterPage = try decoder.decode(MessagesPage.self, from: after.body)
        #expect(afterPage.messages.isEmpty && !afterPage.hasMore)

        let before = try await server.call("GET", "\(c)/messages?before=\(Int64.max)", token: world.alice.token)
        #expect(try decoder.decode(MessagesPage.self, from: before.body).messages.map(\.seq) == [1, 2, 5])

        let belowZero = try await server.call("GET", "\(c)/messages?before=-5", token: world.alice.token)
        #expect(belowZero.status == 200)
        #expect(try decoder.decode(MessagesPage.self, from: belowZero.body).messages.isEmpty)

        let changes = try await server.call("GET", "\(c)/changes?since=\(Int64.max)&limit=\(Int64.max)", token: world.alice.token)
        let changesPage = try decoder.decode(ChangesPage.self, from: changes.body)
        #expect(changesPage.messages.isEmpty && !changesPage.hasMore && changesPage.lastSeq == lastSeq)

        // A read far beyond the end is clamped to lastSeq, and a lower one never moves it back.
        let read = try await server.call("POST", "\(c)/read", token: world.bob.token, json: #"{"upToSeq":\#(Int64.max)}"#)
        #expect(read.status == 200)
        #expect(try decoder.decode(ReadResponse.self, from: read.body) == ReadResponse(readSeq: lastSeq, unreadCount: 0, lastSeq: lastSeq))
        let back = try await server.call("POST", "\(c)/read", token: world.bob.token, json: #"{"upToSeq":0}"#)
        #expect(try decoder.decode(ReadResponse.self, from: back.body) == ReadResponse(readSeq: lastSeq, unreadCount: 0, lastSeq: lastSeq))
        let delivered = try await server.call("POST", "\(c)/delivered", token: world.alice.token, json: #"{"upToSeq":\#(Int64.max)}"#)
        #expect(delivered.status == 200)
        #expect(try decoder.decode(Member.self, from: delivered.body) == Member(userId: world.alice.id, readSeq: 0, deliveredSeq: lastSeq))
        // None of it took a seq.
        #expect(try await world.alice.api.conversation(world.direct.id).lastSeq == lastSeq)
    }

    /// Seeded mutations of valid bodies for the write routes (a field dropped, retyped,
    /// emptied, blown up, or an id swapped for a stranger's): whatever the server decides, its
    /// status and code agree, it never answers 500, and a refused request changes nothing.
    @Test func seededMutationsOfValidBodiesNeverAnswer500OrHalfWrite() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        var random = SeededGenerator(seed: 4_2026_1125)
        let c = "conversations/\(world.direct.id)"
        let g = "conversations/\(world.group.id)"
        let message = world.directMessages[0].id
        let templates: [(String, String, [String: Any])] = [
            ("POST", "\(c)/messages", ["clientMessageId": "seed", "text": "hello", "type": "text"]),
            ("POST", "\(c)/messages", ["clientMessageId": "seed", "text": "", "type": "location", "metadata": ["latitude": "1", "longitude": "2"]]),
            ("POST", "\(c)/messages", ["clientMessageId": "seed", "text": "re", "replyToId": "\(message)"]),
            ("PATCH", "\(c)/messages/\(message)", ["text": "edited"]),
            ("POST", "\(c)/messages/\(world.directMessages[1].id)/reactions", ["emoji": "🎉"]),
            ("POST", "\(c)/read", ["upToSeq": 2]),
            ("POST", "\(c)/delivered", ["upToSeq": 2]),
            ("PATCH", g, ["name": "Renamed"]),
            ("POST", "\(g)/participants", ["userIds": ["\(world.carol.id)"]]),
            ("POST", "conversations", ["type": "group", "participantIds": ["\(world.bob.id)"], "name": "New"]),
            ("POST", "organization/invites", ["maxUses": 2, "expiresInHours": 5]),
            ("POST", "attachments/uploads", ["name": "a.txt", "contentType": "text/plain", "size": 4]),
        ]
        let strangers: [Any] = [
            "\(world.evilMessage.id)", "\(world.evil.id)", "\(world.mallory.id)", "\(EntityID())", "not-an-id", "",
        ]
        let weird: [Any] = [
            NSNull(), 0, -1, Int64.max, -9_007_199_254_740_993.0, 1.5, true, "", " ", String(repeating: "é", count: 5001),
            "\u{0}", ["nested": true], [1, 2], "🎉🎉🎉🎉🎉🎉🎉🎉🎉",
        ]
        var codes: [ErrorCode: Int] = [:]
        var accepted = 0
        var before = try await world.snapshot()
        for round in 0..<160 {
            let (method, path, valid) = templates[Int.random(in: 0..<templates.count, using: &random)]
            var body = valid
            if body["clientMessageId"] != nil { body["clientMessageId"] = "seed-\(round)" }
            let key = body.keys.sorted()[Int.random(in: 0..<body.count, using: &random)]
            switch Int.random(in: 0..<4, using: &random) {
            case 0: body[key] = nil
            case 1: body[key] = weird[Int.random(in: 0..<weird.count, using: &random)]
            case 2:
                // An id of something the caller may not use, where an id (or a list of them) goes.
                let stranger = strangers[Int.random(in: 0..<strangers.count, using: &random)]
                body[key] = body[key] is [Any] ? [stranger] : stranger
            default: body["unexpected-\(round)"] = weird[Int.random(in: 0..<weird.count, using: &random)]
            }
            let data = try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
            let context = "round \(round): \(method) \(path) \(String(decoding: data.prefix(120), as: UTF8.self))"
            let answer = try await world.server.exchange(method, path, token: world.alice.token, body: data)
            let after = try await world.snapshot()
            if (200..<300).contains(answer.status) {
                accepted += 1
            } else {
                let code = try #require(errorCode(answer.body), "\(context): no error body")
                codes[code, default: 0] += 1
                #expect(code.httpStatus == answer.status, "\(context)")
                #expect([.invalidRequest, .notFound, .conflict, .payloadTooLarge, .forbidden].contains(code), "\(context): \(code)")
                #expect(after == before, "\(context): refused but changed something")
            }
            before = after
        }
        // The run exercised both sides: refusals of several kinds, and mutations that are fine.
        #expect(accepted > 10, "\(accepted) accepted")
        #expect((codes[.invalidRequest] ?? 0) > 40 && (codes[.notFound] ?? 0) > 0, "\(codes)")
    }
}
