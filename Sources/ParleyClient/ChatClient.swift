import Foundation
import Logging
import ParleyProtocol

/// What changed, for the view models to refresh.
public enum ChatChange: Sendable, Equatable {
    /// The conversation list (names, order, last message, unread counts).
    case conversations
    /// A conversation's messages.
    case messages(EntityID)
    /// The connection banner.
    case connection(ConnectionState)
    /// A sync began (`true`) or ended (`false`): the banner says "Syncing…" meanwhile.
    case syncing(Bool)
    /// Who is typing in a conversation.
    case typing(EntityID)
    /// The directory: someone's presence, name or picture.
    case directory
    /// How far a message's preparation (an upload) has come, 0...1; keyed by ``LocalMessage/id``.
    case progress(conversationId: EntityID, messageId: String, fraction: Double)
    /// The server refused the token: sign the user in again and call
    /// ``ChatClient/updateToken(_:)``; queued messages wait for it.
    case signInRequired
    /// The client renewed its sign-in: keep these tokens (in the keychain) for the next launch.
    /// The refresh token works once: an app that keeps an older one is signed out with it.
    case tokenRenewed(SessionTokens)
}

/// The offline-first chat client: one per signed-in user.
///
/// Screens read from the local database at once; the client keeps it in step with the server:
/// it connects (and reconnects with backoff), catches up from `/changes` after every connect and
/// every detected gap, polls over HTTP while the WebSocket is down, and sends the outbox in order
/// over whichever path is up. Every send carries a client message id, so a retry after an
/// ambiguous failure never duplicates.
public actor ChatClient {
    /// The local database (cache and outbox).
    package nonisolated let database: LocalDatabase
    /// The signed-in user.
    public nonisolated let userId: EntityID
    /// Downloaded attachments (memory and disk), purged on logout.
    public nonisolated let media: MediaCache
    /// The SDK's copies of files waiting to be sent (see ``keepFileForSending(_:)``).
    nonisolated let outboxFiles: OutboxFiles
    private var observers: [UUID: AsyncStream<ChatChange>.Continuation] = [:]
    nonisolated let transport: any ChatTransport
    let environment: ClientEnvironment
    /// Pre-send checks and preparations, supplied by the app.
    let hooks: MessageHooks
    let logger: Logger
    /// How often to poll over HTTP while the WebSocket is down.
    let pollInterval: Duration

    var machine: ConnectionStateMachine
    /// The app's phase and the network, as the app shell reports them.
    var lifecycle: AppLifecycleMachine
    var graceTask: Task<Void, Never>?
    /// Between ``start()`` and ``stop()``: the lifecycle connects and disconnects only then.
    var started = false
    /// What the sync decides: syncs running, catch-ups' retries (``SyncSchedule``).
    var sync = SyncSchedule()
    /// Counts presence events; `presenceApplied` says when each user's last one came, so a
    /// directory snapshot requested earlier does not overwrite it.
    var presenceSerial = 0
    var presenceApplied: [EntityID: Int] = [:]
    var channel: (any RealtimeChannel)?
    var channelGeneration = 0
    private var waitTask: Task<Void, Never>?
    private var heartbeatTask: Task<Void, Never>?
    private var pollTask: Task<Void, Never>?
    var outboxTimer: Task<Void, Never>?
    /// Edits and reactions not yet confirmed (see ChatClient+Changes).
    var pendingChanges: [PendingChange] = []
    var pendingChangesLoaded = false
    var changeRefusals: [Int64: ClientError] = [:]
    /// The outbox's rules: what is due, in flight, backing off (see ``OutboxSchedule``).
    var schedule = OutboxSchedule()
    /// The background work running now, one run per kind and conversation (``SingleFlight``).
    var flights = SingleFlight<Flight>()
    /// Outbox entries the user deleted before they were ever sent: never sent from then on.
    var cancelledSends: Set<String> = []
    /// Messages deleted while on their way, by client message id: shown deleted until the
    /// server's copy is (see ChatClient+Revokes).
    var revokesPending: Set<String> = []
    var revokesLoaded = false
    /// List rows being read again after a missed event (see ``refreshListRow(_:)``).
    /// The server refused the token (401): queued messages wait for ``updateToken(_:)``.
    public internal(set) var signInRequired = false
    /// When the cache was last trimmed to its retention limits.
    var lastTrim: Date?
    /// Callers of ``waitForFirstSync()`` (see ChatClient+FirstSync).
    var firstSyncWaiters: [CheckedContinuation<Void, Never>] = []
    /// Syncs a connect has asked for that have not finished yet (counted from the moment the
    /// connection opened, before their task runs): the first sync's waiters wait for them even
    /// when the connection drops meanwhile.
    var connectSyncsPending = 0
    /// The conversation on screen, told to the server with `focus` (again after a reconnect).
    var focusedConversation: EntityID?
    /// Some outbox entry may be waiting out a backoff: set by a failed attempt, and true at start
    /// (an earlier run may have left some); the next successful send releases them all.
    var backingOff = true
    /// When each message still on its way was (last) handed to the outbox, by ``LocalMessage/id``.
    var sendStartedAt: [String: Date] = [:]
    /// Messages the user sent since the client was made (the push permission prompt waits for
    /// the first, ``PushRules``).
    public internal(set) var messagesSentThisLaunch = 0
    /// How often screens were served from the cache or the network.
    public internal(set) var readCounts = ReadCounts()
    var receipts = ReceiptQueue()
    var receiptTask: Task<Void, Never>?
    var typingOut: [EntityID: TypingDebouncer] = [:]
    var typingIn = TypingIndicators()
    /// Large groups' latest `receipt.summary` and `typing.summary`, by conversation.
    var receiptSummaries: [EntityID: ReceiptSummaryEvent] = [:]
    var typingCounts: [EntityID: (count: Int, at: Duration)] = [:]
    /// How long "this message is visible" marks are collected into one read receipt.
    let receiptDelay: Duration = .milliseconds(500)

    /// The connection banner state.
    public var connectionState: ConnectionState { machine.state }

    /// A client for a server, a token and a database file (in memory when `databasePath` is nil);
    /// `trust` for an `https` server whose certificate authority the system does not know.
    public init(
        serverURL: URL, token: String, userId: EntityID, databasePath: String?, policy: ConnectionStateMachine.Policy = .init(),
        trust: ServerTrust? = nil
    ) throws {
        try self.init(
            serverURL: serverURL, credentials: SessionCredentials(SessionTokens(token: token)), userId: userId,
            databasePath: databasePath, policy: policy, trust: trust)
    }

    /// A client for a sign-in whose tokens renew themselves (``SessionCredentials``: give it
    /// the app's storage so each renewal is kept), a user and a database file.
    public init(
        serverURL: URL, credentials: SessionCredentials, userId: EntityID, databasePath: String?,
        policy: ConnectionStateMachine.Policy = .init(), trust: ServerTrust? = nil
    ) throws {
        let database = try databasePath.map { try LocalDatabase.open(path: $0) } ?? LocalDatabase.inMemory()
        self.init(
            transport: LiveTransport(serverURL: serverURL, credentials: credentials, trust: trust), database: database, userId: userId,
            policy: policy, mediaDirectory: databasePath.map { URL(fileURLWithPath: $0 + "-media", isDirectory: true) },
            outboxFilesDirectory: databasePath.map { URL(fileURLWithPath: $0 + "-outbox", isDirectory: true) })
    }

    /// A client over any transport (tests inject faults here) and environment.
    public init(
        transport: any ChatTransport, database: LocalDatabase, userId: EntityID,
        environment: ClientEnvironment = .live, policy: ConnectionStateMachine.Policy = .init(),
        pollInterval: Duration = .seconds(15), hooks: MessageHooks = MessageHooks(),
        logger: Logger = Logger(label: "parley.client"),
        mediaDirectory: URL? = nil, mediaLimits: MediaCache.Limits = .init(),
        outboxFilesDirectory: URL? = nil, lifecycle: AppLifecycleMachine.Policy = .init()
    ) {
        self.hooks = hooks
        self.transport = transport
        // Beside the database file; a client on an in-memory database gets a folder of its own.
        let folder = mediaDirectory
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("parley-media-\(UUID().uuidString)", isDirectory: true)
        media = MediaCache(directory: folder, limits: mediaLimits) { url, range in
            try await transport.download(url, range: range)
        }
        self.database = database
        self.userId = userId
        self.environment = environment
        self.pollInterval = pollInterval
        self.logger = logger
        machine = ConnectionStateMachine(policy: policy, jitter: environment.random)
        self.lifecycle = AppLifecycleMachine(policy: lifecycle)
        // Beside the database too; a client on an in-memory database gets a folder of its own.
        outboxFiles = OutboxFiles(
            directory: outboxFilesDirectory
                ?? FileManager.default.temporaryDirectory.appendingPathComponent("parley-outbox-\(UUID().uuidString)", isDirectory: true))
        // Every renewal, whoever triggered it (a request that found its token expired, the
        // heartbeat, a sync), reaches the open connection and the app.
        transport.credentials?.onRenewed { [weak self] tokens in
            Task { await self?.renewed(tokens) }
        }
    }

    /// A stream of changes for one observer (a view model); it ends when the observer stops
    /// iterating.
    public func changes() -> AsyncStream<ChatChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: ChatChange.self, bufferingPolicy: .bufferingNewest(256))
        let id = UUID()
        observers[id] = continuation
        continuation.onTermination = { _ in Task { await self.removeObserver(id) } }
        return stream
    }

    private func removeObserver(_ id: UUID) { observers[id] = nil }

    func notify(_ change: ChatChange) {
        for observer in observers.values { observer.yield(change) }
    }

    // MARK: Connection

    /// Connects (and keeps reconnecting) until `stop()`.
    public func start() {
        started = true
        // Started while suspended in the background: it connects when the app comes back.
        if lifecycle.phase != .suspended { run(machine.handle(.start)) }
        startPolling()
        // Edits and reactions still waiting from an earlier run show at once.
        Task {
            await loadPendingChanges()
            await loadPendingRevokes()
            // Copies of files whose messages went (or were discarded) while the app was gone.
            if let queued = try? await database.outboxClientMessageIds() {
                outboxFiles.sweep(keeping: queued, now: environment.now())
            }
        }
    }

    /// Disconnects and stops every background task.
    public func stop() async {
        started = false
        graceTask?.cancel()
        graceTask = nil
        run(machine.handle(.stop))
        pollTask?.cancel()
        outboxTimer?.cancel()
        heartbeatTask?.cancel()
        pollTask = nil
        outboxTimer = nil
        heartbeatTask = nil
    }

    /// The OS says the network is back: reconnect now rather than after the backoff.
    public func networkBecameAvailable() {
        _ = lifecycle.handle(.networkChanged(available: true, interfaceChanged: false))
        run(machine.handle(.networkAvailable))
    }

    /// The user tapped "retry" on a failed connection.
    public func retry() { run(machine.handle(.retry)) }

    func run(_ actions: [ConnectionStateMachine.Action]) {
        for action in actions {
            switch action {
            case .open: open()
            case .close: closeChannel()
            case .wait(let delay):
                waitTask?.cancel()
                waitTask = Task { [environment] in
                    do { try await environment.sleep(delay) } catch { return }
                    // No network: the attempt would fail and spend a retry. The network's
                    // return reconnects at once (``networkChanged(available:interfaceChanged:)``).
                    guard self.lifecycle.networkAvailable else { return }
                    self.feed(.backoffElapsed)
                }
            case .cancelWait:
                waitTask?.cancel()
                waitTask = nil
            case .ping:
                // Access tokens live minutes: renew in time, while connected.
                Task { await self.renewTokenIfDue() }
                if let channel {
                    Task {
                        if (try? await channel.ping()) != nil { self.feed(.frameReceived(at: self.environment.uptime())) }
                    }
                }
            case .synchronize:
                connectSyncsPending += 1
                Task {
                    // Connected again: what waited for the network goes now.
                    await self.makeOutboxDue()
                    await self.synchronize()
                    self.connectSyncsPending -= 1
                    self.resumeFirstSyncWaitersIfDone()
                }
            }
        }
        notify(.connection(machine.state))
        resumeFirstSyncWaitersIfDone()
    }

    func feed(_ event: ConnectionStateMachine.Event) { run(machine.handle(event)) }

    private func open() {
        channelGeneration += 1
        let generation = channelGeneration
        Task {
            do {
                let channel = try await transport.openRealtime()
                await self.adoptStore(await channel.storeId)
                self.opened(channel, generation: generation)
            } catch {
                let permanent = (error as? ClientError)?.code == .unauthorized
                if permanent { self.requireSignIn() }
                self.openFailed(generation: generation, permanent: permanent)
            }
        }
    }

    private func openFailed(generation: Int, permanent: Bool) {
        guard generation == channelGeneration else { return }
        feed(.openFailed(permanent: permanent))
    }

    private func opened(_ channel: any RealtimeChannel, generation: Int) {
        guard generation == channelGeneration, machine.state == .connecting else {
            Task { await channel.close() }
            return
        }
        self.channel = channel
        feed(.opened(at: environment.uptime()))
        if focusedConversation != nil { sendFocus() }
        Task {
            for await event in channel.events { await self.receive(event, generation: generation) }
            self.channelEnded(generation: generation)
        }
        heartbeatTask?.cancel()
        let period = machine.policy.heartbeat / 2
        heartbeatTask = Task { [environment] in
            while !Task.isCancelled {
                do { try await environment.sleep(period) } catch { return }
                self.feed(.tick(at: environment.uptime()))
            }
        }
    }

    private func channelEnded(generation: Int) {
        guard generation == channelGeneration else { return }
        channel = nil
        heartbeatTask?.cancel()
        feed(.closed)
    }

    private func closeChannel() {
        if let channel { Task { await channel.close() } }
        channel = nil
        channelGeneration += 1
        heartbeatTask?.cancel()
    }

    /// While the WebSocket is down, poll over HTTP so the user still sends and receives.
    private func startPolling() {
        pollTask?.cancel()
        pollTask = Task { [environment, pollInterval] in
            while !Task.isCancelled {
                do { try await environment.sleep(pollInterval) } catch { return }
                if await self.shouldPoll() { await self.synchronize() }
            }
        }
    }

    /// Polling stands in for a socket that is down, not for one closed on purpose in the
    /// background.
    private func shouldPoll() -> Bool {
        machine.state != .connected && lifecycle.phase != .suspended && lifecycle.networkAvailable
    }

}

