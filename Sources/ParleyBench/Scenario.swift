import Foundation
import Histogram
import Logging
import ParleyClient
import ParleyProtocol
import ParleyServer

/// A user the setup registered, and the group it belongs to.
public struct BenchMember: Sendable {
    /// The member's access token.
    public var token: String
    /// The member's user id.
    public var userId: EntityID
    /// The index of its group.
    public var group: Int
    /// Its group's conversation.
    public var conversationId: EntityID
}

/// Setting up users and conversations over HTTP (not timed).
public enum ParleySetup {
    /// The extra `message.send` data of each group for a variant: a root message sent by the
    /// group's first member (thread), or three other members' ids (mention; the first
    /// three members after the first, so the senders mention each other).
    static func variantData(_ variant: FanoutVariant, baseURL: URL, members: [BenchMember], size: Int) async throws -> [Int: String] {
        var extra: [Int: String] = [:]
        let groups = Dictionary(grouping: members, by: \.group)
        for (group, people) in groups {
            guard let first = people.first else { continue }
            switch variant {
            case .plain: break
            case .thread:
                let api = ParleyAPI(baseURL: baseURL, token: first.token)
                let root = try await api.send(.init(clientMessageId: "bench-root-\(UUID())", text: "bench thread"), to: first.conversationId)
                extra[group] = ",\"threadRootId\":\"\(root.id)\""
            case .mention:
                let named = people.prefix(4).dropFirst().map { "\"\($0.userId)\"" }
                extra[group] = ",\"mentions\":[" + named.joined(separator: ",") + "]"
            }
        }
        return extra
    }
    /// Registers users, at most `parallel` at a time; `organization(i)` names user i's organization.
    public static func registerUsers(
        baseURL: URL, count: Int, parallel: Int = 16, prefix: String, organization: @escaping @Sendable (Int) -> String
    ) async throws -> [AuthResponse] {
        let api = ParleyAPI(baseURL: baseURL)
        var users = [AuthResponse?](repeating: nil, count: count)
        try await withThrowingTaskGroup(of: (Int, AuthResponse).self) { tasks in
            var next = 0
            func add() {
                let index = next
                next += 1
                tasks.addTask {
                    let response = try await api.register(.init(
                        organization: organization(index), email: "u\(index)@\(prefix).bench", password: "bench-password",
                        displayName: "U\(index)"))
                    return (index, response)
                }
            }
            while next < count && next < parallel { add() }
            for try await (index, response) in tasks {
                users[index] = response
                if next < count { add() }
            }
        }
        return users.map { $0! }
    }

    /// `groups` group conversations of `size` members each, one organization per group (so
    /// presence stays inside the group, as in a company of that size).
    public static func groups(baseURL: URL, groups: Int, size: Int) async throws -> [BenchMember] {
        let prefix = "b" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
        let users = try await registerUsers(baseURL: baseURL, count: groups * size, prefix: prefix) { "\(prefix)-g\($0 / size)" }
        var members: [BenchMember] = []
        try await withThrowingTaskGroup(of: (Int, EntityID).self) { tasks in
            for group in 0..<groups {
                let slice = Array(users[group * size..<(group + 1) * size])
                tasks.addTask {
                    let owner = ParleyAPI(baseURL: baseURL, token: slice[0].token)
                    let conversation = try await owner.createConversation(.init(
                        type: .group, participantIds: slice.dropFirst().map(\.user.id), name: "bench group \(group)"))
                    return (group, conversation.id)
                }
            }
            var ids = [EntityID?](repeating: nil, count: groups)
            for try await (group, id) in tasks { ids[group] = id }
            for (index, user) in users.enumerated() {
                members.append(BenchMember(token: user.token, userId: user.user.id, group: index / size, conversationId: ids[index / size]!))
            }
        }
        return members
    }

    /// Gives every member but the first of each group `count` unread messages: the first member
    /// sends them straight through the store (pipelined, group-committed, no live sockets yet),
    /// so a backlog of 100,000 takes seconds rather than an HTTP request each.
    public static func seedHistory(store: any ParleyStore, members: [BenchMember], count: Int) async throws {
        let owners = Dictionary(grouping: members, by: \.group).compactMap { $0.value.first }
        try await withThrowingTaskGroup(of: Void.self) { groups in
            for owner in owners {
                groups.addTask {
                    var pending: [PendingSend] = []
                    for n in 0..<count {
                        pending.append(store.enqueueSend(MessageDraft(
                            conversationId: owner.conversationId, senderId: owner.userId, clientMessageId: "history-\(n)",
                            type: .text, text: "history \(n)", now: Date())))
                        if pending.count == 1024 {
                            for send in pending { _ = try await send.result() }
                            pending.removeAll(keepingCapacity: true)
                        }
                    }
                    for send in pending { _ = try await send.result() }
                }
            }
            try await groups.waitForAll()
        }
    }

