import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import ParleyProtocol
import ServiceLifecycle
import Synchronization
import UnixSignals

/// A configured Parley server: the store, the HTTP routes, the WebSocket gateway.
///
/// `run()` serves until SIGINT/SIGTERM (or `shutdown()`): it then stops accepting, closes
/// every WebSocket with "going away", lets in-flight requests finish, and closes the store.
public struct ParleyApp: Sendable {
    /// The configuration it was built with.
    public let configuration: ServerConfiguration
    /// The store every route goes through.
    public let store: any ParleyStore
    /// This node's live connections.
    public let fanOut: FanOut
    /// Messages and conversations: validate, commit, fan out.
    public let chat: ChatService
    /// Typing, presence and receipts.
    public let signals: LiveSignals
    /// APNs notifications for users with no live connection; nil when push is off.
    public let push: PushService?
    /// Link previews of stored messages (v1.3); nil when they are off.
    public let previews: LinkPreviewWorker?
    /// Retention, erasure and export (v1.4).
    public let lifecycle: DataLifecycle
    /// Set by SIGTERM: `/ready` answers 503 while the server drains.
    public let drain = DrainState()
    /// Counters exposed at `GET /metrics`.
    public let metrics: Metrics
    /// Whether the store can write (storage trouble answers 503 and fails `/ready`).
    public let health: StoreHealth
    /// Which users may act (read once, kept in memory, updated on deactivation on every node).
    public let accounts: AccountStates
    /// The link to the other nodes on the same PostgreSQL; nil for a single node.
    public let cluster: ClusterNode?
    /// Signs and verifies access tokens with the keys every node shares.
    public let tokens: TokenService
    /// Sign-in sessions ended by logout, shared by every node through the store.
    public let revocations: SessionRevocations
    /// The TLS certificate new connections get, when the server speaks TLS.
    let tlsContext: TLSContextBox?
    let passwords: PasswordHasher
    let logger: Logger

    /// Prepares the data directory, opens (and migrates) the store the configuration names, and the token keys.
    public init(configuration: ServerConfiguration, logger: Logger? = nil) async throws {
        var logger = logger ?? Logger(label: "parley")
        logger.logLevel = configuration.logLevel
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        let store = try await configuration.makeStore(logger: logger)
        try await self.init(configuration: configuration, store: store, logger: logger)
    }

    /// A server over a given store (tests, other engines).
    public init(configuration: ServerConfiguration, store: any ParleyStore, logger: Logger) async throws {
        self.configuration = configuration
        self.store = store
        self.logger = logger
        tlsContext = try configuration.tls.map(TLSContextBox.init(files:))
        fanOut = FanOut(logger: logger, clock: configuration.clock, holdBound: configuration.orderHoldBound)
        let blocks = BlockDirectory(store: store)
        fanOut.order.attach(missingEvents: Self.missingEvents(store: store, blocks: blocks, logger: logger))
        metrics = Metrics()
        health = StoreHealth(store: store, metrics: metrics, logger: logger)
        accounts = AccountStates(store: store)
        // On PostgreSQL every process is a node of one service; SQLite is one node.
        let clusterSettings = try configuration.cluster ?? (configuration.usesPostgres ? ClusterConfiguration(url: configuration.databaseURL!) : nil)
        if let clusterConfiguration = clusterSettings {
            let node = ClusterNode(configuration: clusterConfiguration, fanOut: fanOut, logger: logger)
            try await node.join()
            fanOut.attach(relay: node)
            cluster = node
        } else {
            cluster = nil
        }
        if let apns = configuration.apns {
            let fanOut = self.fanOut
            push = try await PushService(
                configuration: apns, store: store, isConnected: { fanOut.isOnline($0) }, metrics: metrics,
                logger: logger, clock: configuration.clock)
            logger.info("Push on: APNs", metadata: ["topic": "\(apns.topic)", "keyId": "\(apns.keyId)", "teamId": "\(apns.teamId)"])
        } else {
            push = nil
            logger.notice("Push off: no APNs key configured (see `parley serve --help`); connected devices still get every message")
        }
        if configuration.linkPreviews {
            previews = LinkPreviewWorker(
                policy: AddressPolicy(allowed: configuration.linkPreviewAllow), metrics: metrics, logger: logger,
                timeout: configuration.linkPreviewTimeout)
            if !configuration.linkPreviewAllow.isEmpty {
                logger.notice("Link previews may fetch from these non-public ranges", metadata: [
                    "allowed": "\(configuration.linkPreviewAllow.map(\.description).joined(separator: ","))",
                ])
            }
        } else {
            previews = nil
            logger.info("Link previews off")
        }
        chat = ChatService(
            store: store, fanOut: fanOut, push: push, previews: previews, clock: configuration.clock,
            activityWindow: configuration.activityWindow,
            largeGroupSize: configuration.largeGroupSize, rateLimits: configuration.rateLimits, metrics: metrics, blocks: blocks)
        if let previews {
            let chat = self.chat
            previews.handler.set { preview, message in try await chat.attachPreview(preview, to: message) }
        }
        store.observeSendBatches { [metrics] size, duration in
            metrics.observe("parley_send_batch_size", value: Double(size))
            metrics.observe("parley_send_transaction_seconds", duration: duration)
        }
        lifecycle = DataLifecycle(store: store, chat: chat, blobs: configuration.attachmentBlobs(for: store), logger: logger)
        signals = LiveSignals(
            store: store, fanOut: fanOut, chat: chat, typingTimeout: configuration.typingTimeout, clock: configuration.clock,
            summaryInterval: configuration.summaryInterval)
        if let cluster {
            let signals = self.signals
            cluster.onUsersLost { identities in
                for identity in identities { await signals.announceOffline(identity) }
            }
            let accounts = self.accounts, fanOut = self.fanOut
            cluster.onBlocksChanged { blocker, blocked in blocks.changed(blocker: blocker, blocked: blocked) }
            cluster.onUserDeactivated { userId, organizationId in
                accounts.deactivated(userId, organizationId: organizationId)
                fanOut.closeConnections(of: userId, code: MembershipService.deactivatedCloseCode, reason: "account deactivated")
            }
        }
        if configuration.domainJoins == .proven, configuration.smtp == nil, configuration.mailer == nil {
            logger.info(
                "No mail server (--smtp-url): joining an organization by allowed email domain needs an invite until one is set, or --domain-joins trust")
        }
        if configuration.openOrganizations {
            logger.warning("Open organizations: anyone can join an existing organization by its name (--open-organizations; demos and tests only)")
        }
        tokens = try await configuration.makeTokenService(store: store, now: Date())
        revocations = SessionRevocations(store: store)
        try await revocations.reload()
        passwords = PasswordHasher(cost: configuration.bcryptCost)
    }

