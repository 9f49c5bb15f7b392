import Foundation
import ParleyTestSupport
import Testing

/// The command line's offline path from outside: `parley send` while the server is down
/// queues; the first `parley sync` after the server returns delivers, once, in order.
@Suite struct CLIOutboxTests {
    /// Runs `parley ARGS` and returns its exit code and output (stdout and stderr).
    static func parley(_ arguments: [String], server: URL, password: String? = nil) async throws -> (status: Int32, output: String) {
        try await runToEndOffPool(
            ServeProcess.binary, arguments, environment: ["PARLEY_SERVER": server.absoluteString, "PARLEY_PASSWORD": password])
    }

    @Test(.heavy) func theFirstSyncAfterTheServerReturnsDeliversTheQueueOnceInOrder() async throws {
        let data = TestServer.temporaryDirectory()
        let work = TestServer.temporaryDirectory()
        var server = try ServeProcess(name: "cli", dataDirectory: data)
        try await server.waitUntilReady()
        let url = server.url
        let alice = ["--profile", work + "/alice"], bob = ["--profile", work + "/bob"]
        let registered = try await Self.parley(
            ["register"] + alice + ["--organization", "Acme", "--email", "alice@acme.io", "--name", "Alice"], server: url, password: "alice-secret")
        #expect(registered.status == 0, "\(registered.output)")
        _ = try await Self.parley(
            ["register"] + bob + ["--organization", "Acme", "--email", "bob@acme.io", "--name", "Bob"], server: url, password: "bob-secret1")
        let opened = try await Self.parley(["open-direct"] + alice + ["bob@acme.io"], server: url)
        let conversation = opened.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(opened.status == 0, "\(opened.output)")
        server.stop()

        for text in ["one", "two", "three"] {
            let queued = try await Self.parley(["send"] + alice + [conversation, text], server: url)
            #expect(queued.status == 0 && queued.output.contains("queued (server unreachable)"), "\(queued.output)")
        }
        let down = try await Self.parley(["sync"] + alice, server: url)
        #expect(down.status == 2 && down.output.contains("server unreachable; 3 message(s) still queued"), "\(down.output)")

        server = try ServeProcess(name: "cli", dataDirectory: data, port: url.port)
        defer { server.stop() }
        try await server.waitUntilReady()
        let sync = try await Self.parley(["sync"] + alice, server: url)
        #expect(sync.status == 0, "\(sync.output)")
        #expect(sync.output.contains("delivered 3 queued messages; 0 still queued; 0 refused"), "\(sync.output)")
        let again = try await Self.parley(["sync"] + alice, server: url)
        #expect(again.output.contains("delivered 0 queued messages; 0 still queued"), "\(again.output)")

        let history = try await Self.parley(["history"] + bob + [conversation], server: url)
        let lines = history.output.split(separator: "\n").filter { $0.contains("Alice:") }
        #expect(lines.count == 3, "\(history.output)")
        #expect(lines.map { $0.split(separator: " ").last.map(String.init) ?? "" }.allSatisfy { ["one", "two", "three"].contains($0) })
        #expect(lines[0].hasSuffix("one") && lines[1].hasSuffix("two") && lines[2].hasSuffix("three"), "\(history.output)")
    }
}
