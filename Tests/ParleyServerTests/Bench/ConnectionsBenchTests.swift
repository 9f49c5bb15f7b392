import Foundation
import Testing

/// A small `parley bench connections` in the suite: idle WebSockets held by a worker process,
/// the server's memory per connection, then an idle window with the heartbeat on in which the
/// server's CPU is counted and every connection answers its pings (docs/benchmarks.md has the
/// runs at 19,000).
@Suite struct ConnectionsBenchTests {
    @Test(.heavy) func idleConnectionsAnswerTheHeartbeatAndTheServersCPUIsCounted() async throws {
        let (status, output) = try await runToEndOffPool(
            ServeProcess.binary,
            ["bench", "connections", "--count", "40", "--users", "20", "--idle", "2.5", "--heartbeat-seconds", "1", "--no-floor", "--settle", "0.5"])
        #expect(status == 0, "\(output)")
        let json = try CLIBenchCommandTests.json(output, prefix: "JSON ")
        let parley = try #require(json["parley"] as? [String: Any])
        #expect(parley["failed"] as? Int == 0, "\(parley)")
        #expect((parley["kb_per_connection"] as? Double ?? 0) > 0, "\(parley)")
        // 40 connections pinged every second through a 2.5 s window (and the settling before it).
        #expect((parley["pings"] as? Int ?? 0) >= 40, "\(parley)")
        #expect(parley["silent_closed"] as? Int == 0, "every connection answered its pings: \(parley)")
        let core = try #require(parley["idle_core_fraction"] as? Double)
        #expect(core >= 0 && core < 2, "\(parley)")
        #expect(output.contains("heartbeat every 1 s: parley serve used"), "\(output)")
    }
}
