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
    public var host: String
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

    public init() {}

    mutating func resetWindow() {
        delivery.reset()
        ack.reset()
        sent = 0; acked = 0; errors = 0; deliveries = 0; echoes = 0; late = 0
    }

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
    public var socket: Int
    public var group: Int
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

/// One generator WebSocket, after the upgrade: answers pings and closes, sends
/// `message.send` frames (masked, written in batches and flushed once), and reads only the
/// bytes it needs from what arrives.
final class BenchSocket: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let spec: SocketSpec
    let state: LoopState
    let ready: EventLoopPromise<Void>
    private var context: ChannelHandlerContext?
    private(set) var isReady = false
    private var inFlight = 0
    /// The highest `seq` of a `message.created` seen on this socket (its one conversation).
    private var lastSeq: UInt64?
    private var number = 0
    private var pendingFlush = false
    private var fragments: ByteBuffer?
    private var closing = false
    // Verification.
    var counts: [UInt64: Int] = [:]
    var acked = 0
    /// `","type":"message.send","data":{"conversationId":"…","clientMessageId":"nonce-index-`
    private let middle: String
    private let indexText: String

    init(spec: SocketSpec, state: LoopState, ready: EventLoopPromise<Void>) {
        self.spec = spec
        self.state = state
        self.ready = ready
        indexText = String(spec.index)
        middle = #"","type":"message.send","data":{"conversationId":""# + spec.conversationId + #"","clientMessageId":""#
            + state.policy.nonce + "-" + String(spec.index) + "-"
    }

    var canSend: Bool {
        guard state.sending, let context, context.channel.isActive, inFlight < state.policy.inFlight else { return false }
        if let limit = state.policy.messagesPerSender, number >= limit { return false }
        return true
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func channelInactive(context: ChannelHandlerContext) {
        if isReady {
            state.stats.closed += 1
        } else {
            ready.fail(ChannelError.ioOnClosedChannel)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !isReady { ready.fail(error) }
        context.close(promise: nil)
    }

    func fillWindow() {
        while canSend { sendOne() }
    }

    /// Writes one `message.send` (not flushed: the caller flushes the batch).
    func sendOne() {
        guard let context else { return }
        let now = monotonicNanos()
        let stamp = String(now)
        let n = String(number)
        number += 1
        var buffer = context.channel.allocator.buffer(capacity: 200 + middle.utf8.count)
        buffer.writeStaticString(#"{"id":""#)
        buffer.writeString(stamp)
        buffer.writeString(middle)
        buffer.writeString(n)
        buffer.writeStaticString(#"","text":"pb|"#)
        buffer.writeString(stamp)
        buffer.writeStaticString("|")
        buffer.writeString(indexText)
        buffer.writeStaticString("|")
        buffer.writeString(n)
        buffer.writeStaticString(#"| bench"}}"#)
        let frame = WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: buffer)
        context.write(wrapOutboundOut(frame), promise: nil)
        inFlight += 1
        pendingFlush = true
        state.stats.totalSent += 1
        if state.measuring { state.stats.sent += 1 }
    }

    func flushIfNeeded() {
        guard pendingFlush, let context else { return }
        pendingFlush = false
        context.flush()
    }

    func close() {
        guard let context, !closing else { return }
        closing = true
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: .normalClosure)
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: data)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary, .continuation:
            var payload = frame.unmaskedData
            if !frame.fin {
                if fragments == nil { fragments = payload } else { fragments!.writeBuffer(&payload) }
                return
            }
            if var pending = fragments {
                fragments = nil
                pending.writeBuffer(&payload)
                receive(pending)
            } else {
                receive(payload)
            }
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.write(wrapOutboundOut(pong), promise: nil)
            pendingFlush = true
        case .connectionClose:
            if !closing {
                closing = true
                var data = frame.unmaskedData
                let code = data.readSlice(length: Swift.min(2, data.readableBytes)) ?? context.channel.allocator.buffer(capacity: 0)
                let reply = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: code)
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(reply)).whenComplete { _ in channel.close(promise: nil) }
            } else {
                context.close(promise: nil)
            }
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushIfNeeded()
        context.fireChannelReadComplete()
    }

    /// Classifies a text frame by a few bytes and records what it means.
    private func receive(_ buffer: ByteBuffer) {
        let now = monotonicNanos()
        buffer.withUnsafeReadableBytes { bytes in
            if !isReady {
                if find(Marker.hello, in: bytes) != nil {
                    isReady = true
                    ready.succeed(())
                }
                return
            }
            // The server's JSON keys come in no fixed order (Foundation's encoder on Linux), so
            // each marker is searched in the whole frame: a reply has `"replyTo":"<send time>"`
            // and `"ok":true`; an event is `message.created` when it has that type.
            if let replyAt = find(Marker.replyTo, in: bytes) {
                let (sentAt, _) = readNumber(bytes, replyAt + Marker.replyTo.count)
                let ok = find(Marker.okTrue, in: bytes) != nil
                inFlight -= 1
                if ok {
                    acked += 1
                    state.stats.totalAcked += 1
                    if state.measuring {
                        state.stats.acked += 1
                        state.stats.ack.record(now &- sentAt)
                    }
                } else {
                    state.stats.totalErrors += 1
                    if state.measuring { state.stats.errors += 1 }
                    if state.stats.firstError == nil {
                        state.stats.firstError = String(decoding: UnsafeRawBufferPointer(rebasing: bytes.prefix(300)), as: UTF8.self)
                    }
                }
                if state.sending && state.policy.rate == 0 {
                    fillWindow()
                }
                return
            }
            let isCreated = find(Marker.created, in: bytes) != nil
            guard isCreated else { return }
            if let seqAt = find(Marker.seq, in: bytes) {
                let (seq, _) = readNumber(bytes, seqAt + Marker.seq.count)
                if let last = lastSeq, seq != last &+ 1 {
                    state.stats.catchUps += 1
                    if seq < last { state.stats.outOfOrder += 1 }
                }
                lastSeq = Swift.max(lastSeq ?? 0, seq)
            }
            guard let stampAt = find(Marker.stamp, in: bytes) else { return }
            let (sentAt, a) = readNumber(bytes, stampAt + Marker.stamp.count)
            let (sender, b) = readNumber(bytes, a + 1)
            let (number, _) = readNumber(bytes, b + 1)
            if Int(sender) == spec.index {
                state.stats.totalEchoes += 1
                if state.measuring { state.stats.echoes += 1 }
            } else {
                state.stats.totalDeliveries += 1
                if state.measuring {
                    state.stats.deliveries += 1
                    state.stats.delivery.record(now &- sentAt)
                }
                if state.policy.verify { counts[sender << 32 | number, default: 0] += 1 }
            }
        }
    }
}

