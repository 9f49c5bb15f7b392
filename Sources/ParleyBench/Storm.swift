import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOWebSocket
import ParleyClient
import ParleyProtocol
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The clients of a reconnect storm (`parley bench storm`): each holds one authenticated
/// WebSocket in one group conversation and behaves as the SDK does when it is lost: it waits
/// the SDK's own backoff with jitter (``ConnectionStateMachine/backoff(_:)``), dials again,
/// and after every `hello` catches up from the store (`GET /conversations/{id}/changes`), the
/// pages in order, while live `message.created` frames move it on only when their seq is the
/// next one; a frame past a gap starts another catch-up. So a client is current when its last
/// applied seq is the conversation's, with nothing skipped and nothing applied twice.
public final class StormFleet: Sendable {
    /// The event loops the clients run on.
    public let group: MultiThreadedEventLoopGroup
    private let clients: NIOLockedValueBox<[StormClient]>
    private let backoff: ConnectionStateMachine
    /// One session for every client's catch-up, as one app has one.
    private let session: URLSession

    /// A fleet on `threads` event loops; no clients yet.
    public init(threads: Int) {
        group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        clients = NIOLockedValueBox([])
        backoff = ConnectionStateMachine()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        session = URLSession(configuration: configuration)
    }

    /// Stops every client from dialing again, then shuts the event loops down.
    public func shutdown() async {
        await onEachLoop { $0.stop() }
        try? await group.shutdownGracefully()
    }

    /// Opens a client for each spec (at most `parallel` dials at once) and waits for every one
    /// to be connected and current. Returns how many never were.
    public func connect(_ specs: [StormSpec], parallel: Int = 64) async -> Int {
        let loops = Array(group.makeIterator())
        let made = specs.enumerated().map { index, spec in
            StormClient(spec: spec, loop: loops[index % loops.count], backoff: backoff, session: session)
        }
        clients.withLockedValue { $0 = made }
        var failed = 0
        await withTaskGroup(of: Bool.self) { tasks in
            var next = 0
            while next < made.count && next < parallel {
                let client = made[next]
                tasks.addTask { await client.start() }
                next += 1
            }
            for await ok in tasks {
                if !ok { failed += 1 }
                if next < made.count {
                    let client = made[next]
                    tasks.addTask { await client.start() }
                    next += 1
                }
            }
        }
        return failed
    }

    /// From now on a client counts as back from the moment it was connected with its
    /// conversation's seq at `targets[conversationId]` (which may have been before this call);
    /// times are taken from `origin` (monotonic nanoseconds).
    public func expect(_ targets: [String: Int64], origin: UInt64) async {
        await onEachLoop { client in client.expect(targets[client.spec.conversationId] ?? 0, origin: origin) }
    }

    /// Starts the counts (dials, catch-ups, ...) again from zero: the storm begins.
    public func resetStats() async {
        await onEachLoop { $0.resetStats() }
    }

    /// Waits until every client is back (or `timeout`), then reports.
    public func waitUntilBack(timeout: Duration) async -> StormReport {
        let deadline = ContinuousClock.now + timeout
        while true {
            let report = await self.report()
            if report.back == report.clients || ContinuousClock.now >= deadline { return report }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }

    /// What every client did since ``resetStats()``.
    public func report() async -> StormReport {
        var report = StormReport()
        for state in await onEachLoop({ $0.snapshot() }) {
            report.clients += 1
            if let at = state.backAt { report.back += 1; report.backMillis.append(at) }
            if let at = state.helloAt { report.helloMillis.append(at) }
            report.dials += state.dials
            report.refusedDials += state.refusedDials
            report.catchUps += state.catchUps
            report.failedCatchUps += state.failedCatchUps
            report.redelivered += state.redelivered
            report.gaps += state.gaps
            if state.gaveUp { report.gaveUp += 1 }
        }
        return report
    }

    /// Runs `body` for every client on its own loop, one hop per loop (not per client, which at
    /// 10,000 clients a worker would take the bench longer than the storm).
    @discardableResult
    private func onEachLoop<T: Sendable>(_ body: @escaping @Sendable (StormClient) -> T) async -> [T] {
        let byLoop = Dictionary(grouping: clients.withLockedValue { $0 }, by: { ObjectIdentifier($0.loop) })
        var results: [T] = []
        for members in byLoop.values {
            guard let loop = members.first?.loop else { continue }
            if let values = try? await loop.submit({ members.map(body) }).get() { results += values }
        }
        return results
    }
}

/// One storm client's parameters.
public struct StormSpec: Sendable {
    /// Where to dial (`/api/v1/ws`), with the token and source address.
    public var socket: SocketSpec
    /// The server's base URL, for catch-up.
    public var baseURL: URL
    /// The client's one conversation.
    public var conversationId: String { socket.conversationId }

