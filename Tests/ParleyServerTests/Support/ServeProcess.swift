import Foundation
import ParleyBench
import ParleyClient
import ParleyTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A `parley serve` child process on a free loopback port (the debug build's binary).
final class ServeProcess: Sendable {
    let process: ChildProcess
    let url: URL
    let name: String

    /// Starts `parley serve`; with `databaseURL` on PostgreSQL, else on SQLite in a fresh data
    /// directory; `secret` sets PARLEY_JWT_SECRET (none: keys shared through the store);
    /// `openOrganizations` lets tests register several users into one organization by name;
    /// `environment` adds variables, and `output` takes what it prints (a file descriptor).
    init(name: String, databaseURL: String? = nil, secret: String? = nil, dataDirectory: String? = nil, port: Int? = nil, openOrganizations: Bool = true,
         drainSeconds: Double = 0, arguments: [String] = [], scheme: String = "http", host: String = "127.0.0.1",
         environment extra: [String: String] = [:], output: Int32? = nil) throws {
        let binary = Self.binary
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw ClientError(kind: .transport, message: "\(binary.path) is missing: run swift build first")
        }
        let port = try port ?? freeLoopbackPort()
        let arguments = [
            "serve", "--port", "\(port)", "--data-dir", dataDirectory ?? TestServer.temporaryDirectory(), "--log-level", "warning",
            "--node-id", name,
        ] + arguments
        var environment = ProcessInfo.processInfo.environment
        environment["PARLEY_DATABASE_URL"] = databaseURL
        environment["PARLEY_JWT_SECRET"] = secret
        environment["PARLEY_BCRYPT_COST"] = "4"
        environment["PARLEY_OPEN_ORGANIZATIONS"] = openOrganizations ? "1" : nil
        environment["PARLEY_CLUSTER_HEARTBEAT_MS"] = "200"
        environment["PARLEY_CLUSTER_DEAD_AFTER_MS"] = "1500"
        environment["PARLEY_DRAIN_SECONDS"] = "\(drainSeconds)"
        environment.merge(extra) { _, given in given }
        self.process = try ChildProcess(
            executable: binary.path, arguments: arguments, environment: environment.compactMapValues { $0 }, output: output)
        self.url = URL(string: "\(scheme)://\(host):\(port)")!
        self.name = name
    }

    /// Two nodes, `node-a` and `node-b`, on one PostgreSQL database, both answering; the
    /// caller stops them.
    static func readyPair(databaseURL: String, environment: [String: String] = [:]) async throws -> (ServeProcess, ServeProcess) {
        let a = try ServeProcess(name: "node-a", databaseURL: databaseURL, environment: environment)
        let b: ServeProcess
        do {
            b = try ServeProcess(name: "node-b", databaseURL: databaseURL, environment: environment)
        } catch {
            a.stop()
            throw error
        }
        do {
            try await a.waitUntilReady()
            try await b.waitUntilReady()
        } catch {
            a.stop()
            b.stop()
            throw error
        }
        return (a, b)
    }

    /// Waits until the node answers its health check.
    func waitUntilReady() async throws {
        try await waitFor("\(name) to listen", timeout: .seconds(60)) {
            var request = URLRequest(url: self.url.appendingPathComponent("api/v1/health"))
            request.timeoutInterval = 1
            return (try? await URLSession.shared.data(for: request)).map { ($0.1 as? HTTPURLResponse)?.statusCode == 200 } ?? false
        }
    }

    func kill() {
        process.signal(SIGKILL)
        process.waitUntilExit()
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    /// The debug build's `parley` binary.
    static var binary: URL {
        Repository.url(".build/debug/parley")
    }
}

/// ``runToEnd(_:_:environment:)`` on a thread of its own: the concurrency pool (two threads
/// here) keeps serving an in-process server that the program talks to.
func runToEndOffPool(_ executable: URL, _ arguments: [String], environment: [String: String?] = [:]) async throws -> (status: Int32, output: String) {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try runToEnd(executable, arguments, environment: environment) })
        }
    }
}

/// Runs a program to its end; returns its exit code and everything it printed (stdout and
/// stderr together, in order).
func runToEnd(_ executable: URL, _ arguments: [String], environment extra: [String: String?] = [:]) throws -> (status: Int32, output: String) {
    var environment = ProcessInfo.processInfo.environment
    for (key, value) in extra { environment[key] = value }
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw POSIXError(.EMFILE) }
    // Only this child gets the write end (as its stdout and stderr), no other.
    _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
    _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
    let child: ChildProcess
    do {
        child = try ChildProcess(executable: executable.path, arguments: arguments, environment: environment, output: fds[1])
    } catch {
        close(fds[0])
        close(fds[1])
        throw error
    }
    close(fds[1])
    let reader = FileHandle(fileDescriptor: fds[0], closeOnDealloc: true)
    let data = reader.readDataToEndOfFile()
    let status = child.waitUntilExit()
    return (status, String(decoding: data, as: UTF8.self))
}