/// The generator: one event loop group, sockets spread over its loops.
public final class LoadGenerator: Sendable {
    public let group: MultiThreadedEventLoopGroup
    private let states: [NIOLoopBound<LoopState>]
    private let policy: SendPolicy

    public init(threads: Int, policy: SendPolicy) {
        group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        self.policy = policy
        var states: [NIOLoopBound<LoopState>] = []
        for loop in group.makeIterator() {
            let state = try! loop.submit { () -> NIOLoopBound<LoopState> in
                let state = LoopState(loop: loop)
                state.policy = policy
                return NIOLoopBound(state, eventLoop: loop)
            }.wait()
            states.append(state)
        }
        self.states = states
    }

    public func shutdown() async {
        try? await group.shutdownGracefully()
    }

    /// Opens every socket (at most `parallel` upgrades at a time) and waits for each one's
    /// `hello`. Returns how many failed, with the first error.
    public func connect(_ specs: [SocketSpec], parallel: Int = 64) async -> (failed: Int, firstError: String?) {
        var failed = 0
        var firstError: String?
        await withTaskGroup(of: String?.self) { tasks in
            var next = 0
            func add() {
                let spec = specs[next]
                let state = states[next % states.count]
                next += 1
                tasks.addTask { await Self.open(spec, state: state) }
            }
            while next < specs.count && next < parallel { add() }
            for await result in tasks {
                if let result {
                    failed += 1
                    if firstError == nil { firstError = result }
                }
                if next < specs.count { add() }
            }
        }
        return (failed, firstError)
    }

