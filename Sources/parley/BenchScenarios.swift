import ArgumentParser
import Foundation
import GRDB
import ParleyBench
import ParleyClient
import ParleyProtocol
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: fanout, multinode

/// Options shared by `fanout` and `multinode`.
struct FanoutArguments: ParsableArguments {
    @Option(help: "Total connections; must equal groups × size when given.") var connections: Int?
    @Option(help: "Group conversations.") var groups: Int = 5
    @Option(help: "Members per group (one WebSocket each).") var size: Int = 20
    @Option(help: "Total messages/s from all senders; 0 = as fast as the server keeps up.") var rate: Double = 0
    @Option(help: "Measured seconds.") var duration: Double = 10
    @Option(help: "Seconds of sending before measuring.") var warmup: Double = 2
    @Option(name: .customLong("in-flight"), help: "Sends a sender may have without a reply.") var inFlight: Int = 2
    @Option(name: .customLong("senders-per-group"), help: "Members of each group that send (default: all).") var sendersPerGroup: Int?
    @Option(help: "Generator event-loop threads.") var threads: Int = 1
    @Flag(name: .customLong("no-floor"), help: "Skip the bare broadcast floor.") var noFloor = false
    @Flag(help: "Check that every message reached every other member exactly once (costs generator memory).") var verify = false
    @Option(help: "What the messages are: plain, thread (replies in one thread per group) or mention (three members each; v1.3).")
    var variant: String = "plain"

    func options() throws -> FanoutOptions {
        guard groups > 0, size > 1 else { throw fail("need at least one group of two") }
        if let connections, connections != groups * size { throw fail("--connections must equal --groups × --size (\(groups * size))") }
        guard duration > 0, warmup >= 0, inFlight > 0, threads > 0, rate >= 0 else { throw fail("bad duration, warm-up, in-flight, threads or rate") }
        var options = FanoutOptions()
        options.groups = groups
        options.size = size
        options.rate = rate
        options.duration = duration
        options.warmup = warmup
        options.inFlight = inFlight
        options.sendersPerGroup = sendersPerGroup
        options.threads = threads
        options.verify = verify
        guard let variant = FanoutVariant(rawValue: variant) else { throw fail("--variant is plain, thread or mention") }
        options.variant = variant
        return options
    }
}

struct Fanout: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Group fan-out over WebSockets (deliveries/s, send→deliver latency), against a bare Hummingbird broadcast floor.")

    @OptionGroup var arguments: FanoutArguments
    @Option(help: "Server URL to drive; default: start one in-process on a temporary SQLite file.") var server: String?
    @Option(help: "Messages every group starts with, unread for every member but its first (in-process server only).")
    var history: Int = 0

    func run() async throws {
        let options = try arguments.options()
        guard history >= 0 else { throw fail("--history must be 0 or more") }
        guard history == 0 || server == nil else { throw fail("--history needs the in-process server (no --server)") }
        var stop: (@Sendable () async -> Void)?
        var prepare: (@Sendable ([BenchMember]) async throws -> Void)?
        let url: URL
        if let server {
            guard let parsed = URL(string: server) else { throw fail("bad server URL") }
            url = parsed
        } else {
            let started = try await ParleySetup.startApp()
            url = started.url
            stop = started.stop
            let store = started.app.store, history = self.history
            if history > 0 {
                prepare = { members in
                    let start = ContinuousClock.now
                    try await ParleySetup.seedHistory(store: store, members: members, count: history)
                    print("seeded \(history) unread messages in each of \(options.groups) groups in \(ContinuousClock.now - start)")
                }
            }
        }
        let parley = try await FanoutScenario.runParley(servers: [url], options: options, prepare: prepare)
        await stop?()
        let floor = arguments.noFloor ? nil : try await FanoutScenario.runFloor(options: options)
        FanoutReport.print(
            scenario: "fanout" + (options.variant == .plain ? "" : " (\(options.variant.rawValue))"),
            target: server ?? "in-process server, SQLite" + (history > 0 ? ", history \(history) unread per group" : ""),
            options: options, parley: parley, floor: floor)
    }
}

