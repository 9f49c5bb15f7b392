import Foundation
#if canImport(Glibc)
import Glibc
#endif
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyBench
import ParleyClient
import ParleyTestSupport
import Testing

/// `parley serve`'s settings: a wrong value, from an option or from the environment, stops
/// it at once with one line naming the setting (never a server started with something else),
/// an option beats its environment variable, and the environment alone configures a server.
@Suite struct CLIServeOptionTests {
    /// One refused setting: the arguments after `serve`, the environment, and the line it prints.
    struct Refusal: Sendable, CustomTestStringConvertible {
        var arguments: [String]
        var environment: [String: String] = [:]
        var message: String
        var testDescription: String { (arguments + environment.map { "\($0.key)=\($0.value)" }).joined(separator: " ") }
    }

    /// How options and variables reach the settings reader; every refusal the reader knows is
    /// checked in process by ``ServerSettingsTests``.
    static let refusals: [Refusal] = [
        Refusal(arguments: ["--port", "70000"], message: "port must be a number from 0 to 65535"),
        Refusal(arguments: [], environment: ["PARLEY_PORT": "http"], message: "port must be a number from 0 to 65535"),
        Refusal(arguments: ["--request-head-timeout", "0"], message: "request head timeout must be 0 to 86400 seconds"),
        Refusal(arguments: ["--apns-key-id", "KEY"],
                message: "push needs all of --apns-key-file, --apns-key-id, --apns-team-id and --apns-topic"),
        Refusal(arguments: ["--trusted-proxy", "10.0.0.0/8", "--trusted-proxy", "10.0.0.0/99"],
                message: "--trusted-proxy 10.0.0.0/99 is not an address or CIDR range"),
        // An option beats its environment variable: the bad variable is never read, and the
        // next check is the one that speaks.
        Refusal(arguments: ["--log-level", "info", "--bcrypt-cost", "3"], environment: ["PARLEY_LOG_LEVEL": "loud"],
                message: "bcrypt cost must be 4 to 31"),
        // An empty variable is no setting: the default applies.
        Refusal(arguments: ["--max-connections=-3"], environment: ["PARLEY_PORT": "", "PARLEY_LOG_LEVEL": ""],
                message: "max connections must be a positive number"),
    ]

    @Test(arguments: refusals)
    func aWrongSettingStopsServeWithOneLine(_ refusal: Refusal) async throws {
        let data = TestServer.temporaryDirectory()
        let run = try await CLI.run(
            ["serve", "--data-dir", data] + refusal.arguments, environment: refusal.environment.mapValues { Optional($0) }, limit: 60)
        #expect(run.status == 1, "\(run.status): \(run.output)")
        #expect(run.output == "parley: \(refusal.message)\n", "\(run.output)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: data).isEmpty, "nothing was opened before the check")
    }

    @Test func aValueOfTheWrongTypeIsAUsageError() async throws {
        let run = try await CLI.run(["serve", "--port", "eighty"], limit: 60)
        #expect(run.status == 64, "\(run.status): \(run.output)")
        #expect(run.output.contains("--port") && run.output.contains("eighty"), "\(run.output)")
    }

