import ArgumentParser
import Foundation
import ParleyBench
import ParleyClient
import ParleyProtocol
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `parley bench storm`: a reconnect storm. N clients hold WebSockets to a spawned `parley
/// serve`; the server is stopped and started again on the same data, and while the clients
/// wait out their backoff, messages go into every group. Measured: the time from the restart
/// until every client is connected and current, the server's peak memory and CPU meanwhile,
/// and that each message is stored once and every client reaches its conversation's seq.
struct Storm: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Restart the server under N connected clients (the SDK's backoff and catch-up): time until all are back and current.")

    @Option(help: "Clients (WebSockets) to connect.") var clients: Int = 2000
    @Option(help: "Users to register (groups of 20); clients reuse them as further devices.") var users: Int = 1000
    @Option(help: "Messages sent into each group while the clients are away.") var messages: Int = 2
    @Option(name: .customLong("per-worker"), help: "Clients per worker process (the open-files limit is 20,000 per process).")
    var perWorker: Int = 10_000
    @Option(help: "How the server stops: term (a deploy) or kill (a crash).") var stop: String = "term"
    @Option(help: "Seconds to wait for every client to be back.") var timeout: Double = 120

    func run() async throws {
        guard clients >= 20, users >= 20, users % 20 == 0, messages >= 1, ["term", "kill"].contains(stop) else {
            throw fail("need at least 20 clients, users in groups of 20, a message, and --stop term|kill")
        }
        let port = try freeLoopbackPort()
        let dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-storm-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        let cap = clients + 500  // every client's socket, and room for the catch-ups' REST connections
        var server = try Self.spawnServer(port: port, dataDirectory: dataDirectory, maxConnections: cap)
        defer { if server.isRunning { server.terminate(); server.waitUntilExit() } }
        try await waitUntilListening(port: port, process: server)
        let url = URL(string: "http://127.0.0.1:\(port)")!

        let members = try await ParleySetup.groups(baseURL: url, groups: users / 20, size: 20)
        let lines = (0..<clients).map { index -> String in
            let member = members[index % members.count]
            return "\(member.token) \(member.conversationId)"
        }
        let specFile = dataDirectory + "-clients"
        try (lines.joined(separator: "\n") + "\n").write(toFile: specFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: specFile) }

        // Connect everyone.
        var workers: [WorkerProcess] = []
        defer { for worker in workers { worker.stop() } }
        var first = 0, source = 0
        while first < clients {
            let count = min(perWorker, clients - first)
            workers.append(try WorkerProcess(arguments: [
                "bench", "storm-worker", "--port", "\(port)", "--first", "\(first)", "--count", "\(count)", "--source", "127.0.0.\(2 + source)",
                "--clients-file", specFile,
            ]))
            first += count
            source += 1
        }
        var failed = 0
        for worker in workers { failed += Int(try await worker.line(expecting: "READY").split(separator: " ")[1]) ?? 0 }
        guard failed == 0 else { throw fail("\(failed) clients did not connect before the storm") }
        let steadyRSS = try rssKB(server.processIdentifier)
        print("parley bench storm: \(clients) clients in \(users / 20) groups of 20 (users reused as devices), \(workers.count) worker processes; server RSS \(String(format: "%.1f", steadyRSS / 1024)) MB connected")

        // The storm: stop, start again on the same data, send while the clients wait.
        for worker in workers { worker.send("MARK") }
        for worker in workers { _ = try await worker.line(expecting: "MARKED") }
        if stop == "kill" { kill(server.processIdentifier, SIGKILL) } else { server.terminate() }
        server.waitUntilExit()
        let origin = monotonicNanos()
        server = try Self.spawnServer(port: port, dataDirectory: dataDirectory, maxConnections: cap)
        let sampler = ProcessSampler(pid: server.processIdentifier)
        let sampling = Task { await sampler.run() }
        try await waitUntilListening(port: port, process: server)
        let listening = Double(monotonicNanos() &- origin) / 1e6
        let owners = Dictionary(grouping: members, by: \.group).compactMap { $0.value.first }.sorted { $0.group < $1.group }
        var targets: [String: Int64] = [:]
        var sent: [EntityID: [String]] = [:]
        try await withThrowingTaskGroup(of: (EntityID, Int64, [String]).self) { tasks in
            for owner in owners {
                tasks.addTask {
                    let api = ParleyAPI(baseURL: url, token: owner.token)
                    var last: Int64 = 0
                    var ids: [String] = []
                    for n in 0..<messages {
                        let id = "storm-\(owner.group)-\(n)"
                        // A send is retried until stored: the server may still be busy with the storm.
                        var attempt = 0
                        while true {
                            do {
                                last = try await api.send(.init(clientMessageId: id, text: "sent while you were away \(n)"), to: owner.conversationId).seq
                                break
                            } catch let error as ClientError where error.isTransient && attempt < 20 {
                                attempt += 1
                                try await Task.sleep(for: .milliseconds(100))
                            }
                        }
                        ids.append(id)
                    }
                    return (owner.conversationId, last, ids)
                }
            }
            for try await (conversation, last, ids) in tasks {
                targets[conversation.description] = last
                sent[conversation] = ids
            }
        }
        let sentAt = Double(monotonicNanos() &- origin) / 1e6
        let targetFile = dataDirectory + "-targets"
        try (targets.map { "\($0.key) \($0.value)" }.joined(separator: "\n") + "\n").write(toFile: targetFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: targetFile) }
        for worker in workers { worker.send("TARGET \(targetFile) \(origin) \(timeout)") }
        var reports: [[String: Any]] = []
        for worker in workers {
            let line = try await worker.line(expecting: "DONE")
            guard let json = try JSONSerialization.jsonObject(with: Data(line.dropFirst(5).utf8)) as? [String: Any] else {
                throw fail("a worker's report did not parse: \(line)")
            }
            reports.append(json)
        }
        sampling.cancel()
        let usage = await sampler.peak()

        // Exactly once: each message sent during the storm is stored once.
        var stored = 0, duplicated = 0
        for owner in owners {
            let history = try await ParleyAPI(baseURL: url, token: owner.token).messages(owner.conversationId, limit: 100).messages
            for id in sent[owner.conversationId] ?? [] {
                let copies = history.filter { $0.clientMessageId == id }.count
                if copies >= 1 { stored += 1 }
                if copies > 1 { duplicated += copies - 1 }
            }
        }
        let expected = owners.count * messages
        func sum(_ key: String) -> Int { reports.reduce(0) { $0 + (($1[key] as? Int) ?? 0) } }
        let back = sum("back"), times = reports.flatMap { ($0["back_ms"] as? [Double]) ?? [] }.sorted()
        let hellos = reports.flatMap { ($0["hello_ms"] as? [Double]) ?? [] }.sorted()
        func rank(_ q: Double, _ sorted: [Double]) -> Double {
            sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, max(0, Int((q * Double(sorted.count)).rounded(.up)) - 1))]
        }
        func rank(_ q: Double) -> Double { rank(q, times) }
        print(String(format: "server stopped (%@) and started: listening after %.0f ms; %d messages sent into %d groups by %.0f ms", stop, listening, expected, owners.count, sentAt))
        print(String(format: "back and current: %d of %d clients; p50 %.0f ms, p99 %.0f ms, last %.0f ms after the restart", back, clients, rank(0.5), rank(0.99), times.last ?? .nan))
        print(String(format: "hello received (connected again): p10 %.0f ms, p50 %.0f ms, p99 %.0f ms", rank(0.1, hellos), rank(0.5, hellos), rank(0.99, hellos)))
        print("dials \(sum("dials")) (refused \(sum("refused_dials"))), catch-ups \(sum("catch_ups")) (failed \(sum("failed_catch_ups"))), gaps \(sum("gaps")), redelivered frames ignored \(sum("redelivered")), gave up \(sum("gave_up"))")
        print(String(format: "server during the storm: peak RSS %.1f MB (%.1f MB before), CPU %.2f s in %.1f s (%.2f cores)", usage.peakRSS / 1024, steadyRSS / 1024, usage.cpuSeconds, usage.wallSeconds, usage.cpuSeconds / max(usage.wallSeconds, 0.001)))
        print("messages: \(stored) of \(expected) stored, \(expected - stored) lost, \(duplicated) duplicated")
        printJSONLine([
            "scenario": "storm", "clients": clients, "users": users, "messages": expected, "stop": stop, "back": back,
            "back_ms": ["p50": rank(0.5), "p99": rank(0.99), "max": times.last ?? -1], "listening_ms": listening,
            "dials": sum("dials"), "refused_dials": sum("refused_dials"), "catch_ups": sum("catch_ups"), "gave_up": sum("gave_up"),
            "peak_rss_kb": usage.peakRSS, "steady_rss_kb": steadyRSS, "cpu_seconds": usage.cpuSeconds, "stored": stored, "duplicated": duplicated,
        ])
        guard back == clients, stored == expected, duplicated == 0 else {
            throw fail("\(clients - back) clients not back, \(expected - stored) messages lost, \(duplicated) duplicated")
        }
    }

    static func spawnServer(port: Int, dataDirectory: String, maxConnections: Int) throws -> Process {
        let server = Process()
        server.executableURL = selfExecutable()
        server.arguments = [
            "serve", "--port", "\(port)", "--data-dir", dataDirectory, "--log-level", "error", "--rate-limits", "off", "--open-organizations",
            "--drain-seconds", "0", "--max-connections", "\(maxConnections)",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["PARLEY_BCRYPT_COST"] = "4"
        server.environment = environment
        server.standardOutput = FileHandle.nullDevice
        try server.run()
        return server
    }
}

