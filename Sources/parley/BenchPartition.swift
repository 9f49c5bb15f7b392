import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyClient
import ParleyProtocol
import Synchronization

/// `parley bench partition`: two nodes and PostgreSQL with real network between them (network
/// namespaces made for the run, see ``FaultNetwork``), SDK clients in other processes sending
/// through their outboxes, and a schedule of faults: a node cut from the database, the nodes cut
/// from each other, a node's clients' link dropped mid-send, PostgreSQL restarted, a node
/// killed. At the end every client's copy must be exactly the server's messages, in seq order.
struct Partition: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Cut links (node↔database, node↔node, node↔clients), restart PostgreSQL and kill nodes while SDK clients send; verify nothing is lost, doubled or out of order.",
        discussion: "Needs root (it makes network namespaces, removed at the end) and PostgreSQL's binaries (scripts/postgres-start.sh installs them).")

    @Option(help: "Client processes (spread over the two nodes).") var clients: Int = 4
    @Option(help: "Messages each client sends.") var messages: Int = 2500
    @Option(help: "Shortest fault, in seconds.") var minFault: Double = 5
    @Option(help: "Longest fault, in seconds.") var maxFault: Double = 30
    @Option(help: "Seed of the fault schedule.") var seed: UInt64 = 1
    @Option(help: "Give up after this many seconds.") var timeout: Double = 1800
    @Option(help: "Only these fault kinds, comma-separated: database-cut, peer-cut, client-link, database-restart, node-kill, lossy-link.")
    var faults: String?
    @Flag(help: "Put HAProxy in front of the nodes, reading their /ready: clients move to a node that can write.") var balancer = false
    @Flag(help: "Print the result as JSON on a last line starting with JSON.") var json = false

    enum Fault: String, CaseIterable {
        case databaseCut = "node↔database cut", peerCut = "node↔node cut", clientLink = "clients' link dropped"
        case databaseRestart = "PostgreSQL restarted", nodeKill = "node SIGKILLed"
        case lossyLink = "200 ms delay, 5 % loss"

        /// The kind's name in `--faults`.
        var name: String {
            switch self {
            case .databaseCut: "database-cut"
            case .peerCut: "peer-cut"
            case .clientLink: "client-link"
            case .databaseRestart: "database-restart"
            case .nodeKill: "node-kill"
            case .lossyLink: "lossy-link"
            }
        }
    }

    /// What one fault kind did over the run.
    struct Tally: Codable {
        var count = 0
        var seconds = 0.0
        /// Cuts from the database during which the cut node's /ready answered 503.
        var readySaid503 = 0
        /// Seconds from each fault's end until its node stored its clients' messages again.
        var recoveries: [Double] = []
        /// Messages stored from each fault's start to its end (the conversation went on).
        var stored = 0
        /// The longest the conversation went without a new message, within a fault or its recovery.
        var longestStall = 0.0
    }

    func run() async throws {
        guard clients > 0, messages > 0, minFault > 0, maxFault >= minFault else { throw fail("bad options") }
        if let why = FaultNetwork.available() { throw fail("partition: \(why)") }
        FaultNetwork.removeLeftovers()
        RunDatabase.removeLeftovers()
        // SIGINT and SIGTERM end the run through its clean-up, not around it.
        let stopping = StopSignals()
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("\(RunDatabase.workPrefix)\(getpid())").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let network = FaultNetwork(nodes: 2)
        var database: RunDatabase?
        var nodes: [Process?] = [nil, nil]
        var children: [Process] = []
        var delayers: [Process] = []
        var front: Balancer?
        defer {
            for child in children + delayers where child.isRunning { child.terminate() }
            front?.stop()
            for node in nodes.compactMap({ $0 }) where node.isRunning { kill(node.processIdentifier, SIGKILL); node.waitUntilExit() }
            database?.stop()
            network.remove()
        }
        try network.create()
        database = try RunDatabase.start(in: work + "/pg")
        guard let database else { return }
        let port = 18080
        for node in 0..<2 { nodes[node] = try startNode(node, binary: binary, network: network, database: database, port: port) }
        let urls = (0..<2).map { URL(string: "http://\(network.frontAddress($0)):\(port)")! }
        for url in urls { try await Chaos.waitReady(url) }
        if balancer {
            front = try Balancer.start(in: work, addresses: (0..<2).map(network.frontAddress), port: port)
            try await Chaos.waitReady(front!.url)
        }

        let api = ParleyAPI(baseURL: urls[0])
        var sessions: [AuthResponse] = []
        for index in 0..<clients {
            sessions.append(try await api.register(.init(
                organization: "partition", email: "client\(index)@partition.io", password: "partition-password", displayName: "Client \(index)")))
        }
        let group = try await ParleyAPI(baseURL: urls[0], token: sessions[0].token).createConversation(
            .init(type: .group, participantIds: sessions.dropFirst().map(\.user.id), name: "partition"))
        for (index, session) in sessions.enumerated() {
            let child = Process()
            child.executableURL = binary
            child.arguments = [
                "bench", "chaos-client", "--server", (front?.url ?? urls[index % 2]).absoluteString, "--token", session.token,
                "--user-id", session.user.id.description, "--conversation", group.id.description, "--count", "\(messages)",
                "--prefix", "c\(index)", "--expect", "\(clients * messages)", "--database-path", work + "/client\(index).sqlite",
                "--dump", work + "/client\(index).json",
            ]
            try child.run()
            children.append(child)
        }
        Self.say("partition: \(clients) clients × \(messages) messages over 2 nodes\(balancer ? " behind HAProxy" : "") and PostgreSQL in namespaces \(network.tag)-*, faults of \(minFault)–\(maxFault) s, seed \(seed)")

        // The server's last seq, read through whichever node answers twice a second: the longest
        // time it did not move while clients still had sends to make is the run's worst stall.
        // Each node's own clients; behind the balancer any client may be on either node.
        let senders = (0..<2).map { node in Set(sessions.indices.filter { balancer || $0 % 2 == node }.map { sessions[$0].user.id }) }
        let progress = Progress(nodes: urls, token: sessions[0].token, conversation: group.id, senders: senders)
        var faults = Fault.allCases
        if let chosen = self.faults {
            let names = chosen.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            faults = Fault.allCases.filter { names.contains($0.name) }
            if let unknown = names.first(where: { name in !Fault.allCases.contains { $0.name == name } }) { throw fail("no fault kind \(unknown)") }
        }
        if let why = FaultNetwork.lossyLinkUnavailable(), faults.contains(.lossyLink) {
            guard self.faults == nil else { throw fail("partition: lossy-link: \(why)") }
            faults.removeAll { $0 == .lossyLink }
            Self.say("partition: no lossy-link faults: \(why)")
        }
        guard !faults.isEmpty else { throw fail("no fault kinds to run") }
        var random = SplitMix(seed: seed)
        var tallies: [String: Tally] = [:]
        let started = Date()
        var lastHeal = started
        func uniform(_ low: Double, _ high: Double) -> Double { low + (high - low) * Double(random.next() % 1000) / 1000 }
        func running() -> Bool { children.contains(where: \.isRunning) }
        while running() {
            guard Date().timeIntervalSince(started) < timeout else { throw fail("timed out after \(Int(timeout)) s") }
            guard !stopping.received else { throw fail("stopped by a signal") }
            let fault = faults[Int(random.next() % UInt64(faults.count))]
            let node = Int(random.next() % 2)
            let length = uniform(minFault, maxFault)
            let began = Date()
            var tally = tallies[fault.rawValue] ?? Tally()
            let before = await progress.currentSeq()
            progress.beginWindow()
            switch fault {
            case .databaseCut:
                try network.database(of: node, cut: true)
                // The cut node must say it cannot write: its /ready answers 503 within the cut.
                if try await Self.readySays503(urls[node], within: length) { tally.readySaid503 += 1 }
                await progress.sample()
                try await progress.hold(until: began.addingTimeInterval(length), while: running)
                try network.database(of: node, cut: false)
            case .peerCut:
                try network.peers(0, 1, cut: true)
                try await progress.hold(until: began.addingTimeInterval(length), while: running)
                try network.peers(0, 1, cut: false)
            case .clientLink:
                try network.clients(of: node, up: false)
                try await progress.hold(until: began.addingTimeInterval(min(length, 10)), while: running)
                try network.clients(of: node, up: true)
            case .lossyLink:
                // The node's outgoing packets, to clients and database alike, 200 ms late and 5 % lost.
                let delayer = try network.degrade(node, binary: binary.path, delayMs: 200, lossPercent: 5)
                delayers.append(delayer)
                try await progress.hold(until: began.addingTimeInterval(length), while: running)
                try network.heal(node, delayer: delayer)
                delayers.removeAll { $0 === delayer }
            case .databaseRestart:
                try database.restart()
            case .nodeKill:
                if let victim = nodes[node] {
                    kill(victim.processIdentifier, SIGKILL)
                    victim.waitUntilExit()
                }
                try await Task.sleep(for: .milliseconds(500))
                nodes[node] = try startNode(node, binary: binary, network: network, database: database, port: port)
                try await Chaos.waitReady(urls[node])
            }
            tally.count += 1
            tally.seconds += Date().timeIntervalSince(began)
            lastHeal = Date()
            let took = Date().timeIntervalSince(began)
            // The next fault waits until the node stores its clients' messages again.
            let stored = await progress.currentSeq()
            if let before, let stored { tally.stored += Int(stored - before) }
            var back = ""
            if let stored, let seconds = try await progress.recovery(of: node, after: stored, limit: 120, while: running) {
                tally.recoveries.append(seconds)
                back = String(format: "; node %d writing again after %.1f s", node, seconds)
            }
            tally.longestStall = max(tally.longestStall, progress.windowStall)
            tallies[fault.rawValue] = tally
            Self.say("  \(fault.rawValue) (node \(node)): \(String(format: "%.1f", took)) s; last seq \(stored.map(String.init) ?? "?")\(back)")
            try await progress.hold(until: Date().addingTimeInterval(uniform(1, 3)), while: running)
        }
        let finished = Date()
        let failedClients = children.filter { $0.terminationStatus != 0 }.count
        let verdict = try await ChaosVerdict.read(
            server: urls[0], token: sessions[0].token, conversation: group.id, clients: clients, messages: messages, work: work)
        // Faults go on while the clients finish: 0 when the last heal came after they were done.
        let converged = max(0, finished.timeIntervalSince(lastHeal))
        Self.say("""
            partition: \(verdict.stored) messages stored (\(clients * messages) sent) in \(String(format: "%.1f", finished.timeIntervalSince(started))) s; \
            every client current \(String(format: "%.1f", converged)) s after the last heal; \
            the longest the conversation went without a new message while clients sent: \(String(format: "%.1f", progress.longestStall)) s
            \(verdict.summary(clients: clients, failedClients: failedClients))
            """)
        for fault in Fault.allCases {
            let tally = tallies[fault.rawValue] ?? Tally()
            let ready = fault == .databaseCut ? ", /ready said 503 in \(tally.readySaid503) of \(tally.count)" : ""
            let sorted = tally.recoveries.sorted()
            let back = sorted.isEmpty ? "" : String(format: "; writing again after %.1f s (median), %.1f s (longest)", sorted[sorted.count / 2], sorted.last!)
            Self.say("  \(fault.rawValue): \(tally.count) times, \(String(format: "%.1f", tally.seconds)) s in all, \(tally.stored) stored meanwhile\(ready)\(back)"
                + String(format: "; longest stall %.1f s", tally.longestStall))
        }
        if json {
            struct Report: Codable {
                var scenario = "partition"
                var sent: Int, stored: Int, lost: Int, doubled: Int, gapless: Bool, mismatched: Int, failedClients: Int
                var convergedSeconds: Double, longestStallSeconds: Double, faults: [String: Tally]
            }
            let report = Report(
                sent: clients * messages, stored: verdict.stored, lost: verdict.lost, doubled: verdict.doubled, gapless: verdict.gapless,
                mismatched: verdict.mismatched, failedClients: failedClients, convergedSeconds: converged,
                longestStallSeconds: progress.longestStall, faults: tallies)
            Self.say("JSON " + String(decoding: try JSONEncoder().encode(report), as: UTF8.self))
        }
        guard verdict.holds, failedClients == 0 else { throw ExitCode(1) }
        try? FileManager.default.removeItem(atPath: work)
    }

    /// Starts node `node` of the run inside its namespace.
    func startNode(_ node: Int, binary: URL, network: FaultNetwork, database: RunDatabase, port: Int) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: FaultNetwork.ipPath)
        process.arguments = network.inside(node, [
            binary.path, "serve", "--host", "0.0.0.0", "--port", "\(port)", "--data-dir", database.directory + "/../node\(node)",
            "--log-level", "error", "--rate-limits", "off", "--drain-seconds", "0", "--open-organizations", "--node-id", "node\(node)",
        ])
        var environment = ProcessInfo.processInfo.environment
        environment["PARLEY_DATABASE_URL"] = database.url
        environment["PARLEY_BCRYPT_COST"] = "4"
        environment["PARLEY_JWT_SECRET"] = "partition-secret-partition-secret-0123456"
        environment["PARLEY_CLUSTER_HEARTBEAT_MS"] = "500"
        environment["PARLEY_CLUSTER_DEAD_AFTER_MS"] = "3000"
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Polls the node's /ready until it answers 503 (true) or `seconds` pass (false).
    static func readySays503(_ url: URL, within seconds: Double) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            var request = URLRequest(url: url.appendingPathComponent("ready"))
            request.timeoutInterval = 2
            if let (_, response) = try? await URLSession.shared.data(for: request), (response as? HTTPURLResponse)?.statusCode == 503 {
                return true
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        return false
    }

    /// Prints a line of the run's log at once (to a file or pipe too).
    static func say(_ line: String) {
        print(line)
        fflush(nil)
    }

}

