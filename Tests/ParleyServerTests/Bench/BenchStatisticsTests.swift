import Foundation
import Histogram
import NIOCore
@testable import ParleyBench
import Testing

/// The benchmark's arithmetic, with known inputs: percentiles, merged counters, the
/// measurement window, rates, the byte scanners of the receive path and the socket specs.
@Suite struct BenchStatisticsTests {
    /// A histogram of `values` milliseconds, recorded in nanoseconds as the generator does.
    static func histogram(milliseconds values: some Sequence<UInt64>) -> Histogram<UInt64> {
        var histogram = LoadStats().delivery
        for value in values {
            let recorded = histogram.record(value * 1_000_000)
            #expect(recorded)
        }
        return histogram
    }

    /// Whether `value` is within 0.2 % of `expected` (the histogram keeps 3 significant digits).
    static func near(_ value: Double, _ expected: Double) -> Bool {
        abs(value - expected) <= expected * 0.002
    }

    // MARK: LatencySummary

    @Test func anEmptyHistogramSummarizesToZeros() {
        let summary = LatencySummary(LoadStats().ack)
        #expect(summary.count == 0)
        #expect([summary.p50, summary.p90, summary.p99, summary.p999, summary.max] == [0, 0, 0, 0, 0])
        #expect(summary.row == "     0.00     0.00     0.00     0.00     0.00")
    }

    @Test func percentilesOfOneToAThousandMillisecondsAreTheRanksInMilliseconds() {
        let summary = LatencySummary(Self.histogram(milliseconds: 1...1000))
        #expect(summary.count == 1000)
        #expect(Self.near(summary.p50, 500), "p50 \(summary.p50)")
        #expect(Self.near(summary.p90, 900), "p90 \(summary.p90)")
        #expect(Self.near(summary.p99, 990), "p99 \(summary.p99)")
        #expect(Self.near(summary.p999, 999), "p99.9 \(summary.p999)")
        #expect(Self.near(summary.max, 1000), "max \(summary.max)")
        #expect(summary.p50 < summary.p90 && summary.p90 < summary.p99 && summary.p99 < summary.p999 && summary.p999 <= summary.max)
    }

    @Test func oneSlowOutlierShowsOnlyInTheTopPercentilesAndTheMaximum() {
        // 999 fast values of 2 ms and a single one of 5 s.
        let summary = LatencySummary(Self.histogram(milliseconds: Array(repeating: 2, count: 999) + [5000]))
        #expect(Self.near(summary.p50, 2) && Self.near(summary.p99, 2), "\(summary.p50) \(summary.p99)")
        #expect(Self.near(summary.p999, 2), "one value in a thousand is above p99.9: \(summary.p999)")
        #expect(Self.near(summary.max, 5000), "\(summary.max)")
    }

    @Test func theJSONAndTheRowCarryTheSameFigures() throws {
        let summary = LatencySummary(Self.histogram(milliseconds: [10, 20, 30, 40]))
        let json = summary.json
        #expect(Set(json.keys) == ["count", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms"])
        #expect(json["count"] as? Int == 4)
        #expect(json["p50_ms"] as? Double == summary.p50 && json["max_ms"] as? Double == summary.max)
        // Nine characters a column, two decimals: five columns parse back to the figures.
        #expect(summary.row.count == 45)
        let columns = stride(from: 0, to: 45, by: 9).map { start -> Double in
            let from = summary.row.index(summary.row.startIndex, offsetBy: start)
            return Double(summary.row[from..<summary.row.index(from, offsetBy: 9)].trimmingCharacters(in: .whitespaces)) ?? -1
        }
        let figures = [summary.p50, summary.p90, summary.p99, summary.p999, summary.max]
        #expect(zip(columns, figures).allSatisfy { abs($0 - $1) < 0.006 }, "\(summary.row) against \(figures)")
        _ = try JSONSerialization.data(withJSONObject: json)
    }

    // MARK: LoadStats