    /// Opens one socket; nil when it is ready, else why not.
    private static func open(_ spec: SocketSpec, state bound: NIOLoopBound<LoopState>) async -> String? {
        let loop = bound.eventLoop
        let ready = loop.makePromise(of: Void.self)
        do {
            var bootstrap = ClientBootstrap(group: loop)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .connectTimeout(.seconds(30))
            if let local = spec.localAddress {
                bootstrap = bootstrap.bind(to: try SocketAddress(ipAddress: local, port: 0))
            }
            let upgraded = try await bootstrap.connect(host: spec.host, port: spec.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let upgrader = NIOTypedWebSocketClientUpgrader<Bool>(
                        maxFrameSize: 1 << 20,
                        upgradePipelineHandler: { channel, _ in
                            channel.eventLoop.makeCompletedFuture {
                                let state = bound.value
                                let socket = BenchSocket(spec: spec, state: state, ready: ready)
                                try channel.pipeline.syncOperations.addHandler(socket)
                                state.sockets.append(socket)
                                if spec.isSender { state.senders.append(socket) }
                                return true
                            }
                        })
                    var headers = HTTPHeaders()
                    headers.add(name: "Host", value: "\(spec.host):\(spec.port)")
                    headers.add(name: "Content-Length", value: "0")
                    if let token = spec.token { headers.add(name: "Authorization", value: "Bearer \(token)") }
                    let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: spec.path, headers: headers)
                    let configuration = NIOTypedHTTPClientUpgradeConfiguration<Bool>(
                        upgradeRequestHead: head, upgraders: [upgrader],
                        notUpgradingCompletionHandler: { channel in
                            channel.close(promise: nil)
                            return channel.eventLoop.makeSucceededFuture(false)
                        })
                    // The server's first frame (hello) can arrive in the same read as the 101:
                    // keep those bytes for the WebSocket decoder.
                    var pipeline = NIOUpgradableHTTPClientPipelineConfiguration(upgradeConfiguration: configuration)
                    pipeline.leftOverBytesStrategy = .forwardBytes
                    return try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(configuration: pipeline)
                }
            }
            let didUpgrade = try await upgraded.get()
            guard didUpgrade else {
                ready.fail(ChannelError.inappropriateOperationForState)
                return "the server refused the WebSocket upgrade for \(spec.path)"
            }
            try await ready.futureResult.get()
            return nil
        } catch {
            ready.fail(error)
            return "\(error)"
        }
    }

    private func onEveryLoop<T: Sendable>(_ body: @escaping @Sendable (LoopState) -> T) async -> [T] {
        var results: [T] = []
        for bound in states {
            let value = try? await bound.eventLoop.submit { body(bound.value) }.get()
            if let value { results.append(value) }
        }
        return results
    }

    /// Starts sending (senders spread the total rate by how many are on each loop).
    public func startSending() async {
        let totals = await onEveryLoop { $0.senders.count }
        let all = totals.reduce(0, +)
        let rate = policy.rate
        _ = await onEveryLoop { state in
            state.loopRate = all > 0 ? rate * Double(state.senders.count) / Double(all) : 0
            state.startSending()
        }
    }

    /// Opens (or closes) the measurement window; opening it clears the window's figures.
    public func setMeasuring(_ on: Bool) async {
        _ = await onEveryLoop { state in
            if on { state.stats.resetWindow() }
            state.measuring = on
        }
    }

    public func stopSending() async {
        _ = await onEveryLoop { $0.stopSending() }
    }

    /// Merged figures of every loop.
    public func stats() async -> LoadStats {
        var merged = LoadStats()
        for stats in await onEveryLoop({ $0.stats }) { merged.merge(stats) }
        return merged
    }

    /// Sockets still open.
    public func openSockets() async -> Int {
        await onEveryLoop { state in
            state.sockets.filter { $0.isReady && $0.stateIsActive }.count
        }.reduce(0, +)
    }

    /// Per-socket receipt logs (with `verify`).
    public func receiptLogs() async -> [ReceiptLog] {
        await onEveryLoop { state in
            state.sockets.map { ReceiptLog(socket: $0.spec.index, group: $0.spec.group, counts: $0.counts, acked: $0.acked) }
        }.flatMap { $0 }
    }

    /// Waits until every send has its reply and receipts stop arriving (or `timeout`).
    public func drain(timeout: Duration = .seconds(10)) async {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        var last = -1
        var stableSince = clock.now
        while clock.now < deadline {
            let stats = await stats()
            let seen = stats.totalDeliveries + stats.totalEchoes + stats.totalAcked + stats.totalErrors
            let outstanding = stats.totalSent - stats.totalAcked - stats.totalErrors
            if seen != last {
                last = seen
                stableSince = clock.now
            } else if outstanding <= 0 && clock.now - stableSince > .milliseconds(300) {
                return
            } else if clock.now - stableSince > .seconds(3) {
                return
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Closes every socket with a close frame.
    public func closeAll() async {
        _ = await onEveryLoop { state in
            for socket in state.sockets { socket.close() }
        }
        try? await Task.sleep(for: .milliseconds(100))
    }
}

extension BenchSocket {
    var stateIsActive: Bool { context?.channel.isActive ?? false }
}