    /// An in-process Parley server on a temporary SQLite file, or on `databaseURL` (PostgreSQL), with bcrypt cost 4.
    public static func startServer(databaseURL: String? = nil) async throws -> (url: URL, databasePath: String, stop: @Sendable () async -> Void) {
        let started = try await startApp(databaseURL: databaseURL)
        return (started.url, started.databasePath, started.stop)
    }

    /// The same, with the app itself (its store, for seeding).
    public static func startApp(databaseURL: String? = nil) async throws -> (
        app: ParleyApp, url: URL, databasePath: String, stop: @Sendable () async -> Void
    ) {
        var configuration = ServerConfiguration()
        configuration.openOrganizations = true  // registers many users into one organization by name
        configuration.rateLimits = .off  // a benchmark floods on purpose
        configuration.databaseURL = databaseURL
        configuration.port = 0
        configuration.dataDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("parley-bench-\(UUID().uuidString)").path
        configuration.bcryptCost = 4
        configuration.logLevel = .error
        var logger = Logger(label: "parley.bench")
        logger.logLevel = .error
        let app = try await ParleyApp(configuration: configuration, logger: logger)
        let running = try await app.startInBackground()
        let directory = configuration.dataDirectory
        return (app, URL(string: "http://127.0.0.1:\(running.port)")!, configuration.databasePath, {
            await running.stop()
            try? FileManager.default.removeItem(atPath: directory)
        })
    }
}

/// One host:port a generator drives.
public struct BenchEndpoint: Sendable {
    /// The server's host name or address.
    public var host: String
    /// The server's port.
    public var port: Int
    /// The WebSocket path, e.g. `/api/v1/ws`.
    public var path: String

    /// An endpoint from its parts.
    public init(host: String, port: Int, path: String) {
        self.host = host
        self.port = port
        self.path = path
    }

    /// `http://host:port` → the Parley WebSocket endpoint.
    public init(parley url: URL) throws {
        guard let host = url.host else { throw BenchError("bad server URL \(url)") }
        self.init(host: host, port: url.port ?? (url.scheme == "https" ? 443 : 80), path: "/api/v1/ws")
    }
}

/// The figures of one generator run.
public struct RunResult: Sendable {
    /// The merged counters and latencies of every event loop.
    public var stats: LoadStats
    /// How long the measurement window lasted, in seconds.
    public var seconds: Double
    /// How many sockets failed to connect.
    public var connectFailures: Int
    /// The first connect error, if any.
    public var connectError: String?
    /// Every connected socket's receipt log when the policy verifies, else empty.
    public var logs: [ReceiptLog]
    /// Every member the run was to have, socket index → group (connected or not), so that
    /// one whose socket never connected counts as missing what it should have received.
    public var members: [Int: Int] = [:]

    /// Positively acknowledged sends per second in the measurement window.
    public var messagesPerSecond: Double { Double(stats.acked) / seconds }
    /// Messages received from other members per second in the measurement window.
    public var deliveriesPerSecond: Double { Double(stats.deliveries) / seconds }
}

/// Specs and runs shared by the scenarios.
public enum LoadRun {
    /// Sockets for members of groups: the first `sendersPerGroup` of each group send; socket i
    /// goes to endpoint `endpoint(i, isSender)`.
    public static func specs(
        members: [(group: Int, conversationId: String, token: String?)], size: Int, sendersPerGroup: Int,
        endpoint: (Int, Bool) -> BenchEndpoint
    ) -> [SocketSpec] {
        members.enumerated().map { index, member in
            let isSender = index % size < sendersPerGroup
            let target = endpoint(index, isSender)
            var path = target.path
            if member.token == nil { path += (path.contains("?") ? "&" : "?") + "group=\(member.group)" }
            return SocketSpec(
                index: index, group: member.group, host: target.host, port: target.port, path: path, token: member.token,
                conversationId: member.conversationId, isSender: isSender)
        }
    }