    /// A spec of these values.
    public init(socket: SocketSpec, baseURL: URL) {
        self.socket = socket
        self.baseURL = baseURL
    }
}

/// Totals of a storm's clients (``StormFleet/report()``).
public struct StormReport: Sendable {
    /// Clients in all.
    public var clients = 0
    /// Clients connected and current.
    public var back = 0
    /// Milliseconds from the origin to each client's being back.
    public var backMillis: [Double] = []
    /// Milliseconds from the origin to each client's first `hello` after the restart.
    public var helloMillis: [Double] = []
    /// WebSocket dials, and those that failed (refused, reset, upgrade refused).
    public var dials = 0, refusedDials = 0
    /// Catch-ups run, and those that failed (to be retried on the next hello).
    public var catchUps = 0, failedCatchUps = 0
    /// Live frames whose seq the client had already applied (from a catch-up): ignored.
    public var redelivered = 0
    /// Live frames past a gap (each started a catch-up).
    public var gaps = 0
    /// Clients that ran out of attempts.
    public var gaveUp = 0
}

/// One client; its state lives on its event loop.
final class StormClient: Sendable {
    let spec: StormSpec
    let loop: any EventLoop
    private let state: NIOLoopBoundBox<State>
    private let backoff: ConnectionStateMachine
    private let api: ParleyAPI

    struct Snapshot: Sendable {
        var backAt: Double?
        /// When the first `hello` after the reset came, in ms from the origin (once it is known).
        var helloAt: Double?
        var helloNanos: UInt64?
        var dials = 0, refusedDials = 0, catchUps = 0, failedCatchUps = 0, redelivered = 0, gaps = 0
        var gaveUp = false
    }

    final class State {
        /// Which dial is current: a socket or a failure of an older one is ignored.
        var generation = 0
        /// A dial is under way or its socket is open.
        var live = false
        /// The fleet is shutting down: nothing is dialed again.
        var stopped = false
        var connected = false
        var attempt = 0
        var lastSeq: Int64 = 0
        var catchingUp = false
        /// The highest live seq seen while a catch-up ran.
        var pendingMax: Int64 = 0
        var target: Int64?
        var origin: UInt64 = 0
        var stats = Snapshot()
        /// Each seq reached while connected, with when (monotonic nanoseconds), since the reset.
        var progress: [(seq: Int64, at: UInt64)] = []
        var firstReady: EventLoopPromise<Bool>?
    }

    init(spec: StormSpec, loop: any EventLoop, backoff: ConnectionStateMachine, session: URLSession) {
        self.spec = spec
        self.loop = loop
        self.backoff = backoff
        state = NIOLoopBoundBox.makeBoxSendingValue(State(), eventLoop: loop)
        api = ParleyAPI(baseURL: spec.baseURL, token: spec.socket.token, session: session)
    }

    /// Dials until connected and caught up for the first time; false when it gave up.
    func start() async -> Bool {
        let ready = loop.makePromise(of: Bool.self)
        loop.execute {
            self.state.value.firstReady = ready
            self.dial()
        }
        return (try? await ready.futureResult.get()) ?? false
    }

    /// On the loop: see ``StormFleet/expect(_:origin:)``.
    func expect(_ target: Int64, origin: UInt64) {
        let state = self.state.value
        state.target = target
        state.origin = origin
        checkBack()
    }

    /// On the loop: no more dials.
    func stop() { state.value.stopped = true }

    /// On the loop: counts from zero.
    func resetStats() {
        state.value.stats = Snapshot()
        state.value.progress = []
    }

    /// On the loop: the counts.
    func snapshot() -> Snapshot {
        var stats = state.value.stats
        if let nanos = stats.helloNanos, state.value.target != nil {
            stats.helloAt = Double(Int64(bitPattern: nanos &- state.value.origin)) / 1e6
        }
        return stats
    }

