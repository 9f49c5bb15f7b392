import Foundation
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import Synchronization

/// What a connection's socket has done lately, as the heartbeat judges it: when bytes last
/// came in, and since when the server has been asking for more without getting any.
///
/// A WebSocket library's own ping timeout counts only pongs, and a pong is read in order
/// behind everything the client sent before it. A client that pipelines sends faster than the
/// store commits them is paused by the server (see ``Gateway/maxPipelinedSends``); its pong
/// then waits behind its own sends, and a slow commit (a busy database, a checkpoint) would
/// get a healthy connection closed for the server's own delay. Here any bytes count as a sign
/// of life, and time during which the server was not reading never counts against the client.
final class ConnectionLiveness: Sendable {
    /// Nanoseconds (uptime) of the last inbound bytes.
    private let lastInbound = Atomic<Int64>(0)
    /// Nanoseconds since which a read has been wanted and nothing came; 0 while the server is
    /// not reading (backpressure) or bytes just arrived.
    private let waitingSince = Atomic<Int64>(0)

    init(now: NIODeadline = .now()) {
        lastInbound.store(now.uptimeNanoseconds.asInt64, ordering: .relaxed)
    }

    /// Bytes arrived.
    func received(at now: NIODeadline = .now()) {
        lastInbound.store(now.uptimeNanoseconds.asInt64, ordering: .relaxed)
        waitingSince.store(0, ordering: .relaxed)
    }

    /// The server asked the socket for more.
    func wantsRead(at now: NIODeadline = .now()) {
        if waitingSince.load(ordering: .relaxed) == 0 {
            waitingSince.store(now.uptimeNanoseconds.asInt64, ordering: .relaxed)
        }
    }

    /// Whether the client has been silent since `ping` while the server was reading the whole
    /// time: nothing arrived after it, and the server was already waiting for bytes when it
    /// went out. A client the server paused is never silent.
    func isSilent(since ping: NIODeadline) -> Bool {
        let ping = ping.uptimeNanoseconds.asInt64
        let waiting = waitingSince.load(ordering: .relaxed)
        return waiting != 0 && waiting <= ping && lastInbound.load(ordering: .relaxed) < ping
    }
}

extension UInt64 {
    fileprivate var asInt64: Int64 { Int64(clamping: self) }
}

/// Feeds a connection's ``ConnectionLiveness`` from the socket end of its pipeline: every read
/// that reaches it, and every request for more that the layers above let through (a paused
/// reader's requests stop above it).
final class LivenessHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias InboundOut = NIOAny
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    let liveness = ConnectionLiveness()

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        liveness.received()
        context.fireChannelRead(data)
    }

    func read(context: ChannelHandlerContext) {
        liveness.wantsRead()
        context.read()
    }

    /// The liveness of `channel`'s connection, if its pipeline has the handler.
    static func liveness(of channel: any Channel) async -> ConnectionLiveness? {
        try? await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.handler(type: LivenessHandler.self).liveness
        }.get()
    }
}

/// A WebSocket's heartbeat: a ping every period, and the connection closed ("going away",
/// so the client reconnects and catches up) when a whole period after a ping passed with
/// nothing from the client while the server was reading.
///
/// The beats come from the server's clock (a test moves it by hand); what the client did in
/// between is judged on the socket's own real timestamps.
struct Heartbeat: Sendable {
    let period: Duration
    let liveness: ConnectionLiveness
    let channel: any Channel
    let clock: ServerClock
    /// Counts pings and closes (metrics).
    let fanOut: FanOut

    /// Runs until cancelled or until it closes the connection.
    func run(outbound: WebSocketOutboundWriter, logger: Logger) async {
        var lastPing: NIODeadline?
        let seconds = Double(period.components.seconds) + Double(period.components.attoseconds) / 1e18
        while true {
            await clock.sleepUntil(clock.now().addingTimeInterval(seconds))
            if Task.isCancelled { return }
            if let lastPing, liveness.isSilent(since: lastPing) {
                logger.debug("WebSocket silent for a heartbeat after a ping; closing")
                fanOut.heartbeatCloses.add(1, ordering: .relaxed)
                try? await outbound.close(.goingAway, reason: "no answer to ping")
                try? await channel.close()
                return
            }
            lastPing = .now()
            do {
                try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer())))
                fanOut.heartbeatPings.add(1, ordering: .relaxed)
            } catch {
                return
            }
        }
    }
}
