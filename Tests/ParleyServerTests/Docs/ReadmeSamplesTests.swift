import Foundation
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The README's SDK sample (Examples/SDKQuickStart, the same lines as the README shows:
/// ParleyUISourceTests compares them) run as a new user would: built by `swift build`, against
/// a fresh server where Alice of "Acme" has one conversation, on a first run with no cache.
/// It once crashed here at `list.rows[0]`: the list was still empty when `start()` returned.
@Suite struct ReadmeSamplesTests {
    static var binary: URL { ServeProcess.binary.deletingLastPathComponent().appendingPathComponent("SDKQuickStart") }

    @Test(.heavy) func theSDKSampleRunsAsWrittenOnAFirstRunAndSendsOnce() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.api().register(RegisterRequest(
            organization: "Acme", email: "alice@acme.io", password: "alice-secret", displayName: "Alice"))
        let bob = try await server.register("bob@acme.io", organization: "Acme", name: "Bob")
        let direct = try await bob.api.createConversation(.init(type: .direct, participantIds: [alice.user.id]))
        _ = try await bob.api.send(.init(clientMessageId: "b1", text: "Welcome!"), to: direct.id)

        let home = TestServer.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let environment: [String: String?] = ["PARLEY_URL": server.baseURL.absoluteString, "HOME": home, "XDG_DATA_HOME": home + "/data"]
        for run in 1...2 {  // the first run has no cache; the second starts from it
            let (status, output) = try await runToEndOffPool(Self.binary, [], environment: environment)
            #expect(status == 0, "run \(run): \(output)")
            #expect(output.contains("Bob") && output.contains("Welcome!") && output.contains("Hi"), "run \(run): \(output)")
        }
        let texts = try await bob.api.messages(direct.id).messages.map(\.text)
        #expect(texts == ["Welcome!", "Hi", "Hi"], "each run's send reached the server once")
        // Application Support (XDG_DATA_HOME on Linux), not Caches: the database holds the outbox.
        let support = try FileManager.default.contentsOfDirectory(atPath: home + "/data")
        #expect(support.contains("parley-\(alice.user.id).sqlite"), "the database is where the sample says: \(support)")
    }
}
