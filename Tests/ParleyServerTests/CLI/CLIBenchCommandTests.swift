import Foundation
import ParleyTestSupport
import Testing

/// `parley bench`: options that cannot make a measurement are refused at once with one line
/// (no server started, no crash halfway), and two tiny real runs report figures that are
/// consistent with themselves: ordered percentiles, and every message delivered exactly once.
@Suite struct CLIBenchCommandTests {
    struct Refusal: Sendable, CustomTestStringConvertible {
        var arguments: [String]
        var message: String
        var testDescription: String { arguments.joined(separator: " ") }
    }

    static let unreachable = "http://127.0.0.1:1"

    static let refusals: [Refusal] = [
        Refusal(arguments: ["latency", "--count", "0"], message: "count must be positive"),
        Refusal(arguments: ["fanout", "--groups", "0"], message: "need at least one group of two"),
        Refusal(arguments: ["fanout", "--size", "1"], message: "need at least one group of two"),
        Refusal(arguments: ["fanout", "--groups", "2", "--size", "3", "--connections", "7"],
                message: "--connections must equal --groups × --size (6)"),
        Refusal(arguments: ["fanout", "--duration", "0"], message: "bad duration, warm-up, in-flight, threads or rate"),
        Refusal(arguments: ["fanout", "--warmup=-1"], message: "bad duration, warm-up, in-flight, threads or rate"),
        Refusal(arguments: ["fanout", "--in-flight", "0"], message: "bad duration, warm-up, in-flight, threads or rate"),
        Refusal(arguments: ["fanout", "--threads", "0"], message: "bad duration, warm-up, in-flight, threads or rate"),
        Refusal(arguments: ["fanout", "--rate=-5"], message: "bad duration, warm-up, in-flight, threads or rate"),
        Refusal(arguments: ["fanout", "--history", "10", "--server", unreachable], message: "--history needs the in-process server (no --server)"),
        Refusal(arguments: ["fanout", "--history=-1"], message: "--history must be 0 or more"),
        Refusal(arguments: ["multinode", "--servers", ","], message: "--servers needs at least one URL"),
        Refusal(arguments: ["multinode", "--servers", unreachable, "--cross", "--size", "3"],
                message: "--cross needs --senders-per-group below --size"),
        Refusal(arguments: ["multinode", "--servers", unreachable, "--cross", "--size", "3", "--senders-per-group", "3"],
                message: "--cross needs --senders-per-group below --size"),
        Refusal(arguments: ["multinode", "--servers", unreachable, "--groups", "0"], message: "need at least one group of two"),
        Refusal(arguments: ["catchup", "--messages", "0"], message: "bad messages or repetitions"),
        Refusal(arguments: ["catchup", "--repetitions", "0"], message: "bad messages or repetitions"),
        Refusal(arguments: ["connections", "--count", "1"], message: "need at least 2 connections and 20 users"),
        Refusal(arguments: ["connections", "--users", "19"], message: "need at least 2 connections and 20 users"),
        Refusal(arguments: ["connections", "--per-worker", "0"], message: "need at least 2 connections and 20 users"),
        Refusal(arguments: ["connections", "--heartbeat-seconds", "0"], message: "--idle is 0 or more seconds, --heartbeat-seconds at least 1"),
        Refusal(arguments: ["durable", "--senders", "0"], message: "bad senders, in-flight, duration or threads"),
        Refusal(arguments: ["durable", "--threads", "0"], message: "bad senders, in-flight, duration or threads"),
        Refusal(arguments: ["durable", "--database", "postgres://db/x", "--server", unreachable],
                message: "--database sets up the in-process server; with --server the running server's own database is used"),
        Refusal(arguments: ["list", "--conversations", "0"], message: "conversations and runs must be positive"),
        Refusal(arguments: ["list", "--runs", "0"], message: "conversations and runs must be positive"),
        Refusal(arguments: ["chaos", "--min-up", "2", "--max-up", "1"], message: "bad options"),
        Refusal(arguments: ["chaos", "--clients", "0"], message: "bad options"),
        Refusal(arguments: ["client", "--repetitions", "0"], message: "repetitions must be positive"),
        Refusal(arguments: ["client", "--repetitions=-1"], message: "repetitions must be positive"),
    ]

