import Foundation
import Histogram
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// Monotonic nanoseconds (CLOCK_MONOTONIC, the same clock in every process of the machine):
/// the send time embedded in benchmark messages.
@inline(__always)
public func monotonicNanos() -> UInt64 { NIODeadline.now().uptimeNanoseconds }

/// One WebSocket the generator opens.
public struct SocketSpec: Sendable {
    /// Index among all sockets of the run; embedded in sent messages, so receivers can tell
    /// their own echo from other members' messages.
    public var index: Int
    /// Group index (a conversation for Parley, a broadcast group for the floor).
    public var group: Int
    /// The server's host.
    public var host: String
    /// The server's port.
    public var port: Int
    /// Request path with query, e.g. `/api/v1/ws` or `/ws?group=3`.
    public var path: String
    /// Bearer token, if the server wants one.
    public var token: String?
    /// The conversation id written into `message.send`.
    public var conversationId: String
    /// Whether this socket sends (every socket receives).
    public var isSender: Bool
    /// Loopback source address to bind before connecting (127.0.0.2, ...), or nil.
    public var localAddress: String?
    /// JSON members added to every `message.send`'s data, each with its leading comma (a
    /// thread root, mentions: `bench fanout --variant`); empty for a plain send.
    public var extraData: String = ""

    /// A spec of these values.
    public init(
        index: Int, group: Int, host: String, port: Int, path: String, token: String?, conversationId: String, isSender: Bool,
        localAddress: String? = nil
    ) {
        self.index = index
        self.group = group
        self.host = host
        self.port = port
        self.path = path
        self.token = token
        self.conversationId = conversationId
        self.isSender = isSender
        self.localAddress = localAddress
    }
}

/// How senders send.
public struct SendPolicy: Sendable {
    /// Total messages per second over all senders; 0 = as fast as acks come back.
    public var rate: Double = 0
    /// Sends a sender may have without an ack.
    public var inFlight: Int = 2
    /// A sender stops after this many sends (nil: until told to stop).
    public var messagesPerSender: Int?
    /// Keep, per receiver, which (sender, number) arrived and how often (tests; costs memory).
    public var verify = false
    /// Makes clientMessageIds unique across runs against one server.
    public var nonce: String = String(UInt32.random(in: 0...UInt32.max), radix: 36)

    /// The defaults: as fast as acks come back, 2 in flight, until told to stop.
    public init() {}
}

/// Counters and latency histograms of one event loop (merged at the end).
public struct LoadStats: Sendable {
    /// send → `message.created` at another member, nanoseconds (measurement window only).
    public var delivery = Histogram<UInt64>(highestTrackableValue: 600_000_000_000, numberOfSignificantValueDigits: .three)
    /// send → reply, nanoseconds (measurement window only).
    public var ack = Histogram<UInt64>(highestTrackableValue: 600_000_000_000, numberOfSignificantValueDigits: .three)
    /// In the measurement window.
    public var sent = 0, acked = 0, errors = 0, deliveries = 0, echoes = 0
    /// Whole run.
    public var totalSent = 0, totalAcked = 0, totalErrors = 0, totalDeliveries = 0, totalEchoes = 0
    /// Sockets the server closed (or that failed) after they were ready.
    public var closed = 0
    /// Rate mode: sends that were due while every sender on the loop had a full window.
    public var late = 0
    /// Whole run: `message.created` frames whose `seq` was not the one after the previous on
    /// that socket (each would send a client following the contract to `/changes`), and of
    /// those, frames that came after a higher seq (out of order). Zero for the floor, whose
    /// frames carry no seq.
    public var catchUps = 0, outOfOrder = 0
    /// The first error reply seen, for the report.
    public var firstError: String?

    /// Empty figures.
    public init() {}

    mutating func resetWindow() {
        delivery.reset()
        ack.reset()
        sent = 0; acked = 0; errors = 0; deliveries = 0; echoes = 0; late = 0
    }

    /// Adds another loop's counters and histograms to these; a first error already here is kept.
    public mutating func merge(_ other: LoadStats) {
        delivery.add(other.delivery)
        ack.add(other.ack)
        sent += other.sent; acked += other.acked; errors += other.errors; deliveries += other.deliveries; echoes += other.echoes
        totalSent += other.totalSent; totalAcked += other.totalAcked; totalErrors += other.totalErrors
        totalDeliveries += other.totalDeliveries; totalEchoes += other.totalEchoes
        closed += other.closed; late += other.late
        catchUps += other.catchUps; outOfOrder += other.outOfOrder
        if firstError == nil { firstError = other.firstError }
    }
}