    static func stats(seed: Int, error: String? = nil) -> LoadStats {
        var stats = LoadStats()
        stats.sent = seed; stats.acked = seed + 1; stats.errors = seed + 2; stats.deliveries = seed + 3; stats.echoes = seed + 4
        stats.totalSent = seed + 5; stats.totalAcked = seed + 6; stats.totalErrors = seed + 7
        stats.totalDeliveries = seed + 8; stats.totalEchoes = seed + 9
        stats.closed = seed + 10; stats.late = seed + 11; stats.catchUps = seed + 12; stats.outOfOrder = seed + 13
        stats.firstError = error
        _ = stats.delivery.record(UInt64(seed + 1) * 1_000_000)
        _ = stats.ack.record(UInt64(seed + 1) * 2_000_000)
        return stats
    }

    /// Every counter, in a fixed order, so a forgotten one in `merge` shows up.
    static func counters(_ stats: LoadStats) -> [Int] {
        [stats.sent, stats.acked, stats.errors, stats.deliveries, stats.echoes, stats.totalSent, stats.totalAcked, stats.totalErrors,
         stats.totalDeliveries, stats.totalEchoes, stats.closed, stats.late, stats.catchUps, stats.outOfOrder]
    }

    @Test func mergingAddsEveryCounterAndBothHistograms() {
        var merged = LoadStats()
        merged.merge(Self.stats(seed: 100))
        merged.merge(Self.stats(seed: 1000))
        #expect(Self.counters(merged) == (0..<14).map { 1100 + 2 * $0 })
        #expect(merged.delivery.totalCount == 2 && merged.ack.totalCount == 2)
        #expect(Self.near(Double(merged.delivery.max) / 1e6, 1001) && Self.near(Double(merged.delivery.min) / 1e6, 101))
        #expect(Self.near(Double(merged.ack.max) / 1e6, 2002))
    }

    @Test func mergingKeepsTheFirstErrorSeen() {
        var merged = LoadStats()
        merged.merge(Self.stats(seed: 1))
        #expect(merged.firstError == nil)
        merged.merge(Self.stats(seed: 2, error: "first"))
        merged.merge(Self.stats(seed: 3, error: "second"))
        #expect(merged.firstError == "first")
    }

    @Test func openingTheWindowClearsOnlyTheWindowFigures() {
        var stats = Self.stats(seed: 10)
        stats.resetWindow()
        let window: [Int] = [stats.sent, stats.acked, stats.errors, stats.deliveries, stats.echoes, stats.late]
        #expect(window == [0, 0, 0, 0, 0, 0])
        #expect(stats.delivery.totalCount == 0 && stats.ack.totalCount == 0)
        // The whole run's figures and the seq checks survive the window.
        let totals: [Int] = [stats.totalSent, stats.totalAcked, stats.totalErrors, stats.totalDeliveries, stats.totalEchoes]
        #expect(totals == [15, 16, 17, 18, 19])
        let kept: [Int] = [stats.closed, stats.catchUps, stats.outOfOrder]
        #expect(kept == [20, 22, 23])
    }

    // MARK: RunResult, Duration, pad

    @Test func ratesAreWindowCountsOverTheWindowSeconds() {
        var stats = LoadStats()
        stats.acked = 300
        stats.deliveries = 1200
        stats.totalAcked = 9999  // the whole run does not count
        let result = RunResult(stats: stats, seconds: 1.5, connectFailures: 0, connectError: nil, logs: [])
        #expect(result.messagesPerSecond == 200)
        #expect(result.deliveriesPerSecond == 800)
    }

    @Test func durationSecondsKeepsTheFraction() {
        #expect(Duration.milliseconds(1500).seconds == 1.5)
        #expect(Duration.nanoseconds(1).seconds == 1e-9)
        #expect(Duration.seconds(90).seconds == 90)
        #expect(abs(Duration.microseconds(2_000_250).seconds - 2.00025) < 1e-12)
    }

