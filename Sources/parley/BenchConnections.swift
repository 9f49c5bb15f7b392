import ArgumentParser
import Foundation
import ParleyBench
import ParleyClient
import ParleyProtocol
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `parley bench connections`: server RSS per idle WebSocket, Parley against the bare floor,
/// each server in its own process, connections opened by worker processes.
struct Connections: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Server memory per idle WebSocket (VmRSS growth / N) of a spawned `parley serve`, against a spawned bare Hummingbird server.")

    @Option(help: "Idle connections to open.") var count: Int = 1000
    @Option(help: "Users to register; their tokens are reused across connections (groups of 20 share a conversation).") var users: Int = 200
    @Option(name: .customLong("per-worker"), help: "Connections per generator process (the open-files limit is 20,000 per process).")
    var perWorker: Int = 10_000
    @Option(help: "Seconds to wait after the last connection before reading VmRSS.") var settle: Double = 3
    @Flag(name: .customLong("no-floor"), help: "Skip the bare server.") var noFloor = false
    @Option(help: "Seconds to hold the connections idle after the RSS reading while the server's CPU time is counted (0 skips it).")
    var idle: Double = 15
    @Option(name: .customLong("heartbeat-seconds"), help: "The heartbeat `parley serve` announces and pings at, so the idle window sees several rounds.")
    var heartbeatSeconds: Int = 5

    func run() async throws {
        guard count >= 2, users >= 20, perWorker > 0 else { throw fail("need at least 2 connections and 20 users") }
        guard idle >= 0, heartbeatSeconds >= 1 else { throw fail("--idle is 0 or more seconds, --heartbeat-seconds at least 1") }
        let parley = try await measure(bare: false)
        let floor = noFloor ? nil : try await measure(bare: true)
        let workers = (count / 2 + perWorker - 1) / perWorker + (count - count / 2 + perWorker - 1) / perWorker
        print("parley bench connections: \(count) idle WebSockets (opened in two halves) from \(workers) worker processes, one loopback source address each (127.0.0.2, ...); each server is a separate process, RSS read \(settle) s after the last connection")
        print("server                  baseline MB  at N/2 MB    at N MB   KB/conn (0→N)  KB/conn (N/2→N)  failed")
        func row(_ name: String, _ m: Measurement) {
            print(pad(name, 22) + String(format: "%12.1f %10.1f %10.1f %15.1f %16.1f %7d", m.baseline / 1024, m.half / 1024, m.full / 1024, m.perConnection, m.marginal, m.failed))
        }
        row("parley serve", parley)
        if let heap = parley.heapPerConnection {
            print(String(format: "parley serve: %.1f KB of heap in use per connection (glibc's malloc; the rest of the RSS is the allocator's free-kept pages, stacks, code)", heap))
        }
        if let floor {
            row("bare Hummingbird WS", floor)
            print(String(format: "parley / floor: %.2fx per connection (0→N)", parley.perConnection / max(floor.perConnection, 0.001)))
        }
        if idle > 0 {
            print(String(
                format: "idle %.0f s, heartbeat every %d s: parley serve used %.4f of a core (%d pings sent, %d connections closed as silent)",
                idle, heartbeatSeconds, parley.idleCore, parley.pings, parley.silentClosed))
            if let floor { print(String(format: "idle %.0f s: the bare server (no heartbeat) used %.4f of a core", idle, floor.idleCore)) }
        }
        var json: [String: Any] = ["scenario": "connections", "count": count, "users": users, "parley": parley.json]
        if let floor {
            json["floor"] = floor.json
            json["ratio"] = parley.perConnection / max(floor.perConnection, 0.001)
        }
        printJSONLine(json)
    }

    struct Measurement {
        var baseline: Double, half: Double, full: Double, failed: Int, count: Int
        /// CPU time over wall time while the connections idled: the fraction of a core.
        var idleCore: Double = 0
        /// Heartbeat pings the server sent and connections it closed as silent, during the run.
        var pings = 0, silentClosed = 0
        /// glibc's heap in use before the connections and with all of them open, KB.
        var heap: (baseline: Double, full: Double)?
        var perConnection: Double { (full - baseline) / Double(count) }
        var heapPerConnection: Double? { heap.map { ($0.full - $0.baseline) / Double(count) } }
        var marginal: Double { (full - half) / Double(count - count / 2) }
        var json: [String: Any] {
            [
                "baseline_kb": baseline, "half_kb": half, "full_kb": full, "kb_per_connection": perConnection,
                "kb_per_connection_marginal": marginal, "failed": failed, "idle_core_fraction": idleCore, "pings": pings,
                "silent_closed": silentClosed, "heap_kb_per_connection": heapPerConnection ?? -1,
            ]
        }
    }

    /// Spawns the server, opens the connections in two halves (RSS read after each), stops it all.
    func measure(bare: Bool) async throws -> Measurement {
        let port = try freeLoopbackPort()
        let dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-conn-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        let server = Process()
        server.executableURL = selfExecutable()
        server.arguments = bare
            ? ["bench", "bare-server", "--port", "\(port)"]
            : [
                "serve", "--port", "\(port)", "--data-dir", dataDirectory, "--log-level", "error", "--open-organizations",
                "--max-connections", "\(count + 500)", "--heartbeat-seconds", "\(heartbeatSeconds)",
            ]
        var environment = ProcessInfo.processInfo.environment
        environment["PARLEY_BCRYPT_COST"] = "4"
        server.environment = environment
        server.standardOutput = FileHandle.nullDevice
        try server.run()
        defer { if server.isRunning { server.terminate(); server.waitUntilExit() } }
        let url = URL(string: "http://127.0.0.1:\(port)")!
        try await waitUntilListening(port: port, process: server)

        var tokens: [String] = [], conversations: [String] = []
        if !bare {
            let groups = users / 20
            let members = try await ParleySetup.groups(baseURL: url, groups: groups, size: 20)
            tokens = members.map(\.token)
            conversations = members.map(\.conversationId.description)
        }
        let tokensFile = dataDirectory + "-tokens"
        try (tokens.joined(separator: "\n") + "\n").write(toFile: tokensFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: tokensFile) }
        _ = conversations

        try await Task.sleep(for: .seconds(1))
        let baseline = try rssKB(server.processIdentifier)
        // glibc's heap in use (parley serve only): what the connections keep, without what
        // the allocator holds free or the threads' stacks.
        let heapBaseline = bare ? nil : await Self.heapKB(url)
        var workers: [WorkerProcess] = []
        defer { for worker in workers { worker.stop() } }
        var failed = 0
        var opened = 0
        var sourceIndex = 0
        var half = baseline
        for (phase, share) in [count / 2, count - count / 2].enumerated() {
            var remaining = share
            var started: [WorkerProcess] = []
            while remaining > 0 {
                let n = min(remaining, perWorker)
                let worker = try WorkerProcess.connections(
                    port: port, path: bare ? "/ws" : "/api/v1/ws", count: n, firstIndex: opened,
                    source: "127.0.0.\(2 + sourceIndex)", tokensFile: bare ? nil : tokensFile)
                sourceIndex += 1
                opened += n
                remaining -= n
                started.append(worker)
            }
            workers += started
            for worker in started {
                let report = try await worker.ready()
                failed += report.failed
                if let error = report.error { FileHandle.standardError.write(Data("worker: \(error)\n".utf8)) }
            }
            try await Task.sleep(for: .milliseconds(Int(settle * 1000)))
            let rss = try rssKB(server.processIdentifier)
            if phase == 0 { half = rss } else {
                var measurement = Measurement(baseline: baseline, half: half, full: rss, failed: failed, count: count)
                if let heapBaseline, let heap = await Self.heapKB(url) { measurement.heap = (heapBaseline, heap) }
                if idle > 0 {
                    let sampler = ProcessSampler(pid: server.processIdentifier)
                    _ = await sampler.peak()
                    try await Task.sleep(for: .milliseconds(Int(idle * 1000)))
                    let used = await sampler.peak()
                    measurement.idleCore = used.cpuSeconds / max(used.wallSeconds, 0.001)
                }
                if !bare, let metrics = try? await URLSession.shared.data(from: url.appendingPathComponent("metrics")).0 {
                    let text = String(decoding: metrics, as: UTF8.self)
                    measurement.pings = Self.counter("parley_websocket_pings_total", in: text)
                    measurement.silentClosed = Self.counter("parley_websocket_silent_closed_total", in: text)
                }
                return measurement
            }
        }
        fatalError("unreachable")
    }

    /// `parley_malloc_in_use_bytes` of a running `parley serve`, in KB (nil where unread).
    static func heapKB(_ url: URL) async -> Double? {
        guard let data = try? await URLSession.shared.data(from: url.appendingPathComponent("metrics")).0 else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        guard text.contains("parley_malloc_in_use_bytes ") else { return nil }
        return Double(counter("parley_malloc_in_use_bytes", in: text)) / 1024
    }

    /// A counter's value in Prometheus' text format (0 when absent).
    static func counter(_ name: String, in text: String) -> Int {
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") || line.hasPrefix(name + "{") {
            if let value = line.split(separator: " ").last.flatMap({ Double($0) }) { return Int(value) }
        }
        return 0
    }
}

