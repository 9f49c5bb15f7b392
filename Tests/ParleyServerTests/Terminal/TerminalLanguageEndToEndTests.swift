import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// `parley chat` in a French terminal (`LANG=fr_FR.UTF-8`), in tmux as a person uses it: the
/// sign-in form, a refused password as a sentence, the panes, the chat's lines and the hints
/// are French; what Bob wrote stays as he wrote it.
@Suite(.serialized, .needs("tmux")) struct TerminalLanguageEndToEndTests {
    typealias Terminal = TerminalClientEndToEndTests

    @Test(.heavy) func aFrenchTerminalGetsAFrenchClient() async throws {
        let cast = try await Terminal.AdaAndBob.start("terminal-french", firstMessage: "New messages")
        defer { cast.server.stop() }
        let tmux = Terminal.Tmux()
        defer { tmux.kill() }
        let emptyProfile = TestServer.temporaryDirectory()
        try tmux.start("ada", width: 100, height: 24, command: "LANG=fr_FR.UTF-8 LC_ALL= " + Terminal.chat(emptyProfile, server: cast.url))
        try await tmux.waitFor("ada", "(l) se connecter ou (r) créer un compte")
        // Each answer taken before the next is typed: the form shows it (the password, masked,
        // is answered by the refusal below).
        for (answer, shown) in [("l", "Organisation"), ("acme", "Organisation : acme"), ("ada@x.io", "E-mail : ada@x.io"), ("not her password", nil)] {
            try tmux.type("ada", answer)
            try tmux.press("ada", "Enter")
            if let shown { try await tmux.waitFor("ada", shown) }
        }
        let refused = try await tmux.waitFor("ada", "Organisation, e-mail ou mot de passe incorrect.")
        #expect(!refused.contains("unauthorized"), "a sentence, not a code:\n\(refused)")
        try tmux.type("ada", TestUser.password)
        try tmux.press("ada", "Enter")
        try await tmux.waitFor("ada", "● en ligne")
        // The list names Bob once the people are read (until then he is "Quelqu’un").
        let signedIn = try await tmux.waitFor("ada", "Bob")
        #expect(signedIn.contains("Conversations") && signedIn.contains("Bob"), "\(signedIn)")

        // Bob's chat: the day and the "new messages" line are French; his message reading
        // "New messages" is his.
        try tmux.type("ada", "/open 1")
        try tmux.press("ada", "Enter")
        let chat = try await tmux.waitFor("ada", "Nouveaux messages")
        #expect(chat.contains("Aujourd’hui"), "\(chat)")
        // Twice: the list row's preview and the bubble.
        #expect(TerminalClientEndToEndTests.count("New messages", in: chat) == 2, "Bob's words as he wrote them:\n\(chat)")
        #expect(chat.contains("Bob  hors ligne"), "\(chat)")
        try tmux.type("ada", "Merci Bob")
        try tmux.press("ada", "Enter")
        let sent = try await tmux.waitFor("ada", "Vous ")
        #expect(sent.contains("Merci Bob") && sent.contains("Enter envoyer"), "\(sent)")
        try tmux.save("ada", as: "french")
    }
}
