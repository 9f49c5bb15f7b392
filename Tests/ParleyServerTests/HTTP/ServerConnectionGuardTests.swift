import Foundation
import NIOCore
import NIOEmbedded
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import Synchronization
import Testing

/// The connection guards alone (`HTTP/ConnectionGuard.swift`, `Gateway/Heartbeat.swift`): the
/// connection cap under concurrent opens, the head deadline on an embedded channel whose time
/// the test moves (heads split across reads, LF-only heads, a peer that half-closes), and the
/// liveness rule the heartbeat judges a WebSocket by, on explicit timestamps.
@Suite struct ServerConnectionGuardTests {
    // MARK: The cap

    /// Opens beyond the cap are refused and take nothing; closing frees a place.
    @Test func theCapIsExactAndClosingFreesAPlace() {
        let counter = ConnectionCounter(limit: 3)
        #expect((0..<5).map { _ in counter.tryOpen() } == [true, true, true, false, false])
        #expect(counter.count == 3)
        counter.close()
        #expect(counter.count == 2 && counter.tryOpen() && !counter.tryOpen())
    }

    /// A thousand connections arriving at once against a cap of 100: exactly 100 admitted.
    @Test func concurrentOpensNeverExceedTheCap() async {
        let counter = ConnectionCounter(limit: 100)
        let admitted = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<1000 { group.addTask { counter.tryOpen() } }
            var count = 0
            for await ok in group where ok { count += 1 }
            return count
        }
        #expect(admitted == 100 && counter.count == 100)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<100 { group.addTask { counter.close() } }
        }
        #expect(counter.count == 0 && counter.tryOpen())
    }

    // MARK: The head deadline

    final class Count: Sendable {
        private let value = Atomic<Int>(0)
        func add() { value.add(1, ordering: .relaxed) }
        var count: Int { value.load(ordering: .relaxed) }
    }

    /// An embedded connection with the head deadline in front, and how many timed out.
    static func guarded(timeout: Int64 = 10) throws -> (EmbeddedChannel, Count) {
        let timedOut = Count()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(HeadDeadlineHandler(timeout: .seconds(timeout), onTimeout: { timedOut.add() }))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, timedOut)
    }

    static func write(_ channel: EmbeddedChannel, _ text: String) throws {
        try channel.writeInbound(ByteBuffer(string: text))
    }

    /// A connection that never finishes a head (slowloris) is closed at the deadline and
    /// counted, however many bytes it trickles; not a moment before.
    @Test func aHeadThatNeverEndsIsClosedAtTheDeadline() throws {
        let (channel, timedOut) = try Self.guarded()
        for _ in 0..<9 {
            try Self.write(channel, "X-Slow: 1\r\n")
            channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        }
        #expect(channel.isActive && timedOut.count == 0, "trickling bytes do not extend the deadline, but 9 s < 10 s")
        channel.embeddedEventLoop.advanceTime(by: .seconds(1))
        #expect(!channel.isActive && timedOut.count == 1)
    }

    /// The blank line that ends a head is found however the reads split it (CRLF CRLF, or
    /// LF LF), and from then on the connection is no longer on the head deadline; the bytes
    /// pass through unchanged.
    @Test(arguments: [
        ["GET / HTTP/1.1\r\nHost: x\r\n\r\n"], ["GET / HTTP/1.1\r\nHost: x\r\n", "\r\n"], ["GET / HTTP/1.1\r\nHost: x\r\n\r", "\n"],
        ["GET / HTTP/1.1\r\nHost: x\r", "\n\r\n"], ["GET / HTTP/1.1\r\nHost: x\r\n\r\nbody"], ["GET / HTTP/1.1\nHost: x\n\n"],
        ["GET / HTTP/1.1\nHost: x\n", "\n"], ["G", "E", "T", " / HTTP/1.1\r", "\n", "\r", "\n"],
    ])
    func aCompleteHeadLiftsTheDeadline(parts: [String]) throws {
        let (channel, timedOut) = try Self.guarded()
        for part in parts { try Self.write(channel, part) }
        var passed = ""
        while let buffer = try channel.readInbound(as: ByteBuffer.self) { passed += String(buffer: buffer) }
        #expect(passed == parts.joined())
        channel.embeddedEventLoop.advanceTime(by: .seconds(60))
        #expect(channel.isActive && timedOut.count == 0)
        #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: HeadDeadlineHandler.self) }
        _ = try channel.finish()
    }

    /// Lines that only look like an end of head (a CR alone, CR LF CR with something after)
    /// keep the deadline.
    @Test(arguments: [["GET / HTTP/1.1\r\r"], ["GET / HTTP/1.1\r\nHost: x\r\n\rX"], ["GET / HTTP/1.1\r\n", "Host: x\r\n"], ["\n"]])
    func almostAHeadKeepsTheDeadline(parts: [String]) throws {
        let (channel, timedOut) = try Self.guarded()
        for part in parts { try Self.write(channel, part) }
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(!channel.isActive && timedOut.count == 1)
    }

    /// A peer that half-closes before a whole head frees its place at once (with half-closure
    /// allowed nothing else would), without being counted as a timeout.
    @Test func aPeerThatHalfClosesBeforeAHeadIsClosedAtOnce() throws {
        let (channel, timedOut) = try Self.guarded()
        try Self.write(channel, "GET / HT")
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(!channel.isActive && timedOut.count == 0)
    }

    // MARK: Liveness

    static func at(_ seconds: UInt64) -> NIODeadline { .uptimeNanoseconds(seconds * 1_000_000_000) }

    /// Silent means: the server was already waiting for bytes when the ping went out, and
    /// nothing came after it. Anything else (bytes after the ping, a server that was not
    /// reading) is not the client's silence.
    @Test func silenceIsJudgedOnlyWhileTheServerWasReading() {
        let live = ConnectionLiveness(now: Self.at(100))
        #expect(!live.isSilent(since: Self.at(110)), "the server never asked for bytes")
        live.wantsRead(at: Self.at(105))
        #expect(live.isSilent(since: Self.at(110)), "waiting since before the ping, nothing since")
        #expect(!live.isSilent(since: Self.at(104)), "the server only started reading after that ping")
        live.wantsRead(at: Self.at(108))
        #expect(live.isSilent(since: Self.at(106)), "a later request does not move the start of the wait (105)")
        live.received(at: Self.at(111))
        #expect(!live.isSilent(since: Self.at(110)), "bytes after the ping")
        #expect(!live.isSilent(since: Self.at(120)), "bytes reset the wait: not reading since")
        live.wantsRead(at: Self.at(112))
        #expect(!live.isSilent(since: Self.at(111)), "bytes at the ping's moment")
        #expect(live.isSilent(since: Self.at(120)))
        #expect(live.isSilent(since: Self.at(112)), "waiting from the ping's own moment counts")
    }
}
