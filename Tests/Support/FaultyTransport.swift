import Foundation
import ParleyClient
import ParleyProtocol
import Synchronization

/// A seeded source of faults. Every decision draws from one generator, so a seed replays the
/// same sequence of decisions (the interleaving with the network may still differ).
public final class FaultPlan: Sendable {
    /// How likely each fault is, per opportunity.
    public struct Odds: Sendable {
        public var dropEvent = 0.08
        public var duplicateEvent = 0.08
        public var delayEvent = 0.08
        public var cutConnection = 0.03
        public var failOpen = 0.15
        public var failBeforeSend = 0.1
        public var failAfterSend = 0.1
        public var failHTTP = 0.1
        /// Closes a WebSocket as soon as it has opened (checked only when above zero, so the
        /// seeded sequences of the other faults stay as they were).
        public var cutAtOpen = 0.0

        public init() {}

        /// No fault at all (a test then turns on the one it is about).
        public static var none: Odds {
            var odds = Odds()
            odds.dropEvent = 0
            odds.duplicateEvent = 0
            odds.delayEvent = 0
            odds.cutConnection = 0
            odds.failOpen = 0
            odds.failBeforeSend = 0
            odds.failAfterSend = 0
            odds.failHTTP = 0
            return odds
        }
    }

    public let seed: UInt64
    public let odds: Odds
    private let state: Mutex<(rng: UInt64, calm: Bool, faults: Int)>

    public init(seed: UInt64, odds: Odds = Odds()) {
        self.seed = seed
        self.odds = odds
        state = Mutex((seed &+ 0x9E37_79B9_7F4A_7C15, false, 0))
    }

    /// Stops injecting faults (the end of a run: let everything settle).
    public func calm() { state.withLock { $0.calm = true } }

    /// How many faults were injected.
    public var injected: Int { state.withLock { $0.faults } }

    /// Whether a fault with probability `p` happens now.
    public func roll(_ p: Double) -> Bool {
        state.withLock { state in
            guard !state.calm else { return false }
            // SplitMix64.
            state.rng &+= 0x9E37_79B9_7F4A_7C15
            var z = state.rng
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            let hit = Double(z >> 11) / Double(1 << 53) < p
            if hit { state.faults += 1 }
            return hit
        }
    }

    static let cut = ClientError(kind: .transport, message: "injected fault")
}

/// The live transport with faults injected on both paths.
public struct FaultyTransport: ChatTransport {
    let base: LiveTransport
    let plan: FaultPlan
    let beforeList: (@Sendable () async -> Void)?
    let beforeSend: (@Sendable (SendMessageRequest) async -> Void)?

    /// `beforeList` runs before each conversation-list request (a test holds the first sync
    /// back with it), `beforeSend` before each send over HTTP (a test holds a message in flight).
    public init(
        serverURL: URL, token: String, plan: FaultPlan, beforeList: (@Sendable () async -> Void)? = nil,
        beforeSend: (@Sendable (SendMessageRequest) async -> Void)? = nil
    ) {
        base = LiveTransport(serverURL: serverURL, token: token)
        self.plan = plan
        self.beforeList = beforeList
        self.beforeSend = beforeSend
    }

    private func http() throws { if plan.roll(plan.odds.failHTTP) { throw FaultPlan.cut } }

    public func updateToken(_ token: String) { base.updateToken(token) }
    public var tokenExpiresAt: Date? { base.tokenExpiresAt }
    public var credentials: SessionCredentials? { base.credentials }
    public func renewToken() async throws -> String { try http(); return try await base.renewToken() }

