import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The operator's files in deploy/: the Prometheus alert rules pass promtool and their own rule
/// tests (the alerts fire on a failing node's series, not on a healthy one's), and the Grafana
/// dashboard and the rules name only metrics Parley exports, with the labels it gives them.
@Suite struct ObservabilityFilesTests {
    static let repository = Repository.root
    static let rules = repository.appendingPathComponent("deploy/prometheus/parley-alerts.yml")
    static let ruleTests = repository.appendingPathComponent("deploy/prometheus/parley-alerts.test.yml")
    static let dashboard = repository.appendingPathComponent("deploy/grafana/parley-dashboard.json")

    @Test(.needs("promtool", package: "prometheus")) func theAlertRulesPassPromtoolAndTheirTests() async throws {
        let promtool = URL(fileURLWithPath: try #require(TestTools.path(of: "promtool")))
        let check = try await runToEndOffPool(promtool, ["check", "rules", Self.rules.path])
        #expect(check.status == 0, "\(check.output)")
        #expect(check.output.contains("SUCCESS: 11 rules found"), "\(check.output)")
        let tests = try await runToEndOffPool(promtool, ["test", "rules", Self.ruleTests.path])
        #expect(tests.status == 0, "\(tests.output)")
    }

    /// Every `parley_…` name in the two files, without a histogram's `_bucket`/`_sum`/`_count`.
    static func namedMetrics() throws -> Set<String> {
        let text = try String(contentsOf: rules, encoding: .utf8) + (try String(contentsOf: dashboard, encoding: .utf8))
        let pattern = try NSRegularExpression(pattern: "parley_[a-z0-9_]+")
        var names = Set<String>()
        for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            var name = String(text[Range(match.range, in: text)!])
            for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) { name.removeLast(suffix.count) }
            names.insert(name)
        }
        return names
    }

    /// The names the server's code records (each metric is recorded under a literal name).
    static func exportedMetrics() throws -> Set<String> {
        let sources = repository.appendingPathComponent("Sources/ParleyServer")
        let pattern = try NSRegularExpression(pattern: "\"(parley_[a-z0-9_]+)\"")
        var names = Set<String>()
        let walker = FileManager.default.enumerator(atPath: sources.path)
        while let file = walker?.nextObject() as? String {
            guard file.hasSuffix(".swift") else { continue }
            let text = try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8)
            for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                names.insert(String(text[Range(match.range(at: 1), in: text)!]))
            }
        }
        return names
    }

    @Test func theDashboardAndTheAlertsNameOnlyMetricsParleyExports() async throws {
        let named = try Self.namedMetrics()
        let exported = try Self.exportedMetrics()
        #expect(named.count >= 25, "\(named.sorted())")
        #expect(named.subtracting(exported).isEmpty, "named but never recorded: \(named.subtracting(exported).sorted())")
        // The dashboard is a Grafana dashboard: panels, each with Prometheus queries.
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: Self.dashboard)) as? [String: Any]
        let panels = try #require(json?["panels"] as? [[String: Any]])
        #expect(panels.count >= 10)
        #expect(panels.allSatisfy { (($0["targets"] as? [[String: Any]]) ?? []).contains { ($0["expr"] as? String)?.contains("parley_") == true } })

        // The labels the queries group by are the ones a real server writes.
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, _, direct) = try await server.directPair()
        _ = try await alice.api.send(.init(clientMessageId: "m1", text: "hi"), to: direct.id)
        let (data, _) = try await URLSession.shared.data(from: server.baseURL.appendingPathComponent("metrics"))
        let exposition = String(decoding: data, as: UTF8.self)
        let lines = exposition.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("parley_http_requests_total{") && $0.contains("status=\"") && $0.contains("route=\"") }, "\(exposition.prefix(2000))")
        #expect(lines.contains { $0.hasPrefix("parley_http_request_duration_seconds_bucket{") && $0.contains("route=\"") && $0.contains("le=\"") })
        #expect(lines.contains { $0.hasPrefix("parley_send_commit_seconds_bucket{") && $0.contains("le=\"") })
        #expect(lines.contains { $0.hasPrefix("parley_websocket_connections") })
    }
}
