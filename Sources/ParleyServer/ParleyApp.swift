import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ParleyProtocol
import ServiceLifecycle
import Synchronization
import UnixSignals
@_exported import ParleyStorage
@_exported import ParleySQLite
@_exported import ParleyPostgres
@_exported import ParleyRules

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
    /// Every WebSocket's heartbeat, one timer for all (nil when `heartbeatSeconds` is 0).
    let heartbeats: HeartbeatWheel?
    /// Messages and conversations: validate, commit, fan out.
    public let chat: ChatService
    /// Typing, presence and receipts.
    public let signals: LiveSignals
    /// APNs notifications for users with no live connection; nil when push is off.
    public let push: PushService?
    /// Link previews of stored messages; nil when they are off.
    public let previews: LinkPreviewWorker?
    /// Retention, erasure and export.
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
        heartbeats = configuration.heartbeatSeconds > 0
            ? HeartbeatWheel(period: .seconds(configuration.heartbeatSeconds), clock: configuration.clock, fanOut: fanOut, logger: logger) : nil
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

    /// Reads the TLS certificate and key again (what SIGHUP does): new connections get them,
    /// open ones keep theirs. Throws, keeping the old pair, when the files do not load.
    public func reloadTLS() throws {
        guard let tlsContext else { throw ServerStartError("This server does not speak TLS") }
        try tlsContext.reload()
    }
}

/// The server a configuration describes, ready to ``ParleyApp/run(onRunning:)``: the data
/// directory prepared, the store opened and migrated, every service assembled. `parley serve`
/// is this over ``ServerConfiguration/init(settings:)``.
public func buildApplication(_ configuration: ServerConfiguration, logger: Logger? = nil) async throws -> ParleyApp {
    try await ParleyApp(configuration: configuration, logger: logger)
}
