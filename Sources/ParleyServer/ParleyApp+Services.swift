import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ParleyProtocol
import ServiceLifecycle
import Synchronization
import UnixSignals
import ParleyStorage

extension ParleyApp {
    /// Serves until a shutdown signal; `onRunning` gets the bound port (useful with port 0).
    /// `alongside` run in the same group and stop after everything else (a span exporter,
    /// which then flushes what the server recorded last).
    public func run(alongside: [any Service] = [], onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let group = try await makeServiceGroup(shutdownSignals: [.sigterm, .sigint], alongside: alongside, onRunning: onRunning)
        try await group.run()
        do {
            try await store.close()
        } catch {
            logger.warning("Store did not close cleanly (the next start recovers it)", metadata: ["error": "\(error)"])
        }
    }

    /// The server as a service group, for callers (tests, benchmarks) that stop it themselves.
    public func makeServiceGroup(
        shutdownSignals: [UnixSignal] = [], alongside: [any Service] = [], onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws -> ServiceGroup {
        let router = try await buildRouter()
        let logger = self.logger
        let limits = configuration.connectionLimits
        let cap = limits.maxConnections ?? ConnectionLimits.defaultMaxConnections()
        let counter = ConnectionCounter(limit: cap)
        let metrics = self.metrics
        let bodyTimeout = TimeAmount(limits.bodyTimeout)
        let http1 = HTTP1Channel.Configuration(
            additionalChannelHandlers: [BodyStallHandler(timeout: bodyTimeout, onTimeout: {
                metrics.increment("parley_connections_timed_out_total", labels: ["stage": "body"])
            })],
            idleTimeout: TimeAmount(limits.idleTimeout))
        // The WebSocket upgrade is taken below Hummingbird (see ``ParleyHTTPChannel``); the
        // heartbeat is the gateway's own (see ``HeartbeatWheel``).
        let gateway = try await buildGateway()
        let tls = tlsContext
        logger.info("Connection limits", metadata: [
            "maxConnections": "\(cap)", "requestHeadTimeout": "\(limits.requestHeadTimeout)",
            "idleTimeout": "\(limits.idleTimeout)", "bodyTimeout": "\(limits.bodyTimeout)",
        ])
        let app = Application(
            router: router,
            server: HTTPServerBuilder { responder in
                GuardedChildChannel(
                    inner: OptionalTLSChannel(
                        inner: ParleyHTTPChannel(responder: responder, configuration: http1, gateway: gateway),
                        tls: tls),
                    limits: limits, counter: counter, metrics: metrics)
            },
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "parley"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                logger.info("Parley listening", metadata: ["address": "\(channel.localAddress?.description ?? "?")"])
                if configuration.servesWebClient {
                    let host = configuration.host == "0.0.0.0" || configuration.host == "::" ? "127.0.0.1" : configuration.host
                    let scheme = tls == nil ? "http" : "https"
                    logger.notice("Web client at \(scheme)://\(host.contains(":") ? "[\(host)]" : host):\(port)/ (or `parley chat` in a terminal)")
                }
                await onRunning(port)
            },
            logger: logger)
        // Services stop in reverse order: connections are told "going away" before the
        // HTTP server stops, push stops after both, and the store closes last.
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = alongside.map { .init(service: $0) }
        if let cluster { services.append(.init(service: cluster)) }
        if let push { services.append(.init(service: push)) }
        if let previews { services.append(.init(service: previews)) }
        if let tls, !shutdownSignals.isEmpty {
            services.append(.init(service: TLSReloader(box: tls, logger: logger), successTerminationBehavior: .ignore))
        }
        services += [.init(service: app), .init(service: ConnectionCloser(fanOut: fanOut))]
        if let heartbeats { services.append(.init(service: heartbeats, successTerminationBehavior: .ignore)) }
        services.append(.init(
            service: RetentionSweeper(lifecycle: lifecycle, interval: configuration.retentionInterval, clock: configuration.clock, logger: logger),
            successTerminationBehavior: .ignore))
        services.append(.init(
            service: SessionSweeper(
                authenticator: Authenticator(tokens: tokens, accounts: accounts, revocations: revocations), fanOut: fanOut),
            successTerminationBehavior: .ignore))
        // Signals go through the drainer (SIGTERM drains first), not straight to the group.
        let box = SignalDrainer.GroupBox()
        if !shutdownSignals.isEmpty {
            services.append(.init(
                service: SignalDrainer(signals: shutdownSignals, delay: configuration.drainDelay, state: drain, box: box, logger: logger),
                successTerminationBehavior: .ignore))
        }
        let group = ServiceGroup(
            configuration: .init(
                services: services,
                logger: logger))
        box.group.withLock { $0 = group }
        return group
    }
}

/// A server serving in a background task (tests, benchmarks): where it listens, how to stop it.
public struct RunningServer: Sendable {
    /// The bound port (useful with port 0).
    public let port: Int
    let group: ServiceGroup
    let task: Task<Void, any Error>

    /// Shuts down gracefully and waits until it has.
    public func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }
}

extension ParleyApp {
    /// Starts serving in a background task and returns once the server listens.
    public func startInBackground() async throws -> RunningServer {
        let (ports, sink) = AsyncStream.makeStream(of: Int.self)
        let group = try await makeServiceGroup(onRunning: { sink.yield($0) })
        let task = Task {
            defer { sink.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            _ = try? await task.value
            throw ServerStartError("The server stopped before it listened")
        }
        return RunningServer(port: port, group: group, task: task)
    }
}