    /// How a conversation's orderer fills a gap it waited for in vain: the changes after the
    /// last event it handed on, read from the store as one recipient may see them, announced as
    /// `message.created` (new since then) or `message.updated`.
    static func missingEvents(store: any ParleyStore, blocks: BlockDirectory, logger: Logger) -> ConversationOrder.MissingEvents {
        { conversationId, viewer, after, before in
            // Nothing lies strictly between: nothing to read.
            guard before - after > 1 else { return [] }
            do {
                let page = try await store.changes(
                    conversationId: conversationId, viewer: viewer, since: after, limit: Int(min(before - after, 1000)))
                let encoder = WireCoding.makeEncoder()
                let recipients = try await store.participantIds(conversationId: conversationId)
                var events: [ConversationOrder.Event] = []
                for message in page.messages where message.updatedSeq < before {
                    func frame(_ message: Message) throws -> ByteBuffer {
                        let event: ServerEvent = message.seq > after ? .messageCreated(.init(message: message)) : .messageUpdated(.init(message: message))
                        return ByteBuffer(bytes: try encoder.encode(event))
                    }
                    // Those who block the sender get it marked (v1.4), as the live path gives it.
                    let blockers = message.type == .system ? [] : await blocks.blockers(of: message.senderId)
                    var event = ConversationOrder.Event(
                        seq: message.updatedSeq, frame: try frame(message), recipients: recipients.filter { !blockers.contains($0) })
                    let apart = recipients.filter(blockers.contains)
                    if !apart.isEmpty {
                        var marked = message
                        marked.senderBlocked = true
                        event.variants = [.init(frame: try frame(marked), recipients: apart)]
                    }
                    events.append(event)
                }
                return events
            } catch {
                logger.warning("Could not read a conversation's missing events", metadata: ["error": "\(error)"])
                return []
            }
        }
    }