/// Waits until a spawned server answers `/api/v1/health` on `port` (60 s at most).
func waitUntilListening(port: Int, process: Process) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + .seconds(60)
    let url = URL(string: "http://127.0.0.1:\(port)/api/v1/health")!
    while clock.now < deadline {
        guard process.isRunning else { throw fail("the server process exited") }
        if let (_, response) = try? await URLSession.shared.data(from: url), response is HTTPURLResponse { return }
        try await Task.sleep(for: .milliseconds(100))
    }
    throw fail("the server did not listen on \(port)")
}

/// This executable (for spawning servers and workers).
func selfExecutable() -> URL {
    URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
}

/// VmRSS of a process, in KB.
func rssKB(_ pid: Int32) throws -> Double {
    let text = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
        let kb = Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
    else { throw fail("no VmRSS for \(pid)") }
    return kb
}

/// A worker process of a benchmark (`bench connections-worker`, `bench storm-worker`), spoken
/// to by lines: it writes a line when it is ready or done, reads its orders on stdin, and ends
/// when stdin closes.
///
/// `@unchecked Sendable` because Foundation's `Process` and `Pipe` are not marked Sendable on
/// Linux. It is safe as used: every stored property is a `let` set before the worker is shared,
/// and after that only the benchmark that owns it reads its output, writes its input and
/// closes it (`stop()`), one call at a time.
// SAFETY: every stored property is a `let` set before sharing; one owner uses it, sequentially.
final class WorkerProcess: @unchecked Sendable {
    let process: Process
    let input: Pipe
    let output: Pipe

