import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyBench
import ParleyClient
import ParleyProtocol

/// `parley bench chaos`: SDK clients in separate processes send and read while the server (or,
/// on PostgreSQL, one of two nodes) is killed with SIGKILL and restarted at random intervals.
/// At the end every client's local copy must be exactly the server's messages, in seq order:
/// none lost, none twice.
struct Chaos: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Kill the server (SIGKILL) at random while SDK clients in other processes send and read; verify nothing is lost or doubled.")

    @Option(help: "Client processes.") var clients: Int = 4
    @Option(help: "Messages each client sends.") var messages: Int = 2500
    @Option(help: "Shortest time between kills, in seconds.") var minUp: Double = 1
    @Option(help: "Longest time between kills, in seconds.") var maxUp: Double = 4
    @Option(help: "How long a killed server stays down, in seconds.") var down: Double = 0.5
    @Option(help: "PostgreSQL URL: two nodes on it, one killed at a time (default: one node on SQLite).") var database: String?
    @Option(help: "Seed of the kill schedule.") var seed: UInt64 = 1
    @Option(help: "Give up after this many seconds.") var timeout: Double = 900

    struct Node {
        var port: Int
        var process: Process
        var dataDirectory: String
    }

    func run() async throws {
        guard clients > 0, messages > 0, minUp > 0, maxUp >= minUp else { throw fail("bad options") }
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("parley-chaos-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let nodeCount = database == nil ? 1 : 2
        var nodes: [Node] = []
        for index in 0..<nodeCount {
            let port = try freeLoopbackPort()
            nodes.append(Node(port: port, process: try start(binary, port: port, data: work + "/node\(index)", name: "node\(index)"), dataDirectory: work + "/node\(index)"))
        }
        let urls = nodes.map { URL(string: "http://127.0.0.1:\($0.port)")! }
        for url in urls { try await Self.waitReady(url) }

        // The cast: one group with every client, each with its own account (a new organization
        // each run, so a PostgreSQL database can be reused).
        let api = ParleyAPI(baseURL: urls[0])
        let organization = "chaos-\(UUID().uuidString.prefix(8))"
        var sessions: [AuthResponse] = []
        for index in 0..<clients {
            sessions.append(try await api.register(.init(
                organization: organization, email: "client\(index)@chaos.io", password: "chaos-password", displayName: "Client \(index)")))
        }
        let group = try await ParleyAPI(baseURL: urls[0], token: sessions[0].token).createConversation(
            .init(type: .group, participantIds: sessions.dropFirst().map(\.user.id), name: "chaos"))

        // The clients, in their own processes, each on a node of its own.
        var children: [Process] = []
        for (index, session) in sessions.enumerated() {
            let child = Process()
            child.executableURL = binary
            child.arguments = [
                "bench", "chaos-client", "--server", urls[index % urls.count].absoluteString, "--token", session.token,
                "--user-id", session.user.id.description, "--conversation", group.id.description, "--count", "\(messages)",
                "--prefix", "c\(index)", "--expect", "\(clients * messages)", "--database-path", work + "/client\(index).sqlite", "--dump", work + "/client\(index).json",
            ]
            try child.run()
            children.append(child)
        }
        print("chaos: \(clients) clients × \(messages) messages, \(nodeCount) node(s), kills every \(minUp)–\(maxUp) s, seed \(seed)")

        // Kill and restart at random until every client is done.
        var random = SplitMix(seed: seed)
        var kills = 0
        let started = Date()
        while children.contains(where: \.isRunning) {
            let up = minUp + (maxUp - minUp) * Double(random.next() % 1000) / 1000
            let deadline = Date().addingTimeInterval(up)
            while Date() < deadline, children.contains(where: \.isRunning) { try await Task.sleep(for: .milliseconds(50)) }
            guard children.contains(where: \.isRunning) else { break }
            guard Date().timeIntervalSince(started) < timeout else {
                for child in children where child.isRunning { child.terminate() }
                throw fail("timed out after \(Int(timeout)) s")
            }
            let victim = Int(random.next() % UInt64(nodes.count))
            kill(nodes[victim].process.processIdentifier, SIGKILL)
            nodes[victim].process.waitUntilExit()
            kills += 1
            try await Task.sleep(for: .milliseconds(Int(down * 1000)))
            nodes[victim].process = try start(binary, port: nodes[victim].port, data: nodes[victim].dataDirectory, name: "node\(victim)")
            try await Self.waitReady(urls[victim])
        }
        let elapsed = Date().timeIntervalSince(started)
        let failedClients = children.filter { $0.terminationStatus != 0 }.count

        let verdict = try await ChaosVerdict.read(
            server: urls[0], token: sessions[0].token, conversation: group.id, clients: clients, messages: messages, work: work)
        for node in nodes { node.process.terminate(); node.process.waitUntilExit() }
        print("""
            chaos: \(verdict.stored) messages stored (\(clients * messages) sent) in \(String(format: "%.1f", elapsed)) s; \
            \(kills) kills with SIGKILL and restarts
            \(verdict.summary(clients: clients, failedClients: failedClients))
            """)
        guard verdict.holds, failedClients == 0 else { throw ExitCode(1) }
        try? FileManager.default.removeItem(atPath: work)
    }

    func start(_ binary: URL, port: Int, data: String, name: String) throws -> Process {
        let process = Process()
        process.executableURL = binary
        process.arguments = [
            "serve", "--port", "\(port)", "--data-dir", data, "--log-level", "error", "--rate-limits", "off",
            "--drain-seconds", "0", "--open-organizations", "--node-id", name,
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["PARLEY_DATABASE_URL"] = database
        environment["PARLEY_BCRYPT_COST"] = "4"
        if database != nil { environment["PARLEY_JWT_SECRET"] = environment["PARLEY_JWT_SECRET"] ?? "chaos-secret-chaos-secret-chaos-secret-0123" }
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }

    static func waitReady(_ url: URL) async throws {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            var request = URLRequest(url: url.appendingPathComponent("health"))
            request.timeoutInterval = 1
            if let (_, response) = try? await URLSession.shared.data(for: request), (response as? HTTPURLResponse)?.statusCode == 200 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw fail("\(url) did not start")
    }
}

/// What a fault run ends with: the server's messages against what the clients sent and what
/// each client's local copy holds (every one, once, in seq order, or the run failed).
struct ChaosVerdict {
    var stored = 0, lost = 0, doubled = 0, mismatched = 0
    var gapless = true
    var lastSeq: Int64 = 0

    var holds: Bool { lost == 0 && doubled == 0 && gapless && mismatched == 0 }

    func summary(clients: Int, failedClients: Int) -> String {
        "lost: \(lost), stored twice: \(doubled), gapless seq 1…\(lastSeq): \(gapless), "
            + "clients whose copy differs from the server's: \(mismatched) of \(clients), clients that failed: \(failedClients)"
    }

    /// Pages the conversation from the start on `server` and compares it with the clients'
    /// sends (`c<client>-<n>`) and with each client's dump in `work`.
    static func read(server url: URL, token: String, conversation: EntityID, clients: Int, messages: Int, work: String) async throws -> ChaosVerdict {
        let reader = ParleyAPI(baseURL: url, token: token)
        var server: [Message] = []
        var after: Int64 = 0
        while true {
            let page = try await reader.messages(conversation, after: after, limit: 200).messages
            guard let last = page.last else { break }
            server += page
            after = last.seq
        }
        var verdict = ChaosVerdict()
        let texts = server.filter { $0.type == .text }
        let expected = Set((0..<clients).flatMap { client in (0..<messages).map { "c\(client)-\($0)" } })
        let ids = texts.map(\.clientMessageId)
        verdict.stored = texts.count
        verdict.lost = expected.subtracting(ids).count
        verdict.doubled = ids.count - Set(ids).count
        verdict.gapless = server.map(\.seq) == (0..<server.count).map { Int64($0 + 1) }
        verdict.lastSeq = Int64(server.count)
        for index in 0..<clients {
            let dump = try Data(contentsOf: URL(fileURLWithPath: work + "/client\(index).json"))
            let local = try JSONDecoder().decode([ChaosClient.Row].self, from: dump)
            let truth = server.map { ChaosClient.Row(seq: $0.seq, clientMessageId: $0.clientMessageId) }
            if local != truth {
                verdict.mismatched += 1
                let localSeqs = local.map(\.seq), truthSeqs = Set(truth.map(\.seq))
                let missing = truthSeqs.subtracting(localSeqs).sorted()
                let twice = Dictionary(grouping: localSeqs, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
                let wrong = zip(local, truth).filter { $0 != $1 }.prefix(3)
                print("client \(index): \(local.count) local vs \(truth.count); missing seqs \(missing.prefix(10)) (\(missing.count)); twice \(twice.prefix(10)); first differences \(Array(wrong))")
            }
        }
        return verdict
    }
}

/// A deterministic generator for the kill schedule.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// One chaos client (a process of its own): sends through the SDK's outbox while the server
/// comes and goes, then waits until its local copy holds everything the server has, and dumps it.
struct ChaosClient: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "chaos-client", abstract: "One client of `parley bench chaos`.", shouldDisplay: false)

    @Option var server: String
    @Option var token: String
    @Option var userId: String
    @Option var conversation: String
    @Option var count: Int
    @Option var prefix: String
    /// Every client's sends together: the client is done when it has them all.
    @Option var expect: Int
    @Option var databasePath: String
    @Option var dump: String

    struct Row: Codable, Equatable {
        var seq: Int64
        var clientMessageId: String
    }

    func run() async throws {
        guard let url = URL(string: server), let user = EntityID(userId), let conversationId = EntityID(conversation) else {
            throw fail("bad arguments")
        }
        // Keep trying for as long as the chaos lasts; a restart takes well under the backoff cap.
        // Everything kept (the default cache keeps 500 messages a conversation).
        let database = try LocalDatabase.open(path: databasePath, retention: .init(maxMessagesPerConversation: 10_000_000))
        let client = ChatClient(
            transport: LiveTransport(serverURL: url, token: token), database: database, userId: user,
            policy: .init(maxAttempts: 100_000, maxDelay: .seconds(1), heartbeat: .seconds(2)))
        await client.start()
        await client.focus(conversationId)
        while (try? await client.openConversation(conversationId)) == nil { try await Task.sleep(for: .milliseconds(200)) }
        for index in 0..<count {
            _ = try await client.send(SendMessageRequest(clientMessageId: "\(prefix)-\(index)", text: "\(prefix) \(index)"), in: conversationId)
            if index % 50 == 49 { try await Task.sleep(for: .milliseconds(20)) }
        }
        // Sent when the outbox is empty; done when the local copy holds every client's messages
        // and the server's last seq, twice in a row (the others may still be sending).
        let api = ParleyAPI(baseURL: url, token: token)
        var stable = 0
        var lastWord = Date()
        while stable < 2 {
            let report = await client.synchronize()
            await client.catchUp(conversationId)
            let serverLast = try? await api.conversation(conversationId).lastSeq
            let local = try await client.database.syncedSeq(conversationId)
            let held = try await client.database.messages(in: conversationId, viewer: user, from: 0, limit: Int.max / 2)
            let texts = held.count { $0.type == .text && $0.seq != nil }
            // A client that opened the conversation after the others had sent (its node was
            // cut off at the start) holds the newest page and what came after; older history
            // is read on demand, as its user scrolling back would.
            if texts < expect, let oldest = held.compactMap(\.seq).min(), oldest > 1 {
                _ = try? await client.loadOlder(conversationId, before: oldest, limit: 200)
            }
            if Date().timeIntervalSince(lastWord) > 15 {
                // Still catching up after a while: say where it stands (the run's log).
                lastWord = Date()
                FileHandle.standardError.write(Data("""
                    chaos-client \(prefix): reached server \(report.reachedServer), queued \(report.queued), failed \(report.failed), \
                    local seq \(local.map(String.init) ?? "none"), server's \(serverLast.map(String.init) ?? "unknown"), \(texts) of \(expect) texts

                    """.utf8))
            }
            if report.reachedServer, report.queued == 0, report.failed == 0, let serverLast, local == serverLast, texts >= expect {
                stable += 1
            } else {
                stable = 0
                if report.failed > 0 { throw fail("\(report.failed) messages refused") }
            }
            try await Task.sleep(for: .milliseconds(500))
        }
        await client.stop()
        let local = try await client.database.messages(in: conversationId, viewer: user, from: 0, limit: Int.max / 2)
        let rows = local.compactMap { message in message.seq.map { Row(seq: $0, clientMessageId: message.clientMessageId) } }
        try JSONEncoder().encode(rows).write(to: URL(fileURLWithPath: dump))
    }
}