    @Test func padFillsToTheWidthAndNeverCuts() {
        #expect(pad("ab", 5) == "ab   ")
        #expect(pad("abcde", 5) == "abcde")
        #expect(pad("abcdefg", 5) == "abcdefg")
        #expect(pad("", 3) == "   ")
    }

    // MARK: The receive path's byte scanners

    static func scan<T>(_ text: String, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        Array(text.utf8).withUnsafeBytes(body)
    }

    @Test func findLocatesANeedleAnywhereButOnlyWholeAndWithinTheLimit() {
        let frame = #"{"replyTo":"12","ok":true}"#
        #expect(Self.scan(frame) { find(Marker.replyTo, in: $0) } == 1)
        #expect(Self.scan(frame) { find(Marker.okTrue, in: $0) } == 16)
        #expect(Self.scan(frame) { find(Marker.okTrue, in: $0, limit: 24) } == nil, "the needle ends past the limit")
        #expect(Self.scan(frame) { find(Marker.okTrue, in: $0, limit: 25) } == 16)
        #expect(Self.scan(frame) { find(Marker.replyTo, in: $0, from: 2) } == nil)
        #expect(Self.scan(#"{"ok":false}"#) { find(Marker.okTrue, in: $0) } == nil)
        // A prefix that starts a near match, then the real one.
        #expect(Self.scan("pb pb|pb|") { find(Marker.stamp, in: $0) } == 3)
        #expect(Self.scan("pb|") { find(Marker.stamp, in: $0) } == 0, "a needle filling the whole buffer")
        #expect(Self.scan("pb") { find(Marker.stamp, in: $0) } == nil, "a buffer shorter than the needle")
        #expect(Self.scan("") { find(Marker.stamp, in: $0) } == nil)
        #expect(Self.scan(#""type":"message.created","seq":7"#) { find(Marker.seq, in: $0) } == 25)
    }

