import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Pasting into the real `parley chat` in a real terminal (tmux, whose `paste-buffer -p`
/// brackets the text only if the program turned bracketed paste on), against a real server.
@Suite(.serialized, .needs("tmux")) struct TerminalPasteEndToEndTests {
    typealias Tmux = TerminalClientEndToEndTests.Tmux

    /// Three pasted lines, one starting with "/quit", must not go out as two messages and quit
    /// the client: the paste waits on the input line, Enter sends it as one message with its
    /// line breaks, and on exit the shell gets no paste markers.
    @Test(.heavy) func aPastedParagraphIsOneMessageAndRunsNoCommand() async throws {
        let cast = try await TerminalClientEndToEndTests.AdaAndBob.start("terminal-paste", firstMessage: "paste me your notes")
        defer { cast.server.stop() }
        let (url, ada, bobAPI, direct) = (cast.url, cast.ada, cast.bobAPI, cast.direct)
        let tmux = Tmux()
        defer { tmux.kill() }
        let profile = try TerminalClientEndToEndTests.profile(for: ada, server: url)
        try tmux.start("ada", width: 100, height: 30, command: TerminalClientEndToEndTests.chat(profile))
        try await tmux.waitFor("ada", "paste me your notes")
        try tmux.press("ada", "Enter")
        try await tmux.waitFor("ada", "Enter send")

        try tmux.run(["set-buffer", "-b", "notes", "line one\n/quit\nline three"])
        try tmux.run(["paste-buffer", "-p", "-b", "notes", "-t", "ada"])
        let pasted = try await tmux.waitFor("ada", "> line one⏎/quit⏎line three")
        #expect(!pasted.contains("chat exited"), "the pasted /quit ran:\n\(pasted)")
        // Nothing is sent by the paste itself: a message typed and sent after it (so after
        // anything the paste sent) is the only one that reaches the server.
        try tmux.press("ada", "C-u")
        try await waitFor("the input line emptied") { try !tmux.screen("ada").contains("> line one⏎/quit⏎line three") }
        try tmux.type("ada", "typed after the paste")
        try tmux.press("ada", "Enter")
        try await waitFor("the marker at the server", timeout: .seconds(20)) {
            try await bobAPI.messages(direct.id).messages.count >= 2
        }
        #expect(try await bobAPI.messages(direct.id).messages.map(\.text) == ["paste me your notes", "typed after the paste"])
        try tmux.run(["paste-buffer", "-p", "-b", "notes", "-t", "ada"])
        try await tmux.waitFor("ada", "> line one⏎/quit⏎line three")

        try tmux.press("ada", "Enter")
        try await waitFor("Ada's message at the server", timeout: .seconds(20)) {
            try await bobAPI.messages(direct.id).messages.count == 3
        }
        let texts = try await bobAPI.messages(direct.id).messages.map(\.text)
        #expect(texts == ["paste me your notes", "typed after the paste", "line one\n/quit\nline three"])
        let screen = try await tmux.waitFor("ada", "line three")
        let lines = screen.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.contains("│   line one") } && lines.contains { $0.contains("│   /quit") }, "three lines in the timeline:\n\(screen)")
        #expect(!screen.contains("chat exited"))
        try tmux.save("ada", as: "paste")

        // Leaving turns bracketed paste off again: a paste into the shell's terminal is plain text.
        try tmux.press("ada", "C-c")
        try await tmux.waitFor("ada", "chat exited 0")
        try tmux.run(["set-buffer", "-b", "after", "typed after"])
        try tmux.run(["paste-buffer", "-p", "-b", "after", "-t", "ada"])
        let after = try await tmux.waitFor("ada", "typed after")
        #expect(!after.contains("200~") && !after.contains("201~"), "paste markers reached the shell:\n\(after)")
    }
}
