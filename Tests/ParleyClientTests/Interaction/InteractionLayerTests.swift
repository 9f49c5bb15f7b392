import Foundation
import Synchronization
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The interaction layer: hooks, the message service, providers and the component registry.
@Suite struct InteractionLayerTests {
    struct BadWords: MessagePrecheck {
        func check(_ request: SendMessageRequest, in conversationId: EntityID) async -> PrecheckVerdict {
            request.text.localizedCaseInsensitiveContains("spam") ? .veto(reason: "looks like spam") : .allow
        }
    }

    /// Adds a token to the metadata, counting its runs; fails while `failing` is set.
    final class Stamp: MessagePreparation, Sendable {
        let name = "test.stamp"
        let runs = Mutex(0)
        let failing = Mutex(false)
        func prepare(_ message: PreparedMessage) async throws -> PreparedMessage {
            runs.withLock { $0 += 1 }
            if failing.withLock({ $0 }) { throw PreparationFailed("token service said no") }
            var message = message
            message.request.metadata = (message.request.metadata ?? [:]).merging(["token": "t-1"]) { $1 }
            return message
        }
    }

    /// Time moves only with `clock` (a retry's backoff, a chat model's coalescing).
    static func client(
        _ user: TestUser, path: String? = nil, hooks: MessageHooks, clock: ManualClock = ManualClock()
    ) throws -> ChatClient {
        let database = try path.map { try LocalDatabase.open(path: $0) } ?? LocalDatabase.inMemory()
        return ChatClient(
            transport: LiveTransport(serverURL: user.server.baseURL, token: user.token), database: database, userId: user.id,
            environment: AppLifecycleTests.environment(clock), policy: .init(maxAttempts: 1000, heartbeat: .seconds(10)),
            pollInterval: .seconds(5), hooks: hooks)
    }

