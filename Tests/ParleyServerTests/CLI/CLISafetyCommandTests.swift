import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// `parley block`, `report`, `export` and `admin reports|retention|audit` against a real server:
/// what they print matches the server, refusals are one line and exit 1, and
/// other people's text reaches the terminal inert.
@Suite struct CLISafetyCommandTests {
    @Test func blockReportAndTheAdminCommands() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let admin = try await CLI.register("admin@x.io", name: "Admin", server: server.baseURL)
        let bob = try await CLI.register("bob@x.io", name: "Bob", server: server.baseURL)
        let mallory = try await server.register("mallory@x.io", name: "Mallory")
        let bobToken = try #require(try CLI.session(bob)["token"] as? String)
        let bobId = try await server.api(token: bobToken).me().id
        let direct = try await mallory.api.createConversation(.init(type: .direct, participantIds: [bobId]))
        let rude = try await mallory.api.send(.init(clientMessageId: "r", text: "rude \u{1B}[31mred\u{1B}[0m"), to: direct.id)

        // Bob blocks mallory: her direct sends are refused.
        let blocked = try await CLI.run(["block", mallory.id.description], profile: bob)
        #expect(blocked.status == 0 && blocked.output.contains("blocked \(mallory.id)"), "\(blocked.output)")
        #expect(try await CLI.run(["block"], profile: bob).output.contains("Mallory"))
        do {
            _ = try await mallory.api.send(.init(clientMessageId: "again", text: "hey"), to: direct.id)
            Issue.record("a blocked send went through")
        } catch let error as ClientError {
            #expect(error.code == .forbidden)
        }
        // And reports her message.
        let reported = try await CLI.run(["report", "--message", rude.id.description, "she insults me"], profile: bob)
        #expect(reported.status == 0 && reported.output.hasPrefix("reported ("), "\(reported.output)")
        // Bob is no admin: the admin commands say so in one line and exit 1.
        let refused = try await CLI.run(["admin", "reports"], profile: bob)
        #expect(refused.status == 1 && refused.output.split(separator: "\n").count == 1, "\(refused.output)")

        // The admin sees the report, with the message made inert for the terminal.
        let list = try await CLI.run(["admin", "reports"], profile: admin)
        #expect(list.status == 0 && list.output.contains("reason: she insults me"), "\(list.output)")
        #expect(list.output.contains("rude") && !list.output.contains("\u{1B}"), "no escape reaches the terminal: \(list.output)")
        let reportId = try #require(list.output.split(separator: " ").first.map(String.init))
        let resolved = try await CLI.run(["admin", "reports", "--resolve", reportId], profile: admin)
        #expect(resolved.status == 0 && resolved.output.contains("\(reportId) is resolved"), "\(resolved.output)")
        #expect(try await CLI.run(["admin", "reports"], profile: admin).output.contains("no open reports"))
        // Retention: shown, set, refused when not a number of days, turned off.
        #expect(try await CLI.run(["admin", "retention"], profile: admin).output.contains("kept for ever"))
        #expect(try await CLI.run(["admin", "retention", "30"], profile: admin).output.contains("kept 30 days"))
        #expect(try await CLI.run(["admin", "retention", "0"], profile: admin).status == 1)
        #expect(try await CLI.run(["admin", "retention", "off"], profile: admin).output.contains("kept for ever"))
        let audit = try await CLI.run(["admin", "audit"], profile: admin)
        #expect(audit.status == 0, "\(audit.output)")
        #expect(audit.output.split(separator: "\n").map { $0.contains("retention.changed") }.prefix(2) == [true, true], "\(audit.output)")
        #expect(audit.output.contains("report.resolved \(reportId)"), "\(audit.output)")
    }

    @Test(.needs("unzip")) func exportWritesAZipOfWhatYouSent() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await CLI.register("alice@x.io", name: "Alice", server: server.baseURL)
        _ = try await CLI.register("bob@x.io", name: "Bob", server: server.baseURL)
        let opened = try await CLI.run(["open-direct", "bob@x.io"], profile: alice)
        let direct = CLI.single(opened.output)
        #expect(try await CLI.run(["send", direct, "for the record"], profile: alice).status == 0)
        let file = (alice as NSString).appendingPathComponent("mine.zip")
        let export = try await CLI.run(["export", "--output", file], profile: alice)
        #expect(export.status == 0 && export.output.contains("wrote \(file)"), "\(export.output)")
        let messages = try runToEnd(URL(fileURLWithPath: "/usr/bin/env"), ["unzip", "-p", file, "messages.json"])
        #expect(messages.status == 0 && messages.output.contains("for the record"), "\(messages.output)")
    }
}