    @Test func readNumberStopsAtTheFirstNonDigit() {
        let (seq, after) = Self.scan(#""seq":4294967312,"x""#) { readNumber($0, 6) }
        #expect(seq == 4_294_967_312 && after == 16)
        let (zero, same) = Self.scan("abc") { readNumber($0, 0) }
        #expect(zero == 0 && same == 0)
        let (tail, end) = Self.scan("pb|42") { readNumber($0, 3) }
        #expect(tail == 42 && end == 5, "a number running to the end of the buffer")
        let (stamp, a) = Self.scan("pb|123|7|3| bench") { readNumber($0, 3) }
        let (sender, b) = Self.scan("pb|123|7|3| bench") { readNumber($0, a + 1) }
        let (number, _) = Self.scan("pb|123|7|3| bench") { readNumber($0, b + 1) }
        #expect([stamp, sender, number] == [123, 7, 3])
    }

    @Test func theFloorRepliesWithTheFramesFirstStringValue() {
        func first(_ text: String) -> String {
            var buffer = ByteBufferAllocator().buffer(capacity: text.utf8.count + 4)
            buffer.writeString("xx")  // the frame need not start at index 0 of its buffer
            buffer.moveReaderIndex(forwardBy: 2)
            buffer.writeString(text)
            return String(buffer: BareServer.firstString(in: buffer))
        }
        #expect(first(#"{"id":"123456","type":"message.send"}"#) == "123456")
        #expect(first(#"{"id" : "a b","x":"y"}"#) == "a b")
        #expect(first(#"{"id":""}"#) == "")
        #expect(first(#"{"id":"unterminated"#) == "")
        #expect(first(#"{"count":12}"#) == "")
        #expect(first("no colon at all") == "")
    }

    // MARK: Endpoints and socket specs

    @Test func aParleyURLBecomesItsWebSocketEndpoint() throws {
        let plain = try BenchEndpoint(parley: URL(string: "http://127.0.0.1:8080")!)
        #expect(plain.host == "127.0.0.1" && plain.port == 8080 && plain.path == "/api/v1/ws")
        #expect(try BenchEndpoint(parley: URL(string: "http://chat.example.com")!).port == 80)
        #expect(try BenchEndpoint(parley: URL(string: "https://chat.example.com")!).port == 443)
        #expect(try BenchEndpoint(parley: URL(string: "https://chat.example.com:9443/")!).port == 9443)
        #expect(throws: BenchError.self) { try BenchEndpoint(parley: URL(string: "just-a-path")!) }
    }

    @Test func specsMarkTheFirstSendersOfEachGroupAndRouteEachSocket() {
        let members = (0..<6).map { (group: $0 / 3, conversationId: "c\($0 / 3)", token: String?.some("t\($0)")) }
        var asked: [(Int, Bool)] = []
        let specs = LoadRun.specs(members: members, size: 3, sendersPerGroup: 2) { index, isSender in
            asked.append((index, isSender))
            return BenchEndpoint(host: isSender ? "send" : "receive", port: 1000 + index, path: "/api/v1/ws")
        }
        #expect(specs.map(\.isSender) == [true, true, false, true, true, false])
        #expect(specs.map(\.index) == Array(0..<6) && specs.map(\.group) == [0, 0, 0, 1, 1, 1])
        #expect(specs.map(\.conversationId) == ["c0", "c0", "c0", "c1", "c1", "c1"])
        #expect(specs.map(\.host) == ["send", "send", "receive", "send", "send", "receive"])
        #expect(specs.map(\.port) == Array(1000..<1006))
        #expect(specs.map(\.token) == (0..<6).map { "t\($0)" })
        #expect(specs.allSatisfy { $0.path == "/api/v1/ws" }, "a socket with a token needs no group in its path")
        #expect(asked.map(\.0) == Array(0..<6) && asked.map(\.1) == specs.map(\.isSender))
    }

    @Test func tokenlessSpecsJoinTheirGroupThroughTheQuery() {
        let members = (0..<4).map { (group: $0 / 2, conversationId: "g\($0 / 2)", token: String?.none) }
        let plain = LoadRun.specs(members: members, size: 2, sendersPerGroup: 1) { _, _ in
            BenchEndpoint(host: "h", port: 1, path: "/ws")
        }
        #expect(plain.map(\.path) == ["/ws?group=0", "/ws?group=0", "/ws?group=1", "/ws?group=1"])
        let withQuery = LoadRun.specs(members: members, size: 2, sendersPerGroup: 1) { _, _ in
            BenchEndpoint(host: "h", port: 1, path: "/ws?v=2")
        }
        #expect(withQuery.map(\.path) == ["/ws?v=2&group=0", "/ws?v=2&group=0", "/ws?v=2&group=1", "/ws?v=2&group=1"])
    }

    @Test func fanoutOptionsCountConnectionsAndCapSendersAtTheGroupSize() {
        var options = FanoutOptions()
        options.groups = 4
        options.size = 7
        #expect(options.connections == 28)
        #expect(options.senders == 7, "no --senders-per-group: every member sends")
        options.sendersPerGroup = 3
        #expect(options.senders == 3)
        options.sendersPerGroup = 50
        #expect(options.senders == 7)
        options.rate = 250
        options.inFlight = 5
        options.verify = true
        options.messagesPerSender = 9
        let policy = options.policy
        #expect(policy.rate == 250 && policy.inFlight == 5 && policy.verify && policy.messagesPerSender == 9)
    }

    @Test func everyPolicyHasItsOwnNonceSoRunsAgainstOneServerNeverCollide() {
        let nonces = Set((0..<50).map { _ in SendPolicy().nonce })
        #expect(nonces.count >= 49, "clientMessageIds of two runs would repeat")
        let policy = SendPolicy()
        #expect(policy.rate == 0 && policy.inFlight == 2 && policy.messagesPerSender == nil && !policy.verify)
    }

    @Test func aFreeLoopbackPortCanBeListenedOnAtOnce() throws {
        let port = try freeLoopbackPort()
        #expect((1024...65535).contains(port))
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(bound == 0, "the port handed out is still taken")
    }
}
