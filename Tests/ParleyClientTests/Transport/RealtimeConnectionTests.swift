import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Synchronization
import Testing

/// One WebSocket to a real server: replies matched to their commands however many are in
/// flight, the server's refusals as typed errors that leave the connection usable, events in
/// the order they happened, and a closed connection failing everything at once instead of
/// hanging a screen.
@Suite struct RealtimeConnectionTests {
    /// The `message.created` events of `connection` until `count` have come (or 10 s passed).
    static func created(_ count: Int, on connection: RealtimeConnection) async throws -> [Message] {
        try await withTimeout(.seconds(10)) {
            var messages: [Message] = []
            for await event in connection.events {
                if case .messageCreated(let created) = event { messages.append(created.message) }
                if messages.count == count { break }
            }
            return messages
        }
    }

    @Test func connectingTwiceReusesTheFirstHello() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let connection = RealtimeConnection(serverURL: server.baseURL, token: alice.token)
        let first = try await connection.connect()
        let second = try await connection.connect()
        #expect(first.user.id == alice.id && first.heartbeatSeconds > 0)
        #expect(second.sessionId == first.sessionId, "one socket, not two")
        #expect(await connection.storeId == first.storeId)
        await connection.close()
    }

    /// Thirty sends in flight at once on one socket: each caller gets its own message back,
    /// and the conversation holds each once, in one run of seqs.
    @Test func concurrentCommandsEachGetTheirOwnReply() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let connection = try await alice.connect()
        let replies = try await withThrowingTaskGroup(of: (String, Message).self) { group in
            for n in 0..<30 {
                group.addTask {
                    let id = "rt-\(n)"
                    let stored = try await connection.sendMessage(.init(conversationId: direct.id, clientMessageId: id, text: "n° \(n) ✓"))
                    return (id, stored)
                }
            }
            var all: [(String, Message)] = []
            for try await reply in group { all.append(reply) }
            return all
        }
        for (id, message) in replies {
            #expect(message.clientMessageId == id && message.text == "n° \(id.dropFirst(3)) ✓")
        }
        #expect(Set(replies.map(\.1.seq)) == Set(1...30), "no seq twice, none missing")
        #expect(try await bob.api.messages(direct.id).messages.count == 30)
        await connection.close()
    }

    /// The server refuses a command: the caller gets the contract's code, and the socket goes
    /// on serving the next command (one bad send must not drop the connection).
    @Test func refusalsAreTypedAndLeaveTheConnectionUsable() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, _, direct) = try await server.directPair()
        let connection = try await alice.connect()
        let refusals: [(SendMessageRequest, Set<ErrorCode>)] = [
            (.init(conversationId: direct.id, clientMessageId: "e1", text: "   "), [.invalidRequest]),
            (.init(conversationId: direct.id, clientMessageId: "e2", text: String(repeating: "x", count: Limits.maxTextCharacters + 1)),
             [.invalidRequest, .payloadTooLarge]),
            (.init(conversationId: EntityID(), clientMessageId: "e3", text: "to nowhere"), [.notFound, .forbidden]),
        ]
        for (request, codes) in refusals {
            do {
                _ = try await connection.sendMessage(request)
                Issue.record("\(request.clientMessageId) was accepted")
            } catch let error as ClientError {
                #expect(error.kind == .server && error.code.map(codes.contains) == true, "\(request.clientMessageId): \(error)")
                #expect(!error.isTransient, "the outbox must not retry it forever")
            }
        }
        try await connection.ping()
        let stored = try await connection.sendMessage(.init(conversationId: direct.id, clientMessageId: "ok", text: "fine"))
        #expect(stored.seq == 1, "the refusals stored nothing")
        #expect(await connection.closedReason == nil)
        await connection.close()
    }

    /// A frame the server cannot read gets an error reply (not a dropped socket), and the
    /// connection's own commands still get theirs.
    @Test func malformedFramesAreAnsweredAndTheSocketStays() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, _, _) = try await server.directPair()
        let connection = try await alice.connect()
        for frame in ["not json", "{}", #"{"id":"x","type":"no.such.command"}"#, #"{"id":"y","type":"message.send","data":{}}"#] {
            let reply = try await connection.sendRawAwaitingReply(frame)
            let header = try WireCoding.makeDecoder().decode(FrameHeader.self, from: reply)
            #expect(header.isReply && header.ok == false, "\(frame)")
        }
        try await connection.ping()
        await connection.close()
    }

    /// Events arrive in the order the messages were stored, each once.
    @Test func eventsArriveInStoredOrder() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let connection = try await alice.connect()
        let listening = Task { try await Self.created(12, on: connection) }
        for n in 1...12 { _ = try await bob.api.send(.init(clientMessageId: "b\(n)", text: "\(n)"), to: direct.id) }
        let received = try await listening.value
        #expect(received.map(\.seq) == Array(1...12) && received.map(\.text) == (1...12).map(String.init))
        await connection.close()
    }

    /// After `close()`: the event stream ends, commands fail at once as disconnected (not a
    /// 15-second timeout), and the reason stays readable.
    @Test func aClosedConnectionFailsEverythingAtOnce() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, _, direct) = try await server.directPair()
        let connection = try await alice.connect()
        await connection.close()
        var leftover = 0
        for await _ in connection.events { leftover += 1 }
        let started = ContinuousClock.now
        do {
            _ = try await connection.sendMessage(.init(conversationId: direct.id, clientMessageId: "late", text: "late"))
            Issue.record("a closed connection sent a message")
        } catch let error as ClientError {
            #expect(error.kind == .disconnected && error.isTransient, "\(error)")
        }
        #expect(ContinuousClock.now - started < .seconds(2), "failed at once")
        await #expect(throws: ClientError.self) { try await connection.ping() }
        #expect(await connection.closedReason?.kind == .disconnected)
        #expect(try await alice.api.messages(direct.id).messages.isEmpty, "nothing went out after the close")
    }

    /// The server ends the connection (a deactivated user): the commands waiting for replies
    /// fail, and the events stream finishes so the client can reconnect or sign out.
    @Test func theServerEndingTheConnectionFinishesEvents() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let admin = try await server.register("admin@x.io")
        let bob = try await server.register("bob@x.io")
        let connection = try await bob.connect()
        let finished = Task { () -> Bool in
            for await _ in connection.events {}
            return true
        }
        try await admin.api.deactivate(bob.id)
        #expect(try await withTimeout(.seconds(10)) { await finished.value })
        let reason = try #require(await connection.closedReason)
        #expect(reason.kind == .disconnected || reason.kind == .transport)
        await #expect(throws: ClientError.self) { try await connection.ping() }
    }

    @Test func aRefusedTokenNeverConnects() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let connection = RealtimeConnection(serverURL: server.baseURL, token: "not-a-token")
        await #expect(throws: ClientError.self) { _ = try await connection.connect(timeout: .seconds(5)) }
        #expect(await connection.closedReason != nil)
        await #expect(throws: ClientError.self) { try await connection.ping() }
    }

    /// The SDK's deadline helper: a fast body's value, a slow body cut off with `.timeout`
    /// and its clean-up run once.
    @Test func deadlinesCutOffSlowWorkOnly() async throws {
        let cleanUps = Atomic(0)
        let fast = try await withTimeout(.seconds(5), onTimeout: { cleanUps.add(1, ordering: .relaxed) }) { 42 }
        #expect(fast == 42 && cleanUps.load(ordering: .relaxed) == 0)
        do {
            _ = try await withTimeout(.milliseconds(20), onTimeout: { cleanUps.add(1, ordering: .relaxed) }) {
                try await Task.sleep(for: .seconds(60))
                return 0
            }
            Issue.record("the slow body was not cut off")
        } catch let error as ClientError {
            #expect(error.kind == .timeout && error.isTransient)
        }
        #expect(cleanUps.load(ordering: .relaxed) == 1)
        // A body that fails fails with its own error, not a timeout.
        await #expect(throws: CancellationError.self) { try await withTimeout(.seconds(5)) { throw CancellationError() } }
    }
}
