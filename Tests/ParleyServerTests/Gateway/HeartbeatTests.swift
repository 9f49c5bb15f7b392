import Foundation
import GRDB
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Synchronization
import Testing

/// The WebSocket heartbeat: a client that answers nothing is closed, a healthy one is kept,
/// and a client the server itself paused (its sends waiting on a slow store) is never taken
/// for dead because its answer to a ping sits behind its own sends.
@Suite struct HeartbeatTests {
    /// A server whose heartbeat beats when the test moves its clock.
    static func server(_ clock: ManualClock) async throws -> TestServer {
        try await TestServer.start { $0.clock = clock.serverClock }
    }

    /// One beat: the clock moves a period and each of the server's `connections` heartbeats
    /// pings (or closes a silent connection). Then each SDK socket is known to have answered:
    /// two commands after the ping, the second sent after the first's reply, so the server has
    /// read everything the client wrote before it, the pong included.
    static func beat(_ clock: ManualClock, _ server: TestServer, connections: Int, answering sockets: [RealtimeConnection] = []) async throws {
        let before = server.app.fanOut.heartbeats
        // The clock moves once the wheel sleeps until its next turn with every connection on
        // it. Long: under the whole suite on two cores a heartbeat has taken over 30 s to get
        // back to its sleep (CI, once in four runs); the test checks what happens, not how fast.
        try await waitFor("the heartbeat asleep with every connection", timeout: .seconds(120)) {
            server.app.heartbeats?.isAsleep == true && server.app.heartbeats?.connections == connections
        }
        clock.advance(by: 30)
        try await waitFor("every heartbeat beat") {
            let now = server.app.fanOut.heartbeats
            return (now.pings - before.pings) + (now.closed - before.closed) >= connections
        }
        for socket in sockets {
            try await socket.ping()
            try await socket.ping()
        }
    }

    /// A WebSocket opened by hand that never answers a ping.
    static func silentWebSocket(_ server: TestServer, token: String) throws -> RawSocket {
        let socket = try RawSocket(port: server.port)
        socket.send(
            "GET /api/v1/ws?token=\(token) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        return socket
    }

    @Test func aClientThatAnswersNoPingIsClosedAndGoesOffline() async throws {
        let clock = ManualClock()
        let server = try await Self.server(clock)
        defer { Task { await server.stop() } }
        let (alice, bob, _) = try await server.directPair()
        let aliceSocket = try await alice.connect()
        let aliceEvents = EventRecorder(aliceSocket)
        let silent = try Self.silentWebSocket(server, token: bob.token)
        let received = Mutex(Data())
        try await waitFor("Bob's hand-made WebSocket upgraded") {
            received.withLock { $0.append(silent.drain().data) }
            return received.withLock { String(decoding: $0, as: UTF8.self).contains("101 Switching Protocols") }
        }
        try await aliceEvents.wait(timeout: .seconds(30), "Bob online") { events in
            events.contains { if case .presence(let p) = $0 { p.userId == bob.id && p.isOnline } else { false } }
        }
        // The first beat pings; the socket reads it (drains) but never answers.
        try await Self.beat(clock, server, connections: 2, answering: [aliceSocket])
        received.withLock { $0.append(silent.drain().data) }
        #expect(!silent.isClosed, "one beat is not enough to judge")
        // The second finds nothing from it since the ping: closed. Alice answered: kept.
        try await Self.beat(clock, server, connections: 2)
        try await waitFor("the silent socket closed", timeout: .seconds(30)) {
            let (data, closed) = silent.drain()
            received.withLock { $0.append(data) }
            return closed
        }
        let bytes = received.withLock { [UInt8]($0) }
        #expect(bytes.contains(0x89), "a ping went out first")
        #expect(server.app.fanOut.heartbeats.closed == 1)
        try await aliceEvents.wait(timeout: .seconds(30), "Bob offline") { events in
            events.contains { if case .presence(let p) = $0 { p.userId == bob.id && !p.isOnline } else { false } }
        }
        try await aliceSocket.ping()
        #expect(await aliceSocket.closedReason == nil)
        await aliceSocket.close()
    }

    @Test func aClientThatAnswersItsPingsStaysConnected() async throws {
        let clock = ManualClock()
        let server = try await Self.server(clock)
        defer { Task { await server.stop() } }
        let (alice, _, direct) = try await server.directPair()
        let socket = try await alice.connect()
        // Several beats with nothing to say but pongs.
        for _ in 0..<4 { try await Self.beat(clock, server, connections: 1, answering: [socket]) }
        #expect(server.app.fanOut.heartbeats == (pings: 4, closed: 0))
        let sent = try await socket.sendMessage(.init(conversationId: direct.id, clientMessageId: "after-idle", text: "still here"))
        #expect(sent.seq == 1)
        #expect(await socket.closedReason == nil)
        await socket.close()
    }

    /// The store stops committing for several beats (another writer holds SQLite's lock)
    /// while a client has pipelined more sends than the server takes at once: the server
    /// stops reading that socket, so the client's pongs wait behind its sends. Every send is
    /// answered once the store moves again, and the connection is never dropped (a heartbeat
    /// counting only pongs closed it: CI saw that on a busy PostgreSQL).
    @Test func aPipeliningClientPausedByASlowStoreIsNotTakenForDead() async throws {
        let clock = ManualClock()
        // The lock is held for as long as the test needs (real time under CI's load may pass
        // SQLite's default busy wait of 10 s: the sends would then fail, not wait).
        let server = try await TestServer.start {
            $0.clock = clock.serverClock
            $0.sqliteBusyTimeout = .seconds(300)
        }
        defer { Task { await server.stop() } }
        let (alice, _, direct) = try await server.directPair()
        let socket = try await alice.connect()
        try await waitFor("the heartbeat asleep") { server.app.heartbeats?.isAsleep == true }
        // Another writer holds SQLite's write lock.
        let lock = try await HeldWriteLock.take(server.dataDirectory + "/parley.sqlite")
        let count = Gateway.maxPipelinedSends * 3
        let sends = Task {
            try await withThrowingTaskGroup(of: Int64.self) { tasks in
                for n in 0..<count {
                    tasks.addTask {
                        try await socket.send(
                            .sendMessage(.init(conversationId: direct.id, clientMessageId: "p\(n)", text: "\(n)")),
                            expecting: Message.self, timeout: .seconds(60)
                        ).seq
                    }
                }
                var seqs: [Int64] = []
                for try await seq in tasks { seqs.append(seq) }
                return seqs
            }
        }
        // The server has stopped reading: a full window of sends waits for the store.
        try await waitFor("the window full", timeout: .seconds(60)) {
            server.app.fanOut.sendsAwaitingCommit == Gateway.maxPipelinedSends
        }
        // Beats with the store stuck (these take no real time).
        for _ in 0..<3 { try await Self.beat(clock, server, connections: 1) }
        await lock.letGo()
        let seqs = try await sends.value
        #expect(Set(seqs) == Set(1...Int64(count)), "every send answered once, none lost to a closed connection")
        try await Self.beat(clock, server, connections: 1, answering: [socket])
        #expect(server.app.fanOut.heartbeats.closed == 0)
        let reason = await socket.closedReason
        #expect(reason == nil, "\(String(describing: reason))")
        await socket.close()
    }
}
