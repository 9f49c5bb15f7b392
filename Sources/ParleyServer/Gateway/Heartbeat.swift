import Foundation
import Logging
import NIOCore
import NIOWebSocket
import ServiceLifecycle
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

/// Every WebSocket's heartbeat on one timer: each connection is pinged once a period, and
/// closed ("going away", so the client reconnects and catches up) when a whole period after a
/// ping passed with nothing from the client while the server was reading.
///
/// A task asleep per connection cost a timer and a wake-up each (at 19,000 idle connections,
/// a sixth of the server's idle CPU went to the timers alone). Here one task wakes `slots`
/// times a period and beats one slot's connections, so pings are spread over the period, and
/// a ping is written straight to the connection's channel (no task per ping).
///
/// The beats come from the server's clock (a test moves it by hand); what the client did in
/// between is judged on the socket's own real timestamps.
final class HeartbeatWheel: Service, Sendable {
    private struct Beat {
        let liveness: ConnectionLiveness
        let connection: LiveConnection
        var lastPing: NIODeadline?
    }

    private struct State {
        var slots: [[Int: Beat]]
        var nextId = 0
        var count = 0
        /// The wheel waiting for its first connection (it does not tick with none).
        var idle: CheckedContinuation<Void, Never>?
        var stopped = false
        /// When the wheel's next turn is due, while it sleeps until then.
        var asleepUntil: Date?
    }

    let period: Duration
    let clock: ServerClock
    /// Counts pings and closes (metrics).
    let fanOut: FanOut
    let logger: Logger
    private let state: Mutex<State>
    private let slotCount: Int

    /// Beats each connection once a `period`, in `slots` turns (at most one a second).
    init(period: Duration, clock: ServerClock, fanOut: FanOut, logger: Logger = Logger(label: "parley.heartbeat"), slots: Int? = nil) {
        self.period = period
        self.logger = logger
        self.clock = clock
        self.fanOut = fanOut
        let count = max(1, slots ?? Int(period.components.seconds))
        slotCount = count
        state = Mutex(State(slots: Array(repeating: [:], count: count)))
    }

    /// Connections with a heartbeat.
    var connections: Int { state.withLock { $0.count } }

    /// Whether the wheel sleeps until its next turn (a test moves the clock only then).
    var isAsleep: Bool { state.withLock { $0.asleepUntil != nil } }

    /// Starts beating a connection (first ping within a period); returns its key for ``remove(_:)``.
    func add(liveness: ConnectionLiveness, connection: LiveConnection) -> Int {
        let (key, idle) = state.withLock { state in
            state.nextId += 1
            state.count += 1
            // The emptiest turn, so each turn beats about as many as the others.
            let slot = state.slots.indices.min { state.slots[$0].count < state.slots[$1].count } ?? 0
            state.slots[slot][state.nextId] = Beat(liveness: liveness, connection: connection)
            defer { state.idle = nil }
            return (state.nextId, state.idle)
        }
        idle?.resume()
        return key
    }

    /// Stops beating a connection (it ended).
    func remove(_ key: Int) {
        state.withLock { state in
            for slot in state.slots.indices where state.slots[slot].removeValue(forKey: key) != nil {
                state.count -= 1
                return
            }
        }
    }

    func run() async throws {
        await cancelWhenGracefulShutdown { await self.turn() }
    }

    /// Beats one slot per step, forever. Steps are due at fixed times from the start, so a
    /// slow turn does not shift the ones after it; a wheel behind by more than a period (the
    /// process was stopped) beats one whole period's turns, then starts again from now.
    private func turn() async {
        let step = period / slotCount
        let stepSeconds = Double(step.components.seconds) + Double(step.components.attoseconds) / 1e18
        var due = clock.now().addingTimeInterval(stepSeconds)
        var slot = 0, behind = 0
        while !Task.isCancelled {
            if connections == 0 {
                // Nothing to beat: no timer until a connection comes.
                await waitForConnections()
                due = clock.now().addingTimeInterval(stepSeconds)
                behind = 0
            }
            state.withLock { $0.asleepUntil = due }
            await clock.sleepUntil(due)
            state.withLock { $0.asleepUntil = nil }
            if Task.isCancelled { return }
            beat(slot)
            slot = (slot + 1) % slotCount
            due = due.addingTimeInterval(stepSeconds)
            behind = due <= clock.now() ? behind + 1 : 0
            if behind >= slotCount {
                due = clock.now().addingTimeInterval(stepSeconds)
                behind = 0
            }
        }
    }

    private func waitForConnections() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    guard state.count == 0, !state.stopped else { return true }
                    state.idle = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let idle = state.withLock { state in
                state.stopped = true
                defer { state.idle = nil }
                return state.idle
            }
            idle?.resume()
        }
    }

    /// One turn: each connection of the slot is pinged, or closed if it stayed silent since
    /// its last ping.
    func beat(_ slot: Int) {
        let now = NIODeadline.now()
        let (silent, alive) = state.withLock { state -> ([Beat], [Beat]) in
            var silent: [Beat] = [], alive: [Beat] = []
            for (key, beat) in state.slots[slot] {
                if let last = beat.lastPing, beat.liveness.isSilent(since: last) {
                    state.slots[slot][key] = nil
                    state.count -= 1
                    silent.append(beat)
                } else {
                    state.slots[slot][key]?.lastPing = now
                    alive.append(beat)
                }
            }
            return (silent, alive)
        }
        let ping = WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer())
        for beat in alive {
            // Written on the channel's event loop, between whole frames (a control frame may go
            // between any two).
            beat.connection.channel.writeAndFlush(ping, promise: nil)
        }
        fanOut.heartbeatPings.add(alive.count, ordering: .relaxed)
        for beat in silent {
            logger.debug("WebSocket silent for a heartbeat after a ping; closing", metadata: [
                "userId": "\(beat.connection.identity.userId)", "connection": "\(beat.connection.id)",
            ])
            fanOut.heartbeatCloses.add(1, ordering: .relaxed)
            beat.connection.close(.goingAway, reason: "no answer to ping", disconnecting: true)
        }
    }
}
