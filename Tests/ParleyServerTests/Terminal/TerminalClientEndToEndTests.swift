import Foundation
#if canImport(Glibc)
import Glibc
#endif
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// `parley chat` as people use it: two real terminals (tmux) running the real binary against a
/// real server, read back with `capture-pane`. The screens are saved under
/// `.build/test-screens/` for a person to look at.
@Suite(.serialized, .needs("tmux")) struct TerminalClientEndToEndTests {
    /// A tmux server of this test's own (its own socket), so nothing else's sessions are touched.
    struct Tmux {
        let socket = "parley-test-\(UUID().uuidString.prefix(8))"

        /// Runs a tmux command (see ``Spawn``: Foundation's `Process` did not notice the exit of
        /// the tmux client that starts the server, and a blocked signal mask broke tmux).
        @discardableResult
        func run(_ arguments: [String]) throws -> String {
            let (status, output) = try Spawn.run("tmux", ["-f", "/dev/null", "-L", socket] + arguments)
            guard status == 0 else { throw ClientError(kind: .transport, message: "tmux \(arguments.first ?? ""): \(output)") }
            return output
        }

        func start(_ name: String, width: Int, height: Int, command: String) throws {
            try run(["new-session", "-d", "-s", name, "-x", "\(width)", "-y", "\(height)", command])
        }

        func type(_ name: String, _ text: String) throws { try run(["send-keys", "-t", name, "-l", text]) }
        func press(_ name: String, _ keys: String...) throws { try run(["send-keys", "-t", name] + keys) }
        func screen(_ name: String) throws -> String { try run(["capture-pane", "-p", "-t", name]) }

        /// Waits until the screen shows `text` (the program draws asynchronously).
        @discardableResult
        func waitFor(_ name: String, _ text: String, timeout: Duration = .seconds(60)) async throws -> String {
            let deadline = ContinuousClock.now + timeout
            var last = ""
            while ContinuousClock.now < deadline {
                last = try screen(name)
                if last.contains(text) { return last }
                try await Task.sleep(for: .milliseconds(100))
            }
            Issue.record("\(name)'s screen never showed \"\(text)\"; it shows:\n\(last)")
            throw ClientError(kind: .transport, message: "timed out")
        }

        func save(_ name: String, as file: String) throws {
            let folder = URL(fileURLWithPath: Repository.screens)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try screen(name).write(to: folder.appendingPathComponent("terminal-\(file).txt"), atomically: true, encoding: .utf8)
            // With colours, for turning into a picture.
            try run(["capture-pane", "-p", "-e", "-t", name]).write(
                to: folder.appendingPathComponent("terminal-\(file).ansi"), atomically: true, encoding: .utf8)
        }

        func kill() { _ = try? run(["kill-server"]) }
    }

    /// A profile folder holding a session, as `parley login` leaves it.
    static func profile(for auth: AuthResponse, server: URL) throws -> String {
        struct Session: Encodable {
            var server: String
            var token: String
            var user: User
        }
        let folder = TestServer.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let data = try WireCoding.makeEncoder().encode(Session(server: server.absoluteString, token: auth.token, user: auth.user))
        try data.write(to: URL(fileURLWithPath: folder).appendingPathComponent("session.json"))
        return folder
    }

    static func chat(_ profile: String, server: URL? = nil) -> String {
        let binary = ServeProcess.binary.path
        let serverOption = server.map { " --server \($0.absoluteString)" } ?? ""
        // After the client ends: its exit status on the restored screen.
        return "\(binary) chat --profile \(profile)\(serverOption); echo \"chat exited $?\"; sleep 60"
    }

    /// A real `parley serve` with Ada and Bob registered, and Bob's direct conversation with Ada
    /// holding his `firstMessage`. The caller stops the server.
    struct AdaAndBob {
        let server: ServeProcess
        let ada: AuthResponse, bob: AuthResponse
        let bobAPI: ParleyAPI
        let direct: Conversation
        var url: URL { server.url }

        static func start(_ name: String, arguments: [String] = [], firstMessage: String) async throws -> AdaAndBob {
            let server = try ServeProcess(name: name, arguments: arguments)
            try await server.waitUntilReady()
            let api = ParleyAPI(baseURL: server.url)
            let ada = try await api.register(.init(organization: "acme", email: "ada@x.io", password: TestUser.password, displayName: "Ada"))
            let bob = try await api.register(.init(organization: "acme", email: "bob@x.io", password: TestUser.password, displayName: "Bob"))
            let bobAPI = ParleyAPI(baseURL: server.url, token: bob.token)
            let direct = try await bobAPI.createConversation(.init(type: .direct, participantIds: [ada.user.id]))
            _ = try await bobAPI.send(.init(clientMessageId: "first", text: firstMessage), to: direct.id)
            return AdaAndBob(server: server, ada: ada, bob: bob, bobAPI: bobAPI, direct: direct)
        }
    }

    static func count(_ text: String, in screen: String) -> Int { screen.components(separatedBy: text).count - 1 }

    /// Presses a paging key and waits until the screen shows its effect (it changed), so the
    /// next press starts from the page this one reached.
    static func press(_ key: String, in tmux: Tmux, _ name: String) async throws {
        let before = try tmux.screen(name)
        try tmux.press(name, key)
        try await waitFor("\(name)'s screen to move after \(key)") { try tmux.screen(name) != before }
    }

    @Test(.heavy) func twoPeopleChatInTwoTerminalsThroughOutagesAndSignIn() async throws {
        // A real `parley serve`, so the outage below is a real one (SIGKILL).
        let dataDirectory = TestServer.temporaryDirectory()
        var server = try ServeProcess(name: "terminal", dataDirectory: dataDirectory)
        defer { server.stop() }
        try await server.waitUntilReady()
        let url = server.url
        let api = ParleyAPI(baseURL: url)
        let ada = try await api.register(.init(organization: "acme", email: "ada@x.io", password: TestUser.password, displayName: "Ada"))
        let bob = try await api.register(.init(organization: "acme", email: "bob@x.io", password: TestUser.password, displayName: "Bob"))
        let tmux = Tmux()
        defer { tmux.kill() }
        try tmux.start("ada", width: 100, height: 30, command: Self.chat(try Self.profile(for: ada, server: url)))
        try tmux.start("bob", width: 80, height: 24, command: Self.chat(try Self.profile(for: bob, server: url)))
        try await tmux.waitFor("ada", "● online")
        try await tmux.waitFor("bob", "● online")

        // Ada starts a direct conversation and writes; Bob's list shows it, unread.
        try tmux.type("ada", "/dm bob@x.io")
        try tmux.press("ada", "Enter")
        try await tmux.waitFor("ada", "Bob  online")
        try tmux.type("ada", "Hello from the terminal")
        try tmux.press("ada", "Enter")
        let bobList = try await tmux.waitFor("bob", "Hello from the terminal")
        #expect(bobList.contains("● Ada") && bobList.contains(" 1 "), "Bob's row: Ada online, one unread:\n\(bobList)")

        // Bob opens it: Ada sees it read. Bob types: Ada sees him typing, then his answer.
        try tmux.press("bob", "Enter")
        try await tmux.waitFor("ada", "✓✓ read")
        try tmux.type("bob", "Hi Ada")
        try await tmux.waitFor("ada", "Bob is typing…")
        try tmux.save("ada", as: "typing")
        try tmux.press("bob", "Enter")
        try await tmux.waitFor("ada", "Hi Ada")
        try tmux.type("ada", "/react 1 👍")
        try tmux.press("ada", "Enter")
        try await tmux.waitFor("bob", "👍 1")

        // A file from Ada's disk reaches Bob, who saves it to his.
        let folder = TestServer.temporaryDirectory()
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try "the minutes\n".write(toFile: folder + "/minutes.txt", atomically: true, encoding: .utf8)
        try tmux.type("ada", "/attach \(folder)/minutes.txt today's minutes")
        try tmux.press("ada", "Enter")
        try await tmux.waitFor("bob", "📎 minutes.txt (12 B)")
        try tmux.type("bob", "/save 1 \(folder)/saved.txt")
        try tmux.press("bob", "Enter")
        try await tmux.waitFor("bob", "Saved to \(folder)/saved.txt")
        #expect(try String(contentsOfFile: folder + "/saved.txt", encoding: .utf8) == "the minutes\n")

        // The server goes away: Ada's message waits, marked, under an offline banner; when the
        // server is back it arrives once.
        server.kill()
        try await tmux.waitFor("ada", "Offline")
        try tmux.type("ada", "written while the server was down")
        try tmux.press("ada", "Enter")
        // Shown at once, marked as sending (the input line is empty again).
        let waiting = try await tmux.waitFor("ada", "◷")
        #expect(waiting.contains("│   written while the server was down"), "\(waiting)")
        try tmux.save("ada", as: "offline")
        // Restarted as `swift run parley serve` runs: joining acme takes an invite from now on.
        server = try ServeProcess(name: "terminal", dataDirectory: dataDirectory, port: url.port, openOrganizations: false)
        try await server.waitUntilReady()
        let delivered = try await tmux.waitFor("bob", "written while the server was down", timeout: .seconds(40))
        #expect(Self.count("written while the server was down", in: delivered) == 1)
        try await tmux.waitFor("ada", "● online", timeout: .seconds(40))
        try tmux.save("ada", as: "chat")
        try tmux.save("bob", as: "chat-narrow")

        // Someone with no session signs up from inside the client.
        let emptyProfile = TestServer.temporaryDirectory()
        try tmux.start("carol", width: 90, height: 24, command: Self.chat(emptyProfile, server: url))
        try await tmux.waitFor("carol", "(l)og in or (r)egister")
        try tmux.save("carol", as: "sign-in")
        let invite = try await ParleyAPI(baseURL: url, token: ada.token).createInvite()
        // Each answer taken before the next is typed: the form shows it, or (the password,
        // masked) asks the next question.
        for (answer, shown) in [
            ("r", "Registering"), ("acme", "Organization: acme"), ("carol@x.io", "Email: carol@x.io"),
            ("correct horse battery", "Your name"), ("Carol", "Name: Carol"),
        ] {
            try tmux.type("carol", answer)
            try tmux.press("carol", "Enter")
            try await tmux.waitFor("carol", shown)
        }
        let asked = try await tmux.waitFor("carol", "Invite code")
        #expect(asked.contains("Name: Carol") && asked.contains("takes an invite from"), "\(asked)")
        #expect(!asked.contains("● online"), "no connection claimed before signing in:\n\(asked)")
        try tmux.save("carol", as: "sign-up-invite")
        try tmux.type("carol", invite.code)
        try tmux.press("carol", "Enter")
        let signedIn = try await tmux.waitFor("carol", "Carol <carol@x.io>")
        #expect(!signedIn.contains("correct horse battery"), "the password never shows")
        #expect(FileManager.default.fileExists(atPath: emptyProfile + "/session.json"), "the session is kept for next time")

        // Ctrl-C leaves the terminal as it was.
        try tmux.press("ada", "C-c")
        let after = try await tmux.waitFor("ada", "chat exited 0")
        #expect(!after.contains("Conversations"), "back on the normal screen:\n\(after)")
    }

    /// The commands a person uses beyond sending: a group started from the client, an edit, a
    /// delete, a forward into another conversation, a search, and paging back through a long
    /// history with PgUp; each checked on the screen and, where another person would see it,
    /// through the server.
    @Test(.heavy) func groupsEditsDeletesForwardsSearchAndHistory() async throws {
        let server = try ServeProcess(name: "terminal-commands", arguments: ["--rate-limits", "off"])
        defer { server.stop() }
        try await server.waitUntilReady()
        let url = server.url
        let api = ParleyAPI(baseURL: url)
        let ada = try await api.register(.init(organization: "acme", email: "ada@x.io", password: TestUser.password, displayName: "Ada"))
        let bob = try await api.register(.init(organization: "acme", email: "bob@x.io", password: TestUser.password, displayName: "Bob"))
        let carol = try await api.register(.init(organization: "acme", email: "carol@x.io", password: TestUser.password, displayName: "Carol"))
        let bobAPI = ParleyAPI(baseURL: url, token: bob.token), carolAPI = ParleyAPI(baseURL: url, token: carol.token)
        let direct = try await bobAPI.createConversation(.init(type: .direct, participantIds: [ada.user.id]))
        for n in 1...80 { _ = try await bobAPI.send(.init(clientMessageId: "h\(n)", text: String(format: "m%03d", n)), to: direct.id) }
        let tmux = Tmux()
        defer { tmux.kill() }
        try tmux.start("ada", width: 100, height: 30, command: Self.chat(try Self.profile(for: ada, server: url)))
        try await tmux.waitFor("ada", "● online")
        func command(_ line: String) throws {
            try tmux.type("ada", line)
            try tmux.press("ada", "Enter")
        }

        // A group from the client; Carol, who has no terminal here, reads it through the server.
        try command("/group bob@x.io,carol@x.io Planning")
        try await tmux.waitFor("ada", "Planning")
        try command("hello team")
        try await tmux.waitFor("ada", "hello team")
        // Edited only once Ada's client has the server's answer (its mark): stored on the
        // server is not enough, the answer may still be on its way to her client, which then
        // rightly says the message has not reached the server yet.
        try await tmux.waitFor("ada", "✓")
        let group = try #require(try await carolAPI.conversations().first { $0.name == "Planning" })
        try await waitFor("Carol to have it") { try await carolAPI.messages(group.id).messages.contains { $0.text == "hello team" } }

        // Edit the newest own message; delete another; both reach the others.
        try command("/edit 1 hello team, edited")
        try await tmux.waitFor("ada", "hello team, edited")
        try command("oops")
        try await tmux.waitFor("ada", "oops")
        try command("/delete 1")
        try await tmux.waitFor("ada", "deleted")
        try await waitFor("Carol to see the edit and the delete", timeout: .seconds(90)) {
            let messages = try await carolAPI.messages(group.id).messages
            return messages.contains { $0.text == "hello team, edited" && $0.editedAt != nil }
                && messages.contains { $0.deletedAt != nil }
        }
        try tmux.save("ada", as: "group")

        // Forward the edited message to Bob's direct chat, then search for it there.
        try command("/forward 2 Bob")
        try await tmux.waitFor("ada", "Forwarded to Bob")
        try await waitFor("the forward in the direct chat") {
            try await bobAPI.messages(direct.id).messages.last.map { $0.text == "hello team, edited" && $0.forwardedFromId != nil } ?? false
        }
        try command("/open Bob")
        // Eighty unread: the chat opens at the first of them; PgDn goes down to the newest.
        try await tmux.waitFor("ada", "New messages")
        for _ in 0..<20 where try !tmux.screen("ada").contains("m080") {
            try await Self.press("NPage", in: tmux, "ada")
        }
        try await tmux.waitFor("ada", "m080")
        try command("/search edited")
        let found = try await tmux.waitFor("ada", "1 found for \"edited\"")
        #expect(found.contains("hello team, edited"), "\(found)")
        try tmux.press("ada", "Escape")

        // A long history: PgUp pages back to the first message, loading older pages on the way.
        for _ in 0..<20 where try !tmux.screen("ada").contains("m001") {
            try await Self.press("PPage", in: tmux, "ada")
        }
        let top = try await tmux.waitFor("ada", "m001")
        #expect(!top.contains("m080"), "scrolled back, not the newest:\n\(top)")
        try tmux.save("ada", as: "history-top")
        try command("/resend")
        try await tmux.waitFor("ada", "Nothing to resend")
    }
}
