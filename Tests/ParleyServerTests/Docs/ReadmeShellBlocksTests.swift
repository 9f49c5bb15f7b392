import Foundation
import ParleyBench
import ParleyTestSupport
import Testing

/// Every shell block of the README says whether it is run by the tests (an HTML comment
/// `<!-- readme-test: … -->` right above it), and the ones marked `runs` are run as written,
/// so a documented command cannot stop working unnoticed. The quick start and curl blocks have
/// their own test (``ReadmeQuickStartTests``), which also checks what they print.
///
/// A block runs in bash in a temporary folder with `set -euo pipefail`, with these changes
/// only: the built binary for `swift run parley`, `.build/debug/parley` and a bare `parley`;
/// no `swift build` (the test's build is the one); free ports for 8080, 8081 and 8443; a
/// temporary folder for `/tmp/`; the repository's `scripts/`; a fresh PostgreSQL database for
/// `scripts/postgres-start.sh`. A `parley serve` the README starts in the foreground is started
/// in the background, and after each `serve` the block waits for it to answer `/health`.
/// Servers still running when the block ends are stopped.
@Suite struct ReadmeShellBlocksTests {
    struct Block: Sendable, CustomTestStringConvertible {
        var line: Int
        var marker: String
        var text: String
        var testDescription: String { "README.md:\(line) (\(marker))" }
    }

    static let repository = Repository.root

    /// The README's ```sh blocks with the marker above each (empty when there is none).
    static func blocks() throws -> [Block] {
        let lines = try String(contentsOf: repository.appendingPathComponent("README.md"), encoding: .utf8)
            .components(separatedBy: "\n")
        var blocks: [Block] = []
        var index = 0
        while index < lines.count {
            guard lines[index] == "```sh" else {
                index += 1
                continue
            }
            let above = index > 0 ? lines[index - 1] : ""
            let marker = above.hasPrefix("<!-- readme-test: ") && above.hasSuffix(" -->")
                ? String(above.dropFirst("<!-- readme-test: ".count).dropLast(" -->".count)) : ""
            var end = index + 1
            while end < lines.count, lines[end] != "```" { end += 1 }
            blocks.append(Block(line: index + 1, marker: marker, text: lines[(index + 1)..<end].joined(separator: "\n")))
            index = end + 1
        }
        return blocks
    }

    static var runnable: [Block] { ((try? blocks()) ?? []).filter { $0.marker.hasPrefix("runs") } }

    @Test func everyShellBlockSaysWhetherItIsRun() throws {
        let blocks = try Self.blocks()
        #expect(blocks.count >= 8)
        for block in blocks {
            let known = block.marker.hasPrefix("runs") || block.marker.hasPrefix("quick start") || block.marker.hasPrefix("not run: ")
            #expect(known, "README.md:\(block.line): a ```sh block needs <!-- readme-test: runs --> or <!-- readme-test: not run: REASON --> above it")
        }
        #expect(blocks.filter { $0.marker.hasPrefix("runs") }.count >= 4, "most blocks are run")
    }

    /// The block as the test runs it (see the suite's comment).
    static func script(for block: Block, binary: String, ports: [String: Int], work: String, postgres: String?) -> String {
        var script = ["set -euo pipefail", "cd \"$WORK\"", "trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true' EXIT"]
        let text = block.text.replacingOccurrences(of: "\\\n", with: " ")
        for raw in text.components(separatedBy: "\n") {
            var line = raw
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            if trimmed.hasPrefix("swift build") {
                continue
            }
            for (from, to) in ports { line = line.replacingOccurrences(of: from, with: "\(to)") }
            line = line.replacingOccurrences(of: "swift run parley", with: "\"$PARLEY\"")
                .replacingOccurrences(of: ".build/debug/parley", with: "\"$PARLEY\"")
                .replacingOccurrences(of: "/tmp/", with: "\(work)/tmp/")
                .replacingOccurrences(of: "scripts/", with: "\(repository.path)/scripts/")
            if line.hasPrefix("parley ") { line = "\"$PARLEY\"" + line.dropFirst("parley".count) }
            if let postgres {
                line = line.replacingOccurrences(of: "$(\(repository.path)/scripts/postgres-start.sh | tail -1)", with: "'\(postgres)'")
            }
            guard line.contains("\"$PARLEY\" serve") else {
                script.append(line)
                continue
            }
            // A server: in the background, on a free port unless the README names one, then
            // wait until it answers.
            var command = line.trimmingCharacters(in: .whitespaces)
            let background = command.hasSuffix("&")
            if background { command = String(command.dropLast()).trimmingCharacters(in: .whitespaces) }
            if command.contains("#") { command = String(command[..<command.range(of: " #")!.lowerBound]) }
            if !command.contains("--port") { command += " --port \(ports["8080"]!)" }
            let port = command.components(separatedBy: "--port ").last!.prefix { $0.isNumber }
            let scheme = command.contains("--tls-cert") ? "https" : "http"
            script.append(command + " >>\"$WORK/serve.log\" 2>&1 &")
            script.append("for i in $(seq 600); do curl -fsk \(scheme)://127.0.0.1:\(port)/health >/dev/null 2>&1 && break; sleep 0.1; done")
            script.append("curl -fsk \(scheme)://127.0.0.1:\(port)/health >/dev/null || { cat \"$WORK/serve.log\"; exit 1; }")
        }
        return script.joined(separator: "\n")
    }

    @Test(.heavy, .needs("curl"), .needs("openssl"), arguments: runnable)
    func theBlockRunsAsWritten(_ block: Block) async throws {
        let needsPostgres = block.marker.contains("PostgreSQL")
        guard !needsPostgres || TestTools.mayUsePostgres else { return }
        let database = needsPostgres ? try await TestDatabase.create() : nil
        defer { if let database { Task { await database.drop() } } }
        let work = TestServer.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: work + "/tmp", withIntermediateDirectories: true)
        let ports = ["8080": try freeLoopbackPort(), "8081": try freeLoopbackPort(), "8443": try freeLoopbackPort()]
        let script = Self.script(for: block, binary: ServeProcess.binary.path, ports: ports, work: work, postgres: database?.url)
        let (status, output) = try await runToEndOffPool(
            URL(fileURLWithPath: "/usr/bin/timeout"), ["--signal=KILL", "300", "/bin/bash", "-c", script],
            environment: [
                "PARLEY": ServeProcess.binary.path, "WORK": work, "PARLEY_PASSWORD": TestUser.password, "PARLEY_BCRYPT_COST": "4",
                "PARLEY_DRAIN_SECONDS": "0", "HOME": work,
            ])
        #expect(status == 0, "README.md:\(block.line) failed (\(status)):\n\(output)\n--- as run:\n\(script)")
    }
}
