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
