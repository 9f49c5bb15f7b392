import Foundation
import NIOCore
import NIOEmbedded
import NIOWebSocket
import ParleyProtocol
import ParleyRules
import Testing

@testable import ParleyServer

/// ``LiveConnection`` writes its frames straight to the channel from the event loop, with no
/// task: in order, `hello` first, a run's frames in one flush; a connection whose socket takes
/// nothing is closed as a slow consumer rather than allowed to grow; a close goes out after
/// what was queued before it, and the client's close is answered with its own code.
@Suite struct LiveConnectionTests {
    /// A connected channel whose writes can be read back.
    static func socket() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        return channel
    }

    static func connection(_ channel: EmbeddedChannel, hello: String? = "hello") -> LiveConnection {
        LiveConnection(
            id: 1, identity: Identity(userId: EntityID(), organizationId: EntityID()), channel: channel,
            first: hello.map { ByteBuffer(string: $0) })
    }

    /// Everything written so far, as (opcode, text).
    static func written(_ channel: EmbeddedChannel) throws -> [(WebSocketOpcode, String)] {
        var frames: [(WebSocketOpcode, String)] = []
        while let frame = try channel.readOutbound(as: WebSocketFrame.self) {
            var data = frame.data
            if frame.opcode == .connectionClose, let code = data.readWebSocketErrorCode() {
                frames.append((frame.opcode, "\(code):" + (data.readString(length: data.readableBytes) ?? "")))
            } else {
                frames.append((frame.opcode, String(buffer: data)))
            }
        }
        return frames
    }

    @Test func framesGoOutInOrderAfterTheHelloWithNoTaskAndNothingIsLeftQueued() throws {
        let channel = try Self.socket()
        let connection = Self.connection(channel)
        for n in 0..<5 { connection.enqueue(ByteBuffer(string: "e\(n)")) }
        channel.embeddedEventLoop.run()
        #expect(try Self.written(channel).map(\.1) == ["hello", "e0", "e1", "e2", "e3", "e4"])
        #expect(connection.queueDepth == 0)
        // A later frame starts a new run.
        connection.enqueue(ByteBuffer(string: "later"))
        channel.embeddedEventLoop.run()
        #expect(try Self.written(channel).map(\.1) == ["later"])
    }

    @Test func aSocketThatTakesNothingIsClosedAsASlowConsumerAtTheCapacity() throws {
        let channel = try Self.socket()
        let connection = Self.connection(channel, hello: nil)
        // Nothing runs on the loop meanwhile: the queue only grows.
        for n in 0..<(LiveConnection.queueCapacity + 10) { connection.enqueue(ByteBuffer(string: "\(n)")) }
        #expect(connection.queueDepth == LiveConnection.queueCapacity)
        #expect(connection.isClosing)
        channel.embeddedEventLoop.run()
        let frames = try Self.written(channel)
        #expect(frames.count == LiveConnection.queueCapacity + 1)
        #expect(frames.last?.0 == .connectionClose && frames.last?.1 == "\(WebSocketErrorCode.policyViolation):slow consumer")
        #expect(connection.isCloseSent)
    }

    @Test func aCloseGoesOutAfterWhatWasQueuedAndNothingAfterIt() throws {
        let channel = try Self.socket()
        let connection = Self.connection(channel)
        connection.enqueue(ByteBuffer(string: "before"))
        connection.close(.goingAway, reason: "server shutting down")
        connection.enqueue(ByteBuffer(string: "after"))
        channel.embeddedEventLoop.run()
        let frames = try Self.written(channel)
        #expect(frames.map(\.1) == ["hello", "before", "\(WebSocketErrorCode.goingAway):server shutting down"])
        #expect(channel.isActive, "a server close waits for the client's answer (or the grace)")
        // The client answers: the socket ends.
        connection.peerClosed(code: .goingAway)
        channel.embeddedEventLoop.run()
        #expect(!channel.isActive)
    }

    @Test func theClientsCloseIsAnsweredWithItsCodeAfterWhatWasQueuedThenTheSocketEnds() throws {
        let channel = try Self.socket()
        let connection = Self.connection(channel)
        connection.enqueue(ByteBuffer(string: "queued"))
        connection.peerClosed(code: .normalClosure)
        channel.embeddedEventLoop.run()
        let frames = try Self.written(channel)
        #expect(frames.map(\.1) == ["hello", "queued", "\(WebSocketErrorCode.normalClosure):"])
        #expect(!channel.isActive)
    }

    @Test func aQuietClientIsCutOffAsSoonAsTheCloseIsOut() throws {
        let channel = try Self.socket()
        let connection = Self.connection(channel, hello: nil)
        connection.close(.goingAway, reason: "no answer to ping", disconnecting: true)
        channel.embeddedEventLoop.run()
        #expect(try Self.written(channel).map(\.0) == [.connectionClose])
        #expect(!channel.isActive)
    }

    @Test func aServerCloseWithNoAnswerEndsTheSocketAfterTheGrace() throws {
        let channel = try Self.socket()
        let connection = Self.connection(channel, hello: nil)
        connection.close(.policyViolation, reason: "x")
        channel.embeddedEventLoop.run()
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: LiveConnection.closeGrace)
        #expect(!channel.isActive)
    }
}
