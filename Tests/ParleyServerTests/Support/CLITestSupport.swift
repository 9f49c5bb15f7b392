import Foundation
import ParleyBench
import ParleyTestSupport
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The built `parley` binary run as a user runs it, for the command-line tests.
enum CLI {
    /// Every `PARLEY_*` setting the tests' own environment might carry, unset for each run so
    /// that only what a test passes counts.
    static let cleared: [String: String?] = Dictionary(
        uniqueKeysWithValues: ProcessInfo.processInfo.environment.keys.filter { $0.hasPrefix("PARLEY_") }.map { ($0, String?.none) })

    /// Runs `parley ARGS` to its end (killed after `limit` seconds: a command that should have
    /// failed at once must not hang the suite) and returns its exit code and output.
    static func run(_ arguments: [String], environment: [String: String?] = [:], limit: Int = 120) async throws -> (status: Int32, output: String) {
        try await runToEndOffPool(
            URL(fileURLWithPath: "/usr/bin/timeout"), ["--signal=KILL", "\(limit)", ServeProcess.binary.path] + arguments,
            environment: cleared.merging(environment) { $1 })
    }

    /// Runs `parley ARGS` against `server` with the profile in `profile`.
    static func run(_ arguments: [String], profile: String, server: URL? = nil, password: String? = nil,
                    environment: [String: String?] = [:]) async throws -> (status: Int32, output: String) {
        var environment = environment
        environment["PARLEY_PASSWORD"] = password
        if let server { environment["PARLEY_SERVER"] = server.absoluteString }
        return try await run(arguments + ["--profile", profile], environment: environment)
    }

    /// A server URL where nothing listens.
    static func deadServer() throws -> String { "http://127.0.0.1:\(try freeLoopbackPort())" }

    /// `parley register` in a new profile folder; returns the folder.
    @discardableResult
    static func register(_ email: String, name: String, organization: String = "acme", server: URL, profile: String? = nil,
                         invite: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        let folder = profile ?? TestServer.temporaryDirectory() + "/profile"
        let registered = try await run(
            ["register", "--organization", organization, "--email", email, "--name", name] + (invite.map { ["--invite", $0] } ?? []),
            profile: folder, server: server, password: TestUser.password)
        #expect(registered.status == 0, "register \(email): \(registered.output)", sourceLocation: sourceLocation)
        return folder
    }

    /// The session file a profile folder keeps.
    static func session(_ profile: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: profile + "/session.json"))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// The non-empty lines of an output.
    static func lines(_ output: String) -> [String] {
        output.split(separator: "\n").map(String.init)
    }

    /// The one line of output, trimmed (an id a command printed).
    static func single(_ output: String) -> String {
        output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// A `parley` command that keeps running (`tail`, `serve`): its output is collected as it comes.
final class RunningCLI: Sendable {
    let child: ChildProcess
    private let collected = Mutex("")
    private let reader: FileHandle

    init(_ arguments: [String], environment: [String: String?]) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw POSIXError(.EMFILE) }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        var merged = ProcessInfo.processInfo.environment
        for (key, value) in CLI.cleared.merging(environment, uniquingKeysWith: { $1 }) { merged[key] = value }
        do {
            child = try ChildProcess(executable: ServeProcess.binary.path, arguments: arguments, environment: merged, output: fds[1])
        } catch {
            close(fds[0])
            close(fds[1])
            throw error
        }
        close(fds[1])
        reader = FileHandle(fileDescriptor: fds[0], closeOnDealloc: true)
        Thread.detachNewThread { [self] in
            while true {
                let data = reader.availableData
                if data.isEmpty { break }
                collected.withLock { $0 += String(decoding: data, as: UTF8.self) }
            }
        }
    }

    /// Everything it printed so far.
    var output: String { collected.withLock { $0 } }

    /// Waits (up to `timeout`) until its output contains `text`.
    func waitForOutput(_ text: String, timeout: Duration = .seconds(30)) async throws {
        try await waitFor("\(text) in the output of parley", timeout: timeout) { self.output.contains(text) }
    }

    /// Waits (up to `timeout`) until it exits; returns its exit code.
    func waitForExit(timeout: Duration = .seconds(30)) async throws -> Int32 {
        try await waitFor("parley to exit", timeout: timeout) { !self.child.isRunning }
        return child.waitUntilExit()
    }

    /// Stops it if it still runs.
    func stop() {
        guard child.isRunning else { return }
        child.signal(SIGKILL)
        child.waitUntilExit()
    }
}