    @Test(arguments: refusals)
    func optionsThatCannotMeasureAreRefusedAtOnce(_ refusal: Refusal) async throws {
        let run = try await CLI.run(["bench"] + refusal.arguments, limit: 60)
        #expect(run.status == 1, "\(run.status): \(run.output)")
        #expect(run.output == "parley: \(refusal.message)\n", "\(run.output)")
    }

    /// The last line of a bench run that starts with `prefix`, parsed as a JSON object.
    static func json(_ output: String, prefix: String = "{") throws -> [String: Any] {
        let line = try #require(CLI.lines(output).last { $0.hasPrefix(prefix) }, "\(output)")
        let data = Data(line.dropFirst(prefix == "{" ? 0 : prefix.count).utf8)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(line)")
    }

    @Test(.heavy) func latencyReportsOrderedPercentilesOfEveryMessage() async throws {
        let run = try await CLI.run(["bench", "latency", "--count", "40"])
        #expect(run.status == 0, "\(run.output)")
        let json = try Self.json(run.output)
        #expect(json["scenario"] as? String == "latency" && json["count"] as? Int == 40)
        let receive = try #require(json["receive_ms"] as? [String: Double])
        let figures = ["p50", "p90", "p99", "max"].compactMap { receive[$0] }
        #expect(figures.count == 4 && figures.first! > 0 && figures == figures.sorted(), "receive \(receive)")
        let ack = try #require(json["ack_ms"] as? [String: Double]), ping = try #require(json["ping_ms"] as? [String: Double])
        #expect(ack["p50"]! > 0 && ack["p50"]! <= ack["p99"]! && ping["p50"]! > 0 && ping["p50"]! <= ping["p99"]!, "\(ack) \(ping)")
        #expect((json["messages_per_second"] as? Double ?? 0) > 0)
        #expect(run.output.contains("parley bench latency: 40 messages, one at a time, in-process server, SQLite"), "\(run.output)")
        for row in ["ping round trip (floor)", "send → stored ack", "send → received"] {
            #expect(CLI.lines(run.output).contains { $0.hasPrefix(row) }, "\(row): \(run.output)")
        }
    }

    @Test(.heavy) func fanoutWithVerifyReportsEveryMessageDeliveredOnce() async throws {
        let run = try await CLI.run([
            "bench", "fanout", "--groups", "2", "--size", "3", "--senders-per-group", "2", "--duration", "1", "--warmup", "0", "--verify",
        ])
        #expect(run.status == 0, "\(run.output)")
        for name in ["parley", "floor"] {
            let line = try #require(CLI.lines(run.output).first { $0.hasPrefix("\(name) exactly-once: ") }, "\(run.output)")
            let numbers = line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
            #expect(numbers.count == 5, "\(line)")
            guard numbers.count == 5 else { continue }
            // expected, delivered, missing, duplicates, strays
            #expect(numbers[0] > 0 && numbers[1] == numbers[0] && numbers[2] == 0 && numbers[3] == 0, "\(line)")
        }
        let json = try Self.json(run.output, prefix: "JSON ")
        #expect(json["connections"] as? Int == 6 && json["senders_per_group"] as? Int == 2, "\(json)")
        for name in ["parley", "floor"] {
            let figures = try #require(json[name] as? [String: Any], "\(json)")
            #expect(figures["connect_failures"] as? Int == 0 && figures["errors"] as? Int == 0, "\(name): \(figures)")
            let acked = figures["acked"] as? Int ?? 0, deliveries = figures["deliveries"] as? Int ?? 0
            #expect(acked > 0, "\(name): \(figures)")
            // In the window, each acked message reaches the two other members of its group, give
            // or take the messages between their ack and their deliveries at either edge of the
            // window: echoes counted as deliveries would make it 3 times, lost ones far fewer.
            #expect(abs(deliveries - 2 * acked) <= max(32, acked / 4), "\(name): \(acked) acked, \(deliveries) deliveries")
            let deliver = try #require(figures["deliver"] as? [String: Any])
            let percentiles = ["p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms"].compactMap { deliver[$0] as? Double }
            #expect(percentiles.count == 5 && percentiles == percentiles.sorted() && percentiles[0] > 0, "\(name): \(deliver)")
        }
    }
}
