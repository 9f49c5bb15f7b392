import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The WebSocket gateway, driven by the SDK's real WebSocket client.
@Suite struct GatewayTests {
    @Test func helloThenSendReplyAndFanOutToEveryConnection() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let carol = try await server.register("carol@x.io")
        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))

        let aliceSocket = RealtimeConnection(serverURL: server.baseURL, token: alice.token)
        let hello = try await aliceSocket.connect()
        #expect(hello.user.id == alice.id && hello.user.isOnline && hello.heartbeatSeconds == 30 && !hello.sessionId.isEmpty)
        let bobPhone = try await bob.connect()
        let bobLaptop = try await bob.connect()
        let carolSocket = try await carol.connect()
        let recorders = [aliceSocket, bobPhone, bobLaptop].map(EventRecorder.init)
        let carolEvents = EventRecorder(carolSocket)

        let sent = try await aliceSocket.sendMessage(.init(conversationId: direct.id, clientMessageId: "ws-1", text: " hi "))
        #expect(sent.seq == 1 && sent.text == "hi" && sent.clientMessageId == "ws-1")
        for recorder in recorders {
            try await recorder.wait { _ in !recorder.createdMessages.isEmpty }
            #expect(recorder.createdMessages == [sent])
        }
        // The reply came after commit: the message is already in history.
        #expect(try await bob.api.messages(direct.id).messages == [sent])
        try await carolSocket.ping()
        #expect(carolEvents.events.allSatisfy { if case .presence = $0 { true } else { false } }, "a non-participant gets no message")
        for connection in [aliceSocket, bobPhone, bobLaptop, carolSocket] { await connection.close() }
    }

    @Test func repeatedSendOverWebSocketReturnsOriginalWithoutSecondEvent() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let aliceSocket = try await alice.connect()
        let bobSocket = try await bob.connect()
        let bobEvents = EventRecorder(bobSocket)
        let request = SendMessageRequest(conversationId: direct.id, clientMessageId: "retry-me", text: "once")
        let first = try await aliceSocket.sendMessage(request)
        let second = try await aliceSocket.sendMessage(request)
        // The same id again over HTTP (the outbox's fallback path) is the same message too.
        let third = try await alice.api.send(request, to: direct.id)
        #expect(first == second && second == third)
        let marker = try await aliceSocket.sendMessage(.init(conversationId: direct.id, clientMessageId: "marker", text: "m"))
        let events = try await bobEvents.wait { events in events.contains { $0 == .messageCreated(.init(message: marker)) } }
        #expect(bobEvents.createdMessages.map(\.clientMessageId) == ["retry-me", "marker"], "\(events.map(\.type))")
        #expect(marker.seq == 2)
        await aliceSocket.close()
        await bobSocket.close()
    }

    @Test func sendReplyCarriesContractErrors() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let mallory = try await server.register("mallory@x.io", organization: "evil")
        let bob = try await server.register("bob@x.io")
        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        let socket = try await mallory.connect()
        await #expect(throws: ClientError(kind: .server, code: .notFound, message: "Conversation not found")) {
            try await socket.sendMessage(.init(conversationId: direct.id, clientMessageId: "x", text: "hi"))
        }
        let aliceSocket = try await alice.connect()
        do {
            _ = try await aliceSocket.sendMessage(.init(conversationId: direct.id, clientMessageId: "y", text: "   "))
            Issue.record("an empty text must be rejected")
        } catch let error as ClientError {
            #expect(error.code == .invalidRequest)
        }
        #expect(try await alice.api.conversation(direct.id).lastSeq == 0)
        await socket.close()
        await aliceSocket.close()
    }

    @Test func malformedFramesGetErrorRepliesAndTheConnectionStays() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let socket = try await alice.connect()
        let probe = RawFrameProbe(socket)
        let cases: [(String, String?, ErrorCode)] = [
            ("not json", nil, .invalidRequest),
            (#"[1,2]"#, nil, .invalidRequest),
            (#"{"type":"ping","data":{}}"#, nil, .invalidRequest),
            (#"{"id":7,"type":"ping","data":{}}"#, nil, .invalidRequest),
            (#"{"id":"","type":"ping","data":{}}"#, nil, .invalidRequest),
            (#"{"id":"u1","type":"teleport","data":{}}"#, "u1", .invalidRequest),
            (#"{"id":"u2","type":"message.send"}"#, "u2", .invalidRequest),
            (#"{"id":"u3","type":"message.send","data":{"clientMessageId":"c","text":"no conversation"}}"#, "u3", .invalidRequest),
            (#"{"id":"u4","type":"message.send","data":{"conversationId":"nope","clientMessageId":"c","text":"x"}}"#, "u4", .invalidRequest),
            (#"{"id":"u5","data":{}}"#, "u5", .invalidRequest),
            (#"{"id":"big","type":"message.send","data":{"text":"\#(String(repeating: "x", count: 70_000))"}}"#, "big", .payloadTooLarge),
        ]
        for (frame, replyTo, code) in cases {
            let reply = try await probe.send(frame)
            #expect(reply.replyTo == replyTo, "\(frame.prefix(60))")
            #expect(reply.ok == false && reply.error?.code == code, "\(frame.prefix(60))")
        }
        try await socket.ping()
        #expect(await socket.closedReason == nil)
        await socket.close()
    }

    @Test func upgradeWithoutValidTokenIsRefused() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let bad = RealtimeConnection(serverURL: server.baseURL, token: "forged.token.value")
        await #expect(throws: ClientError.self) { try await bad.connect(timeout: .seconds(5)) }
        let plain = try await server.raw("GET", "ws")
        #expect(plain.status == 401 && errorCode(plain.body) == .unauthorized)
        let alice = try await server.register("alice@x.io")
        let viaQuery = try await server.raw("GET", "ws?token=\(alice.token)")
        #expect(viaQuery.status != 401, "a query token authenticates (the upgrade itself needs WebSocket headers)")
    }

    @Test func shutdownClosesConnectionsWithGoingAway() async throws {
        let server = try await TestServer.start()
        let alice = try await server.register("alice@x.io")
        let socket = try await alice.connect()
        let events = EventRecorder(socket)
        await server.stop()
        try await events.waitUntilFinished()
        #expect(await socket.closeCode == 1001)
    }
}

/// Sends raw frames on a connection and reads the raw replies (bypassing the typed client).
struct RawFrameProbe {
    struct Reply: Decodable {
        var replyTo: String?
        var ok: Bool
        var error: ErrorInfo?
    }

    let connection: RealtimeConnection

    init(_ connection: RealtimeConnection) { self.connection = connection }

    func send(_ frame: String) async throws -> Reply {
        let data = try await connection.sendRawAwaitingReply(frame)
        return try WireCoding.makeDecoder().decode(Reply.self, from: data)
    }
}

/// The gateway reads a plain `message.send` with `FastFrameReader` and any other frame with
/// Foundation: the same send spelt both ways (and in other spellings each way takes) is
/// stored and answered alike, and what the fast reader leaves alone is still accepted or
/// refused as Foundation decides.
@Suite struct GatewayFrameReadingTests {
    struct SentReply: Decodable {
        var replyTo: String?
        var ok: Bool
        var data: Message?
        var error: ErrorInfo?
    }

    @Test func fastAndFoundationReadingsOfASendAgree() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let socket = try await alice.connect()
        func send(_ frame: String) async throws -> SentReply {
            try WireCoding.makeDecoder().decode(SentReply.self, from: try await socket.sendRawAwaitingReply(frame))
        }
        let c = direct.id.description
        let text = #"\"quoted\" \\ tab\t line\n é \u00e9 \ud83d\ude00"#
        // Read by the fast reader: a plain send, white space, keys in another order, escapes.
        let fast = try await send(#"{ "data" : {"text":"\#(text)","clientMessageId":"f1","conversationId":"\#(c.uppercased())"}, "id":"a","type":"message.send" }"#)
        // Left to Foundation by an unknown key (which Foundation ignores) and by metadata.
        let ignored = try await send(#"{"id":"b","type":"message.send","extra":[1,{"x":null}],"data":{"conversationId":"\#(c)","clientMessageId":"f2","text":"\#(text)"}}"#)
        let withMetadata = try await send(#"{"id":"c","type":"message.send","data":{"conversationId":"\#(c)","clientMessageId":"f3","text":"\#(text)","metadata":{"k":"v"}}}"#)
        for (reply, id) in [(fast, "a"), (ignored, "b"), (withMetadata, "c")] {
            #expect(reply.ok && reply.replyTo == id, "\(id): \(String(describing: reply.error))")
            #expect(reply.data?.text == "\"quoted\" \\ tab\t line\n é é 😀", "\(id)")
            #expect(reply.data?.conversationId == direct.id, "\(id)")
        }
        #expect(withMetadata.data?.metadata == ["k": "v"])
        #expect([fast, ignored, withMetadata].compactMap { $0.data?.seq } == [1, 2, 3].map { direct.lastSeq + Int64($0) })
        // A reply, read fast, names its target; a retry of the same clientMessageId returns the original.
        let target = try #require(fast.data)
        let reply = try await send(#"{"id":"d","type":"message.send","data":{"conversationId":"\#(c)","clientMessageId":"f4","text":"re","replyToId":"\#(target.id)"}}"#)
        #expect(reply.data?.replyToId == target.id)
        let retry = try await send(#"{"id":"e","type":"message.send","data":{"conversationId":"\#(c)","clientMessageId":"f1","text":"other"}}"#)
        #expect(retry.ok && retry.data?.id == target.id && retry.data?.text == target.text)
        // Refusals the fast reader leaves to Foundation keep their answers.
        let lone = try await send(#"{"id":"f","type":"message.send","data":{"conversationId":"\#(c)","clientMessageId":"f5","text":"\ud83d alone"}}"#)
        let badId = try await send(#"{"id":"g","type":"message.send","data":{"conversationId":"nope","clientMessageId":"f6","text":"x"}}"#)
        let badType = try await send(#"{"id":"h","type":"message.send","data":{"conversationId":"\#(c)","clientMessageId":"f7","text":"x","type":"sticker"}}"#)
        for (refused, id) in [(badId, "g"), (badType, "h")] {
            #expect(!refused.ok && refused.replyTo == id && refused.error?.code == .invalidRequest, "\(id)")
        }
        // Foundation decides a lone surrogate; whichever it is, nothing half-written: Bob sees
        // exactly the messages that were answered ok, once each.
        let accepted = [fast, ignored, withMetadata, reply, lone].filter(\.ok).compactMap(\.data?.id)
        let seen = try await bob.api.messages(direct.id, limit: 50).messages.map(\.id)
        #expect(seen == accepted)
        await socket.close()
    }
}