    // MARK: on the loop

    private func dial() {
        let state = self.state.value
        state.generation += 1
        state.live = true
        state.stats.dials += 1
        let generation = state.generation
        let socket = spec.socket
        let client = self
        Task {
            let ok: Bool
            do {
                ok = try await LoadGenerator.dialWebSocket(socket, on: client.loop) { channel in
                    try channel.pipeline.syncOperations.addHandler(StormSocket(client: client, generation: generation))
                }
            } catch {
                ok = false
            }
            if !ok { client.loop.execute { client.lost(generation, refused: true) } }
        }
    }

    /// Dial `generation` failed, or its socket closed: wait, then dial again (once per dial).
    func lost(_ generation: Int, refused: Bool = false) {
        let state = self.state.value
        guard generation == state.generation, state.live, !state.stopped else { return }
        state.live = false
        state.connected = false
        if refused { state.stats.refusedDials += 1 }
        guard state.attempt < backoff.policy.maxAttempts else {
            state.stats.gaveUp = true
            state.firstReady?.succeed(false)
            state.firstReady = nil
            return
        }
        let wait = backoff.backoff(state.attempt)
        state.attempt += 1
        let nanos = wait.components.seconds * 1_000_000_000 + wait.components.attoseconds / 1_000_000_000
        loop.scheduleTask(in: .nanoseconds(nanos)) { self.dial() }
    }

    /// `hello` arrived on dial `generation`: connected; catch up from the store.
    func connected(_ generation: Int) {
        let state = self.state.value
        guard generation == state.generation else { return }
        state.connected = true
        state.attempt = 0
        if state.stats.helloNanos == nil { state.stats.helloNanos = monotonicNanos() }
        catchUp()
    }

    /// A live `message.created` of seq `seq`.
    func received(seq: Int64) {
        let state = self.state.value
        if state.catchingUp {
            state.pendingMax = max(state.pendingMax, seq)
        } else if seq <= state.lastSeq {
            state.stats.redelivered += 1
        } else if seq == state.lastSeq + 1 {
            state.lastSeq = seq
            checkBack()
        } else {
            state.stats.gaps += 1
            catchUp()
        }
    }

    private func catchUp() {
        let state = self.state.value
        guard !state.catchingUp else { return }
        state.catchingUp = true
        state.pendingMax = 0
        state.stats.catchUps += 1
        let since = state.lastSeq
        let api = self.api
        let conversation = EntityID(spec.conversationId)!
        Task {
            var result: Result<Int64, any Error>
            do {
                var from = since
                var page = try await api.changes(conversation, since: from, limit: 200)
                while page.hasMore, let last = page.messages.map(\.updatedSeq).max() {
                    from = last
                    page = try await api.changes(conversation, since: from, limit: 200)
                }
                result = .success(page.lastSeq)
            } catch {
                result = .failure(error)
            }
            let caught = result
            self.loop.execute { self.caughtUp(caught) }
        }
    }

    private func caughtUp(_ result: Result<Int64, any Error>) {
        let state = self.state.value
        state.catchingUp = false
        switch result {
        case .success(let lastSeq):
            state.lastSeq = max(state.lastSeq, lastSeq)
            if let ready = state.firstReady, state.connected {
                state.firstReady = nil
                ready.succeed(true)
            }
            if state.pendingMax > state.lastSeq + 1 {
                state.stats.gaps += 1
                catchUp()
            } else {
                state.lastSeq = max(state.lastSeq, state.pendingMax)
                checkBack()
            }
        case .failure:
            state.stats.failedCatchUps += 1
            // The socket is probably gone too; the next hello catches up. If it is not, retry.
            if state.connected { loop.scheduleTask(in: .milliseconds(500)) { self.catchUp() } }
        }
    }

    /// Notes the seq reached now (while connected), and whether that makes the client back.
    private func checkBack() {
        let state = self.state.value
        if state.connected, state.progress.last?.seq != state.lastSeq {
            state.progress.append((state.lastSeq, monotonicNanos()))
        }
        guard let target = state.target, state.stats.backAt == nil,
            let reached = state.progress.first(where: { $0.seq >= target })
        else { return }
        state.stats.backAt = Double(Int64(bitPattern: reached.at &- state.origin)) / 1e6
    }
}