/// Peak RSS and CPU time of a process, sampled every 50 ms.
actor ProcessSampler {
    let pid: Int32
    private var rss: Double = 0
    private var startTicks: Double?
    private var lastTicks: Double = 0
    private let started = ContinuousClock.now
    private var lastAt = ContinuousClock.now

    init(pid: Int32) { self.pid = pid }

    func run() async {
        while !Task.isCancelled {
            sample()
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    private func sample() {
        if let kb = try? rssKB(pid) { rss = max(rss, kb) }
        // utime and stime: fields 14 and 15 of /proc/PID/stat, after the command's parentheses.
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return }
        if startTicks == nil { startTicks = user + system }
        lastTicks = user + system
        lastAt = ContinuousClock.now
    }

    /// Peak RSS (KB), CPU seconds and wall seconds since the first sample.
    func peak() -> (peakRSS: Double, cpuSeconds: Double, wallSeconds: Double) {
        sample()
        let wall = lastAt - started
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        return (rss, (lastTicks - (startTicks ?? lastTicks)) / ticksPerSecond,
            Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18)
    }
}

struct StormWorker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storm-worker", abstract: "Holds storm clients for `bench storm`.", shouldDisplay: false)

    @Option var port: Int
    @Option var first: Int
    @Option var count: Int
    @Option var source: String?
    @Option(name: .customLong("clients-file")) var clientsFile: String
    @Option var threads: Int = 1

    func run() async throws {
        let lines = try String(contentsOfFile: clientsFile, encoding: .utf8).split(separator: "\n")
        let baseURL = URL(string: "http://127.0.0.1:\(port)")!
        let specs = (first..<first + count).map { index -> StormSpec in
            let parts = lines[index].split(separator: " ")
            let socket = SocketSpec(
                index: index, group: 0, host: "127.0.0.1", port: port, path: "/api/v1/ws", token: String(parts[0]),
                conversationId: String(parts[1]), isSender: false, localAddress: source)
            return StormSpec(socket: socket, baseURL: baseURL)
        }
        let fleet = StormFleet(threads: threads)
        let failed = await fleet.connect(specs)
        print("READY \(failed)")
        fflush(nil)
        while let line = readLine() {
            let parts = line.split(separator: " ")
            if parts.first == "MARK" {
                await fleet.resetStats()
                print("MARKED 0")
                fflush(nil)
                continue
            }
            guard parts.first == "TARGET", parts.count == 4, let origin = UInt64(parts[2]), let timeout = Double(parts[3]) else { continue }
            var targets: [String: Int64] = [:]
            for entry in try String(contentsOfFile: String(parts[1]), encoding: .utf8).split(separator: "\n") {
                let pair = entry.split(separator: " ")
                if pair.count == 2, let seq = Int64(pair[1]) { targets[String(pair[0])] = seq }
            }
            await fleet.expect(targets, origin: origin)
            let report = await fleet.waitUntilBack(timeout: .milliseconds(Int(timeout * 1000)))
            let json: [String: Any] = [
                "clients": report.clients, "back": report.back, "back_ms": report.backMillis, "hello_ms": report.helloMillis, "dials": report.dials,
                "refused_dials": report.refusedDials, "catch_ups": report.catchUps, "failed_catch_ups": report.failedCatchUps,
                "gaps": report.gaps, "redelivered": report.redelivered, "gave_up": report.gaveUp,
            ]
            print("DONE " + String(decoding: try JSONSerialization.data(withJSONObject: json), as: UTF8.self))
            fflush(nil)
        }
        await fleet.shutdown()
    }
}
