import Foundation
import Logging
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import PostgresNIO
import Synchronization
import Testing
import ParleyPostgres

/// PostgreSQL dropping every connection of a node while sends are in flight (a restart, a
/// failover, an administrator's `pg_terminate_backend`) costs the node a moment, never a lane:
/// each send is answered, the refused ones are stored when tried again, and the conversation
/// stays gapless. Before, a transaction whose connection closed between two statements waited
/// forever (PostgresNIO loses a statement written to a closed connection), its lane with it:
/// the node committed nothing more in that conversation until it was restarted.
@Suite(.enabled(if: StoreKind.available.contains(.postgres), "needs PARLEY_TEST_POSTGRES_URL"))
struct PostgresConnectionLossTests {
    @Test(.heavy) func sendsGoOnAfterEveryConnectionIsDroppedMidTransaction() async throws {
        let server = try await TestServer.start(store: .postgres)
        defer { Task { await server.stop() } }
        let database = try #require(server.database?.name)
        let (alice, bob, direct) = try await server.directPair()
        // Over HTTP: a node whose cluster listener was cut closes its WebSockets (1012) so
        // clients resync, which would end the test's sockets with the drops.
        let senders = [alice.api, bob.api]
        let counts = Counts()
        let perTask = 40, tasksPerSocket = 8
        let total = senders.count * tasksPerSocket * perTask

        // Concurrent senders: each retries a refused send under the same client id until stored.
        let sending = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (s, api) in senders.enumerated() {
                    for t in 0..<tasksPerSocket {
                        group.addTask {
                            for n in 0..<perTask {
                                let request = SendMessageRequest(clientMessageId: "s\(s)-t\(t)-\(n)", text: "m \(n)")
                                while true {
                                    do {
                                        _ = try await api.send(request, to: direct.id)
                                        counts.acknowledged.withLock { $0 += 1 }
                                        break
                                    } catch {
                                        counts.refused.withLock { $0 += 1 }
                                        counts.errors.withLock { $0[String(describing: error), default: 0] += 1 }
                                        try await Task.sleep(for: .milliseconds(20))
                                    }
                                }
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        // Every connection of the node to its database, dropped five times while sends flow.
        for round in 1...5 {
            let mark = counts.acknowledged.withLock { $0 }
            do {
                try await waitFor("sends flowing before drop \(round)", timeout: .seconds(120)) {
                    counts.acknowledged.withLock { $0 } >= min(total, mark + 25)
                }
            } catch {
                Issue.record("\(error); acknowledged \(counts.acknowledged.withLock { $0 }), refused: \(counts.errors.withLock { $0 })")
                throw error
            }
            _ = try await TestDatabase.admin { client in
                try await client.query("""
                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE datname = \(database) AND pid <> pg_backend_pid()
                    """).collect()
            }
        }
        // A lane waiting forever would leave its senders waiting forever: every send answered.
        try await waitFor("every send answered and stored", timeout: .seconds(180)) {
            counts.acknowledged.withLock { $0 } == total
        }
        try await sending.value
        var messages: [Message] = []
        while true {
            let page = try await alice.api.messages(direct.id, after: messages.last?.seq ?? 0, limit: 100).messages
            if page.isEmpty { break }
            messages += page
        }
        #expect(messages.count == total, "each stored once")
        #expect(messages.map(\.seq).sorted() == Array(1...Int64(total)), "gapless")
        // After the drops a send over HTTP is answered at once, and /ready says so.
        let after = try await alice.api.send(SendMessageRequest(clientMessageId: "after", text: "still here"), to: direct.id)
        #expect(after.seq == Int64(total) + 1)
        try await waitFor("/ready to answer 200", timeout: .seconds(60)) {
            await server.app.health.canWrite()
        }
    }

    /// A write that waits on a database which says nothing (here a session holding the
    /// conversation's row and going silent; behind a partition, TCP's retransmissions) is given
    /// up 10 s after it began: answered 503, nothing stored and no seq taken, its connection
    /// closed, and the conversation writes again as soon as the row is free.
    @Test(.heavy) func aWriteWaitingPastItsDeadlineIsAnswered503AndTheConversationGoesOn() async throws {
        let server = try await TestServer.start(store: .postgres)
        defer { Task { await server.stop() } }
        let url = try #require(server.database?.url)
        let (alice, _, direct) = try await server.directPair()
        var logger = Logger(label: "parley.test.holder")
        logger.logLevel = .critical
        let holder = PostgresClient(configuration: try PostgresStore.configuration(url: url), backgroundLogger: logger)
        let running = Task { await holder.run() }
        defer { running.cancel() }
        let locked = Latch()
        let release = Latch()
        let holding = Task {
            try await holder.withConnection { c in
                // Silent for as long as the test wants (the store's sessions end after 10 s).
                _ = try await c.query("SET idle_in_transaction_session_timeout = 0", logger: logger).collect()
                _ = try await c.query("BEGIN", logger: logger).collect()
                _ = try await c.query("SELECT 1 FROM conversations WHERE id = \(direct.id.uuid) FOR UPDATE", logger: logger).collect()
                locked.open()
                try await waitFor("the test to let go", timeout: .seconds(120)) { release.isOpen }
                _ = try await c.query("COMMIT", logger: logger).collect()
            }
        }
        try await waitFor("the row held") { locked.isOpen }
        let refused = await #expect(throws: ClientError.self) {
            _ = try await alice.api.send(SendMessageRequest(clientMessageId: "held", text: "waits"), to: direct.id)
        }
        #expect(refused?.code == .unavailable, "\(String(describing: refused))")
        release.open()
        try await holding.value
        // Nothing of the refused send was stored; tried again, it takes the first seq.
        let sent = try await alice.api.send(SendMessageRequest(clientMessageId: "held", text: "waits"), to: direct.id)
        #expect(sent.seq == direct.lastSeq + 1)
        #expect(try await alice.api.messages(direct.id).messages.map(\.clientMessageId) == ["held"])
    }
}

/// What the senders have seen, shared with the test.
private final class Counts: Sendable {
    let acknowledged = Mutex(0)
    let refused = Mutex(0)
    let errors = Mutex<[String: Int]>([:])
}

/// A flag one task raises and another waits for.
private final class Latch: Sendable {
    private let raised = Atomic(false)
    func open() { raised.store(true, ordering: .releasing) }
    var isOpen: Bool { raised.load(ordering: .acquiring) }
}
