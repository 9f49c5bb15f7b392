import Foundation
import ParleyProtocol
import ParleyTestSupport
import Synchronization
import Testing

@testable import ParleyServer

/// The WebSocket protocol as Parley's own channel handlers speak it (RFC 6455, below the HTTP
/// framework since the upgrade left Hummingbird): fragments, control frames between them,
/// pings, the client's close, frames no client may send, messages over the limit, a burst far
/// past the point where the server stops reading, and what the endpoint says to plain HTTP.
/// Every case talks to a real server over a raw socket.
@Suite struct WebSocketProtocolTests {
    static func ping(_ id: String) -> String { #"{"id":"\#(id)","type":"ping","data":{}}"# }

    /// Reads frames until one satisfies `match` (pings and events in between are skipped).
    static func read(_ socket: RawWebSocket, until match: (RawWebSocket.Frame) -> Bool) throws -> RawWebSocket.Frame? {
        let deadline = Date().addingTimeInterval(20)
        while let frame = try socket.next(until: deadline) {
            if match(frame) { return frame }
        }
        return nil
    }

    static func isReply(_ id: String) -> (RawWebSocket.Frame) -> Bool {
        { $0.opcode == 0x1 && $0.text.contains(#""replyTo":"\#(id)""#) }
    }

    @Test func aMessageInFragmentsIsOneCommandAndAPingMayComeBetweenThem() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let socket = try await SessionEndTests.open(alice, on: server)
        let reply = try await offPool {
            let text = Array(Self.ping("f1").utf8)
            socket.sendFrame(opcode: 0x1, fin: false, payload: Array(text[..<10]))
            socket.sendFrame(opcode: 0x9, payload: Array("between".utf8))
            socket.sendFrame(opcode: 0x0, fin: false, payload: Array(text[10..<20]))
            socket.sendFrame(opcode: 0x0, payload: Array(text[20...]))
            let pong = try Self.read(socket) { $0.opcode == 0xA }
            let reply = try Self.read(socket, until: Self.isReply("f1"))
            return (pong?.text, reply?.text)
        }
        #expect(reply.0 == "between", "the pong carries the ping's payload")
        #expect(reply.1?.contains(#""ok":true"#) == true, "\(reply.1 ?? "no reply")")
    }

    @Test func aClientsCloseIsAnsweredWithItsCodeAndTheUserGoesOffline() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let socket = try await SessionEndTests.open(alice, on: server)
        #expect(server.app.fanOut.isOnlineHere(alice.id))
        let frames = try await offPool { () -> [RawWebSocket.Frame]? in
            socket.sendFrame(opcode: 0x8, payload: [0x03, 0xE8])  // 1000
            return try socket.readUntilClosed(until: Date().addingTimeInterval(10))
        }
        let close = try #require(frames?.last, "the server ended the TCP connection after answering")
        #expect(close.opcode == 0x8 && close.closeCode == 1000)
        try await waitFor("alice offline") { !server.app.fanOut.isOnlineHere(alice.id) }
    }

    @Test func aCloseBeforeTheSessionIsOpenStillEndsItAndLeavesNothingBehind() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let port = server.port, token = alice.token
        for _ in 0..<20 {
            let ended = try await offPool { () -> Bool in
                let socket = try RawWebSocket(port: port, path: "/api/v1/ws?token=\(token)")
                socket.sendFrame(opcode: 0x8, payload: [0x03, 0xE9])  // 1001, at once
                return try socket.readUntilClosed(until: Date().addingTimeInterval(10)) != nil
            }
            #expect(ended)
        }
        try await waitFor("no connection left") { server.app.fanOut.connectionCount == 0 }
        #expect(!server.app.fanOut.isOnlineHere(alice.id))
    }

