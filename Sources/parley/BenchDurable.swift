import ArgumentParser
import Foundation
import GRDB
import ParleyBench
import ParleyClient
import ParleyProtocol
import ParleyServer
import Synchronization
import FoundationNetworking
import ParleySQLite

struct Durable: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Acknowledged sends/s until the store is the bottleneck, against direct GRDB inserts with the store's durability settings.")

    @Option(help: "Concurrent senders (one WebSocket and user each).") var senders: Int = 64
    @Option(name: .customLong("in-flight"), help: "Sends each sender keeps without a reply.") var inFlight: Int = 4
    @Option(help: "Conversations the senders share (default: one each, with one offline member).") var conversations: Int?
    @Option(help: "Measured seconds.") var duration: Double = 10
    @Option(help: "Seconds of sending before measuring.") var warmup: Double = 2
    @Option(help: "Generator event-loop threads.") var threads: Int = 1
    @Option(help: "Server URL to drive; default: in-process on a temporary SQLite file.") var server: String?
    @Option(help: "PostgreSQL URL for the in-process server (default: a temporary SQLite file).")
    var database: String?

    func run() async throws {
        guard senders > 0, inFlight > 0, duration > 0, threads > 0 else { throw fail("bad senders, in-flight, duration or threads") }
        if database != nil && server != nil {
            throw fail("--database sets up the in-process server; with --server the running server's own database is used")
        }
        let conversationCount = min(conversations ?? senders, senders)
        let store = Mutex<(any ParleyStore)?>(nil)
        let (url, stop) = try await benchTarget(server) {
            let started = try await ParleySetup.startApp(databaseURL: database)
            store.withLock { $0 = started.app.store }
            return (started.url, started.stop)
        }
        // Conversation j: the senders i with i % N == j, plus one user who never connects.
        let prefix = "d" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
        let users = try await ParleySetup.registerUsers(baseURL: url, count: senders + conversationCount, prefix: prefix) { index in
            "\(prefix)-o\(index < senders ? index % conversationCount : index - senders)"
        }
        var conversationIds: [EntityID] = []
        for j in 0..<conversationCount {
            let members = stride(from: j, to: senders, by: conversationCount).map { users[$0].user.id }
            let owner = ParleyAPI(baseURL: url, token: users[senders + j].token)
            conversationIds.append(try await owner.createConversation(.init(type: .group, participantIds: members, name: "durable \(j)")).id)
        }
        let endpoint = try BenchEndpoint(parley: url)
        let specs = (0..<senders).map { i in
            SocketSpec(
                index: i, group: i % conversationCount, host: endpoint.host, port: endpoint.port, path: endpoint.path, token: users[i].token,
                conversationId: conversationIds[i % conversationCount].description, isSender: true)
        }
        var policy = SendPolicy()
        policy.inFlight = inFlight
        let writes = store.withLock { $0 as? any GroupCommitting }
        let before = writes?.writeBatchStats
        let result = try await LoadRun.run(specs: specs, policy: policy, threads: threads, warmup: warmup, duration: duration)
        let after = writes?.writeBatchStats
        await stop?()

        // Floors: the same number of rows straight into a GRDB file with the store's settings.
        let rows = max(result.stats.acked, 1000)
        let perRow = try await Self.floor(rows: rows, writers: senders, oneTransaction: false)
        let batched = try await Self.floor(rows: rows, writers: senders, oneTransaction: true)
        let ack = LatencySummary(result.stats.ack)
        let floorRate = Double(rows) / perRow.seconds, batchRate = Double(rows) / batched.seconds
        print("parley bench durable: \(senders) senders × ≤\(inFlight) in flight, \(conversationCount) conversations, \(duration) s after \(warmup) s warm-up; \(server ?? (database == nil ? "in-process server, SQLite (WAL, synchronous=FULL)" : "in-process server, PostgreSQL"))")
        print("                                          sends/s | ack ms: p50      p90      p99    p99.9      max | errors")
        print(pad("parley acked sends", 36) + String(format: "%13.0f |        ", result.messagesPerSecond) + ack.row + String(format: " | %6d", result.stats.errors))
        print(pad("floor: GRDB insert, 1 tx per row", 36) + String(format: "%13.0f |   (\(rows) rows from \(senders) tasks, WAL, synchronous=FULL)", floorRate))
        print(pad("floor: GRDB insert, 1 tx for all", 36) + String(format: "%13.0f |   (the ceiling group commit could reach)", batchRate))
        print(String(format: "parley / per-row floor: %.2fx; parley / one-transaction ceiling: %.3fx", result.messagesPerSecond / floorRate, result.messagesPerSecond / batchRate))
        if let before, let after, after.batches > before.batches {
            // What group commit did over the whole run (warm-up included): how many sends
            // each transaction (one fsync) carried.
            let transactions = after.batches - before.batches, carried = after.writes - before.writes
            print(String(format: "group commit: %d transactions carried %d writes, %.1f per transaction", transactions, carried, Double(carried) / Double(transactions)))
        }
        if let error = result.stats.firstError { print("  first error reply: \(error)") }
        printJSONLine([
            "scenario": "durable", "senders": senders, "in_flight": inFlight, "conversations": conversationCount, "duration_s": duration,
            "target": server ?? "in-process", "database": database ?? "sqlite",
            "parley": FanoutReport.figures(result), "floor_rows": rows, "floor_per_row_tx_per_s": floorRate,
            "floor_one_tx_per_s": batchRate, "ratio_to_per_row_floor": result.messagesPerSecond / floorRate,
            "ratio_to_one_tx": result.messagesPerSecond / batchRate,
        ])
    }

    /// Inserts `rows` message-shaped rows into a fresh file with SQLiteStore's settings (WAL
    /// through a DatabasePool, synchronous=FULL, foreign keys on, busy timeout), from `writers`
    /// tasks with one transaction per row, or all in one transaction.
    static func floor(rows: Int, writers: Int, oneTransaction: Bool) async throws -> Duration {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-durable-floor-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.foreignKeysEnabled = true
        let pool = try DurableWAL.pool(path: directory + "/floor.sqlite", configuration: configuration)
        try await pool.write { db in
            try db.execute(sql: """
                CREATE TABLE messages (
                    id TEXT PRIMARY KEY NOT NULL, conversation_id TEXT NOT NULL, seq INTEGER NOT NULL, updated_seq INTEGER NOT NULL,
                    sender_id TEXT NOT NULL, client_message_id TEXT NOT NULL, type TEXT NOT NULL, text TEXT NOT NULL,
                    created_at INTEGER NOT NULL, UNIQUE (conversation_id, seq), UNIQUE (sender_id, client_message_id));
                CREATE UNIQUE INDEX messages_by_updated_seq ON messages(conversation_id, updated_seq);
                """)
        }
        let conversation = UUID().uuidString.lowercased(), sender = UUID().uuidString.lowercased()
        let clock = ContinuousClock()
        let start = clock.now
        if oneTransaction {
            try await pool.write { db in for n in 1...rows { try insertRow(db, n, conversation, sender) } }
        } else {
            let counter = Counter()
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                for _ in 0..<writers {
                    tasks.addTask {
                        while let n = counter.next(upTo: rows) {
                            try await pool.write { db in try insertRow(db, n, conversation, sender) }
                        }
                    }
                }
                try await tasks.waitForAll()
            }
        }
        let elapsed = clock.now - start
        try pool.close()
        return elapsed
    }
}

/// One message-shaped row of the durable floor.
private func insertRow(_ db: Database, _ n: Int, _ conversation: String, _ sender: String) throws {
    try db.execute(
        sql: "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, 'text', ?, ?)",
        arguments: [UUID().uuidString.lowercased(), conversation, n, n, sender, "c\(n)", "pb|\(n)|0|\(n)| bench", n])
}

/// Hands out 1, 2, 3, ... up to a limit, to any task.
final class Counter: Sendable {
    private let value = Mutex(0)
    func next(upTo limit: Int) -> Int? {
        value.withLock { value in
            guard value < limit else { return nil }
            value += 1
            return value
        }
    }
}

// MARK: catchup
