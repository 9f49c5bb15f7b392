import ArgumentParser
import Foundation
import GRDB
import ParleyClient
import ParleyProtocol

/// `parley bench client`: the SDK's local paths, each against a floor measured in the same run.
struct ClientBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "client",
        abstract: "SDK: open a cached conversation, optimistic send, apply a catch-up, cache hit rate.")

    @Option(help: "Repetitions of the timed operations.") var repetitions: Int = 200

    func run() async throws {
        guard repetitions > 0 else { throw fail("repetitions must be positive") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-client-bench-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = ContinuousClock()
        let me = EntityID(), other = EntityID(), conversationId = EntityID()
        let now = Date()
        let conversation = Conversation(
            id: conversationId, type: .direct, participantIds: [me, other], createdAt: now, lastActivityAt: now, lastSeq: 0,
            unreadCount: 0, readSeq: 0,
            members: [Member(userId: me, readSeq: 0, deliveredSeq: 0), Member(userId: other, readSeq: 0, deliveredSeq: 0)])
        func message(_ seq: Int64) -> Message {
            Message(
                id: EntityID(), conversationId: conversationId, seq: seq, updatedSeq: seq, senderId: seq % 3 == 0 ? me : other,
                clientMessageId: "c\(seq)", type: .text, text: "Message number \(seq), about as long as a chat line.",
                createdAt: now.addingTimeInterval(Double(seq) - 20_000))
        }

        // 1. Open a cached 500-message conversation.
        let database = try LocalDatabase.open(path: directory + "/open.sqlite")
        try await database.applyInitialPage(MessagesPage(messages: (1...500).map(message), hasMore: false), conversation: conversation)
        var open: [Duration] = [], rawOpen: [Duration] = []
        let raw = try DatabaseQueue(path: directory + "/open.sqlite")
        for _ in 0..<repetitions {
            var start = clock.now
            let shown = try await database.messages(in: conversationId, viewer: me, limit: 500)
            open.append(clock.now - start)
            precondition(shown.count == 500)
            start = clock.now
            let rows = try await raw.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM messages WHERE conversation_id = ? ORDER BY seq DESC LIMIT 500", arguments: [conversationId.description])
            }
            rawOpen.append(clock.now - start)
            precondition(rows.count == 500)
        }

        // 2. Optimistic send until the chat model shows it.
        let client = ChatClient(transport: Unreachable(), database: database, userId: me)
        let chat = await ChatModel(client: client, conversationId: conversationId)
        var send: [Duration] = [], enqueueOnly: [Duration] = []
        for index in 0..<repetitions {
            let start = clock.now
            await chat.send("optimistic \(index)")
            send.append(clock.now - start)
            let shown = await chat.messages.last?.text
            precondition(shown == "optimistic \(index)")
            let floorStart = clock.now
            _ = try await database.enqueue(.init(clientMessageId: "floor-\(index)", text: "x"), in: conversationId, senderId: me, now: now)
            enqueueOnly.append(clock.now - floorStart)
        }

        // 3. Apply a 10,000-message catch-up in pages of 500, one transaction each.
        let catchUpDatabase = try LocalDatabase.open(path: directory + "/catchup.sqlite")
        try await catchUpDatabase.applyInitialPage(MessagesPage(messages: [], hasMore: false), conversation: conversation)
        let pages = stride(from: Int64(1), through: 10_000, by: 500).map { first in
            ChangesPage(messages: (first..<first + 500).map(message), lastSeq: 10_000, hasMore: first + 500 <= 10_000)
        }
        var start = clock.now
        var since: Int64 = 0
        for page in pages { since = try await catchUpDatabase.apply(changes: page, in: conversationId, since: since) }
        let catchUp = clock.now - start
        precondition(since == 10_000)
        let plain = try DatabaseQueue(path: directory + "/plain.sqlite")
        try await plain.write { db in try db.execute(sql: "CREATE TABLE m (id TEXT PRIMARY KEY, seq INTEGER, text TEXT)") }
        start = clock.now
        for page in pages {
            try await plain.write { db in
                for message in page.messages {
                    try db.execute(sql: "INSERT INTO m VALUES (?, ?, ?)", arguments: [message.id.description, message.seq, message.text])
                }
            }
        }
        let plainInsert = clock.now - start

        // 4. Cache hit rate over a replayed session against a real in-process server.
        let hitRate = try await Self.replaySession(directory: directory)

        print("parley bench client: \(repetitions) repetitions, SQLite files in a temporary folder")
        print("operation                                   p50 ms   p99 ms   floor p50 ms (what)")
        func row(_ name: String, _ samples: [Duration], _ floor: [Duration], _ what: String) {
            let p = Percentiles(samples), f = Percentiles(floor)
            print(name.padding(toLength: 42, withPad: " ", startingAt: 0)
                + String(format: "%9.3f%9.3f%12.3f   ", p.p50, p.p99, f.p50) + what)
        }
        row("open cached 500-message conversation", open, rawOpen, "raw SELECT of the same rows")
        row("optimistic send → visible in the list", send, enqueueOnly, "outbox write alone")
        let catchUpMs = Double(catchUp.components.attoseconds) / 1e15 + Double(catchUp.components.seconds) * 1000
        let plainMs = Double(plainInsert.components.attoseconds) / 1e15 + Double(plainInsert.components.seconds) * 1000
        print(String(format: "apply a 10,000-message catch-up (20 pages)   total %.1f ms; plain INSERT of the same rows %.1f ms (%.2fx)", catchUpMs, plainMs, catchUpMs / plainMs))
        print(String(format: "cache hit rate over a replayed session: %.1f%% (%d hits, %d misses, %d network reads)",
                     hitRate.hitRate * 100, hitRate.cacheHits, hitRate.cacheMisses, hitRate.networkReads))
        let json: [String: Any] = [
            "cache_hit_rate": hitRate.hitRate,
            "scenario": "client", "open500_p50_ms": Percentiles(open).p50, "open500_floor_p50_ms": Percentiles(rawOpen).p50,
            "send_visible_p50_ms": Percentiles(send).p50, "catchup10k_ms": catchUpMs, "catchup10k_floor_ms": plainMs,
        ]
        print(String(decoding: try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]), as: UTF8.self))
        await client.stop()
    }
}

