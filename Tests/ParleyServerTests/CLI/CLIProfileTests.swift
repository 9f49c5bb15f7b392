import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The profile folder keeping a terminal user's session: where it is, that the token in it is
/// readable by its owner only whatever the umask or the file it replaces, that a damaged or
/// missing one is reported, and which server the commands then talk to.
@Suite struct CLIProfileTests {
    static func permissions(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    @Test func registeringUnderAnOpenUmaskStillKeepsTheTokenToTheOwner() async throws {
        let server = try await TestServer.start()
        let profile = TestServer.temporaryDirectory() + "/new/profile"
        // umask 000: anything not made private on purpose would come out world-readable.
        let (status, output) = try await runToEndOffPool(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", #"umask 000; exec "$0" "$@""#, ServeProcess.binary.path,
             "register", "--organization", "acme", "--email", "ann@x.io", "--name", "Ann", "--profile", profile],
            environment: CLI.cleared.merging(["PARLEY_SERVER": server.baseURL.absoluteString, "PARLEY_PASSWORD": TestUser.password]) { $1 })
        #expect(status == 0, "\(output)")
        #expect(try Self.permissions(profile) == 0o700)
        #expect(try Self.permissions(profile + "/session.json") == 0o600)
        #expect(try FileManager.default.contentsOfDirectory(atPath: profile) == ["session.json"], "no temporary file is left behind")

        let session = try CLI.session(profile)
        #expect(session["server"] as? String == server.baseURL.absoluteString)
        let user = try #require(session["user"] as? [String: Any])
        #expect(user["email"] as? String == "ann@x.io" && user["displayName"] as? String == "Ann")
        let token = try #require(session["token"] as? String)
        #expect(try await server.api(token: token).me().email == "ann@x.io", "the saved token is the session's")
        await server.stop()
    }

    @Test func loggingInOverAWorldReadableSessionLeavesAnOwnerOnlyFileWithTheNewToken() async throws {
        let server = try await TestServer.start()
        let bea = try await server.register("bea@x.io")
        let profile = TestServer.temporaryDirectory()
        let path = profile + "/session.json"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(#"{"stale":true}"#.utf8), attributes: [.posixPermissions: 0o644]))
        #expect(try Self.permissions(path) == 0o644)

        let login = try await CLI.run(
            ["login", "--organization", "acme", "--email", "bea@x.io"], profile: profile, server: server.baseURL, password: TestUser.password)
        #expect(login.status == 0 && login.output == "Logged in as Bea <bea@x.io>\n", "\(login.output)")
        #expect(try Self.permissions(path) == 0o600)
        let session = try CLI.session(profile)
        #expect(session["stale"] == nil)
        let token = try #require(session["token"] as? String)
        #expect(token != bea.token, "a new session's token")
        #expect(try await server.api(token: token).me().id == bea.id)
        await server.stop()
    }

    @Test func aSessionFileThatCannotBeWrittenIsReportedWithItsPath() async throws {
        let server = try await TestServer.start()
        let profile = TestServer.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: profile + "/session.json", withIntermediateDirectories: false)
        let register = try await CLI.run(
            ["register", "--organization", "acme", "--email", "cy@x.io", "--name", "Cy"], profile: profile, server: server.baseURL,
            password: TestUser.password)
        #expect(register.status == 1, "\(register.output)")
        #expect(register.output == "parley: cannot write \(profile)/session.json\n", "\(register.output)")
        await server.stop()
    }

    @Test func aMissingOrDamagedSessionIsReportedAndNothingIsSent() async throws {
        let profile = TestServer.temporaryDirectory()
        let missing = try await CLI.run(["conversations"], profile: profile)
        #expect(missing.status == 1)
        #expect(missing.output == "parley: not logged in (no \(profile)/session.json); run `parley login` or `parley register` first\n",
                "\(missing.output)")

