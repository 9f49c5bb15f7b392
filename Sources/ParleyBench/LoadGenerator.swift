import Foundation
import Histogram
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// The generator: one event loop group, sockets spread over its loops.
public final class LoadGenerator: Sendable {
    /// The event loops the sockets run on, one thread each.
    public let group: MultiThreadedEventLoopGroup
    private let states: [NIOLoopBound<LoopState>]
    private let policy: SendPolicy

    /// A generator on `threads` event loops whose senders follow `policy`; no sockets yet.
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

    /// Shuts the event loop group down.
    public func shutdown() async {
        try? await group.shutdownGracefully()
    }

    /// Opens every socket (at most `parallel` upgrades at a time) and waits for each one's
    /// `hello`. Returns how many failed, with the first error.
    /// Opens every socket, `parallel` at a time: how many failed, how many of those were
    /// senders (a run waiting for every sender's share counts only the connected ones), and
    /// the first failure's reason.
    public func connect(_ specs: [SocketSpec], parallel: Int = 64) async -> (failed: Int, failedSenders: Int, firstError: String?) {
        var failed = 0, failedSenders = 0
        var firstError: String?
        await withTaskGroup(of: (error: String?, sender: Bool).self) { tasks in
            var next = 0
            func add() {
                let spec = specs[next]
                let state = states[next % states.count]
                next += 1
                tasks.addTask { (await Self.open(spec, state: state), spec.isSender) }
            }
            while next < specs.count && next < parallel { add() }
            for await result in tasks {
                if let error = result.error {
                    failed += 1
                    if result.sender { failedSenders += 1 }
                    if firstError == nil { firstError = error }
                }
                if next < specs.count { add() }
            }
        }
        return (failed, failedSenders, firstError)
    }

    /// Opens one socket; nil when it is ready, else why not.
    private static func open(_ spec: SocketSpec, state bound: NIOLoopBound<LoopState>) async -> String? {
        let ready = bound.eventLoop.makePromise(of: Void.self)
        do {
            let didUpgrade = try await dialWebSocket(spec, on: bound.eventLoop) { channel in
                let state = bound.value
                let socket = BenchSocket(spec: spec, state: state, ready: ready)
                try channel.pipeline.syncOperations.addHandler(socket)
                state.sockets.append(socket)
                if spec.isSender { state.senders.append(socket) }
            }
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

    /// Connects to `spec`'s server on `loop` and upgrades to a WebSocket; `install` adds the
    /// frame handler, on the loop, once upgraded. False when the server answered without
    /// upgrading.
    static func dialWebSocket(
        _ spec: SocketSpec, on loop: any EventLoop, install: @escaping @Sendable (any Channel) throws -> Void
    ) async throws -> Bool {
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
                            try install(channel)
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
        return try await upgraded.get()
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

    /// Stops new sends on every loop; the sockets stay open.
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
