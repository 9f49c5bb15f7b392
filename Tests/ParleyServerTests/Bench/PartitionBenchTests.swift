import Foundation
import ParleyTestSupport
import Testing

/// A short `parley bench partition` in the suite: two nodes and PostgreSQL in network
/// namespaces of the run's own, links cut and healed, PostgreSQL restarted and nodes killed
/// while two SDK client processes send; the bench fails unless nothing is lost, doubled or out
/// of order and every client ends with the server's copy. It needs root, iproute2 and
/// PostgreSQL's binaries (`scripts/test.sh` and `.ci/run` have them); docs/benchmarks.md has
/// the long runs.
@Suite(.enabled(if: getuid() == 0 && TestTools.mayRun("ip") && TestTools.mayRun("pg_config"), "needs root, iproute2 and PostgreSQL"))
struct PartitionBenchTests {
    @Test(.heavy) func cutLinksAndRestartsLoseDoubleAndReorderNothing() async throws {
        let (output, report) = try await Self.partition([
            "--clients", "2", "--messages", "300", "--min-fault", "1", "--max-fault", "3", "--seed", "3"])
        let faults = report["faults"] as? [String: Any] ?? [:]
        let count = faults.values.compactMap { ($0 as? [String: Any])?["count"] as? Int }.reduce(0, +)
        #expect(count >= 1, "at least one fault while the clients sent: \(output)")
        // Nothing of the run is left behind: no namespace, no bridge.
        let (_, namespaces) = try runToEnd(URL(fileURLWithPath: TestTools.path(of: "ip") ?? "/usr/sbin/ip"), ["netns", "list"])
        #expect(!namespaces.split(separator: "\n").contains { $0.hasPrefix("pf") && $0.contains("-n") }, "\(namespaces)")
    }

    /// Only the lossy link: a node's outgoing packets 200 ms late and 5 % lost (iptables and
    /// `parley bench link-delay`, this kernel having no netem), half the clients behind it.
    @Test(.heavy, .enabled(if: TestTools.mayRun("iptables"), "needs iptables"))
    func aLateAndLossyLinkLosesDoublesAndReordersNothing() async throws {
        let (output, report) = try await Self.partition([
            "--faults", "lossy-link", "--clients", "2", "--messages", "300", "--min-fault", "3", "--max-fault", "5", "--seed", "4"])
        let faults = report["faults"] as? [String: Any] ?? [:]
        #expect(Set(faults.keys) == ["200 ms delay, 5 % loss"], "\(output)")
        #expect(((faults["200 ms delay, 5 % loss"] as? [String: Any])?["count"] as? Int ?? 0) >= 1, "\(output)")
        // The delayer ended with its fault.
        let (_, processes) = try runToEnd(URL(fileURLWithPath: "/bin/sh"), ["-c", "pgrep -f 'bench link-[d]elay' || true"])
        #expect(processes.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(processes)")
    }

    /// The same behind HAProxy reading each node's /ready: the clients share one address, and
    /// a node that cannot write (or cannot be reached) is taken out and its sessions cut, so
    /// its clients reconnect to the other node; still nothing lost, doubled or out of order.
    @Test(.heavy, .enabled(if: TestTools.mayRun("haproxy"), "needs HAProxy"))
    func behindABalancerClientsMoveAndLoseNothing() async throws {
        let (output, _) = try await Self.partition([
            "--balancer", "--clients", "2", "--messages", "300", "--min-fault", "2", "--max-fault", "4", "--seed", "2"])
        #expect(output.contains("behind HAProxy"), "\(output)")
        // Nothing of the run is left behind: HAProxy ended with it.
        let (_, processes) = try runToEnd(URL(fileURLWithPath: "/bin/sh"), ["-c", "pgrep -x haproxy || true"])
        #expect(processes.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(processes)")
    }

    /// Runs `parley bench partition` with the options (2 clients × 300 messages), and checks
    /// what every run must show: it passed, nothing lost or doubled, gapless, every client's
    /// copy the server's, all 600 stored. Returns its output and its JSON report.
    static func partition(_ options: [String]) async throws -> (output: String, report: [String: Any]) {
        let (status, output) = try await runToEndOffPool(
            ServeProcess.binary, ["bench", "partition"] + options + ["--timeout", "240", "--json"])
        #expect(status == 0, "\(output)")
        let report = try CLIBenchCommandTests.json(output, prefix: "JSON ")
        #expect(report["lost"] as? Int == 0 && report["doubled"] as? Int == 0, "\(output)")
        #expect(report["gapless"] as? Bool == true && report["mismatched"] as? Int == 0, "\(output)")
        #expect(report["failedClients"] as? Int == 0 && report["stored"] as? Int == 600, "\(output)")
        return (output, report)
    }
}