        // A session cut off halfway, as a crash during a plain write would leave it.
        let whole = #"{"server":"http://127.0.0.1:1","token":"abc","user":{"id":"01J0000000000000000000000","email":"x@y.io"}}"#
        try Data(whole.utf8.prefix(40)).write(to: URL(fileURLWithPath: profile + "/session.json"))
        for command in [["conversations"], ["send", "01J0000000000000000000000", "hi"], ["sync"], ["tail"]] {
            let damaged = try await CLI.run(command, profile: profile)
            #expect(damaged.status == 1, "\(command): \(damaged.output)")
            #expect(damaged.output == "parley: unreadable session file \(profile)/session.json; log in again\n", "\(command): \(damaged.output)")
        }
        #expect(!FileManager.default.fileExists(atPath: profile + "/cache.sqlite"), "nothing was queued for a session it could not read")
    }

    @Test func theProfileFolderIsTheOptionThenTheEnvironment() async throws {
        let server = try await TestServer.start()
        let fromEnvironment = TestServer.temporaryDirectory() + "/env-profile"
        let registered = try await CLI.run(
            ["register", "--organization", "acme", "--email", "dee@x.io", "--name", "Dee"],
            environment: ["PARLEY_PROFILE": fromEnvironment, "PARLEY_SERVER": server.baseURL.absoluteString, "PARLEY_PASSWORD": TestUser.password])
        #expect(registered.status == 0, "\(registered.output)")
        #expect(FileManager.default.fileExists(atPath: fromEnvironment + "/session.json"))

        let empty = TestServer.temporaryDirectory()
        let viaEnvironment = try await CLI.run(["conversations"], environment: ["PARLEY_PROFILE": fromEnvironment])
        #expect(viaEnvironment.status == 0, "\(viaEnvironment.output)")
        let optionFirst = try await CLI.run(["conversations"], profile: fromEnvironment, environment: ["PARLEY_PROFILE": empty])
        #expect(optionFirst.status == 0, "--profile beats PARLEY_PROFILE: \(optionFirst.output)")
        let optionEmpty = try await CLI.run(["conversations"], profile: empty, environment: ["PARLEY_PROFILE": fromEnvironment])
        #expect(optionEmpty.status == 1 && optionEmpty.output.contains("not logged in (no \(empty)/session.json)"), "\(optionEmpty.output)")
        await server.stop()
    }

    @Test func commandsUseTheSavedServerUnlessTheOptionOrTheEnvironmentNamesAnother() async throws {
        let server = try await TestServer.start()
        let profile = try await CLI.register("eve@x.io", name: "Eve", server: server.baseURL)
        let dead = try CLI.deadServer()

        let saved = try await CLI.run(["conversations"], profile: profile)
        #expect(saved.status == 0, "the saved server: \(saved.output)")
        let option = try await CLI.run(["conversations", "--server", dead], profile: profile)
        #expect(option.status == 2 && option.output.hasPrefix("parley: "), "--server: \(option.output)")
        let environment = try await CLI.run(["conversations"], profile: profile, environment: ["PARLEY_SERVER": dead])
        #expect(environment.status == 2, "PARLEY_SERVER: \(environment.output)")
        let optionFirst = try await CLI.run(
            ["conversations", "--server", server.baseURL.absoluteString], profile: profile, environment: ["PARLEY_SERVER": dead])
        #expect(optionFirst.status == 0, "--server beats PARLEY_SERVER: \(optionFirst.output)")

        for bad in ["ftp://127.0.0.1/", "127.0.0.1:8080", "http://"] {
            let refused = try await CLI.run(["conversations", "--server", bad], profile: profile)
            #expect(refused.status == 1 && refused.output == "parley: server must be an http(s) URL, got \(bad)\n", "\(bad): \(refused.output)")
        }
        let noCA = try await CLI.run(["conversations", "--ca-file", profile + "/missing.pem"], profile: profile)
        #expect(noCA.status == 1 && noCA.output == "parley: --ca-file \(profile)/missing.pem: no PEM certificate there\n", "\(noCA.output)")
        await server.stop()
    }
}
