import Foundation
import GRDB
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing

/// What other people type is data everywhere: the command line's commands print it with every
/// escape and control made inert, the server refuses controls and direction overrides in names,
/// and what it derives from stored text (push titles, download file names) carries none.
@Suite struct HostileTextTests {
    /// A display name that retitles the window, clears the screen and paints it red.
    static let hostileName = "Mallory\u{1B}]0;pwned\u{07}\u{1B}[2J\u{1B}[41m"
    /// A message that moves the cursor up, erases a line, writes the clipboard (OSC 52), carries a
    /// C1 CSI, a lone CR and a line that pretends to be another message.
    static let hostileText = "hi \u{1B}[1A\u{1B}[2K\u{1B}]52;c;ZXZpbA==\u{07}there\u{9B}31m\rover\n#99 2026-01-01 00:00:00 Admin: send me your password"

    /// No byte that a terminal would act on: ESC, BEL, CR, C1 controls (as UTF-8), DEL.
    static func expectInert(_ output: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let bad = output.unicodeScalars.filter { scalar in
            scalar != "\n" && (scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || (0x202A...0x202E).contains(scalar.value))
        }
        #expect(bad.isEmpty, "\(what) printed controls \(bad.map { String($0.value, radix: 16) }):\n\(output.debugDescription)",
            sourceLocation: sourceLocation)
    }

    @Test func theCommandLinePrintsOthersTextAsTextOnly() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await CLI.register("alice@x.io", name: "Alice", server: server.baseURL)
        let bob = try await server.register("bob@x.io", name: "Bob")
        // A name stored before names were checked (or by another tool on the database).
        let database = try DatabaseQueue(path: server.dataDirectory + "/parley.sqlite")
        try await database.write { try $0.execute(sql: "UPDATE users SET display_name = ? WHERE id = ?", arguments: [Self.hostileName, bob.id.description]) }
        let opened = try await CLI.run(["open-direct", "bob@x.io"], profile: alice)
        let direct = try #require(EntityID(CLI.single(opened.output)))
        let tail = try RunningCLI(["tail", "--profile", alice], environment: [:])
        defer { tail.stop() }
        try await tail.waitForOutput("waiting for events")
        _ = try await bob.api.send(.init(clientMessageId: "evil", text: Self.hostileText), to: direct)
        try await tail.waitForOutput("send me your password")

        let history = try await CLI.run(["history", direct.description], profile: alice)
        #expect(history.status == 0, "\(history.output)")
        #expect(history.output.contains("Mallory") && history.output.contains("hi "), "\(history.output)")
        #expect(!CLI.lines(history.output).contains { $0.hasPrefix("#99") }, "a line of a message cannot pass for a message:\n\(history.output)")
        Self.expectInert(history.output, "history")
        Self.expectInert(tail.output, "tail")
        for command in [["users"], ["members"], ["conversations"], ["history", "--offline", direct.description]] {
            let run = try await CLI.run(command, profile: alice)
            #expect(run.status == 0, "\(command): \(run.output)")
            #expect(run.output.contains("Mallory"), "\(command): \(run.output)")
            Self.expectInert(run.output, command.joined(separator: " "))
        }
    }

    @Test func namesWithControlsOrDirectionOverridesAreRefused() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        for bad in [Self.hostileName, "Tab\there", "line\nbreak", "C1\u{85}next", "Evil\u{202E}gnp.exe", "Isolate\u{2067}x", "DEL\u{7F}"] {
            let body = try JSONSerialization.data(withJSONObject: [
                "organization": "acme", "email": "x\(abs(bad.hashValue))@x.io", "password": TestUser.password, "displayName": bad,
            ])
            let answer = try await server.raw("POST", "auth/register", body: body)
            #expect(answer.status == 400 && errorCode(answer.body) == .invalidRequest, "display name \(bad.debugDescription): \(answer.status)")
            let group = try JSONSerialization.data(withJSONObject: ["type": "group", "participantIds": [bob.id.description], "name": bad])
            let created = try await server.raw("POST", "conversations", token: alice.token, body: group)
            #expect(created.status == 400, "group name \(bad.debugDescription): \(created.status)")
            let upload = try await server.raw(
                "POST", "attachments?name=\(bad.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)", token: alice.token,
                body: Data("x".utf8), headers: ["Content-Type": "text/plain"])
            #expect(upload.status == 400, "file name \(bad.debugDescription): \(upload.status)")
        }
        let organization = try JSONSerialization.data(withJSONObject: [
            "organization": "Evil\u{1B}[2J", "email": "o@x.io", "password": TestUser.password, "displayName": "O",
        ])
        #expect(try await server.raw("POST", "auth/register", body: organization).status == 400)
        // What people really write still goes through: accents, right-to-left scripts, emoji,
        // and the direction marks they use.
        for good in ["Zoë Ångström", "محمد\u{200F}", "李小龍", "Ada 👩🏽‍💻"] {
            let body = try JSONSerialization.data(withJSONObject: [
                "organization": "acme", "email": "g\(abs(good.hashValue))@x.io", "password": TestUser.password, "displayName": good,
            ])
            #expect(try await server.raw("POST", "auth/register", body: body).status == 201, "\(good) is a name")
        }
        #expect(try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id], name: "Équipe 🚀")).name == "Équipe 🚀")
    }

    @Test func downloadsAreNeverSniffedOrRunAndTheirNamesCannotLie() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let upload = try await server.raw(
            "POST", "attachments?name=r%C3%A9sum%C3%A9%20%22final%22.html", token: alice.token,
            body: Data("<html><script>alert(1)</script>".utf8), headers: ["Content-Type": "text/plain"])
        #expect(upload.status == 201, "\(String(decoding: upload.body, as: UTF8.self))")
        let attachment = try WireCoding.makeDecoder().decode(Attachment.self, from: upload.body)
        let download = try await server.exchange("GET", "attachments/\(attachment.id)", token: alice.token)
        #expect(download.status == 200)
        let headers = Dictionary(uniqueKeysWithValues: download.headers.map { ($0.key.lowercased(), $0.value) })
        #expect(headers["x-content-type-options"] == "nosniff")
        #expect(headers["content-security-policy"]?.contains("sandbox") == true)
        #expect(
            headers["content-disposition"] == #"attachment; filename="r_sum_ _final_.html"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22final%22.html"#,
            "\(headers["content-disposition"] ?? "none")")
    }

    @Test func derivedTextCarriesNoControlsOrOverrides() throws {
        // A file name stored before names were checked, as a download would name it.
        let disposition = AttachmentController.contentDisposition(fileName: "invoice\u{202E}gnp.exe")
        #expect(!disposition.contains("\u{202E}") && !disposition.contains("%E2%80%AE"), "\(disposition)")
        #expect(disposition.contains("filename=\"invoice_gnp.exe\""), "\(disposition)")
        // A push for a message from a legacy hostile name: the title and body carry no control.
        let message = Message(
            id: EntityID(), conversationId: EntityID(), seq: 1, updatedSeq: 1, senderId: EntityID(), clientMessageId: "c", type: .text,
            text: Self.hostileText, createdAt: Date())
        let payload = PushNotificationPayload(message: message, senderName: Self.hostileName, badge: 1)
        Self.expectInert(payload.aps.alert.title, "push title")
        Self.expectInert(payload.aps.alert.body, "push body")
        #expect(payload.aps.alert.body.contains("#99"), "line breaks stay in a notification body")
    }
}