    /// The environment alone, as a container runs it: every setting read, the documented
    /// start line, and a clean exit (0) on SIGTERM.
    @Test(.heavy) func theEnvironmentAloneConfiguresTheServerAndSIGTERMExitsZero() async throws {
        let port = try freeLoopbackPort()
        let data = TestServer.temporaryDirectory() + "/data"
        let serve = try RunningCLI(["serve"], environment: [
            "PARLEY_HOST": "127.0.0.1", "PARLEY_PORT": "\(port)", "PARLEY_DATA_DIR": data, "PARLEY_LOG_LEVEL": "info",
            "PARLEY_BCRYPT_COST": "4", "PARLEY_DRAIN_SECONDS": "0", "PARLEY_OPEN_ORGANIZATIONS": "yes", "PARLEY_REGISTER_LIMIT": "off",
        ])
        defer { serve.stop() }
        let api = ParleyAPI(baseURL: URL(string: "http://127.0.0.1:\(port)")!)
        try await waitFor("serve to listen on \(port)", timeout: .seconds(60)) {
            (try? await api.register(.init(organization: "acme", email: "a@x.io", password: TestUser.password, displayName: "A"))) != nil
        }
        // PARLEY_OPEN_ORGANIZATIONS=yes: a second person joins "acme" by its name.
        let second = try await api.register(.init(organization: "acme", email: "b@x.io", password: TestUser.password, displayName: "B"))
        #expect(second.user.role != .admin)
        #expect(FileManager.default.fileExists(atPath: data + "/parley.sqlite"), "the data directory from PARLEY_DATA_DIR")
        #expect(serve.output.contains("database=\(data)/parley.sqlite host=127.0.0.1 port=\(port)"), "\(serve.output)")

        serve.child.terminate()
        let status = try await serve.waitForExit()
        #expect(status == 0, "\(serve.output)")
        #expect(serve.output.contains("Parley stopped"), "\(serve.output)")
    }

    /// What an operator reads: a load balancer's TCP probe or a TLS client that gives up logs no
    /// error line, and a second server on a taken port says so in words, not errno 98.
    @Test(.heavy) func probesLogNoErrorAndATakenPortIsSaidPlainly() async throws {
        let port = try freeLoopbackPort()
        let serve = try RunningCLI(["serve", "--port", "\(port)", "--data-dir", TestServer.temporaryDirectory()], environment: [
            "PARLEY_BCRYPT_COST": "4", "PARLEY_DRAIN_SECONDS": "0",
        ])
        defer { serve.stop() }
        try await serve.waitForOutput("Web client at", timeout: .seconds(60))
        for opening: [UInt8] in [[], [0x16, 0x03, 0x01, 0x00], Array("GET / HT".utf8)] {
            try await offPool {
                let socket = try RawWebSocket.connectLoopback(port: port)
                defer { Glibc.close(socket) }
                if !opening.isEmpty { _ = opening.withUnsafeBytes { Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
            }
        }
        let second = try await CLI.run(["serve", "--port", "\(port)", "--data-dir", TestServer.temporaryDirectory()])
        #expect(second.status != 0)
        #expect(second.output.contains("127.0.0.1:\(port) is already in use") && !second.output.contains("errno"), "\(second.output)")
        // The probes were handled (a real request after them is answered); then the server is
        // stopped and its whole log read, up to its last line: whatever the probes made it
        // log is in it by then.
        let health = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/health")!)
        #expect((health.1 as? HTTPURLResponse)?.statusCode == 200)
        serve.child.terminate()
        #expect(try await serve.waitForExit() == 0, "\(serve.output)")
        try await serve.waitForOutput("Parley stopped")
        #expect(!serve.output.lowercased().contains(" error "), "no error line for probes:\n\(serve.output)")
    }

    /// A PostgreSQL node starts without the pool's "PostgresClient.run() hasn't been called yet"
    /// warning (every node logged it at start) or any error line.
    @Test(.heavy, .needsPostgres) func aPostgreSQLNodeStartsWithoutAWarningAboutItsPool() async throws {
        let database = try await TestDatabase.create()
        defer { Task { await database.drop() } }
        let port = try freeLoopbackPort()
        let serve = try RunningCLI(
            ["serve", "--port", "\(port)", "--data-dir", TestServer.temporaryDirectory(), "--database", database.url],
            environment: ["PARLEY_BCRYPT_COST": "4", "PARLEY_DRAIN_SECONDS": "0"])
        defer { serve.stop() }
        try await serve.waitForOutput("Web client at", timeout: .seconds(60))
        let api = ParleyAPI(baseURL: URL(string: "http://127.0.0.1:\(port)")!)
        _ = try await api.register(.init(organization: "acme", email: "a@x.io", password: TestUser.password, displayName: "A"))
        #expect(!serve.output.contains("hasn't been called yet"), "\(serve.output)")
        #expect(!serve.output.lowercased().contains(" error "), "\(serve.output)")
    }
}