    @Test func anUnmaskedFrameEndsTheConnectionWithAProtocolError() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let socket = try await SessionEndTests.open(alice, on: server)
        let frames = try await offPool { () -> [RawWebSocket.Frame]? in
            socket.sendFrame(opcode: 0x1, payload: Array(Self.ping("u").utf8), masked: false)
            return try socket.readUntilClosed(until: Date().addingTimeInterval(10))
        }
        let all = try #require(frames, "the server ended the connection")
        #expect(all.last?.closeCode == 1002, "\(all.map(\.opcode))")
        #expect(!all.contains { Self.isReply("u")($0) }, "the unmasked command was not handled")
    }

    @Test func aProtocolErrorAfterABurstClosesAfterTheRepliesAlreadyOnTheirWay() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let socket = try await SessionEndTests.open(alice, on: server)
        let frames = try await offPool { () -> [RawWebSocket.Frame]? in
            for index in 0..<64 { socket.send(Self.ping("b\(index)")) }
            socket.sendFrame(opcode: 0x1, payload: Array(Self.ping("u").utf8), masked: false)
            return try socket.readUntilClosed(until: Date().addingTimeInterval(10))
        }
        let all = try #require(frames, "the server ended the connection")
        // The close goes through the connection's writer: one close frame, and nothing after it.
        #expect(all.filter { $0.opcode == 0x8 }.count == 1)
        #expect(all.last?.closeCode == 1002, "\(all.map(\.opcode))")
        let replied = all.filter { $0.opcode == 0x1 && $0.text.contains(#""replyTo":"b"#) }.map(\.text)
        let expected = (0..<replied.count).map { #""replyTo":"b\#($0)""# }
        #expect(zip(replied, expected).allSatisfy { $0.contains($1) }, "replies before the close come once each, in order")
    }

    @Test func aFragmentedMessageOverTheLimitIsClosedWith1009() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let socket = try await SessionEndTests.open(alice, on: server)
        let piece = [UInt8](repeating: 0x20, count: Gateway.transportLimit / 2 + 1)
        let frames = try await offPool { () -> [RawWebSocket.Frame]? in
            socket.sendFrame(opcode: 0x1, fin: false, payload: piece)
            socket.sendFrame(opcode: 0x0, payload: piece)
            return try socket.readUntilClosed(until: Date().addingTimeInterval(10))
        }
        #expect(frames?.last?.closeCode == 1009, "\(frames?.map(\.opcode) ?? [])")
    }

    @Test func aContinuationWithNoMessageIsAProtocolError() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let socket = try await SessionEndTests.open(alice, on: server)
        let frames = try await offPool { () -> [RawWebSocket.Frame]? in
            socket.sendFrame(opcode: 0x0, payload: Array(Self.ping("c").utf8))
            return try socket.readUntilClosed(until: Date().addingTimeInterval(10))
        }
        #expect(frames?.last?.closeCode == 1002)
    }

    @Test func aBinaryMessageIsRefusedAndTheConnectionStays() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let socket = try await SessionEndTests.open(alice, on: server)
        let (refusal, after) = try await offPool {
            socket.sendFrame(opcode: 0x2, payload: Array(Self.ping("b").utf8))
            let refusal = try Self.read(socket) { $0.opcode == 0x1 && $0.text.contains("invalid_request") }
            socket.send(Self.ping("after"))
            return (refusal?.text, try Self.read(socket, until: Self.isReply("after"))?.text)
        }
        #expect(refusal?.contains("Binary frames are not supported") == true, "\(refusal ?? "nothing")")
        #expect(after?.contains(#""ok":true"#) == true)
    }

    /// Far more commands than the server reads ahead (it stops reading at
    /// ``SocketSession/pauseAt`` and starts again at ``SocketSession/resumeAt``): every one is
    /// answered, once, in the order sent.
    @Test func aBurstFarPastThePauseIsAnsweredOnceEachInOrder() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let socket = try await SessionEndTests.open(alice, on: server)
        let count = SocketSession.pauseAt * 12
        let replies = try await offPool { () -> [String] in
            for n in 0..<count { socket.send(Self.ping("p\(n)")) }
            var replies: [String] = []
            let deadline = Date().addingTimeInterval(30)
            while replies.count < count, let frame = try socket.next(until: deadline) {
                guard frame.opcode == 0x1, let range = frame.text.range(of: #""replyTo":"p"#) else { continue }
                replies.append(String(frame.text[range.upperBound...].prefix { $0 != "\"" }))
            }
            return replies
        }
        #expect(replies == (0..<count).map { "\($0)" })
    }

    @Test func aPlainGetOfTheEndpointIsAuthenticatedThenToldItNeedsTheUpgrade() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let plain = try await server.raw("GET", "ws?token=\(alice.token)")
        #expect(plain.status == 400 && errorCode(plain.body) == .invalidRequest)
        #expect(String(decoding: plain.body, as: UTF8.self).contains("Upgrade: websocket"))
        #expect(try await server.raw("GET", "ws").status == 401)
    }

    @Test func anUpgradeToAnyOtherPathIsRefusedWith400() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let port = server.port, token = alice.token
        let refusal = try await offPool { () -> String in
            do {
                _ = try RawWebSocket(port: port, path: "/api/v1/users/me?token=\(token)")
                return "upgraded"
            } catch let failure as RawWebSocket.Failure {
                return failure.description
            }
        }
        #expect(refusal.contains("HTTP/1.1 400"), "\(refusal)")
    }

    /// NIO upgrades only a connection's first request: a later request asking to upgrade is
    /// sent to a new connection (307 to the same address) rather than answered as HTTP.
    @Test func anUpgradeAfterAnotherRequestOnTheSameConnectionIsRedirected() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let socket = try RawSocket(port: server.port)
        socket.send("GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        socket.send(
            "GET /api/v1/ws?token=\(alice.token) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        let received = Mutex("")
        try await waitFor("both answers") {
            let (data, closed) = socket.drain()
            return received.withLock { text in
                text += String(decoding: data, as: UTF8.self)
                return closed || text.contains("HTTP/1.1 307")
            }
        }
        let text = received.withLock { $0 }
        #expect(text.hasPrefix("HTTP/1.1 200"), "\(text.prefix(60))")
        #expect(text.contains("HTTP/1.1 307") && text.contains("/api/v1/ws?token="), "\(text)")
    }
}
