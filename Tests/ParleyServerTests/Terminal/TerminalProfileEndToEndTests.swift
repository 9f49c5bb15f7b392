import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// One's own name and picture from `parley chat` under tmux: `/name` renames Ada for everyone,
/// `/picture` sets and removes her picture (a text file is refused before anything goes), and
/// Bob's rename over the API reaches her list and timeline through `user.updated`.
@Suite(.serialized, .needs("tmux")) struct TerminalProfileEndToEndTests {
    typealias Tmux = TerminalClientEndToEndTests.Tmux
    typealias Terminal = TerminalClientEndToEndTests

    @Test(.heavy) func nameAndPictureFromTheTerminal() async throws {
        let cast = try await Terminal.AdaAndBob.start("terminal-profile", firstMessage: "hello from Bob")
        defer { cast.server.stop() }
        let tmux = Tmux()
        defer { tmux.kill() }
        try tmux.start("ada", width: 100, height: 30, command: Terminal.chat(try Terminal.profile(for: cast.ada, server: cast.url)))
        try await tmux.waitFor("ada", "● online")
        try await waitFor("the direct chat") { try tmux.screen("ada").contains("hello from Bob") }

        try tmux.type("ada", "/name Ada Lovelace")
        try tmux.press("ada", "Enter")
        try await tmux.waitFor("ada", "You are now Ada Lovelace to everyone")
        #expect(try await cast.bobAPI.users().first { $0.id == cast.ada.user.id }?.displayName == "Ada Lovelace")

        let folder = TestServer.temporaryDirectory()
        let notes = folder + "/notes.txt"
        try "not a picture".write(toFile: notes, atomically: true, encoding: .utf8)
        try tmux.type("ada", "/picture \(notes)")
        try tmux.press("ada", "Enter")
        try await tmux.waitFor("ada", "A picture must be a PNG, JPEG, GIF or WebP image")
        let picture = folder + "/me.png"
        try Fixtures.png.write(to: URL(fileURLWithPath: picture))
        try tmux.type("ada", "/picture \(picture)")
        try tmux.press("ada", "Enter")
        try await tmux.waitFor("ada", "Your picture is set")
        let url = try #require(try await cast.bobAPI.users().first { $0.id == cast.ada.user.id }?.avatarUrl)
        #expect(try await cast.bobAPI.download(url) == Fixtures.png, "Bob downloads it")

        // Bob renames himself: Ada's list row and his message's sender follow, live.
        _ = try await cast.bobAPI.updateProfile(.init(displayName: "Robert"))
        try await waitFor("Robert on Ada's screen") { try tmux.screen("ada").contains("Robert") }
        try tmux.save("ada", as: "profile")
        let screen = try tmux.screen("ada")
        #expect(!screen.contains("○ Bob") && !screen.contains("● Bob"), "the row has the new name: \(screen)")
        #expect(screen.contains("Parley · Ada Lovelace <ada@x.io>"), "the header has her own new name: \(screen)")

        try tmux.type("ada", "/picture off")
        try tmux.press("ada", "Enter")
        try await tmux.waitFor("ada", "Your picture is gone")
        #expect(try await cast.bobAPI.users().first { $0.id == cast.ada.user.id }?.avatarUrl == nil)
    }
}