    /// The router with every route of the contract under `/api/v1`.
    func buildRouter() async throws -> Router<ParleyRequestContext> {
        let chat = self.chat, signals = self.signals
        let authenticator = Authenticator(tokens: tokens, accounts: accounts, revocations: revocations)
        let router = Router(context: ParleyRequestContext.self)
        router.add(middleware: ConnectionCloseMiddleware())
        router.add(middleware: HTTPMetricsMiddleware(metrics: metrics))
        router.add(middleware: ErrorMiddleware(health: health))
        router.add(middleware: ClientAddressMiddleware(trusted: configuration.trustedProxies))
        let api = router.group("api/v1")
        api.get("health") { _, _ in try JSONResponse.make(["status": "ok"]) }
        api.get("openapi.json") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: OpenAPIDocument.json)))
        }
        // Operational routes at the root (contract): alive, and able to write.
        router.get("health") { _, _ in try JSONResponse.make(["status": "ok"]) }
        let health = self.health
        let drain = self.drain
        router.get("ready") { request, context in
            if drain.isDraining {
                return try APIError(.unavailable, "Draining before shutdown", retryAfter: 1).response(from: request, context: context)
            }
            guard await health.canWrite() else { return try APIError.unavailable.response(from: request, context: context) }
            return try JSONResponse.make(["status": "ready"])
        }
        let order = fanOut.order, fanOut = self.fanOut
        let orderSeen = Mutex((held: 0, fetched: 0, late: 0))
        let heartbeatsSeen = Mutex((pings: 0, closed: 0))
        router.get("metrics") { _, _ in
            // Values kept elsewhere are brought in at scrape time.
            let stats = order.stats
            let seen = orderSeen.withLock { seen in
                defer { seen = (stats.held, stats.fetched, stats.late) }
                return seen
            }
            metrics.increment("parley_order_held_total", by: stats.held - seen.held)
            metrics.increment("parley_order_fetched_total", by: stats.fetched - seen.fetched)
            metrics.increment("parley_order_late_total", by: stats.late - seen.late)
            let beats = fanOut.heartbeats
            let beatsSeen = heartbeatsSeen.withLock { seen in
                defer { seen = beats }
                return seen
            }
            metrics.increment("parley_websocket_pings_total", by: beats.pings - beatsSeen.pings)
            metrics.increment("parley_websocket_silent_closed_total", by: beats.closed - beatsSeen.closed)
            let depths = fanOut.queueDepths
            metrics.set("parley_websocket_connections", to: depths.count)
            metrics.set("parley_websocket_queued_frames", to: depths.reduce(0, +))
            metrics.set("parley_websocket_queue_depth_max", to: depths.max() ?? 0)
            metrics.set("parley_websocket_sends_awaiting_commit", to: fanOut.sendsAwaitingCommit)
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(string: metrics.prometheusText())))
        }
        let authenticated = api.group().add(middleware: AuthMiddleware(authenticator: authenticator))
        let sessions = SignInSessions(
            store: store, tokens: tokens, revocations: revocations, refreshLifetime: configuration.refreshTokenLifetime, now: configuration.clock.now,
            logger: logger)
        AuthController(
            store: store, tokens: tokens, sessions: sessions, authenticator: authenticator, passwords: passwords, decoyHash: try await passwords.decoyHash(), now: chat.now, clock: configuration.clock.now,
            openOrganizations: configuration.openOrganizations,
            limits: chat.limits, provingDomainJoins: configuration.domainJoins == .proven,
            mailer: configuration.mailer ?? configuration.smtp.map { SMTPMailer(configuration: $0, logger: self.logger) },
            publicURL: configuration.publicURL ?? URL(string: "http://\(configuration.host):\(configuration.port)")!
        ).addRoutes(to: api, authenticated: authenticated)
        let gateway = Gateway(
            authenticator: authenticator, store: store, chat: chat, fanOut: fanOut, signals: signals,
            heartbeatSeconds: configuration.heartbeatSeconds, storeId: try await store.storeIdentity(),
            clock: configuration.clock, health: health)
        let logger = self.logger
        api.ws("ws") { request, _ in
            _ = try await authenticator.grant(for: request, allowingQueryToken: true, consumingTicket: false)
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            await gateway.serve(
                inbound: inbound, outbound: outbound, request: context.request, channel: context.requestContext.channel, logger: logger)
        }
        UserController(store: store, fanOut: fanOut, chat: chat).addRoutes(to: authenticated)
        let membership = MembershipService(
            store: store, accounts: accounts, fanOut: fanOut, now: chat.now, openOrganizations: configuration.openOrganizations)
        OrganizationController(store: store, membership: membership, sessions: sessions, audit: chat.audit, lifecycle: lifecycle)
            .addRoutes(to: authenticated)
        LifecycleController(store: store, membership: membership, lifecycle: lifecycle, passwords: passwords).addRoutes(to: authenticated)
        SafetyController(store: store, chat: chat, membership: membership).addRoutes(to: authenticated)
        ConversationController(
            store: store, chat: chat,
            syncOverlapMilliseconds: Int64((configuration.listSyncOverlap.timeInterval * 1000).rounded())
        ).addRoutes(to: authenticated)
        MessageController(store: store, chat: chat).addRoutes(to: authenticated)
        ReceiptController(signals: signals).addRoutes(to: authenticated)
        DeviceController(store: store, sessions: sessions, now: chat.now).addRoutes(to: authenticated)
        AttachmentController(
            store: store, blobs: configuration.attachmentBlobs(for: store),
            maxBytes: configuration.maxAttachmentBytes, now: chat.now, limits: chat.limits
        ).addRoutes(to: authenticated)
        if configuration.servesWebClient {
            WebClientFiles(webRoot: configuration.webRoot).addRoutes(to: router)
        }
        return router
    }

    /// Reads the TLS certificate and key again (what SIGHUP does): new connections get them,
    /// open ones keep theirs. Throws, keeping the old pair, when the files do not load.
    public func reloadTLS() throws {
        guard let tlsContext else { throw ServerStartError("This server does not speak TLS") }
        try tlsContext.reload()
    }

    /// Serves until a shutdown signal; `onRunning` gets the bound port (useful with port 0).
    public func run(onRunning: @escaping @Sendable (Int) async -> Void = { _ in }) async throws {
        let group = try await makeServiceGroup(shutdownSignals: [.sigterm, .sigint], onRunning: onRunning)
        try await group.run()
        do {
            try await store.close()
        } catch {
            logger.warning("Store did not close cleanly (the next start recovers it)", metadata: ["error": "\(error)"])
        }
    }

    /// The server as a service group, for callers (tests, benchmarks) that stop it themselves.
    public func makeServiceGroup(
        shutdownSignals: [UnixSignal] = [], onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws -> ServiceGroup {
        let router = try await buildRouter()
        let logger = self.logger
        let limits = configuration.connectionLimits
        let cap = limits.maxConnections ?? ConnectionLimits.defaultMaxConnections()
        let counter = ConnectionCounter(limit: cap)
        let metrics = self.metrics
        let bodyTimeout = TimeAmount(limits.bodyTimeout)
        let channel = HTTP1WebSocketUpgradeChannel.Configuration(
            http1: .init(
                additionalChannelHandlers: [BodyStallHandler(timeout: bodyTimeout, onTimeout: {
                    metrics.increment("parley_connections_timed_out_total", labels: ["stage": "body"])
                })],
                idleTimeout: TimeAmount(limits.idleTimeout)),
            // The heartbeat is the gateway's own (see ``Heartbeat``): the library's counts only
            // pongs, which a paused reader cannot reach.
            ws: .init(maxFrameSize: Gateway.transportLimit, autoPing: .disabled))
        let webSocketResponder = router.buildResponder()
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
                        inner: HTTP1WebSocketUpgradeChannel(
                            responder: responder, webSocketResponder: webSocketResponder, configuration: channel),
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
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        if let cluster { services.append(.init(service: cluster)) }
        if let push { services.append(.init(service: push)) }
        if let previews { services.append(.init(service: previews)) }
        if let tls, !shutdownSignals.isEmpty {
            services.append(.init(service: TLSReloader(box: tls, logger: logger), successTerminationBehavior: .ignore))
        }
        services += [.init(service: app), .init(service: ConnectionCloser(fanOut: fanOut))]
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

/// On shutdown, closes every WebSocket with "going away" so clients reconnect and catch up.
struct ConnectionCloser: Service {
    let fanOut: FanOut

    func run() async throws {
        try? await gracefulShutdown()
        fanOut.closeAll()
    }
}

/// Ends the WebSockets whose token would be refused now, whether or not their client sends
/// anything: once a second it reads the signing keys again when they are stale (so a key
/// retired on any node, or in the database, is seen within seconds), and the sessions ended by
/// logout on other nodes, and closes, with 4001, every connection whose token expired, whose
/// key was retired, whose session was ended or whose account was deactivated.
/// Each command is also checked as it arrives (``Gateway``); this covers the silent ones.
struct SessionSweeper: Service {
    let authenticator: Authenticator
    let fanOut: FanOut
    static let period: Duration = .seconds(1)

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: Self.period)
                sweep(now: Date())
            }
        }
    }

    /// One pass: returns how many connections it closed.
    @discardableResult
    func sweep(now: Date) -> Int {
        authenticator.tokens.refreshIfStale()
        authenticator.revocations.refreshIfStale(now: now)
        return fanOut.closeEndedSessions(code: Gateway.sessionEndedCloseCode) { authenticator.endOfSession($0, now: now) }
    }
}