/// What one receiver saw, for exactly-once checks: (sender index << 32 | number) → times.
public struct ReceiptLog: Sendable {
    /// The receiving socket's index.
    public var socket: Int
    /// Its group.
    public var group: Int
    /// Times each message arrived, by (sender index << 32 | number).
    public var counts: [UInt64: Int]
    /// How many of its own messages were acknowledged positively (senders).
    public var acked: Int
}

/// Everything the generator keeps per event loop; touched only on that loop.
final class LoopState {
    let loop: any EventLoop
    var stats = LoadStats()
    var sockets: [BenchSocket] = []
    var senders: [BenchSocket] = []
    var sending = false
    var measuring = false
    var policy = SendPolicy()
    // Rate mode.
    var loopRate = 0.0
    var rateStart: UInt64 = 0
    var rateSent = 0
    var nextSender = 0
    var ticker: RepeatedTask?

    init(loop: any EventLoop) { self.loop = loop }

    func startSending() {
        sending = true
        if policy.rate > 0 {
            rateStart = monotonicNanos()
            rateSent = 0
            let bound = NIOLoopBound(self, eventLoop: loop)
            ticker = loop.scheduleRepeatedTask(initialDelay: .zero, delay: .milliseconds(1)) { _ in bound.value.tick() }
        } else {
            for socket in senders { socket.fillWindow() }
            for socket in senders { socket.flushIfNeeded() }
        }
    }

    func stopSending() {
        sending = false
        ticker?.cancel()
        ticker = nil
    }

    /// Rate mode: sends what is due since the start, round robin over senders with room.
    func tick() {
        guard sending, !senders.isEmpty else { return }
        let elapsed = Double(monotonicNanos() &- rateStart) / 1e9
        var due = Int(loopRate * elapsed) - rateSent
        var tried = 0
        while due > 0 && tried < senders.count {
            let socket = senders[nextSender]
            nextSender = (nextSender + 1) % senders.count
            if socket.canSend {
                socket.sendOne()
                due -= 1
                rateSent += 1
                tried = 0
            } else {
                tried += 1
            }
        }
        if due > 0 {
            // Every sender's window is full: the server is behind the offered rate.
            if measuring { stats.late += due }
            rateSent += due
        }
        for socket in senders { socket.flushIfNeeded() }
    }
}

/// Bytes the receive path looks for.
enum Marker {
    static let hello = Array(#""type":"hello""#.utf8)
    static let replyTo = Array(#""replyTo":""#.utf8)
    static let okTrue = Array(#""ok":true"#.utf8)
    static let created = Array(#""type":"message.created""#.utf8)
    static let stamp = Array("pb|".utf8)
    static let seq = Array(#""seq":"#.utf8)
    static let updated = Array(#""type":"message.updated""#.utf8)
    static let updatedSeq = Array(#""updatedSeq":"#.utf8)
}

/// Finds `needle` in `haystack` starting at `from` (first-byte scan with memchr, then compare).
@inline(__always)
func find(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer, from: Int = 0, limit: Int? = nil) -> Int? {
    let end = Swift.min(limit ?? haystack.count, haystack.count)
    guard let base = haystack.baseAddress, needle.count > 0, end - from >= needle.count else { return nil }
    let first = needle[0]
    var position = from
    let last = end - needle.count
    return needle.withUnsafeBytes { n -> Int? in
        while position <= last {
            guard let hit = memchr(base + position, Int32(first), last - position + 1) else { return nil }
            let offset = base.distance(to: UnsafeRawPointer(hit))
            if memcmp(base + offset, n.baseAddress!, needle.count) == 0 { return offset }
            position = offset + 1
        }
        return nil
    }
}

/// Reads a decimal number at `index`; returns it and the index after it.
@inline(__always)
func readNumber(_ bytes: UnsafeRawBufferPointer, _ index: Int) -> (UInt64, Int) {
    var value: UInt64 = 0
    var i = index
    while i < bytes.count {
        let b = bytes[i]
        guard b >= 48 && b <= 57 else { break }
        value = value &* 10 &+ UInt64(b - 48)
        i += 1
    }
    return (value, i)
}
