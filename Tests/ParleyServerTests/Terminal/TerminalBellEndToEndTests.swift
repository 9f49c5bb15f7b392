import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// `parley chat` in tmux rings the terminal's bell (BEL) for a message in another conversation,
/// not for one in the chat on screen nor for what was unread at start; `--no-bell` keeps it
/// quiet. The pane's raw output is piped to a file, where each BEL is counted.
@Suite(.serialized, .needs("tmux")) struct TerminalBellEndToEndTests {
    typealias Tmux = TerminalClientEndToEndTests.Tmux
    typealias Terminal = TerminalClientEndToEndTests

    static func bells(_ file: String) -> Int {
        ((try? Data(contentsOf: URL(fileURLWithPath: file))) ?? Data()).filter { $0 == 0x07 }.count
    }

    @Test(.heavy) func aMessageElsewhereRingsTheBellOneOnScreenDoesNot() async throws {
        let cast = try await Terminal.AdaAndBob.start("terminal-bell", firstMessage: "unread before the client started")
        defer { cast.server.stop() }
        let group = try await cast.bobAPI.createConversation(.init(type: .group, participantIds: [cast.ada.user.id], name: "Launch"))
        // The direct chat's newest message puts it first in the list.
        _ = try await cast.bobAPI.send(.init(clientMessageId: "top", text: "the direct chat on top"), to: cast.direct.id)
        let tmux = Tmux()
        defer { tmux.kill() }
        let raw = TestServer.temporaryDirectory() + "-bell.out"
        let quiet = TestServer.temporaryDirectory() + "-quiet.out"
        try tmux.start("ada", width: 100, height: 30, command: Terminal.chat(try Terminal.profile(for: cast.ada, server: cast.url)))
        try tmux.run(["pipe-pane", "-o", "-t", "ada", "cat >> \(raw)"])
        try await tmux.waitFor("ada", "● online")
        try await tmux.waitFor("ada", "Launch")
        #expect(Self.bells(raw) == 0, "nothing rings for what was unread at start")

        // Ada opens the direct chat; Bob writes there: on screen, no bell.
        try await waitFor("the direct chat first in the list") { try tmux.screen("ada").contains("the direct chat on top") }
        try tmux.press("ada", "Enter")
        try await tmux.waitFor("ada", "unread before the client started")
        _ = try await cast.bobAPI.send(.init(clientMessageId: "here", text: "in the chat you are reading"), to: cast.direct.id)
        try await tmux.waitFor("ada", "in the chat you are reading")
        #expect(Self.bells(raw) == 0, "no bell for the chat on screen")

        // Bob writes in the group: a bell, one per message.
        _ = try await cast.bobAPI.send(.init(clientMessageId: "g1", text: "launch at noon"), to: group.id)
        try await waitFor("a bell") { Self.bells(raw) == 1 }
        _ = try await cast.bobAPI.send(.init(clientMessageId: "g2", text: "bring snacks"), to: group.id)
        try await waitFor("a second bell") { Self.bells(raw) == 2 }
        try tmux.save("ada", as: "bell")

        // `--no-bell`: the same message elsewhere, no bell.
        let profile = try Terminal.profile(for: cast.ada, server: cast.url)
        let binary = ServeProcess.binary.path
        try tmux.start("muted", width: 100, height: 30, command: "\(binary) chat --profile \(profile) --no-bell; sleep 60")
        try tmux.run(["pipe-pane", "-o", "-t", "muted", "cat >> \(quiet)"])
        try await tmux.waitFor("muted", "● online")
        try await tmux.waitFor("muted", "Launch")
        _ = try await cast.bobAPI.send(.init(clientMessageId: "g3", text: "quietly now"), to: group.id)
        try await waitFor("the message in the list") { try tmux.screen("muted").contains("quietly now") }
        #expect(Self.bells(quiet) == 0)
    }
}