    /// Connects every socket, sends for `warmup` then `duration` seconds (measuring the
    /// second part), stops, drains, and closes.
    public static func run(
        specs: [SocketSpec], policy: SendPolicy, threads: Int, warmup: Double, duration: Double, drainTimeout: Duration = .seconds(10)
    ) async throws -> RunResult {
        let generator = LoadGenerator(threads: threads, policy: policy)
        debug("connecting \(specs.count) sockets")
        let connected = await generator.connect(specs)
        debug("connected: \(connected.failed) failed \(connected.firstError ?? "")")
        if connected.failed == specs.count {
            await generator.closeAll()
            await generator.shutdown()
            throw BenchError("no socket connected: \(connected.firstError ?? "?")")
        }
        await generator.startSending()
        if warmup > 0 { try await Task.sleep(for: .milliseconds(Int(warmup * 1000))) }
        await generator.setMeasuring(true)
        let clock = ContinuousClock()
        let start = clock.now
        if let limit = policy.messagesPerSender {
            // Until every connected sender has sent its share (or the duration ran out): a
            // sender whose socket never opened sends nothing, and waiting for its share would
            // pad the measured time with idle seconds.
            let expected = (specs.filter(\.isSender).count - connected.failedSenders) * limit
            while clock.now - start < .milliseconds(Int(duration * 1000)) {
                let stats = await generator.stats()
                if stats.totalAcked + stats.totalErrors >= expected { break }
                try await Task.sleep(for: .milliseconds(20))
            }
        } else {
            try await Task.sleep(for: .milliseconds(Int(duration * 1000)))
        }
        debug("stopping")
        await generator.setMeasuringOff()
        let elapsed = clock.now - start
        await generator.stopSending()
        await generator.drain(timeout: drainTimeout)
        let stats = await generator.stats()
        let logs = policy.verify ? await generator.receiptLogs() : []
        await generator.closeAll()
        await generator.shutdown()
        return RunResult(
            stats: stats, seconds: elapsed.seconds, connectFailures: connected.failed, connectError: connected.firstError, logs: logs,
            members: Dictionary(specs.map { ($0.index, $0.group) }, uniquingKeysWith: { first, _ in first }))
    }

    /// Exactly-once check over receipt logs: every positively acked message of every sender
    /// arrived once at every other member of its group. A member of `result.members` without a
    /// log (its socket never connected) received nothing: all it should have had is missing.
    public static func verify(_ result: RunResult) -> (expected: Int, delivered: Int, missing: Int, duplicates: Int, strays: Int) {
        var byGroup: [Int: [ReceiptLog]] = [:]
        for log in result.logs { byGroup[log.group, default: []].append(log) }
        let logged = Set(result.logs.map(\.socket))
        for (socket, group) in result.members where !logged.contains(socket) {
            byGroup[group, default: []].append(ReceiptLog(socket: socket, group: group, counts: [:], acked: 0))
        }
        var expected = 0, delivered = 0, missing = 0, duplicates = 0, strays = 0
        for (_, logs) in byGroup {
            let senders = logs.filter { $0.acked > 0 }
            for receiver in logs {
                var wanted = Set<UInt64>()
                for sender in senders where sender.socket != receiver.socket {
                    for n in 0..<sender.acked { wanted.insert(UInt64(sender.socket) << 32 | UInt64(n)) }
                }
                expected += wanted.count
                for key in wanted {
                    let times = receiver.counts[key] ?? 0
                    if times == 0 { missing += 1 } else { delivered += 1 }
                    if times > 1 { duplicates += times - 1 }
                }
                strays += receiver.counts.keys.filter { !wanted.contains($0) }.count
            }
        }
        return (expected, delivered, missing, duplicates, strays)
    }
}

extension LoadGenerator {
    /// Closes the measurement window.
    public func setMeasuringOff() async { await setMeasuring(false) }
}

extension Duration {
    /// In seconds, as a Double.
    public var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// Percentiles of a nanosecond histogram, in milliseconds.
public struct LatencySummary: Sendable {
    /// How many values the histogram holds.
    public var count: UInt64
    /// The 50th, 90th, 99th and 99.9th percentiles and the maximum, in milliseconds (0 when empty).
    public var p50: Double, p90: Double, p99: Double, p999: Double, max: Double

    /// The summary of a histogram of nanoseconds.
    public init(_ histogram: Histogram<UInt64>) {
        count = histogram.totalCount
        func ms(_ value: UInt64) -> Double { Double(value) / 1e6 }
        if count == 0 {
            p50 = 0; p90 = 0; p99 = 0; p999 = 0; max = 0
        } else {
            p50 = ms(histogram.valueAtPercentile(50))
            p90 = ms(histogram.valueAtPercentile(90))
            p99 = ms(histogram.valueAtPercentile(99))
            p999 = ms(histogram.valueAtPercentile(99.9))
            max = ms(histogram.max)
        }
    }

    /// The count and the figures as `p50_ms` ... `max_ms`, for a JSON line.
    public var json: [String: Any] {
        ["count": Int(count), "p50_ms": p50, "p90_ms": p90, "p99_ms": p99, "p999_ms": p999, "max_ms": max]
    }

    /// The five figures as table columns, 9 characters each with 2 decimals.
    public var row: String {
        String(format: "%9.2f%9.2f%9.2f%9.2f%9.2f", p50, p90, p99, p999, max)
    }
}

/// Pads for table columns.
public func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

/// Prints the one JSON line every scenario ends with.
public func printJSONLine(_ object: [String: Any]) {
    if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
        print("JSON " + String(decoding: data, as: UTF8.self))
    }
}

/// Progress on stderr when PARLEY_BENCH_DEBUG is set.
func debug(_ text: @autoclosure () -> String) {
    if ProcessInfo.processInfo.environment["PARLEY_BENCH_DEBUG"] != nil {
        FileHandle.standardError.write(Data("[bench] \(text())\n".utf8))
    }
}