    @Test func aVetoWritesNothingAndPreparationsShapeWhatIsSent() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let stamp = Stamp()
        let client = try Self.client(alice, hooks: MessageHooks(prechecks: [BadWords()], preparations: [stamp]))
        await #expect(throws: SendVetoed(reason: "looks like spam")) { try await client.send(text: "buy SPAM now", in: direct.id) }
        #expect(try await client.database.outboxCount() == 0)
        #expect(try await client.database.messages(in: direct.id, viewer: alice.id).isEmpty)
        try await client.send(text: "hello", in: direct.id)
        try await waitFor("sent") { try await client.database.outboxCount() == 0 }
        #expect(try await bob.api.messages(direct.id).messages.first?.metadata == ["token": "t-1"])
    }

    @Test func aFailedPreparationMarksTheMessageFailedAndResendRetriesIt() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let stamp = Stamp()
        stamp.failing.withLock { $0 = true }
        let client = try Self.client(alice, hooks: MessageHooks(preparations: [stamp]))
        let pending = try await client.send(text: "needs a token", in: direct.id)
        try await waitFor("failed") {
            try await client.database.message(senderId: alice.id, clientMessageId: pending.clientMessageId, viewer: alice.id)?.delivery
                == .failed(reason: "token service said no")
        }
        #expect(try await bob.api.messages(direct.id).messages.isEmpty)
        stamp.failing.withLock { $0 = false }
        let message = try #require(try await client.database.message(senderId: alice.id, clientMessageId: pending.clientMessageId, viewer: alice.id))
        try await MessageService(client: client).resend(message)
        try await waitFor("sent after resend") { try await bob.api.messages(direct.id).messages.count == 1 }
    }

    @Test func aRestartBetweenPreparationAndSendDoesNotPrepareAgain() async throws {
        let directory = TestServer.temporaryDirectory()
        let server = try await TestServer.start(dataDirectory: directory)
        let port = server.port
        let (alice, bob, direct) = try await server.directPair()
        await server.stop()
        let stamp = Stamp()
        let path = directory + "/alice.sqlite"
        let clock = ManualClock()
        let first = try Self.client(alice, path: path, hooks: MessageHooks(preparations: [stamp]), clock: clock)
        try await first.send(text: "prepared once", in: direct.id)
        await first.flushOutbox()
        #expect(stamp.runs.withLock { $0 } == 1)
        await first.stop()
        let restarted = try await TestServer.start(dataDirectory: directory, port: port)
        defer { Task { await restarted.stop() } }
        let second = try Self.client(alice, path: path, hooks: MessageHooks(preparations: [stamp]), clock: clock)
        await second.flushOutbox()
        // The failed attempt's backoff has not passed on the phone's clock: nothing went yet.
        #expect(try await second.database.outboxCount() == 1)
        try await ChatClientTests.waitAdvancing("sent once the backoff passed", clock: clock, by: .seconds(1)) {
            try await second.database.outboxCount() == 0
        }
        #expect(stamp.runs.withLock { $0 } == 1, "the preparation's result was kept across the restart")
        let stored = try await restarted.api(token: bob.token).messages(direct.id).messages
        #expect(stored.map(\.text) == ["prepared once"] && stored[0].metadata == ["token": "t-1"])
    }

    @Test func serviceForwardsRevokesSavesAndHidesForMe() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let carol = try await server.register("carol@x.io")
        let withBob = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        let withCarol = try await alice.api.createConversation(.init(type: .direct, participantIds: [carol.id]))
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("parley-\(UUID()).png")
        try Fixtures.png.write(to: file)
        let api = ParleyAPI(baseURL: server.baseURL, token: alice.token)
        let client = try Self.client(alice, hooks: MessageHooks(preparations: [AttachmentUpload(api: api)]))
        let service = MessageService(client: client)
        let provider = CachedMessageProvider(client: client)
        _ = try await provider.messages(in: withBob.id, before: nil, limit: 20)

        _ = try await service.send(
            .init(clientMessageId: "", text: "a picture", type: .image), in: withBob.id,
            context: ["file": file.path, "contentType": "image/png", "name": "cat.png"])
        _ = try await service.send(.init(clientMessageId: "", text: "hello bob"), in: withBob.id, context: [:])
        try await waitFor("both sent") {
            let local = try await client.database.messages(in: withBob.id, viewer: alice.id)
            let remote = try await bob.api.messages(withBob.id).messages
            return local.count == 2 && local.allSatisfy(\.isConfirmed) && remote.count == 2
        }
        let mine = try await provider.messages(in: withBob.id, before: nil, limit: 20)
        let picture = try #require(mine.first { $0.type == .image })
        #expect(picture.attachment?.name == "cat.png" && picture.attachment?.width == 640)

        let saved = FileManager.default.temporaryDirectory.appendingPathComponent("parley-saved-\(UUID()).png")
        try await service.save(picture, to: saved)
        #expect(try Data(contentsOf: saved) == Fixtures.png)

        let forwarded = try await service.forward(picture, to: withCarol.id)
        #expect(forwarded.delivery == .sending)
        try await waitFor("carol gets the forward") {
            try await carol.api.messages(withCarol.id).messages.first?.forwardedFromId == picture.serverId
        }
        #expect(try await carol.api.messages(withCarol.id).messages.first?.attachment?.id == picture.attachment?.id)

        let text = try #require(mine.first { $0.text == "hello bob" })
        try await service.revoke(text)
        #expect(try await bob.api.messages(withBob.id).messages.last?.deletedAt != nil)

        try await service.deleteForMe(picture)
        await client.synchronize()
        let after = try await client.database.messages(in: withBob.id, viewer: alice.id)
        #expect(!after.contains { $0.id == picture.id }, "hidden here, and catch-up does not bring it back")
        #expect(try await bob.api.messages(withBob.id).messages.count == 2, "still there for everyone else")
    }

    @Test func sendingAFileReportsUploadProgress() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("parley-\(UUID()).png")
        var big = Fixtures.png
        big.append(Data(count: 1_000_000))
        try big.write(to: file)
        let expectedSize = Int64(big.count)
        let api = ParleyAPI(baseURL: server.baseURL, token: alice.token)
        let client = try Self.client(alice, hooks: MessageHooks(preparations: [AttachmentUpload(api: api)]))
        let changes = await client.changes()
        let seen = Task {
            var fractions: [Double] = []
            for await change in changes {
                if case .progress(_, _, let fraction) = change {
                    fractions.append(fraction)
                    if fraction >= 1 { break }
                }
            }
            return fractions
        }
        let chat = await ChatModel(client: client, conversationId: direct.id)
        await chat.send(file: file, contentType: "image/png", type: .image, caption: "big one")
        let fractions = await seen.value
        #expect(fractions.count >= 4 && fractions.last == 1, "\(fractions)")
        #expect(fractions == fractions.sorted())
        try await waitFor("delivered with its attachment") {
            try await bob.api.messages(direct.id).messages.first?.attachment?.size == expectedSize
        }
    }

    /// Edit, react, take a reaction back and search through the SDK only: each change is applied
    /// to the local database from the server's answer and reaches the other user; refusals
    /// (editing someone else's message, one that never reached the server) change nothing.
    @Test func serviceEditsReactsAndSearches() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let client = try Self.client(alice, hooks: MessageHooks())
        let service = MessageService(client: client)
        let provider = CachedMessageProvider(client: client)
        _ = try await provider.messages(in: direct.id, before: nil, limit: 20)
        _ = try await service.send(.init(clientMessageId: "", text: "the quarterly numbers"), in: direct.id, context: [:])
        let fromBob = try await bob.api.send(.init(clientMessageId: "b1", text: "lunch at noon?"), to: direct.id)
        try await waitFor("both stored locally") {
            _ = await client.synchronize()
            let local = try await client.database.messages(in: direct.id, viewer: alice.id)
            return local.count == 2 && local.allSatisfy(\.isConfirmed)
        }
        let local = try await client.database.messages(in: direct.id, viewer: alice.id)
        let mine = try #require(local.first { $0.senderId == alice.id })
        let theirs = try #require(local.first { $0.serverId == fromBob.id })

        try await service.edit(mine, text: "the quarterly numbers (final)")
        try await service.react(theirs, emoji: "👍")
        try await service.react(theirs, emoji: "🎉")
        try await service.unreact(theirs, emoji: "🎉")
        let after = try await client.database.messages(in: direct.id, viewer: alice.id)
        #expect(after.first { $0.serverId == mine.serverId }?.text == "the quarterly numbers (final)")
        #expect(after.first { $0.serverId == mine.serverId }?.editedAt != nil)
        #expect(after.first { $0.serverId == theirs.serverId }?.reactions == ["👍": [alice.id]])
        let remote = try await bob.api.messages(direct.id).messages
        #expect(remote.first { $0.id == mine.serverId }?.text == "the quarterly numbers (final)")
        #expect(remote.first { $0.id == fromBob.id }?.reactions == ["👍": [alice.id]])

        await #expect(throws: ClientError.self) { try await service.edit(theirs, text: "not mine") }
        #expect(try await bob.api.messages(direct.id).messages.first { $0.id == fromBob.id }?.text == "lunch at noon?")

        let found: [SearchResult] = try await service.search("quarterly", in: nil)
        #expect(found.map { $0.message.id } == [mine.serverId].compactMap { $0 })
        #expect(found.first?.snippet.contains("[quarterly]") == true)
        let lunch: [SearchResult] = try await service.search("lunch", in: direct.id)
        #expect(lunch.map { $0.message.id } == [fromBob.id])
        let none: [SearchResult] = try await service.search("nothing-like-this", in: nil)
        #expect(none.isEmpty)
    }

    /// Makes a ``RecordingService`` per client and keeps what they all recorded.
    final class RecordingServices: Sendable {
        let made = Mutex<[RecordingService]>([])
        func make(_ client: ChatClient) -> any MessageServicing {
            let service = RecordingService(base: MessageService(client: client))
            made.withLock { $0.append(service) }
            return service
        }
        var log: [String] { made.withLock { $0.flatMap { $0.log.withLock { $0 } } } }
    }

    /// An app's own service: wraps the standard one and records what the screen asked for.
    final class RecordingService: MessageServicing, Sendable {
        let base: MessageService
        let log = Mutex<[String]>([])
        init(base: MessageService) { self.base = base }
        func send(_ request: SendMessageRequest, in conversationId: EntityID, context: [String: String]) async throws -> LocalMessage {
            log.withLock { $0.append("send") }
            return try await base.send(request, in: conversationId, context: context)
        }
        func resend(_ message: LocalMessage) async throws { log.withLock { $0.append("resend") } }
        func forward(_ message: LocalMessage, to conversationId: EntityID) async throws -> LocalMessage {
            log.withLock { $0.append("forward") }
            return try await base.forward(message, to: conversationId)
        }
        func revoke(_ message: LocalMessage) async throws {
            log.withLock { $0.append("revoke") }
            try await base.revoke(message)
        }
        func save(_ message: LocalMessage, to file: URL) async throws { log.withLock { $0.append("save") } }
        func deleteForMe(_ message: LocalMessage) async throws {
            log.withLock { $0.append("deleteForMe") }
            try await base.deleteForMe(message)
        }
        func edit(_ message: LocalMessage, text: String) async throws {
            log.withLock { $0.append("edit") }
            try await base.edit(message, text: text)
        }
        func react(_ message: LocalMessage, emoji: String) async throws {
            log.withLock { $0.append("react") }
            try await base.react(message, emoji: emoji)
        }
        func unreact(_ message: LocalMessage, emoji: String) async throws {
            log.withLock { $0.append("unreact") }
            try await base.unreact(message, emoji: emoji)
        }
        func search(_ query: String, in conversationId: EntityID?) async throws -> [SearchResult] {
            log.withLock { $0.append("search") }
            return try await base.search(query, in: conversationId)
        }
    }

    @Test func theChatModelGoesThroughAnInjectedService() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let clock = ManualClock()
        let client = try Self.client(alice, hooks: MessageHooks(), clock: clock)
        let service = RecordingService(base: MessageService(client: client))
        let chat = await ChatModel(client: client, conversationId: direct.id, service: service)
        await chat.start()
        await chat.send("to be revoked")
        try await ChatClientTests.waitAdvancing("stored", clock: clock) { await chat.messages.first?.isConfirmed == true }
        let message = try #require(await chat.messages.first)
        await chat.revoke(message)
        await chat.deleteForMe(message)
        #expect(service.log.withLock { $0 } == ["send", "revoke", "deleteForMe"])
        #expect(await chat.messages.isEmpty)
        #expect(try await bob.api.messages(direct.id).messages.first?.deletedAt != nil)
        await chat.stop()
    }

    @Test func anAppsComponentTakesItsType() {
        let message = LocalMessage(
            Message(
                id: EntityID(), conversationId: EntityID(), seq: 1, updatedSeq: 1, senderId: EntityID(), clientMessageId: "c",
                type: .location, text: "", createdAt: Date()),
            delivery: .received)
        #expect(MessageComponentRegistry().component(for: message).identifier == "location")
        var registry = MessageComponentRegistry()
        registry.register(MessageComponent(identifier: "sticker"), for: .location)
        #expect(registry.component(for: message).identifier == "sticker")
    }
}