struct Multinode: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fan-out across running nodes on one database: connections round-robin over --servers (or senders on the first, receivers on the others with --cross).")

    @OptionGroup var arguments: FanoutArguments
    @Option(help: "Comma-separated server URLs (nodes of one deployment).") var servers: String
    @Flag(help: "Senders on the first node, receivers on the others.") var cross = false

    func run() async throws {
        var options = try arguments.options()
        let urls = servers.split(separator: ",").compactMap { URL(string: String($0).trimmingCharacters(in: .whitespaces)) }
        guard !urls.isEmpty else { throw fail("--servers needs at least one URL") }
        if cross {
            guard (options.sendersPerGroup ?? options.size) < options.size else { throw fail("--cross needs --senders-per-group below --size") }
            options.cross = true
        }
        let parley = try await FanoutScenario.runParley(servers: urls, options: options)
        let floor = arguments.noFloor ? nil : try await FanoutScenario.runFloor(options: options)
        FanoutReport.print(
            scenario: "multinode", target: urls.map(\.absoluteString).joined(separator: ",") + (cross ? " (cross)" : ""), options: options,
            parley: parley, floor: floor)
    }
}

enum FanoutReport {
    static func print(scenario: String, target: String, options: FanoutOptions, parley: RunResult, floor: RunResult?) {
        let senders = min(options.size, options.sendersPerGroup ?? options.size)
        Swift.print("parley bench \(scenario): \(options.connections) connections = \(options.groups) groups × \(options.size), "
            + "\(senders) senders/group, rate \(options.rate == 0 ? "max" : String(format: "%.0f/s", options.rate)) "
            + "(≤\(options.inFlight) in flight per sender), \(options.duration) s after \(options.warmup) s warm-up, "
            + "generator \(options.threads) thread(s); \(target)")
        Swift.print("                      msgs/s   deliv/s | deliver ms: p50      p90      p99    p99.9      max | ack ms: p50      p99 | errors closed late")
        func row(_ name: String, _ result: RunResult) {
            let delivery = LatencySummary(result.stats.delivery), ack = LatencySummary(result.stats.ack)
            Swift.print(pad(name, 18) + String(format: "%10.0f%10.0f |       ", result.messagesPerSecond, result.deliveriesPerSecond)
                + delivery.row + String(format: " |   %9.2f%9.2f | %6d %6d %4d", ack.p50, ack.p99, result.stats.errors, result.stats.closed, result.stats.late))
            let perThousand = 1000 * Double(result.stats.catchUps) / Double(max(result.stats.totalDeliveries + result.stats.totalEchoes, 1))
            Swift.print(String(format: "  catch-ups a client would make: %.2f per 1,000 messages delivered (%d seq jumps, %d out of order)",
                perThousand, result.stats.catchUps, result.stats.outOfOrder))
            if result.connectFailures > 0 { Swift.print("  \(result.connectFailures) sockets failed to connect: \(result.connectError ?? "?")") }
            if let error = result.stats.firstError { Swift.print("  first error reply: \(error)") }
        }
        row("parley", parley)
        if let floor { row("bare floor", floor) }
        var json: [String: Any] = [
            "scenario": scenario, "target": target, "connections": options.connections, "groups": options.groups, "size": options.size,
            "senders_per_group": senders, "rate": options.rate, "in_flight": options.inFlight, "duration_s": options.duration,
            "warmup_s": options.warmup, "generator_threads": options.threads, "parley": figures(parley),
        ]
        if let floor {
            json["floor"] = figures(floor)
            let ratio = parley.deliveriesPerSecond / max(floor.deliveriesPerSecond, 1)
            let p50 = LatencySummary(parley.stats.delivery).p50 / max(LatencySummary(floor.stats.delivery).p50, 0.001)
            let p99 = LatencySummary(parley.stats.delivery).p99 / max(LatencySummary(floor.stats.delivery).p99, 0.001)
            Swift.print(String(format: "parley / floor: deliveries/s %.2fx, deliver p50 %.2fx, p99 %.2fx", ratio, p50, p99))
            json["ratio"] = ["deliveries_per_s": ratio, "deliver_p50": p50, "deliver_p99": p99]
        }
        if options.verify {
            for (name, result) in [("parley", parley)] + (floor.map { [("floor", $0)] } ?? []) {
                let check = LoadRun.verify(result)
                Swift.print("\(name) exactly-once: expected \(check.expected), delivered \(check.delivered), missing \(check.missing), duplicates \(check.duplicates), strays \(check.strays)")
            }
        }
        printJSONLine(json)
    }