    public func conversations() async throws -> [Conversation] { try http(); return try await base.conversations() }
    public func thread(_ rootId: EntityID, in conversationId: EntityID, before: Int64?, limit: Int) async throws -> ThreadPage {
        try http(); return try await base.thread(rootId, in: conversationId, before: before, limit: limit)
    }
    public func setPinned(_ pinned: Bool, _ messageId: EntityID, in conversationId: EntityID) async throws -> Message {
        try http(); return try await base.setPinned(pinned, messageId, in: conversationId)
    }
    public func setMuted(_ muted: Bool, until: Date?, in conversationId: EntityID) async throws -> ConversationSettings {
        try http(); return try await base.setMuted(muted, until: until, in: conversationId)
    }
    public func conversationList(changedSince token: String?) async throws -> ConversationListSync {
        await beforeList?()
        try http()
        return try await base.conversationList(changedSince: token)
    }
    public func conversationPage(before: String, limit: Int) async throws -> ConversationsResponse {
        try http()
        return try await base.conversationPage(before: before, limit: limit)
    }
    public func conversation(_ id: EntityID) async throws -> Conversation { try http(); return try await base.conversation(id) }
    public func messages(_ id: EntityID, before: Int64?, limit: Int) async throws -> MessagesPage {
        try http()
        return try await base.messages(id, before: before, limit: limit)
    }
    public func changes(_ id: EntityID, since: Int64, limit: Int) async throws -> ChangesPage {
        try http()
        return try await base.changes(id, since: since, limit: limit)
    }
    public func send(_ request: SendMessageRequest, to conversationId: EntityID) async throws -> Message {
        await beforeSend?(request)
        if plan.roll(plan.odds.failBeforeSend) { throw FaultPlan.cut }
        let stored = try await base.send(request, to: conversationId)
        // Stored, but the answer is lost: the client cannot know, and must retry safely.
        if plan.roll(plan.odds.failAfterSend) { throw FaultPlan.cut }
        return stored
    }
    public func markRead(_ conversationId: EntityID, upToSeq: Int64) async throws -> ReadResponse {
        try http()
        return try await base.markRead(conversationId, upToSeq: upToSeq)
    }
    public func markDelivered(_ conversationId: EntityID, upToSeq: Int64) async throws {
        try http()
        try await base.markDelivered(conversationId, upToSeq: upToSeq)
    }
    public func users() async throws -> [User] { try http(); return try await base.users() }
    public func change(_ edit: MessageChange, of messageId: EntityID, in conversationId: EntityID) async throws -> Message {
        try http()
        return try await base.change(edit, of: messageId, in: conversationId)
    }
    public func search(_ query: String, in conversationId: EntityID?, limit: Int?, offset: Int?) async throws -> SearchResponse {
        try http()
        return try await base.search(query, in: conversationId, limit: limit, offset: offset)
    }
    public func deleteMessage(_ messageId: EntityID, in conversationId: EntityID) async throws -> Message {
        try http()
        return try await base.deleteMessage(messageId, in: conversationId)
    }
    public func download(_ url: String) async throws -> Data { try http(); return try await base.download(url) }
    public func registerDevice(token: String, environment: PushEnvironment) async throws {
        try http()
        try await base.registerDevice(token: token, environment: environment)
    }
    public func logout(deviceToken: String?) async throws { try http(); try await base.logout(deviceToken: deviceToken) }
    public func openRealtime() async throws -> any RealtimeChannel {
        if plan.roll(plan.odds.failOpen) { throw FaultPlan.cut }
        return FaultyChannel(inner: try await base.openRealtime(), plan: plan)
    }
}

/// A WebSocket that drops, duplicates, delays (reorders) events and cuts itself.
final class FaultyChannel: RealtimeChannel {
    let inner: any RealtimeChannel
    let plan: FaultPlan
    let events: AsyncStream<ServerEvent>
    var storeId: String? { get async { await inner.storeId } }
    private let pump: Task<Void, Never>

    init(inner: any RealtimeChannel, plan: FaultPlan) {
        self.inner = inner
        self.plan = plan
        let (stream, sink) = AsyncStream.makeStream(of: ServerEvent.self)
        events = stream
        pump = Task {
            if plan.odds.cutAtOpen > 0, plan.roll(plan.odds.cutAtOpen) {
                await inner.close()
                sink.finish()
                return
            }
            var held: ServerEvent?
            for await event in inner.events {
                if plan.roll(plan.odds.cutConnection) {
                    await inner.close()
                    break
                }
                if plan.roll(plan.odds.dropEvent) { continue }
                if held == nil, plan.roll(plan.odds.delayEvent) {
                    held = event
                    continue
                }
                sink.yield(event)
                if plan.roll(plan.odds.duplicateEvent) { sink.yield(event) }
                if let late = held {
                    sink.yield(late)
                    held = nil
                }
            }
            sink.finish()
        }
    }

    func sendMessage(_ request: SendMessageRequest) async throws -> Message {
        if plan.roll(plan.odds.failBeforeSend) { throw FaultPlan.cut }
        let stored = try await inner.sendMessage(request)
        if plan.roll(plan.odds.failAfterSend) { throw FaultPlan.cut }
        return stored
    }

    func ping() async throws { try await inner.ping() }

    func read(_ request: ReadRequest) async throws -> ReadResponse {
        if plan.roll(plan.odds.failBeforeSend) { throw FaultPlan.cut }
        return try await inner.read(request)
    }

    func perform(_ command: ClientCommand) async throws {
        if plan.roll(plan.odds.failBeforeSend) { throw FaultPlan.cut }
        try await inner.perform(command)
    }

    func close() async {
        await inner.close()
        pump.cancel()
    }
}
