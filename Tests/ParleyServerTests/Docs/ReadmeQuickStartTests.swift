import Foundation
import ParleyTestSupport
import Testing

/// The README's quick start, run as written: its shell blocks are read from README.md, with
/// `swift run parley` swapped for the built binary, `/tmp/...` profiles for a temporary
/// folder and port 8080 for a free one. When a documented command stops working, this fails.
@Suite struct ReadmeQuickStartTests {
    static let readme = Repository.url("README.md")

    /// The first ```sh block after the heading `title`.
    static func block(after title: String) throws -> [String] {
        let text = try String(contentsOf: readme, encoding: .utf8)
        guard let heading = text.range(of: "## " + title),
            let open = text.range(of: "```sh\n", range: heading.upperBound..<text.endIndex),
            let close = text.range(of: "```", range: open.upperBound..<text.endIndex)
        else { throw QuickStartError("README.md has no sh block after \"## \(title)\"") }
        // Continuation lines (a trailing backslash) become one line.
        return String(text[open.upperBound..<close.lowerBound])
            .replacingOccurrences(of: "\\\n", with: " ")
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    @Test(.heavy) func theQuickStartCommandsWorkAsWritten() async throws {
        let server = try ServeProcess(name: "readme", openOrganizations: false)  // as `swift run parley serve` runs
        defer { server.stop() }
        try await server.waitUntilReady()
        let port = server.url.port!
        let work = TestServer.temporaryDirectory()

        var script = ["set -euo pipefail"]
        for line in try Self.block(after: "Try it from two terminals") {
            if line.contains("swift run parley serve") { continue }  // the server above is it
            var command = line.replacingOccurrences(of: "swift run parley", with: "\"$PARLEY\"")
                .replacingOccurrences(of: "/tmp/", with: "$WORK/")
            if command.contains("\" tail ") {
                // Bob watches in the background; go on once he is connected.
                command += #" > "$WORK/tail.log" 2>&1 &"#
                command += "\nfor i in $(seq 300); do grep -q Connected \"$WORK/tail.log\" && break; sleep 0.1; done"
            }
            script.append(command)
        }
        script.append("echo \"CID=$CID\"")
        for line in try Self.block(after: "The protocol with curl") {
            var command = line.replacingOccurrences(of: "localhost:8080", with: "127.0.0.1:\(port)")
            if command.hasPrefix("curl -s -X POST") {
                // The README says: run it twice, 201 then 200 with the same message.
                command += #" -w ' HTTP%{http_code}\n'"#
                script += [command, command]
            } else {
                script.append(command)
            }
        }
        script.append("for i in $(seq 300); do grep -q 'Alice: Hello Bob' \"$WORK/tail.log\" && break; sleep 0.1; done")
        script.append("cat \"$WORK/tail.log\"; kill %1")

        let (status, text) = try await runToEndOffPool(
            URL(fileURLWithPath: "/bin/bash"), ["-c", script.joined(separator: "\n")],
            environment: ["PARLEY": ServeProcess.binary.path, "WORK": work, "PARLEY_SERVER": server.url.absoluteString])

        #expect(status == 0, "the quick start failed:\n\(text)")
        #expect(text.contains("sent #1"), "send: \(text)")
        #expect(text.contains("delivered 0 queued messages; 0 still queued"), "sync: \(text)")
        #expect(text.contains("#1") && text.contains("Alice: Hello Bob"), "history: \(text)")
        #expect(text.contains("Connected as Bob"), "tail: \(text)")
        #expect(text.components(separatedBy: "Alice: Hello Bob").count >= 3, "history and tail both show it: \(text)")
        let codes = text.components(separatedBy: " HTTP").dropFirst().map { $0.prefix(3) }
        #expect(codes == ["201", "200"], "curl: \(text)")
    }
}

struct QuickStartError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