    static func figures(_ result: RunResult) -> [String: Any] {
        [
            "messages_per_s": result.messagesPerSecond, "deliveries_per_s": result.deliveriesPerSecond,
            "deliver": LatencySummary(result.stats.delivery).json, "ack": LatencySummary(result.stats.ack).json,
            "errors": result.stats.errors, "closed": result.stats.closed, "late": result.stats.late,
            "sent": result.stats.sent, "acked": result.stats.acked, "deliveries": result.stats.deliveries, "echoes": result.stats.echoes,
            "connect_failures": result.connectFailures, "seconds": result.seconds,
            "catch_ups": result.stats.catchUps, "out_of_order": result.stats.outOfOrder,
            "catch_ups_per_1000": 1000 * Double(result.stats.catchUps) / Double(max(result.stats.totalDeliveries + result.stats.totalEchoes, 1)),
        ]
    }
}

// MARK: bare-server

struct BareServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bare-server", abstract: "The floor's bare Hummingbird WebSocket broadcast server (spawned by `connections`).",
        shouldDisplay: false)

    @Option var host: String = "127.0.0.1"
    @Option var port: Int = 0

    func run() async throws { try await BareServer.run(host: host, port: port) }
}

// MARK: durable

struct Catchup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A client that missed M messages: time to current via /changes pages and via the SDK, against reading the rows straight from SQLite.")

    @Option(help: "Messages missed.") var messages: Int = 10_000
    @Option(help: "Timed repetitions of each way (the median is reported).") var repetitions: Int = 3

    func run() async throws {
        guard messages > 0, repetitions > 0 else { throw fail("bad messages or repetitions") }
        let server = try await ParleySetup.startServer()
        let prefix = "c" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
        let users = try await ParleySetup.registerUsers(baseURL: server.url, count: 2, prefix: prefix) { _ in prefix }
        let sender = users[0], reader = users[1]
        let conversation = try await ParleyAPI(baseURL: server.url, token: sender.token)
            .createConversation(.init(type: .direct, participantIds: [reader.user.id]))

        // Fill: one sender over the generator's WebSocket, 64 in flight.
        let endpoint = try BenchEndpoint(parley: server.url)
        var policy = SendPolicy()
        policy.inFlight = 64
        policy.messagesPerSender = messages
        let fill = try await LoadRun.run(
            specs: [SocketSpec(
                index: 0, group: 0, host: endpoint.host, port: endpoint.port, path: endpoint.path, token: sender.token,
                conversationId: conversation.id.description, isSender: true)],
            policy: policy, threads: 1, warmup: 0, duration: 600)
        guard fill.stats.totalAcked == messages else { throw fail("filled only \(fill.stats.totalAcked) of \(messages) messages") }

        let clock = ContinuousClock()
        // 1. Raw HTTP: GET /changes pages of 500, decoded, until hasMore is false.
        var raw: [Duration] = []
        let session = URLSession(configuration: .ephemeral)
        let decoder = WireCoding.makeDecoder()
        for _ in 0..<repetitions {
            let start = clock.now
            var since: Int64 = 0, count = 0
            while true {
                var request = URLRequest(url: server.url.appendingPathComponent("api/v1/conversations/\(conversation.id)/changes"))
                request.url = URL(string: request.url!.absoluteString + "?since=\(since)&limit=\(Limits.changesPageMax)")
                request.setValue("Bearer \(reader.token)", forHTTPHeaderField: "Authorization")
                let (data, response) = try await session.data(for: request)
                guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw fail("changes answered \(response)") }
                let page = try decoder.decode(ChangesPage.self, from: data)
                count += page.messages.count
                since = page.messages.last?.updatedSeq ?? since
                if !page.hasMore { break }
            }
            raw.append(clock.now - start)
            guard count == messages else { throw fail("raw catch-up got \(count) of \(messages)") }
        }

        // 2. The SDK: a fresh in-memory client that knew the conversation at seq 0.
        var sdk: [Duration] = []
        for _ in 0..<repetitions {
            let database = try LocalDatabase.inMemory(retention: .init(maxMessagesPerConversation: messages * 2))
            var empty = conversation
            empty.lastSeq = 0
            try await database.applyInitialPage(MessagesPage(messages: [], hasMore: false), conversation: empty)
            let client = ChatClient(
                transport: LiveTransport(serverURL: server.url, token: reader.token), database: database, userId: reader.user.id)
            let start = clock.now
            await client.catchUp(conversation.id)
            sdk.append(clock.now - start)
            let synced = try await database.syncedSeq(conversation.id) ?? -1
            await client.stop()
            guard synced == Int64(messages) else { throw fail("SDK catch-up reached seq \(synced) of \(messages)") }
        }

        // 3. Floor: the same rows straight from the server's SQLite file.
        var floor: [Duration] = []
        var readOnly = Configuration()
        readOnly.readonly = true
        let queue = try DatabaseQueue(path: server.databasePath, configuration: readOnly)
        for _ in 0..<repetitions {
            let start = clock.now
            let count = try await queue.read { db -> Int in
                let cursor = try Row.fetchCursor(
                    db, sql: "SELECT * FROM messages WHERE conversation_id = ? AND updated_seq > 0 ORDER BY updated_seq",
                    arguments: [conversation.id.description])
                var count = 0
                while let row = try cursor.next() {
                    let _: String = row["id"]
                    let _: String = row["text"]
                    let _: Int64 = row["updated_seq"]
                    count += 1
                }
                return count
            }
            floor.append(clock.now - start)
            guard count == messages else { throw fail("floor read \(count) of \(messages)") }
        }
        try queue.close()
        await server.stop()

        func median(_ values: [Duration]) -> Double { values.map { $0.seconds * 1000 }.sorted()[values.count / 2] }
        let rawMs = median(raw), sdkMs = median(sdk), floorMs = median(floor)
        print("parley bench catchup: \(messages) missed messages in one conversation, pages of \(Limits.changesPageMax), median of \(repetitions); in-process server, SQLite")
        print("way                                         ms   messages/s   × floor")
        for (name, ms) in [("GET /changes pages (raw HTTP, decoded)", rawMs), ("SDK ChatClient.catchUp (in-memory cache)", sdkMs), ("floor: SELECT from the server's file", floorMs)] {
            print(pad(name, 40) + String(format: "%8.1f %12.0f %9.1f", ms, Double(messages) / ms * 1000, ms / floorMs))
        }
        printJSONLine([
            "scenario": "catchup", "messages": messages, "page": Limits.changesPageMax, "repetitions": repetitions,
            "raw_http_ms": rawMs, "sdk_ms": sdkMs, "floor_ms": floorMs, "raw_over_floor": rawMs / floorMs, "sdk_over_floor": sdkMs / floorMs,
            "raw_http_all_ms": raw.map { $0.seconds * 1000 }, "sdk_all_ms": sdk.map { $0.seconds * 1000 }, "floor_all_ms": floor.map { $0.seconds * 1000 },
        ])
    }
}
