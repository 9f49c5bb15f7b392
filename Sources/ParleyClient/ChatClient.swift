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
    /// Who is typing in a conversation.
    case typing(EntityID)
    /// Presence in the directory.
    case directory
    /// How far a message's preparation (an upload) has come, 0...1; keyed by ``LocalMessage/id``.
    case progress(conversationId: EntityID, messageId: String, fraction: Double)
    /// The server refused the token: sign the user in again and call
    /// ``ChatClient/updateToken(_:)``; queued messages wait for it.
    case signInRequired
    /// The client renewed its token before it expired: keep this one (in the keychain) for the
    /// next launch.
    case tokenRenewed(String)
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
    public nonisolated let database: LocalDatabase
    /// The signed-in user.
    public nonisolated let userId: EntityID
    /// Downloaded attachments (memory and disk), purged on logout.
    public nonisolated let media: MediaCache
    private var observers: [UUID: AsyncStream<ChatChange>.Continuation] = [:]
    nonisolated let transport: any ChatTransport
    let environment: ClientEnvironment
    /// Pre-send checks and preparations (seed 002).
    let hooks: MessageHooks
    let logger: Logger
    /// How often to poll over HTTP while the WebSocket is down.
    let pollInterval: Duration

    var machine: ConnectionStateMachine
    /// Counts presence events; `presenceApplied` says when each user's last one came, so a
    /// directory snapshot requested earlier does not overwrite it.
    var presenceSerial = 0
    var presenceApplied: [EntityID: Int] = [:]
    var channel: (any RealtimeChannel)?
    private var channelGeneration = 0
    private var waitTask: Task<Void, Never>?
    private var heartbeatTask: Task<Void, Never>?
    private var pollTask: Task<Void, Never>?
    var outboxTimer: Task<Void, Never>?
    var isFlushing = false
    var flushAgain = false
    var flushWaiters: [CheckedContinuation<Void, Never>] = []
    private var catchingUp: Set<EntityID> = []
    private var catchUpAgain: Set<EntityID> = []
    /// Failed catch-ups in a row, by conversation, for the retry's backoff.
    private var catchUpFailures: [EntityID: Int] = [:]
    /// Edits and reactions not yet confirmed (see ChatClient+Changes).
    var pendingChanges: [PendingChange] = []
    var pendingChangesLoaded = false
    var isFlushingChanges = false
    var flushChangesAgain = false
    var changeWaiters: [CheckedContinuation<Void, Never>] = []
    var changeRefusals: [Int64: ClientError] = [:]
    /// List rows being read again after a missed event (see ``refreshListRow(_:)``).
    var refreshingRows: Set<EntityID> = []
    var refreshRowAgain: Set<EntityID> = []
    /// The server refused the token (401): queued messages wait for ``updateToken(_:)``.
    public internal(set) var signInRequired = false
    /// When the cache was last trimmed to its retention limits.
    var lastTrim: Date?
    /// Callers of ``waitForFirstSync()`` (see ChatClient+FirstSync).
    var firstSyncWaiters: [CheckedContinuation<Void, Never>] = []
    /// The conversation on screen, told to the server with `focus` (again after a reconnect).
    var focusedConversation: EntityID?
    /// Some outbox entry may be waiting out a backoff: set by a failed attempt, and true at start
    /// (an earlier run may have left some); the next successful send releases them all.
    var backingOff = true
    /// When each message still on its way was (last) handed to the outbox, by ``LocalMessage/id``.
    var sendStartedAt: [String: Date] = [:]
    /// Seed 004's read counter.
    public internal(set) var readCounts = ReadCounts()
    var receipts = ReceiptQueue()
    var receiptTask: Task<Void, Never>?
    var typingOut: [EntityID: TypingDebouncer] = [:]
    var typingIn = TypingIndicators()
    /// Large groups' latest `receipt.summary` and `typing.summary` (v1.2), by conversation.
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
        let database = try databasePath.map { try LocalDatabase.open(path: $0) } ?? LocalDatabase.inMemory()
        self.init(
            transport: LiveTransport(serverURL: serverURL, token: token, trust: trust), database: database, userId: userId, policy: policy,
            mediaDirectory: databasePath.map { URL(fileURLWithPath: $0 + "-media", isDirectory: true) })
    }

    /// A client over any transport (tests inject faults here) and environment.
    public init(
        transport: any ChatTransport, database: LocalDatabase, userId: EntityID,
        environment: ClientEnvironment = .live, policy: ConnectionStateMachine.Policy = .init(),
        pollInterval: Duration = .seconds(15), hooks: MessageHooks = MessageHooks(),
        logger: Logger = Logger(label: "parley.client"),
        mediaDirectory: URL? = nil, mediaLimits: MediaCache.Limits = .init()
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
        run(machine.handle(.start))
        startPolling()
        // Edits and reactions still waiting from an earlier run show at once.
        Task { await loadPendingChanges() }
    }

    /// Disconnects and stops every background task.
    public func stop() async {
        run(machine.handle(.stop))
        pollTask?.cancel()
        outboxTimer?.cancel()
        heartbeatTask?.cancel()
        pollTask = nil
        outboxTimer = nil
        heartbeatTask = nil
    }

    /// The OS says the network is back: reconnect now rather than after the backoff.
    public func networkBecameAvailable() { run(machine.handle(.networkAvailable)) }

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
                    self.feed(.backoffElapsed)
                }
            case .cancelWait:
                waitTask?.cancel()
                waitTask = nil
            case .ping:
                if let channel {
                    Task {
                        if (try? await channel.ping()) != nil { self.feed(.frameReceived(at: self.environment.uptime())) }
                    }
                }
            case .synchronize:
                Task {
                    // Connected again: what waited for the network goes now.
                    try? await self.database.outboxRetryNow()
                    await self.synchronize()
                }
            }
        }
        notify(.connection(machine.state))
        if !machine.state.isTryingToConnect { resumeFirstSyncWaiters() }
    }

    private func feed(_ event: ConnectionStateMachine.Event) { run(machine.handle(event)) }

    private func open() {
        channelGeneration += 1
        let generation = channelGeneration
        Task {
            do {
                let channel = try await transport.openRealtime()
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
                if await self.connectionState != .connected { await self.synchronize() }
            }
        }
    }

    // MARK: Receiving

    private func receive(_ event: ServerEvent, generation: Int) async {
        guard generation == channelGeneration else { return }
        feed(.frameReceived(at: environment.uptime()))
        do {
            switch event {
            case .messageCreated(let payload):
                try await applyLive(payload.message, changeSeq: payload.message.seq)
                try await applyToListRow(payload.message, changeSeq: payload.message.seq)
            case .messageUpdated(let payload):
                try await applyLive(payload.message, changeSeq: payload.message.updatedSeq)
                try await applyToListRow(payload.message, changeSeq: payload.message.updatedSeq)
            case .conversationActivity(let activity):
                try await apply(activity: activity)
            case .conversationUpdated(let payload):
                try await database.store(conversation: payload.conversation)
                notify(.conversations)
                if let synced = try await database.syncedSeq(payload.conversation.id), payload.conversation.lastSeq > synced {
                    await catchUp(payload.conversation.id)
                }
            case .receipt(let receipt):
                try await database.apply(receipt: receipt)
                notify(.messages(receipt.conversationId))
                notify(.conversations)
            case .typing(let typing):
                receivedTyping(typing)
            case .presence(let presence):
                presenceSerial += 1
                presenceApplied[presence.userId] = presenceSerial
                try await database.apply(presence: presence)
                notify(.directory)
            case .receiptSummary(let summary):
                if summary.seq >= receiptSummaries[summary.conversationId]?.seq ?? 0 {
                    receiptSummaries[summary.conversationId] = summary
                }
                notify(.messages(summary.conversationId))
            case .typingSummary(let summary):
                typingCounts[summary.conversationId] = (summary.count, environment.uptime())
                notify(.typing(summary.conversationId))
            case .hello:
                break
            }
        } catch {
            logger.warning("Could not apply an event", metadata: ["type": "\(event.type)", "error": "\(error)"])
        }
    }

    private func applyLive(_ message: Message, changeSeq: Int64) async throws {
        switch try await database.applyLive(message, changeSeq: changeSeq) {
        case .applied:
            notify(.messages(message.conversationId))
            if message.senderId != userId {
                typingIn.clear(conversation: message.conversationId, user: message.senderId)
                notify(.typing(message.conversationId))
            }
            await markDeliveredUpToSynced(message.conversationId)
        case .gap:
            readCounts.gapCatchUps += 1
            await catchUp(message.conversationId)
        case .untracked:
            // Our own message from another device, or a conversation never opened here: its
            // list row follows (applyToListRow); its messages load when it is opened.
            if message.senderId == userId { try await database.apply([message]) }
        }
    }

    // MARK: Sync

    /// Brings everything up to date: the conversation list, then every kept conversation from
    /// its synced seq, then the outbox.
    ///
    /// When the server answers, every queued message is sent at once, in order, whatever
    /// backoff its last failed attempt left: backoff applies only while the server stays
    /// unreachable. Returns whether the server was reached and what the outbox holds after.
    @discardableResult
    public func synchronize() async -> SyncReport {
        var reached = false
        do {
            // v1.2: only what changed since the last sync (a reconnect with nothing new moves
            // almost nothing), the whole list the first time.
            let token = try await database.setting(Self.listSyncTokenKey)
            let sync = try await transport.conversationList(changedSince: token)
            reached = true
            signInRequired = false
            await renewTokenIfDue()
            // The server is back: what waited for it goes now, not when its backoff ends.
            try? await database.outboxRetryNow()
            let list: [Conversation]
            switch sync {
            case .all(let all, let next):
                list = all
                try await database.store(conversations: all, replacingAll: true)
                try await database.setSetting(Self.listSyncTokenKey, to: next)
            case .changes(let changed, let removed, let next):
                list = changed
                try await database.store(conversations: changed, replacingAll: false)
                try await database.forget(conversations: removed)
                try await database.setSetting(Self.listSyncTokenKey, to: next)
            }
            notify(.conversations)
            let latest = Dictionary(list.map { ($0.id, $0.lastSeq) }, uniquingKeysWith: max)
            for (id, synced) in try await database.syncedConversations() where (latest[id] ?? 0) > synced {
                await catchUp(id)
            }
        } catch let error as ClientError where error.code == .unauthorized {
            reached = true
            requireSignIn()
        } catch {
            logger.debug("Sync failed; will retry", metadata: ["error": "\(error)"])
        }
        await flushOutbox()
        await flushReceipts()
        await registerPushTokenIfNeeded()
        await trimCacheIfDue()
        resumeFirstSyncWaiters()
        let counts = (try? await database.outboxCounts()) ?? (queued: 0, failed: 0)
        return SyncReport(reachedServer: reached, queued: counts.queued, failed: counts.failed, signInRequired: signInRequired)
    }

    /// Where the conversation list's sync token is kept.
    static let listSyncTokenKey = "conversations_sync_token"

    /// A token is renewed when it has less than this left (tokens live 30 days).
    public static let tokenRenewalWindow: TimeInterval = 7 * 86400

    /// Renews the token when it expires within ``tokenRenewalWindow``; a refusal means the
    /// user must sign in again (``ChatChange/signInRequired``).
    func renewTokenIfDue() async {
        guard let expiry = transport.tokenExpiresAt, expiry.timeIntervalSince(environment.now()) < Self.tokenRenewalWindow else { return }
        do {
            let token = try await transport.renewToken()
            notify(.tokenRenewed(token))
            // The connection keeps its authenticated session; the next one uses the new token.
        } catch let error as ClientError where error.code == .unauthorized {
            requireSignIn()
        } catch {
            logger.debug("Token renewal failed; will retry", metadata: ["error": "\(error)"])
        }
    }

    /// How often the cache is trimmed to ``LocalDatabase/Retention`` (at the first sync, then
    /// at most this often).
    public static let trimInterval: TimeInterval = 6 * 3600

    /// Trims the cache to its retention limits when due, sparing the conversation on screen.
    func trimCacheIfDue() async {
        let now = environment.now()
        if let lastTrim, now.timeIntervalSince(lastTrim) < Self.trimInterval { return }
        lastTrim = now
        do {
            try await database.trim(now: now, sparing: Set([focusedConversation].compactMap { $0 }))
            notify(.conversations)
        } catch {
            logger.debug("Cache trim failed; will retry", metadata: ["error": "\(error)"])
        }
    }

    /// Fetches `/changes` from the synced seq until current, one transaction per page.
    public func catchUp(_ conversationId: EntityID) async {
        guard !catchingUp.contains(conversationId) else {
            catchUpAgain.insert(conversationId)
            return
        }
        catchingUp.insert(conversationId)
        readCounts.catchUps += 1
        defer { catchingUp.remove(conversationId) }
        repeat {
            catchUpAgain.remove(conversationId)
            do {
                guard var since = try await database.syncedSeq(conversationId) else { return }
                while true {
                    let page = try await transport.changes(conversationId, since: since, limit: Limits.changesPageMax)
                    readCounts.networkReads += 1
                    since = try await database.apply(changes: page, in: conversationId, since: since)
                    notify(.messages(conversationId))
                    if !page.hasMore { break }
                }
                await markDeliveredUpToSynced(conversationId)
                catchUpFailures[conversationId] = nil
            } catch {
                // Nothing else may come to trigger it (the missed message was the last one), so
                // try again with backoff while connected; a reconnect's sync covers the rest.
                let failures = (catchUpFailures[conversationId] ?? 0) + 1
                catchUpFailures[conversationId] = failures
                logger.debug("Catch-up failed; will retry", metadata: ["error": "\(error)", "failures": "\(failures)"])
                if failures <= 8, machine.state == .connected {
                    let delay = Duration.milliseconds(250 << min(failures - 1, 7))
                    Task { [environment] in
                        guard (try? await environment.sleep(delay)) != nil else { return }
                        await self.catchUp(conversationId)
                    }
                }
                return
            }
        } while catchUpAgain.contains(conversationId)
    }

    // MARK: Reading

    /// The conversation's latest messages: from the cache at once when it has them, otherwise
    /// (first open) from the server; then it catches up in the background.
    public func openConversation(_ id: EntityID, limit: Int = 50) async throws -> [LocalMessage] {
        if let synced = try await database.syncedSeq(id) {
            readCounts.cacheHits += 1
            // Connected and current: live events keep it so. Otherwise catch up behind the screen.
            let known = try await database.conversation(id)?.lastSeq ?? .max
            if machine.state != .connected || known > synced {
                Task { await self.catchUp(id) }
            }
            return try await database.messages(in: id, viewer: userId, limit: limit)
        }
        readCounts.cacheMisses += 1
        let conversation = try await transport.conversation(id)
        // Two screens' worth, so the first scroll back is already cached.
        let page = try await transport.messages(id, before: nil, limit: min(limit * 2, Limits.messagesPageMax))
        readCounts.networkReads += 2
        try await database.applyInitialPage(page, conversation: conversation)
        await catchUp(id)
        notify(.conversations)
        return try await database.messages(in: id, viewer: userId, limit: limit)
    }

    /// Older messages before `seq`: from the cache when it has a full page, else from the server.
    public func loadOlder(_ id: EntityID, before seq: Int64, limit: Int = 50) async throws -> [LocalMessage] {
        let cached = try await database.messages(in: id, viewer: userId, before: seq, limit: limit)
        let serverHasOlder = try await database.hasOlder(id)
        if cached.count >= limit || !serverHasOlder {
            readCounts.cacheHits += 1
            return cached
        }
        readCounts.cacheMisses += 1
        let edge = cached.first?.seq ?? seq
        let page = try await transport.messages(id, before: edge, limit: limit - cached.count)
        readCounts.networkReads += 1
        try await database.applyOlderPage(page, in: id)
        return try await database.messages(in: id, viewer: userId, before: seq, limit: limit)
    }
}