    /// Starts this executable with `arguments`.
    init(arguments: [String]) throws {
        process = Process()
        process.executableURL = selfExecutable()
        process.arguments = arguments
        input = Pipe()
        output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    /// A `bench connections-worker`: opens its share of idle WebSockets, says READY, holds
    /// them until its stdin closes.
    static func connections(port: Int, path: String, count: Int, firstIndex: Int, source: String, tokensFile: String?) throws -> WorkerProcess {
        try WorkerProcess(arguments: [
            "bench", "connections-worker", "--port", "\(port)", "--path", path, "--count", "\(count)", "--first-index", "\(firstIndex)",
            "--source", source,
        ] + (tokensFile.map { ["--tokens-file", $0] } ?? []))
    }

    /// The next line of output, which must start with `word` and a space.
    func line(expecting word: String) async throws -> String {
        let fd = output.fileHandleForReading.fileDescriptor
        let line: String? = await Task.detached {
            var bytes: [UInt8] = []
            var byte: UInt8 = 0
            while read(fd, &byte, 1) == 1 {
                if byte == 10 { return String(decoding: bytes, as: UTF8.self) }
                bytes.append(byte)
            }
            return nil
        }.value
        guard let line, line.hasPrefix(word + " ") else { throw fail("a worker process stopped: \(line ?? "no output")") }
        return line
    }

    /// A connections worker's `READY <opened> <failed> [error]`.
    func ready() async throws -> (opened: Int, failed: Int, error: String?) {
        let parts = try await line(expecting: "READY").split(separator: " ", maxSplits: 3)
        return (Int(parts[1]) ?? 0, Int(parts[2]) ?? 0, parts.count > 3 ? String(parts[3]) : nil)
    }

    /// Writes one line to the worker's stdin.
    func send(_ line: String) {
        input.fileHandleForWriting.write(Data((line + "\n").utf8))
    }

    /// Closes its stdin and waits for it to end.
    func stop() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}

struct ConnectionsWorker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "connections-worker", abstract: "Opens idle WebSockets for `bench connections` and holds them until stdin closes.",
        shouldDisplay: false)

    @Option var host: String = "127.0.0.1"
    @Option var port: Int
    @Option var path: String = "/api/v1/ws"
    @Option var count: Int
    @Option(name: .customLong("first-index")) var firstIndex: Int = 0
    @Option(help: "Loopback source address to bind.") var source: String?
    @Option(name: .customLong("tokens-file")) var tokensFile: String?
    @Option var threads: Int = 1

    func run() async throws {
        let tokens = try tokensFile.map { try String(contentsOfFile: $0, encoding: .utf8).split(separator: "\n").map(String.init) } ?? []
        let specs = (0..<count).map { i -> SocketSpec in
            let index = firstIndex + i
            let group = index % 50
            let token = tokens.isEmpty ? nil : tokens[index % tokens.count]
            return SocketSpec(
                index: index, group: group, host: host, port: port, path: token == nil ? "\(path)?group=\(group)" : path, token: token,
                conversationId: "", isSender: false, localAddress: source)
        }
        let generator = LoadGenerator(threads: threads, policy: SendPolicy())
        let result = await generator.connect(specs, parallel: 32)
        print("READY \(count - result.failed) \(result.failed)" + (result.firstError.map { " \($0)" } ?? ""))
        fflush(nil)
        await Task.detached {
            var byte: UInt8 = 0
            while read(0, &byte, 1) == 1 {}
        }.value
        await generator.closeAll()
        await generator.shutdown()
    }
}
