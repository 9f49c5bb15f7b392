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
    private var observers: [UUID: AsyncStream<ChatChange>.Continuation] = [:]
    nonisolated let transport: any ChatTransport
    let environment: ClientEnvironment
    /// Pre-send checks and preparations (seed 002).
    let hooks: MessageHooks
    let logger: Logger
    /// How often to poll over HTTP while the WebSocket is down.
    let pollInterval: Duration

    var machine: ConnectionStateMachine
    var channel: (any RealtimeChannel)?
    private var channelGeneration = 0
    private var waitTask: Task<Void, Never>?
    private var heartbeatTask: Task<Void, Never>?
    private var pollTask: Task<Void, Never>?
    private var outboxTimer: Task<Void, Never>?
    private var isFlushing = false
    private var flushAgain = false
    private var flushWaiters: [CheckedContinuation<Void, Never>] = []
    private var catchingUp: Set<EntityID> = []
    private var catchUpAgain: Set<EntityID> = []
    /// Seed 004's read counter.
    public internal(set) var readCounts = ReadCounts()
    var receipts = ReceiptQueue()
    var receiptTask: Task<Void, Never>?
    var typingOut: [EntityID: TypingDebouncer] = [:]
    var typingIn = TypingIndicators()
    /// How long "this message is visible" marks are collected into one read receipt.
    let receiptDelay: Duration = .milliseconds(500)

    /// The connection banner state.
    public var connectionState: ConnectionState { machine.state }

    /// A client for a server, a token and a database file (in memory when `databasePath` is nil).
    public init(serverURL: URL, token: String, userId: EntityID, databasePath: String?, policy: ConnectionStateMachine.Policy = .init()) throws {
        let database = try databasePath.map { try LocalDatabase.open(path: $0) } ?? LocalDatabase.inMemory()
        self.init(transport: LiveTransport(serverURL: serverURL, token: token), database: database, userId: userId, policy: policy)
    }

    /// A client over any transport (tests inject faults here) and environment.
    public init(
        transport: any ChatTransport, database: LocalDatabase, userId: EntityID,
        environment: ClientEnvironment = .live, policy: ConnectionStateMachine.Policy = .init(),
        pollInterval: Duration = .seconds(15), hooks: MessageHooks = MessageHooks(),
        logger: Logger = Logger(label: "parley.client")
    ) {
        self.hooks = hooks
        self.transport = transport
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

    private func run(_ actions: [ConnectionStateMachine.Action]) {
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
            case .messageUpdated(let payload):
                try await applyLive(payload.message, changeSeq: payload.message.updatedSeq)
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
                try await database.apply(presence: presence)
                notify(.directory)
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
            await catchUp(message.conversationId)
        case .untracked:
            // Our own message from another device, or a conversation never opened here: the list
            // learns of it through `conversation.updated`; its messages load when it is opened.
            if message.senderId == userId { try await database.apply([message]) }
        }
    }

    // MARK: Sync

    /// Brings everything up to date: the conversation list, then every kept conversation from
    /// its synced seq, then the outbox.
    public func synchronize() async {
        do {
            let list = try await transport.conversations()
            try await database.store(conversations: list, replacingAll: true)
            notify(.conversations)
            let latest = Dictionary(list.map { ($0.id, $0.lastSeq) }, uniquingKeysWith: max)
            for (id, synced) in try await database.syncedConversations() where (latest[id] ?? 0) > synced {
                await catchUp(id)
            }
        } catch {
            logger.debug("Sync failed; will retry", metadata: ["error": "\(error)"])
        }
        await flushOutbox()
        await flushReceipts()
        await registerPushTokenIfNeeded()
    }

    /// Fetches `/changes` from the synced seq until current, one transaction per page.
    public func catchUp(_ conversationId: EntityID) async {
        guard !catchingUp.contains(conversationId) else {
            catchUpAgain.insert(conversationId)
            return
        }
        catchingUp.insert(conversationId)
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
            } catch {
                logger.debug("Catch-up failed; will retry", metadata: ["error": "\(error)"])
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

    // MARK: Sending

    /// Sends a text message optimistically: it is in the database (and on screen) when this
    /// returns; the outbox delivers it when it can.
    @discardableResult
    public func send(text: String, in conversationId: EntityID, replyTo: EntityID? = nil) async throws -> LocalMessage {
        let trimmed = Limits.trimmed(text)
        guard !trimmed.isEmpty, trimmed.count <= Limits.maxTextCharacters, !Limits.containsNul(trimmed) else {
            throw ClientError(kind: .server, code: .invalidRequest, message: "A message is 1–\(Limits.maxTextCharacters) characters")
        }
        return try await send(SendMessageRequest(clientMessageId: "", text: trimmed, replyToId: replyTo), in: conversationId)
    }

    /// Sends any message optimistically: the prechecks run first (a veto throws ``SendVetoed``
    /// and writes nothing); then the message and its outbox entry, with the preparations still to
    /// run, are written in one transaction. An empty `clientMessageId` gets a new one.
    @discardableResult
    public func send(_ request: SendMessageRequest, in conversationId: EntityID, context: [String: String] = [:]) async throws -> LocalMessage {
        var request = request
        if request.clientMessageId.isEmpty { request.clientMessageId = environment.newID() }
        for precheck in hooks.prechecks {
            if case .veto(let reason) = await precheck.check(request, in: conversationId) { throw SendVetoed(reason: reason) }
        }
        let message = try await database.enqueue(
            request, in: conversationId, senderId: userId, now: environment.now(),
            preparations: hooks.preparations.map(\.name), context: context)
        notify(.messages(conversationId))
        Task { await self.flushOutbox() }
        return message
    }

    /// Queues a failed message again.
    public func resend(clientMessageId: String, in conversationId: EntityID) async throws {
        guard try await database.resend(clientMessageId: clientMessageId) else { return }
        notify(.messages(conversationId))
        Task { await self.flushOutbox() }
    }

    /// Drops a failed message.
    public func discard(clientMessageId: String, in conversationId: EntityID) async throws {
        _ = try await database.discard(clientMessageId: clientMessageId)
        notify(.messages(conversationId))
    }

    /// Sends every due outbox head, oldest first, over the WebSocket when connected, else HTTP.
    /// Returns when the outbox has nothing due (a call during a flush waits for that flush).
    public func flushOutbox() async {
        guard !isFlushing else {
            flushAgain = true
            await withCheckedContinuation { flushWaiters.append($0) }
            return
        }
        isFlushing = true
        defer {
            isFlushing = false
            for waiter in flushWaiters { waiter.resume() }
            flushWaiters.removeAll()
        }
        repeat {
            flushAgain = false
            do {
                while let entry = try await database.dueOutboxEntries(now: environment.now()).first {
                    await deliver(entry)
                }
            } catch {
                logger.warning("Outbox read failed", metadata: ["error": "\(error)"])
            }
        } while flushAgain
        await scheduleOutboxWake()
    }

    private func deliver(_ entry: OutboxEntry) async {
        let clientMessageId = entry.request.clientMessageId
        do {
            let request = try await prepare(entry)
            let stored: Message
            if let channel, machine.state == .connected {
                stored = try await channel.sendMessage(request)
            } else {
                stored = try await transport.send(request, to: entry.conversationId)
            }
            try await database.apply([stored])
        } catch let error as ClientError where !error.isTransient {
            try? await database.outboxRejected(clientMessageId: clientMessageId, reason: error.message)
        } catch let error as PreparationFailed {
            try? await database.outboxRejected(clientMessageId: clientMessageId, reason: error.reason)
        } catch {
            // No answer: it may or may not be stored. Retrying with the same id is safe.
            let delay = machine.backoff(min(entry.attempts, 5))
            try? await database.outboxAttemptFailed(
                clientMessageId: clientMessageId, retryAt: environment.now().addingTimeInterval(delay.seconds))
        }
        notify(.messages(entry.conversationId))
        notify(.conversations)
    }

    /// Runs the entry's remaining preparations in order, recording each as it finishes.
    private func prepare(_ entry: OutboxEntry) async throws -> SendMessageRequest {
        let messageId = "\(userId)/\(entry.request.clientMessageId)"
        let conversationId = entry.conversationId
        var message = PreparedMessage(
            request: entry.request, context: entry.context, conversationId: entry.conversationId,
            reportProgress: { fraction in
                Task { await self.notify(.progress(conversationId: conversationId, messageId: messageId, fraction: fraction)) }
            })
        var remaining = entry.preparations
        while let name = remaining.first {
            guard let preparation = hooks.preparations.first(where: { $0.name == name }) else {
                throw PreparationFailed("the preparation \"\(name)\" is not available in this version")
            }
            do {
                message = try await preparation.prepare(message)
            } catch let error as ClientError where error.isTransient {
                throw error
            } catch let error as PreparationFailed {
                throw error
            } catch {
                throw PreparationFailed("\(error)")
            }
            message.request.clientMessageId = entry.request.clientMessageId
            remaining.removeFirst()
            try await database.outboxPrepared(
                clientMessageId: entry.request.clientMessageId, request: message.request, context: message.context, remaining: remaining)
        }
        return message.request
    }

    private func scheduleOutboxWake() async {
        // Read before cancelling: this may run inside the timer task being replaced, and a
        // cancelled task's database reads throw.
        let next = try? await database.nextOutboxAttempt()
        outboxTimer?.cancel()
        guard let next else {
            outboxTimer = nil
            return
        }
        let delay = max(next.timeIntervalSince(environment.now()), 0)
        outboxTimer = Task { [environment] in
            do { try await environment.sleep(.milliseconds(Int64(delay * 1000) + 1)) } catch { return }
            await self.flushOutbox()
        }
    }
}
