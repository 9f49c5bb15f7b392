import Foundation
import GRDB
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
import ParleyTestSupport
import Synchronization
import Testing

/// The WebSocket heartbeat: a client that answers nothing is closed, a healthy one is kept,
/// and a client the server itself paused (its sends waiting on a slow store) is never taken
/// for dead because its answer to a ping sits behind its own sends.
@Suite struct HeartbeatTests {
    /// Short, so a test sees several; not so short that a loaded machine's pause in the
    /// client's reading looks like death.
    static let period = 2

    static func server() async throws -> TestServer {
        try await TestServer.start { $0.heartbeatSeconds = Self.period }
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
        let server = try await Self.server()
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
        try await aliceEvents.wait(timeout: .seconds(10), "Bob online") { events in
            events.contains { if case .presence(let p) = $0 { p.userId == bob.id && p.isOnline } else { false } }
        }
        // It reads (the pings arrive) but never answers: closed within two heartbeats or so.
        try await waitFor("the silent socket closed", timeout: .seconds(8 * Self.period)) {
            let (data, closed) = silent.drain()
            received.withLock { $0.append(data) }
            return closed
        }
        let bytes = received.withLock { [UInt8]($0) }
        #expect(bytes.contains(0x89), "a ping went out first")
        try await aliceEvents.wait(timeout: .seconds(10), "Bob offline") { events in
            events.contains { if case .presence(let p) = $0 { p.userId == bob.id && !p.isOnline } else { false } }
        }
        await aliceSocket.close()
    }

    @Test func aClientThatAnswersItsPingsStaysConnected() async throws {
        let server = try await Self.server()
        defer { Task { await server.stop() } }
        let (alice, _, direct) = try await server.directPair()
        let socket = try await alice.connect()
        // Several heartbeats with nothing to say but pongs.
        try await Task.sleep(for: .seconds(3 * Self.period))
        let sent = try await socket.sendMessage(.init(conversationId: direct.id, clientMessageId: "after-idle", text: "still here"))
        #expect(sent.seq == 1)
        #expect(await socket.closedReason == nil)
        await socket.close()
    }

    /// The store stops committing for several heartbeats (another writer holds SQLite's lock)
    /// while a client has pipelined more sends than the server takes at once: the server
    /// stops reading that socket, so the client's pongs wait behind its sends. Every send is
    /// answered once the store moves again, and the connection is never dropped.
    @Test func aPipeliningClientPausedByASlowStoreIsNotTakenForDead() async throws {
        let server = try await Self.server()
        defer { Task { await server.stop() } }
        let (alice, _, direct) = try await server.directPair()
        let socket = try await alice.connect()
        // Another writer holds SQLite's write lock, on a thread of its own (not the tests' pool).
        let blocker = try DatabaseQueue(path: server.dataDirectory + "/parley.sqlite")
        let locked = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let released = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            try? blocker.writeWithoutTransaction { db in
                try db.execute(sql: "BEGIN IMMEDIATE")
                locked.signal()
                release.wait()
                try db.execute(sql: "COMMIT")
            }
            released.signal()
        }
        locked.wait()
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
        // Well past two heartbeats with the store stuck (SQLite's busy wait is 10 s).
        try await Task.sleep(for: .seconds(3 * Self.period))
        release.signal()
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { released.wait(); continuation.resume() }
        }
        let seqs = try await sends.value
        #expect(Set(seqs) == Set(1...Int64(count)), "every send answered once, none lost to a closed connection")
        #expect(await socket.closedReason == nil)
        await socket.close()
    }
}