extension ClientBench {
    /// A day of use: 5 conversations opened for the first time, then 100 switches between them
    /// (scrolling back a page now and then), as an app replays it.
    static func replaySession(directory: String) async throws -> ReadCounts {
        let server = try await Latency.startServer()
        let api = ParleyAPI(baseURL: server.url)
        let organization = "replay-\(UUID().uuidString.prefix(8))"
        let me = try await api.register(.init(organization: organization, email: "me@replay.io", password: "replay-password", displayName: "Me"))
        var conversations: [EntityID] = []
        for index in 0..<5 {
            let friend = try await api.register(.init(
                organization: organization, email: "f\(index)@replay.io", password: "replay-password", displayName: "F\(index)"))
            let friendAPI = ParleyAPI(baseURL: server.url, token: friend.token)
            let direct = try await friendAPI.createConversation(.init(type: .direct, participantIds: [me.user.id]))
            for n in 0..<120 { _ = try await friendAPI.send(.init(clientMessageId: "m\(n)", text: "message \(n)"), to: direct.id) }
            conversations.append(direct.id)
        }
        let client = try ChatClient(
            serverURL: server.url, token: me.token, userId: me.user.id, databasePath: directory + "/replay.sqlite")
        await client.start()
        while await client.connectionState != .connected { try await Task.sleep(for: .milliseconds(5)) }
        var generator = SystemRandomNumberGenerator()
        for id in conversations { _ = try await client.openConversation(id) }
        for step in 0..<100 {
            let id = conversations.randomElement(using: &generator)!
            let shown = try await client.openConversation(id)
            if step % 10 == 0, let oldest = shown.first?.seq {
                _ = try await client.loadOlder(id, before: oldest)
            }
        }
        let counts = await client.readCounts
        await client.stop()
        await server.stop()
        return counts
    }
}

/// A network that is never there: the benchmark measures the local path only.
private struct Unreachable: ChatTransport {
    static let error = ClientError(kind: .transport, message: "offline (benchmark)")
    func conversations() async throws -> [Conversation] { throw Self.error }
    func conversation(_ id: EntityID) async throws -> Conversation { throw Self.error }
    func messages(_ id: EntityID, before: Int64?, limit: Int) async throws -> MessagesPage { throw Self.error }
    func changes(_ id: EntityID, since: Int64, limit: Int) async throws -> ChangesPage { throw Self.error }
    func send(_ request: SendMessageRequest, to conversationId: EntityID) async throws -> Message { throw Self.error }
    func openRealtime() async throws -> any RealtimeChannel { throw Self.error }
    func markRead(_ conversationId: EntityID, upToSeq: Int64) async throws -> ReadResponse { throw Self.error }
    func markDelivered(_ conversationId: EntityID, upToSeq: Int64) async throws { throw Self.error }
    func users() async throws -> [User] { throw Self.error }
    func deleteMessage(_ messageId: EntityID, in conversationId: EntityID) async throws -> Message { throw Self.error }
    func change(_ edit: MessageChange, of messageId: EntityID, in conversationId: EntityID) async throws -> Message { throw Self.error }
    func search(_ query: String, in conversationId: EntityID?, limit: Int?, offset: Int?) async throws -> SearchResponse { throw Self.error }
    func download(_ url: String) async throws -> Data { throw Self.error }
    func registerDevice(token: String, environment: PushEnvironment) async throws { throw Self.error }
    func logout(deviceToken: String?) async throws { throw Self.error }
    func updateToken(_ token: String) {}
    var tokenExpiresAt: Date? { nil }
    func renewToken() async throws -> String { throw Self.error }
}
