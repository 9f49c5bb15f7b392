import Foundation
import Testing

/// A short `parley bench chaos` in the suite: two SDK client processes send 200 messages each
/// while the server is killed with SIGKILL and restarted every 0.5–1.5 s; the bench itself
/// fails unless every client ends with exactly the server's messages (docs/benchmarks.md has the
/// 10,000-message runs on SQLite and on two PostgreSQL nodes).
@Suite struct ChaosBenchTests {
    @Test(.heavy) func killingTheServerLosesAndDoublesNothing() async throws {
        let (status, output) = try await runToEndOffPool(
            ServeProcess.binary, ["bench", "chaos", "--clients", "2", "--messages", "200", "--min-up", "0.5", "--max-up", "1.5", "--seed", "7"])
        #expect(status == 0, "\(output)")
        #expect(output.contains("lost: 0, stored twice: 0") && output.contains("differs from the server's: 0 of 2"), "\(output)")
        #expect(output.contains("kills with SIGKILL") && !output.contains(" 0 kills"), "\(output)")
    }
}
