import Foundation
import ParleyClient
import ParleyTestSupport
import Testing

/// `parley keys` on a real SQLite store: list, rotate and retire, the refusals that keep a
/// service signing (never retire the last live key, never open a store that is not there), and
/// the effect a server sees after a restart: a retired key's tokens stop working.
@Suite struct CLIKeysTests {
    struct Key: Equatable {
        var kid: String
        var created: Date?
        var state: String
    }

    static func keys(_ arguments: [String], dataDirectory: String) async throws -> (status: Int32, output: String) {
        try await CLI.run(["keys"] + arguments + ["--data-dir", dataDirectory])
    }

    /// `parley keys list`, parsed: `kid<TAB>created ISO<TAB>state`.
    static func list(_ dataDirectory: String) async throws -> [Key] {
        let listed = try await keys(["list"], dataDirectory: dataDirectory)
        #expect(listed.status == 0, "\(listed.output)")
        return CLI.lines(listed.output).map { line in
            let fields = line.components(separatedBy: "\t")
            #expect(fields.count == 3, "\(line)")
            let created = fields.dropFirst().first.flatMap { ISO8601DateFormatter().date(from: $0.replacingOccurrences(of: "created ", with: "")) }
            return Key(kid: fields[0], created: created, state: fields.last ?? "")
        }
    }

    /// The `kid` in a JWT's header.
    static func kid(of token: String) throws -> String? {
        var header = String(token.prefix { $0 != "." }).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while header.count % 4 != 0 { header += "=" }
        let data = try #require(Data(base64Encoded: header))
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["kid"] as? String
    }

    @Test func rotatingThenRetiringSignsWithTheNewKeyAndRefusesTheOldKeysTokens() async throws {
        let data = TestServer.temporaryDirectory()
        let server = try await TestServer.start(dataDirectory: data)
        let alice = try await server.register("alice@x.io")
        await server.stop()

        let initial = try await Self.list(data)
        #expect(initial.count == 1 && initial.first?.state == "signing", "\(initial)")
        let old = try #require(initial.first?.kid)
        #expect(try Self.kid(of: alice.token) == old, "tokens name the key that signed them")
        let created = try #require(initial.first?.created)
        #expect(abs(created.timeIntervalSinceNow) < 3600, "\(created)")

        let lastOne = try await Self.keys(["retire", old], dataDirectory: data)
        #expect(lastOne.status == 1, "\(lastOne.output)")
        #expect(lastOne.output == "parley: \(old) is the only live key: rotate first (`parley keys rotate`)\n", "\(lastOne.output)")
        #expect(try await Self.list(data).map(\.state) == ["signing"], "the refusal changed nothing")

        let rotated = try await Self.keys(["rotate"], dataDirectory: data)
        let new = CLI.single(rotated.output)
        #expect(rotated.status == 0 && !new.isEmpty && new != old && !new.contains(" "), "\(rotated.output)")
        let both = try await Self.list(data)
        #expect(Set(both.map(\.kid)) == [old, new])
        #expect(both.first { $0.kid == new }?.state == "signing" && both.first { $0.kid == old }?.state == "verifying", "\(both)")

        let unknown = try await Self.keys(["retire", "no-such-kid"], dataDirectory: data)
        #expect(unknown.status == 1 && unknown.output == "parley: no live key no-such-kid\n", "\(unknown.output)")

        let retired = try await Self.keys(["retire", old], dataDirectory: data)
        #expect(retired.status == 0 && retired.output == "retired \(old)\n", "\(retired.output)")
        let after = try await Self.list(data)
        #expect(after.first { $0.kid == new }?.state == "signing", "\(after)")
        let oldState = try #require(after.first { $0.kid == old }?.state)
        #expect(oldState.hasPrefix("retired ") && ISO8601DateFormatter().date(from: String(oldState.dropFirst(8))) != nil, "\(oldState)")
        let twice = try await Self.keys(["retire", old], dataDirectory: data)
        #expect(twice.status == 1 && twice.output == "parley: no live key \(old)\n", "\(twice.output)")

        // The server, started again on the store: the old key's tokens are refused, new ones
        // are signed with the new key.
        let restarted = try await TestServer.start(dataDirectory: data)
        await #expect(throws: ClientError.self) { _ = try await restarted.api(token: alice.token).me() }
        let again = try await restarted.api().login(.init(organization: "acme", email: "alice@x.io", password: TestUser.password))
        #expect(try Self.kid(of: again.token) == new)
        #expect(try await restarted.api(token: again.token).me().id == alice.id)
        await restarted.stop()
    }

    @Test func aMissingStoreIsReportedAndNotCreated() async throws {
        let empty = TestServer.temporaryDirectory()
        for command in [["list"], ["rotate"], ["retire", "k1"]] {
            let run = try await Self.keys(command, dataDirectory: empty)
            #expect(run.status == 1, "\(command): \(run.output)")
            #expect(run.output == "parley: no database at \(empty)/parley.sqlite; give --data-dir or --database\n", "\(command): \(run.output)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: empty).isEmpty, "a mistyped folder gets no new store")

        let fromEnvironment = try await CLI.run(["keys", "list"], environment: ["PARLEY_DATA_DIR": empty])
        #expect(fromEnvironment.output.contains("no database at \(empty)/parley.sqlite"), "PARLEY_DATA_DIR: \(fromEnvironment.output)")
        let notPostgres = try await CLI.run(["keys", "rotate", "--database", "mysql://db/parley"])
        #expect(notPostgres.status == 1 && notPostgres.output == "parley: --database must be a postgres:// or postgresql:// URL\n",
                "\(notPostgres.output)")
        let missingKid = try await CLI.run(["keys", "retire", "--data-dir", empty])
        #expect(missingKid.status == 64 && missingKid.output.contains("<kid>"), "a usage error: \(missingKid.status) \(missingKid.output)")
    }
}