/// A group managed from `parley chat` in tmux: renamed, someone added and someone removed, then
/// left; each change reaches the server (and so the others), and a left group leaves the list.
@Suite(.serialized, .needs("tmux")) struct TerminalGroupEndToEndTests {
    typealias Tmux = TerminalClientEndToEndTests.Tmux
    typealias Terminal = TerminalClientEndToEndTests

    @Test(.heavy) func aGroupIsRenamedGrowsShrinksAndIsLeftFromTheTerminal() async throws {
        let cast = try await Terminal.AdaAndBob.start("terminal-group", firstMessage: "hi")
        defer { cast.server.stop() }
        let api = ParleyAPI(baseURL: cast.url)
        let carol = try await api.register(.init(organization: "acme", email: "carol@x.io", password: TestUser.password, displayName: "Carol"))
        let dave = try await api.register(.init(organization: "acme", email: "dave@x.io", password: TestUser.password, displayName: "Dave"))
        let group = try await cast.bobAPI.createConversation(.init(type: .group, participantIds: [cast.ada.user.id, carol.user.id], name: "Launch"))
        _ = try await cast.bobAPI.send(.init(clientMessageId: "g0", text: "the group on top"), to: group.id)
        let tmux = Tmux()
        defer { tmux.kill() }
        try tmux.start("ada", width: 100, height: 30, command: Terminal.chat(try Terminal.profile(for: cast.ada, server: cast.url)))
        try await tmux.waitFor("ada", "● online")
        try await waitFor("the group first") { try tmux.screen("ada").contains("the group on top") }
        try tmux.press("ada", "Enter")
        try await tmux.waitFor("ada", "the group on top")

        for command in ["/rename Launch crew", "/add dave@x.io", "/remove carol@x.io"] {
            try tmux.type("ada", command)
            try tmux.press("ada", "Enter")
        }
        try await waitFor("the changes at the server") {
            let now = try await cast.bobAPI.conversation(group.id)
            return now.name == "Launch crew" && Set(now.participantIds) == [cast.bob.user.id, cast.ada.user.id, dave.user.id]
        }
        try await tmux.waitFor("ada", "Launch crew")
        try tmux.save("ada", as: "group-managed")

        try tmux.type("ada", "/leave")
        try tmux.press("ada", "Enter")
        try await waitFor("Ada out of the group") { try await !cast.bobAPI.conversation(group.id).participantIds.contains(cast.ada.user.id) }
        try await tmux.waitFor("ada", "You left the group")
        try await waitFor("the group gone from Ada's list") { try !tmux.screen("ada").contains("Launch crew") }
    }
}

/// `parley chat` opens a chat with unread messages at the first of them, under its
/// "New messages" line, with the newest below the pane.
@Suite(.serialized, .needs("tmux")) struct TerminalFirstUnreadEndToEndTests {
    typealias Tmux = TerminalClientEndToEndTests.Tmux
    typealias Terminal = TerminalClientEndToEndTests

    @Test(.heavy) func aChatOpensAtItsFirstUnreadMessage() async throws {
        let cast = try await Terminal.AdaAndBob.start("terminal-unread", arguments: ["--rate-limits", "off"], firstMessage: "old 1")
        defer { cast.server.stop() }
        _ = try await ParleyAPI(baseURL: cast.url, token: cast.ada.token).markRead(cast.direct.id, upToSeq: 1)
        for n in 1...40 { _ = try await cast.bobAPI.send(.init(clientMessageId: "n\(n)", text: "new \(n)"), to: cast.direct.id) }
        let tmux = Tmux()
        defer { tmux.kill() }
        try tmux.start("ada", width: 100, height: 30, command: Terminal.chat(try Terminal.profile(for: cast.ada, server: cast.url)))
        try await tmux.waitFor("ada", "● online")
        try await waitFor("the chat in the list") { try tmux.screen("ada").contains("new 40") }
        try tmux.press("ada", "Enter")
        let screen = try await tmux.waitFor("ada", "New messages")
        // The chat pane: what is right of the list's "│" border.
        let pane = screen.split(separator: "\n").compactMap { line in
            line.firstIndex(of: "│").map { line[line.index(after: $0)...].trimmingCharacters(in: .whitespaces) }
        }
        #expect(pane.contains("new 1"), "the first unread under the line:\n\(screen)")
        #expect(!pane.contains("new 40"), "the newest is below the pane:\n\(screen)")
        #expect(pane.firstIndex { $0.contains("New messages") } ?? 99 < 6, "the line near the pane's top:\n\(screen)")
        try tmux.save("ada", as: "first-unread")
    }
}
