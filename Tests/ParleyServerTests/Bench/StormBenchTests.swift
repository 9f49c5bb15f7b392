import Foundation
import Testing

/// A small `parley bench storm` in the suite: 100 clients in two worker processes hold their
/// WebSockets, the server is killed and started again on the same data, messages go into every
/// group while the clients wait out the SDK's backoff; the bench fails unless every client comes
/// back current and each message is stored once (docs/benchmarks.md has the runs at 19,000).
@Suite struct StormBenchTests {
    @Test(.heavy) func everyClientComesBackCurrentAfterARestart() async throws {
        let (status, output) = try await runToEndOffPool(
            ServeProcess.binary, ["bench", "storm", "--clients", "100", "--users", "40", "--messages", "3", "--per-worker", "60", "--stop", "kill"])
        #expect(status == 0, "\(output)")
        #expect(output.contains("back and current: 100 of 100 clients"), "\(output)")
        #expect(output.contains("messages: 6 of 6 stored, 0 lost, 0 duplicated"), "\(output)")
        #expect(output.contains("2 worker processes") && output.contains("gave up 0"), "\(output)")
    }
}
