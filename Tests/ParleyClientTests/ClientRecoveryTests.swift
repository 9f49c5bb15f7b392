import Foundation
import Logging
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Synchronization
import Testing

/// What a client meets when the server goes and comes back, refuses its token or does not
/// answer: nothing lost, nothing sent twice, nothing waiting longer than it must.
@Suite struct ClientRecoveryTests {
    /// A server that goes down and comes back on the same data directory and port.
    struct Outage {
        let server: TestServer
        let directory: String

        static func start() async throws -> Outage {
            let directory = TestServer.temporaryDirectory()
            return Outage(server: try await TestServer.start(dataDirectory: directory), directory: directory)
        }

        func restart() async throws -> TestServer { try await TestServer.start(dataDirectory: directory, port: server.port) }
    }

    /// An environment whose time moves only when the test says so.
    static func manualEnvironment(_ clock: ManualClock) -> ClientEnvironment {
        var environment = ClientEnvironment.live
        environment.now = { clock.now() }
        environment.sleep = { duration in
            await clock.sleep(until: clock.now().addingTimeInterval(duration.seconds))
            try Task.checkCancellation()
        }
        environment.random = { 1 }
        return environment
    }

    static func client(_ user: TestUser, token: String? = nil, environment: ClientEnvironment, path: String? = nil) throws -> ChatClient {
        let database = try path.map { try LocalDatabase.open(path: $0) } ?? LocalDatabase.inMemory()
        return ChatClient(
            transport: LiveTransport(serverURL: user.server.baseURL, token: token ?? user.token), database: database,
            userId: user.id, environment: environment, policy: .init(maxAttempts: 1000, heartbeat: .seconds(10)),
            pollInterval: .seconds(3600))
    }

    /// The CLI's scenario: a message queued while the server was down has a retry time from its
    /// failed attempt; the first `synchronize()` after the server returns sends it, once.
    @Test func theFirstSyncAfterTheServerReturnsSendsTheQueueDespiteItsBackoff() async throws {
        let outage = try await Outage.start()
        let server = outage.server
        let (alice, bob, direct) = try await server.directPair()
        let clock = ManualClock()
        let aliceClient = try Self.client(alice, environment: Self.manualEnvironment(clock))
        _ = try await aliceClient.openConversation(direct.id)
        await server.stop()

        try await aliceClient.send(text: "first", in: direct.id)
        try await aliceClient.send(text: "second", in: direct.id)
        await aliceClient.flushOutbox()
        // The failed attempt set a retry time in the future (the backoff), and time stands still.
        let retryAt = try #require(try await aliceClient.database.nextOutboxAttempt())
        #expect(retryAt > clock.now())
        let unreachable = await aliceClient.synchronize()
        #expect(!unreachable.reachedServer && unreachable.queued == 2)

        let again = try await outage.restart()
        defer { Task { await again.stop() } }
        let report = await aliceClient.synchronize()
        #expect(report == SyncReport(reachedServer: true, queued: 0, failed: 0, signInRequired: false))
        let stored = try await bob.api.messages(direct.id).messages
        #expect(stored.map(\.text) == ["first", "second"])
        #expect(try await aliceClient.synchronize().queued == 0)
        #expect(try await bob.api.messages(direct.id).messages.count == 2, "nothing sent twice")
    }

