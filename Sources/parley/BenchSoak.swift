import ArgumentParser
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyBench
import ParleyClient
import ParleyProtocol
import Synchronization

/// `parley bench soak`: a steady mixed load on a `parley serve` child for a chosen time, with
/// the server's memory, open files, queues and send latency sampled as it goes, and a verdict
/// on whether any of them keeps growing once warmed up (a leak shows as a slope, not a spike).
struct Soak: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A steady mixed load (sends, reads, typing, reconnects, uploads, history) for a while; samples the server's RSS, open files, queues and p99, and checks none grows without bound after warm-up.")

    @Option(help: "How long the load runs, in seconds.") var seconds: Double = 60
    @Option(help: "Seconds between samples.") var sample: Double = 5
    @Option(help: "Users, each with a WebSocket (groups of up to 10).") var users: Int = 40
    @Option(help: "Messages per second, all users together.") var rate: Double = 40
    @Option(help: "The share of the run before growth is judged (warm-up).") var warmup: Double = 0.25
    @Option(help: "Write the samples as JSON to this file.") var json: String?
    @Option(help: "Run the server under this program, split at spaces (a profiler: \"heaptrack -o /tmp/soak\"); RSS is then the wrapper's.")
    var wrap: String?

    /// One sample of the server.
    struct Sample: Codable {
        var at: Double
        var rssMB: Double
        /// SQLite's allocations, and glibc's in use and freed-but-kept, from /metrics (MB).
        var sqliteMB: Double?
        var heapMB: Double?
        var freeKeptMB: Double?
        var openFiles: Int
        var queuedFrames: Int
        var deepestQueue: Int
        var sends: Int
        var p50ms: Double
        var p99ms: Double
        var reconnects: Int
        var uploads: Int
        var errors: Int
    }

    /// What the load did since the last sample.
    final class Tally: Sendable {
        struct Window {
            var latencies: [Double] = []
            var reconnects = 0
            var uploads = 0
            var errors = 0
        }
        let window = Mutex(Window())
        func sent(_ seconds: Double) { window.withLock { $0.latencies.append(seconds) } }
        func count(_ path: WritableKeyPath<Window, Int>) { window.withLock { $0[keyPath: path] += 1 } }
        func take() -> Window {
            window.withLock { window in
                let taken = window
                window = Window()
                return taken
            }
        }
    }

    /// A user of the load: its connection (replaced at reconnects), its group, the newest seq it
    /// knows there.
    final class Member: Sendable {
        let auth: AuthResponse
        let group: EntityID
        let connection: Mutex<RealtimeConnection?>
        let lastSeq = Atomic<Int64>(0)
        init(auth: AuthResponse, group: EntityID) {
            self.auth = auth
            self.group = group
            connection = Mutex(nil)
        }
    }

    func run() async throws {
        guard seconds > 0, sample > 0, users >= 2, rate > 0, (0..<1).contains(warmup) else { throw fail("bad options") }
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("parley-soak-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let port = try freeLoopbackPort()
        let server = Process()
        let wrapper = (wrap ?? "").split(separator: " ").map(String.init)
        server.executableURL = wrapper.first.map { URL(fileURLWithPath: Self.executable($0)) } ?? binary
        server.arguments = wrapper.dropFirst() + (wrapper.isEmpty ? [] : [binary.path]) + [
            "serve", "--port", "\(port)", "--data-dir", work + "/data", "--log-level", "error", "--rate-limits", "off",
            "--drain-seconds", "0", "--open-organizations", "--link-previews", "off",
            // The load's sockets and requests keep their first tokens: they must outlive the run
            // (access tokens last 15 minutes by default; renewal is tested elsewhere).
            "--access-token-minutes", "\(Int(seconds / 60) + 10)",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["PARLEY_BCRYPT_COST"] = "4"
        server.environment = environment
        server.standardOutput = FileHandle.nullDevice
        try server.run()
        defer {
            // A wrapper (a shell script such as heaptrack's) may hold the signal until its child ends.
            if !wrapper.isEmpty { _ = try? FaultNetwork.run("/usr/bin/pkill", ["-TERM", "-P", "\(server.processIdentifier)"]) }
            server.terminate()
            server.waitUntilExit()
            try? FileManager.default.removeItem(atPath: work)
        }
        let url = URL(string: "http://127.0.0.1:\(port)")!
        try await Chaos.waitReady(url)

        // The cast: groups of up to 10 in one organization.
        let api = ParleyAPI(baseURL: url)
        var members: [Member] = []
        var accounts: [AuthResponse] = []
        for index in 0..<users {
            accounts.append(try await api.register(.init(
                organization: "soak", email: "user\(index)@soak.io", password: "soak-password", displayName: "User \(index)")))
        }
        for start in stride(from: 0, to: users, by: 10) {
            let team = Array(accounts[start..<min(users, start + 10)])
            guard team.count >= 2 else {
                members.append(Member(auth: team[0], group: members[0].group))
                continue
            }
            let group = try await ParleyAPI(baseURL: url, token: team[0].token).createConversation(
                .init(type: .group, participantIds: team.dropFirst().map(\.user.id), name: "soak \(start / 10)"))
            members += team.map { Member(auth: $0, group: group.id) }
        }
        for member in members { try await Self.connect(member, url) }
        let file = URL(fileURLWithPath: work + "/attachment.bin")
        try Data((0..<65_536).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: file)

        let tally = Tally()
        let memberList = members
        let rate = self.rate
        Self.say("soak: \(users) users in \((users + 9) / 10) groups, \(rate) msgs/s, typing, reads, reconnects, uploads, history; \(Int(seconds)) s, a sample every \(sample) s")
        Self.say("     t   RSS MB  SQLite  in use  kept  files  queued  deepest   sends  p50 ms  p99 ms  reconnects  uploads  errors")
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                // Sends: paced, each on its own task (a slow ack does not slow the pace).
                group.addTask {
                    var index = 0
                    let interval = Duration.seconds(1 / rate)
                    var next = ContinuousClock.now
                    while !Task.isCancelled {
                        next += interval
                        let member = memberList[index % memberList.count]
                        index += 1
                        let serial = index
                        Task {
                            let start = ContinuousClock.now
                            guard let connection = member.connection.withLock({ $0 }) else { return tally.count(\.errors) }
                            do {
                                let stored = try await connection.sendMessage(
                                    .init(conversationId: member.group, clientMessageId: "s\(serial)", text: "soak message \(serial)"))
                                member.lastSeq.store(stored.seq, ordering: .relaxed)
                                tally.sent((ContinuousClock.now - start).seconds)
                            } catch {
                                // A send on a connection being replaced: the reconnect's catch-up covers it.
                                tally.count(\.errors)
                            }
                        }
                        try? await Task.sleep(until: next, clock: .continuous)
                    }
                }
                // Typing and reads.
                group.addTask {
                    var index = 0
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .milliseconds(250))
                        index += 1
                        let member = memberList[(index * 7) % memberList.count]
                        guard let connection = member.connection.withLock({ $0 }) else { continue }
                        try? await connection.perform(.typing(.init(conversationId: member.group, isTyping: index % 4 != 0)))
                        let seq = member.lastSeq.load(ordering: .relaxed)
                        if seq > 0 { _ = try? await connection.read(.init(conversationId: member.group, upToSeq: seq)) }
                    }
                }
                // Reconnects with a catch-up, and history pages.
                group.addTask {
                    var index = 0
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(1))
                        index += 1
                        let member = memberList[(index * 13) % memberList.count]
                        do {
                            try await Self.connect(member, url)
                            let rest = ParleyAPI(baseURL: url, token: member.auth.token)
                            _ = try await rest.changes(member.group, since: max(0, member.lastSeq.load(ordering: .relaxed) - 20))
                            _ = try await rest.messages(member.group, before: nil, limit: 50)
                            tally.count(\.reconnects)
                        } catch {
                            tally.count(\.errors)
                        }
                    }
                }
                // Uploads, sent as files.
                group.addTask {
                    var index = 0
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(2))
                        index += 1
                        let member = memberList[(index * 5) % memberList.count]
                        let rest = ParleyAPI(baseURL: url, token: member.auth.token)
                        do {
                            let attachment = try await rest.upload(file: file, name: "soak.bin", contentType: "application/octet-stream")
                            _ = try await rest.send(
                                .init(clientMessageId: "u\(index)", text: "a file", type: .file, attachmentId: attachment.id), to: member.group)
                            tally.count(\.uploads)
                        } catch {
                            tally.count(\.errors)
                        }
                    }
                }
            }
        }

        // Samples.
        var samples: [Sample] = []
        let started = ContinuousClock.now
        var sends = 0
        while (ContinuousClock.now - started).seconds < seconds {
            try await Task.sleep(for: .seconds(sample))
            let window = tally.take()
            sends += window.latencies.count
            let metrics = (try? await Self.metrics(url)) ?? [:]
            let sorted = window.latencies.sorted()
            func quantile(_ q: Double) -> Double {
                sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))] * 1000
            }
            let point = Sample(
                at: (ContinuousClock.now - started).seconds, rssMB: Self.rssMB(server.processIdentifier),
                sqliteMB: metrics["parley_sqlite_memory_bytes"].map { $0 / 1_048_576 },
                heapMB: metrics["parley_malloc_in_use_bytes"].map { $0 / 1_048_576 },
                freeKeptMB: metrics["parley_malloc_free_kept_bytes"].map { $0 / 1_048_576 },
                openFiles: Self.openFiles(server.processIdentifier), queuedFrames: Int(metrics["parley_websocket_queued_frames"] ?? 0),
                deepestQueue: Int(metrics["parley_websocket_queue_depth_max"] ?? 0), sends: window.latencies.count,
                p50ms: quantile(0.5), p99ms: quantile(0.99), reconnects: window.reconnects, uploads: window.uploads, errors: window.errors)
            samples.append(point)
            Self.say(String(
                format: "%6.0f  %7.1f  %6.1f  %6.1f  %4.0f  %5ld  %6ld  %7ld  %6ld  %6.2f  %6.2f  %10ld  %7ld  %6ld", point.at, point.rssMB,
                point.sqliteMB ?? .nan, point.heapMB ?? .nan, point.freeKeptMB ?? .nan, point.openFiles,
                point.queuedFrames, point.deepestQueue, point.sends, point.p50ms, point.p99ms, point.reconnects, point.uploads, point.errors))
        }
        load.cancel()
        await load.value
        for member in members { await member.connection.withLock({ $0 })?.close() }
        if let json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted]
            try encoder.encode(samples).write(to: URL(fileURLWithPath: json))
        }

        // The verdict: after warm-up, compare the first and the last third of what is left, and
        // fit a line through it; a leak is growth that goes on, not one sample's peak.
        let settled = Array(samples.dropFirst(Int(Double(samples.count) * warmup)))
        guard settled.count >= 3 else { throw fail("too few samples after warm-up: run longer or sample more often") }
        let third = max(1, settled.count / 3)
        func mean(_ values: [Double]) -> Double { values.reduce(0, +) / Double(max(1, values.count)) }
        let rssEarly = mean(settled.prefix(third).map(\.rssMB)), rssLate = mean(settled.suffix(third).map(\.rssMB))
        let filesEarly = mean(settled.prefix(third).map { Double($0.openFiles) }), filesLate = mean(settled.suffix(third).map { Double($0.openFiles) })
        let slope = Self.slope(settled.map { ($0.at, $0.rssMB) }) * 3600
        // What of the resident size is SQLite's (its page caches fill up to cache_size per
        // connection), and what is the rest of the heap's, each as a slope after warm-up.
        let sqliteSlope = Self.slope(settled.compactMap { sample in sample.sqliteMB.map { (sample.at, $0) } }) * 3600
        let ownSlope = Self.slope(settled.compactMap { sample in
            sample.heapMB.map { heap in (sample.at, heap - (sample.sqliteMB ?? 0)) }
        }) * 3600
        let p99Early = mean(settled.prefix(third).map(\.p99ms)), p99Late = mean(settled.suffix(third).map(\.p99ms))
        let deepest = settled.map(\.deepestQueue).max() ?? 0
        let errors = samples.map(\.errors).reduce(0, +)
        let rssBounded = rssLate <= rssEarly * 1.25 + 16
        let filesBounded = filesLate <= filesEarly + 32
        let queuesBounded = (settled.suffix(third).map(\.queuedFrames).max() ?? 0) <= max(1000, 4 * users)
        let sentEnough = Double(sends) >= rate * seconds * 0.5
        func number(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }
        func state(_ bounded: Bool) -> String { bounded ? "bounded" : "GROWING" }
        Self.say("soak: \(sends) sends in \(number(seconds, 0)) s (\(number(Double(sends) / seconds))/s), \(errors) errors (sends racing a reconnect)")
        Self.say("after warm-up: RSS \(number(rssEarly)) -> \(number(rssLate)) MB (slope \(slope >= 0 ? "+" : "")\(number(slope)) MB/hour) \(state(rssBounded)); "
            + "open files \(number(filesEarly, 0)) -> \(number(filesLate, 0)) \(state(filesBounded)); "
            + "deepest queue \(deepest), queued frames at the end \(samples.last?.queuedFrames ?? 0) \(state(queuesBounded)); "
            + "p99 \(number(p99Early, 2)) -> \(number(p99Late, 2)) ms")
        if settled.contains(where: { $0.heapMB != nil }) {
            let first = settled[0], last = settled[settled.count - 1]
            Self.say("of which: SQLite \(number(first.sqliteMB ?? 0)) -> \(number(last.sqliteMB ?? 0)) MB (slope \(number(sqliteSlope)) MB/hour); "
                + "the rest of the heap in use \(number((first.heapMB ?? 0) - (first.sqliteMB ?? 0))) -> \(number((last.heapMB ?? 0) - (last.sqliteMB ?? 0))) MB "
                + "(slope \(number(ownSlope)) MB/hour); freed but kept by the allocator \(number(first.freeKeptMB ?? 0)) -> \(number(last.freeKeptMB ?? 0)) MB")
        }
        guard rssBounded, filesBounded, queuesBounded, sentEnough else {
            throw fail(sentEnough ? "something grew without bound (see above)" : "the load did not run: \(sends) sends")
        }
    }

    /// Writes a line at once, also into a file or a pipe (a long run is watched with tail -f;
    /// `print` would hold it in its buffer until the end).
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func connect(_ member: Member, _ url: URL) async throws {
        let connection = RealtimeConnection(serverURL: url, token: member.auth.token)
        _ = try await connection.connect()
        // Events are read and dropped: the soak measures the server, not this process.
        Task { for await _ in connection.events {} }
        let old = member.connection.withLock { slot in defer { slot = connection }; return slot }
        await old?.close()
    }

    /// A program's path: as given when it has a slash, else the first match on PATH.
    static func executable(_ name: String) -> String {
        guard !name.contains("/") else { return name }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) } ?? name
    }

    /// The gauges of `/metrics` by name (the first line of each).
    static func metrics(_ url: URL) async throws -> [String: Double] {
        let (data, _) = try await URLSession.shared.data(from: url.appendingPathComponent("metrics"))
        var values: [String: Double] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
            let parts = line.split(separator: " ")
            guard parts.count >= 2, let value = Double(parts[parts.count - 1]) else { continue }
            let name = String(parts[0].prefix { $0 != "{" })
            values[name] = max(values[name] ?? 0, value)
        }
        return values
    }

    /// The process's resident memory, from /proc (0 where there is none).
    static func rssMB(_ pid: Int32) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kilobytes / 1024
    }

    /// The process's open descriptors, from /proc.
    static func openFiles(_ pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
    }

    /// The least-squares slope of y over x.
    static func slope(_ points: [(Double, Double)]) -> Double {
        let n = Double(points.count)
        guard n >= 2 else { return 0 }
        let meanX = points.map(\.0).reduce(0, +) / n, meanY = points.map(\.1).reduce(0, +) / n
        let covariance = points.map { ($0.0 - meanX) * ($0.1 - meanY) }.reduce(0, +)
        let variance = points.map { ($0.0 - meanX) * ($0.0 - meanX) }.reduce(0, +)
        return variance == 0 ? 0 : covariance / variance
    }
}
