import Foundation
import ParleyTestSupport
import Testing

/// A short `parley bench soak` in the suite: 10 users send, type, read, reconnect, upload and
/// page history against a `parley serve` child for 16 s, sampled every 2 s; the bench fails
/// when the server's memory, open files or queues keep growing after warm-up, or when the load
/// did not run (docs/benchmarks.md has the long run).
@Suite struct SoakBenchTests {
    @Test(.heavy) func aShortSoakRunsEveryKindOfLoadAndFindsNothingGrowing() async throws {
        let json = TestServer.temporaryDirectory() + "/soak.json"
        let (status, output) = try await runToEndOffPool(
            ServeProcess.binary, ["bench", "soak", "--seconds", "16", "--sample", "2", "--users", "10", "--rate", "20", "--json", json])
        #expect(status == 0, "\(output)")
        #expect(output.contains("RSS") && output.contains("open files") && !output.contains("GROWING"), "\(output)")
        struct Sample: Decodable { var rssMB: Double; var openFiles: Int; var sends: Int; var reconnects: Int; var uploads: Int }
        let samples = try JSONDecoder().decode([Sample].self, from: Data(contentsOf: URL(fileURLWithPath: json)))
        #expect(samples.count >= 7, "\(samples.count) samples")
        #expect(samples.allSatisfy { $0.rssMB > 0 && $0.openFiles > 0 }, "read from /proc")
        #expect(samples.map(\.sends).reduce(0, +) > 100, "sends ran")
        #expect(samples.map(\.reconnects).reduce(0, +) > 3 && samples.map(\.uploads).reduce(0, +) > 2, "reconnects and uploads ran")
    }
}