    /// A send that succeeds proves the server is back: other conversations' queued messages
    /// waiting out a backoff go at once.
    @Test func aSuccessfulSendReleasesTheOtherConversationsBackoff() async throws {
        let outage = try await Outage.start()
        let server = outage.server
        let (alice, bob, direct) = try await server.directPair()
        let carol = try await server.register("carol@x.io")
        let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id, carol.id], name: "g"))
        let clock = ManualClock()
        let aliceClient = try Self.client(alice, environment: Self.manualEnvironment(clock))
        await server.stop()
        try await aliceClient.send(text: "to the group", in: group.id)
        await aliceClient.flushOutbox()
        #expect(try await aliceClient.database.nextOutboxAttempt()! > clock.now())

        let again = try await outage.restart()
        defer { Task { await again.stop() } }
        // A new message in another conversation goes at once (it has no backoff)...
        try await aliceClient.send(text: "to bob", in: direct.id)
        await aliceClient.flushOutbox()
        // ...and takes the waiting one with it, without the clock moving.
        #expect(try await aliceClient.database.outboxCount() == 0)
        #expect(try await carol.api.messages(group.id).messages.filter { $0.type == .text }.map(\.text) == ["to the group"])
    }

    /// A 401 is not the message's fault: it stays queued (not failed) until the app signs the
    /// user in again and hands the client the new token; then it goes, once.
    @Test func aRefusedTokenKeepsMessagesQueuedUntilANewToken() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let clock = ManualClock()
        let aliceClient = try Self.client(alice, token: "expired.or.revoked", environment: Self.manualEnvironment(clock))
        let changes = await aliceClient.changes()
        let told = Mutex(false)
        let watcher = Task {
            for await change in changes where change == .signInRequired {
                told.withLock { $0 = true }
                return
            }
        }
        let pending = try await aliceClient.send(text: "keep me", in: direct.id)
        let report = await aliceClient.synchronize()
        #expect(report.signInRequired && report.queued == 1 && report.failed == 0)
        #expect(await aliceClient.signInRequired)
        let shown = try #require(try await aliceClient.database.message(
            senderId: alice.id, clientMessageId: pending.clientMessageId, viewer: alice.id))
        #expect(shown.delivery == .sending, "not failed: \(shown.delivery)")
        await watcher.value
        #expect(told.withLock { $0 })

        await aliceClient.updateToken(alice.token)
        #expect(await !aliceClient.signInRequired)
        #expect(try await aliceClient.database.outboxCount() == 0)
        #expect(try await bob.api.messages(direct.id).messages.map(\.text) == ["keep me"])
    }

    /// No answer within 5 s shows the message as not sent; the outbox keeps it, and
    /// "retry now" sends it as soon as the server is there.
    @MainActor
    @Test func noAnswerWithinFiveSecondsShowsNotSentAndRetryNowSendsIt() async throws {
        let outage = try await Outage.start()
        let server = outage.server
        let (alice, bob, direct) = try await server.directPair()
        let clock = ManualClock()
        let aliceClient = try Self.client(alice, environment: Self.manualEnvironment(clock))
        let model = ChatModel(client: aliceClient, conversationId: direct.id)
        await model.start()
        await server.stop()

        await model.send("are you there?")
        await aliceClient.flushOutbox()
        await model.reload()
        #expect(model.messages.map(\.delivery) == [.sending])
        clock.advance(by: 4.9)
        await model.reload()
        #expect(model.messages.map(\.delivery) == [.sending])
        clock.advance(by: 0.2)
        // Read directly: the model's own reload after a change waits ChatModel.coalescing on
        // this clock, which the test does not move further.
        try await waitFor("shown as not sent") {
            await model.reload()
            return await MainActor.run { model.messages.map(\.delivery) == [.notSent] }
        }
        #expect(try await aliceClient.database.outboxCount() == 1, "still queued: it will be retried")

        let again = try await outage.restart()
        defer { Task { await again.stop() } }
        await model.retryNow()
        #expect(model.messages.map(\.delivery) == [.sent])
        #expect(try await bob.api.messages(direct.id).messages.map(\.text) == ["are you there?"])
        model.stop()
        await aliceClient.stop()
    }

    /// The chat screen tells the server which conversation is on screen: the other member's
    /// presence says so, and says so again after a reconnect.
    @MainActor
    @Test func anOpenChatSendsFocusAndClosingItClearsIt() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let bobSocket = try await bob.connect()
        let bobEvents = EventRecorder(bobSocket)
        let aliceClient = try ChatClientTests.client(alice, clock: ManualClock())
        await aliceClient.start()
        let model = ChatModel(client: aliceClient, conversationId: direct.id)
        await model.start()
        try await bobEvents.wait("alice looks at the chat") { events in
            events.contains { if case .presence(let p) = $0 { p.userId == alice.id && p.conversationId == direct.id } else { false } }
        }
        model.stop()
        try await bobEvents.wait("alice looks away") { events in
            events.contains { if case .presence(let p) = $0 { p.userId == alice.id && p.isOnline && p.conversationId == nil } else { false } }
        }
        await bobSocket.close()
        await aliceClient.stop()
    }

    /// The cache keeps to its retention limits while the app runs (it is trimmed while syncing),
    /// but never under the conversation on screen.
    @Test func theCacheIsTrimmedWhileSyncingButNotUnderTheOpenConversation() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let carol = try await server.register("carol@x.io")
        let other = try await alice.api.createConversation(.init(type: .direct, participantIds: [carol.id]))
        for n in 1...8 {
            _ = try await bob.api.send(.init(clientMessageId: "b\(n)", text: "from bob \(n)"), to: direct.id)
            _ = try await carol.api.send(.init(clientMessageId: "c\(n)", text: "from carol \(n)"), to: other.id)
        }
        let database = try LocalDatabase.open(
            path: TestServer.temporaryDirectory() + "/alice.sqlite",
            retention: .init(maxMessagesPerConversation: 3, maxAge: .seconds(30 * 86400)))
        let aliceClient = ChatClient(
            transport: LiveTransport(serverURL: server.baseURL, token: alice.token), database: database, userId: alice.id,
            environment: Self.manualEnvironment(ManualClock()), pollInterval: .seconds(3600))
        _ = try await aliceClient.openConversation(direct.id, limit: 8)
        _ = try await aliceClient.openConversation(other.id, limit: 8)
        #expect(try await database.messages(in: other.id, viewer: alice.id, limit: 50).count == 8)
        await aliceClient.focus(direct.id)
        await aliceClient.synchronize()
        #expect(try await database.messages(in: other.id, viewer: alice.id, limit: 50).map(\.text) == (6...8).map { "from carol \($0)" })
        #expect(try await database.messages(in: direct.id, viewer: alice.id, limit: 50).count == 8, "the open chat is spared")
    }

    /// No message content in logs, even at trace level: a late reply (its command
    /// timed out) is logged by id and size, not by its frame.
    @Test func logsNeverHoldMessageText() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, _, direct) = try await server.directPair()
        let lines = LogLines()
        var logger = Logger(label: "parley.test.realtime") { _ in RecordingLogHandler(sink: lines) }
        logger.logLevel = .trace
        let connection = RealtimeConnection(serverURL: server.baseURL, token: alice.token, logger: logger)
        _ = try await connection.connect()
        let secret = "the launch code is 0000"
        await #expect(throws: ClientError.self) {
            let _: Message = try await connection.send(
                .sendMessage(.init(conversationId: direct.id, clientMessageId: "late", text: secret)), timeout: .nanoseconds(1))
        }
        // The reply comes after its command gave up; wait until it has been logged.
        try await waitFor("the late reply") { lines.all.contains { $0.contains("Reply without") } }
        await connection.close()
        let logged = lines.all
        #expect(!logged.contains { $0.contains(secret) }, "\(logged)")
    }
}

/// Where recorded log lines go.
final class LogLines: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

/// Keeps every log line with its metadata, for checks of what logs contain.
struct RecordingLogHandler: LogHandler {
    let sink: LogLines
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let all = metadata.merging(event.metadata ?? [:]) { $1 }
        sink.append("\(event.level) \(event.message) \(all)")
    }
}