/// SIGINT and SIGTERM noted instead of ending the process, so a run cleans up after itself.
final class StopSignals {
    private static let flag = Atomic<Bool>(false)
    private let sources: [any DispatchSourceSignal]

    static var any: Bool { flag.load(ordering: .relaxed) }
    var received: Bool { Self.any }

    init() {
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number)
            source.setEventHandler { StopSignals.flag.store(true, ordering: .relaxed) }
            source.resume()
            return source
        }
    }
}

/// The run's own PostgreSQL, listening on the database bridge (and loopback), trusted from the
/// nodes' addresses only; fsync on, as in production.
struct RunDatabase {
    let directory: String
    let port: Int
    let bin: String

    var url: String { "postgres://postgres@\(FaultNetwork.databaseAddress):\(port)/postgres?sslmode=disable" }
    /// A run's working directory is this and its pid.
    static let workPrefix = "parley-partition-"

    /// Stops the PostgreSQL of earlier runs that ended without cleaning up (their pid is gone).
    static func removeLeftovers() {
        let temporary = FileManager.default.temporaryDirectory.path
        for name in (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? [] where name.hasPrefix(workPrefix) {
            guard let pid = Int32(name.dropFirst(workPrefix.count)), kill(pid, 0) != 0 else { continue }
            if let bin = try? FaultNetwork.run("/bin/sh", ["-c", "pg_config --bindir"]).trimmingCharacters(in: .whitespacesAndNewlines) {
                _ = try? FaultNetwork.run("/usr/sbin/runuser", ["-u", "postgres", "--", bin + "/pg_ctl", "-D", "\(temporary)/\(name)/pg", "-m", "immediate", "-w", "stop"])
            }
            try? FileManager.default.removeItem(atPath: "\(temporary)/\(name)")
        }
    }


    static func start(in directory: String) throws -> RunDatabase {
        guard let bin = try? FaultNetwork.run("/bin/sh", ["-c", "pg_config --bindir"]).trimmingCharacters(in: .whitespacesAndNewlines),
              FileManager.default.isExecutableFile(atPath: bin + "/initdb") else {
            throw fail("partition: needs PostgreSQL's binaries (scripts/postgres-start.sh installs them)")
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        _ = try? FaultNetwork.run("/usr/sbin/useradd", ["--system", "--home-dir", "/var/lib/postgresql", "--shell", "/bin/bash", "postgres"])
        try FaultNetwork.run("/usr/bin/chown", ["postgres", directory])
        let database = RunDatabase(directory: directory, port: 55000 + Int(getpid() % 400), bin: bin)
        try database.asPostgres(bin + "/initdb", ["-D", directory, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"])
        let settings = """
            listen_addresses = '127.0.0.1,\(FaultNetwork.databaseAddress)'
            port = \(database.port)
            unix_socket_directories = '\(directory)'
            max_connections = 300
            """
        let conf = try String(contentsOfFile: directory + "/postgresql.conf", encoding: .utf8)
        try (conf + "\n" + settings + "\n").write(toFile: directory + "/postgresql.conf", atomically: true, encoding: .utf8)
        let hba = "local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all \(FaultNetwork.backPrefix).0/24 trust\n"
        try hba.write(toFile: directory + "/pg_hba.conf", atomically: true, encoding: .utf8)
        try database.asPostgres(bin + "/pg_ctl", ["-D", directory, "-l", directory + "/server.log", "-w", "start"])
        return database
    }

    /// Restarts the server (fast shutdown: every connection dropped), as a failover would.
    func restart() throws {
        try asPostgres(bin + "/pg_ctl", ["-D", directory, "-l", directory + "/server.log", "-m", "fast", "-w", "restart"])
    }

    func stop() {
        _ = try? asPostgres(bin + "/pg_ctl", ["-D", directory, "-m", "immediate", "-w", "stop"])
    }

    @discardableResult
    private func asPostgres(_ executable: String, _ arguments: [String]) throws -> String {
        try FaultNetwork.run("/usr/sbin/runuser", ["-u", "postgres", "--", executable] + arguments)
    }
}
