import Foundation
import Hummingbird
import NIOHTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import Synchronization
import ParleyStorage

/// The bounds a connection must keep, so nobody can pile up connections that cost the server
/// a descriptor each and do nothing (slowloris).
public struct ConnectionLimits: Sendable, Equatable {
    /// A new connection must send a whole request head within this time.
    public var requestHeadTimeout: Duration = .seconds(10)
    /// An HTTP connection with no request in flight is closed after this time (a WebSocket is
    /// governed by its heartbeat instead).
    public var idleTimeout: Duration = .seconds(60)
    /// A request body that sends nothing for this long is dropped with its connection.
    public var bodyTimeout: Duration = .seconds(30)
    /// Open connections at most; beyond it new ones are closed at once (and counted). Nil:
    /// derived from the descriptor limit (see ``ConnectionLimits/defaultMaxConnections()``).
    public var maxConnections: Int?

    /// The defaults (10 s head, 60 s idle, 30 s body stall, cap from the descriptor limit).
    public init() {}

    /// Raises the process's descriptor limit to its hard limit and returns a connection cap
    /// that leaves room for the database, attachments and the cluster link.
    public static func defaultMaxConnections() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        let descriptors = Int(clamping: limit.rlim_cur)
        return max(16, descriptors - max(128, descriptors / 10))
    }
}

/// Counts open connections against the cap.
final class ConnectionCounter: Sendable {
    let limit: Int
    private let open = Atomic<Int>(0)

    init(limit: Int) { self.limit = limit }

    /// Takes a place; false (and nothing taken) when the cap is reached.
    func tryOpen() -> Bool {
        var current = open.load(ordering: .relaxed)
        while current < limit {
            let (exchanged, original) = open.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
        return false
    }

    func close() { open.subtract(1, ordering: .relaxed) }

    var count: Int { open.load(ordering: .relaxed) }
}

/// The HTTP/WebSocket child channel with Parley's connection guards in front: the connection
/// cap, and a deadline for the first request head (Hummingbird's own idle timer starts only
/// once a head has been read, so a socket that never finishes one would live forever).
struct GuardedChildChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value
    let inner: Inner
    let limits: ConnectionLimits
    let counter: ConnectionCounter
    let metrics: Metrics

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let admitted = counter.tryOpen()
        if admitted {
            let counter = self.counter
            channel.closeFuture.whenComplete { _ in counter.close() }
            metrics.increment("parley_connections_accepted_total")
        } else {
            metrics.increment("parley_connections_refused_total")
        }
        let metrics = self.metrics
        let deadline = TimeAmount(limits.requestHeadTimeout)
        do {
            try channel.pipeline.syncOperations.addHandler(
                HeadDeadlineHandler(timeout: deadline, onTimeout: { metrics.increment("parley_connections_timed_out_total", labels: ["stage": "head"]) }),
                position: .first)
            try channel.pipeline.syncOperations.addHandler(FlushCoalescer(), position: .first)
            try channel.pipeline.syncOperations.addHandler(LivenessHandler(), position: .first)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        let setup = inner.setup(channel: channel, logger: logger)
        // Over the cap: refused at once (the pipeline exists only so the server can wind it down).
        if !admitted { channel.close(promise: nil) }
        return setup
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}

/// A connection's one deadline: when it passes, the connection is counted and closed.
struct ConnectionDeadline {
    let timeout: TimeAmount
    let onTimeout: @Sendable () -> Void
    private var timer: Scheduled<Void>?

    init(timeout: TimeAmount, onTimeout: @escaping @Sendable () -> Void) {
        self.timeout = timeout
        self.onTimeout = onTimeout
    }

    /// Starts (or restarts) the countdown.
    mutating func arm(_ context: ChannelHandlerContext) {
        timer?.cancel()
        let onTimeout = self.onTimeout
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            onTimeout()
            context.close(promise: nil)
        }
    }

    var isArmed: Bool { timer != nil }

    mutating func cancel() {
        timer?.cancel()
        timer = nil
    }
}

/// Closes a connection that has not sent a complete request head within its deadline; once
/// a head is through it leaves the pipeline (HTTP idle and body timers, or the WebSocket
/// heartbeat, take over).
final class HeadDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private var deadline: ConnectionDeadline
    /// The last bytes seen, so an end of head split across reads is still found.
    private var tail: [UInt8] = []
    private var headSeen = false

    init(timeout: TimeAmount, onTimeout: @escaping @Sendable () -> Void) {
        deadline = ConnectionDeadline(timeout: timeout, onTimeout: onTimeout)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        guard !headSeen else { return context.fireChannelRead(data) }
        if endsHead(buffer) {
            headSeen = true
            disarm()
            context.fireChannelRead(data)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The peer closed its side before a whole head: nothing will come; free the place now
        // (with half-closure allowed, nothing else would close it before the deadline).
        if !headSeen, let event = event as? ChannelEvent, event == .inputClosed {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func arm(_ context: ChannelHandlerContext) {
        guard !deadline.isArmed, !headSeen else { return }
        deadline.arm(context)
    }

    private func disarm() {
        deadline.cancel()
    }

    /// Whether the bytes so far hold a blank line (CRLF CRLF, or LF LF).
    private func endsHead(_ buffer: ByteBuffer) -> Bool {
        let bytes = tail + buffer.readableBytesView
        for index in bytes.indices.dropFirst() where bytes[index] == 10 {
            if bytes[index - 1] == 10 { return true }
            if index >= 3, bytes[index - 1] == 13, bytes[index - 2] == 10, bytes[index - 3] == 13 { return true }
        }
        tail = Array(bytes.suffix(3))
        return false
    }
}

/// Drops a request whose body stops arriving: armed by the head and every body part,
/// disarmed by the end of the request (HTTP only; WebSockets never see it).
final class BodyStallHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private var deadline: ConnectionDeadline

    init(timeout: TimeAmount, onTimeout: @escaping @Sendable () -> Void) {
        deadline = ConnectionDeadline(timeout: timeout, onTimeout: onTimeout)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head, .body: deadline.arm(context)
        case .end: deadline.cancel()
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline.cancel()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline.cancel()
    }
}
