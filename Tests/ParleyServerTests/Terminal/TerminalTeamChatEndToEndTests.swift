import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Team chat in `parley chat` under tmux: a root's thread line, `/thread` with a reply whose "@"
/// Tab-completes, `/pin` and the pinned line, `/mute` and the dim badge, a mention's "@" in the
/// list, a preview card, and Esc back to the timeline.
@Suite(.serialized, .needs("tmux")) struct TerminalTeamChatEndToEndTests {
    typealias Tmux = TerminalClientEndToEndTests.Tmux
    typealias Terminal = TerminalClientEndToEndTests

    @Test(.heavy) func threadsMentionsPinsAndMuteFromTheTerminal() async throws {
        let cast = try await Terminal.AdaAndBob.start("terminal-team", firstMessage: "hi")
        defer { cast.server.stop() }
        let group = try await cast.bobAPI.createConversation(.init(type: .group, participantIds: [cast.ada.user.id], name: "Launch"))
        let root = try await cast.bobAPI.send(.init(clientMessageId: "root", text: "Checklist for Friday"), to: group.id)
        _ = try await cast.bobAPI.send(.init(clientMessageId: "r1", text: "Docs are done", threadRootId: root.id), to: group.id)
        let tmux = Tmux()
        defer { tmux.kill() }
        try tmux.start("ada", width: 100, height: 30, command: Terminal.chat(try Terminal.profile(for: cast.ada, server: cast.url)))
        try await tmux.waitFor("ada", "● online")
        try await waitFor("the group first") { try tmux.screen("ada").contains("Checklist for Friday") }
        try tmux.press("ada", "Enter")
        try await tmux.waitFor("ada", "💬 1 reply")
        #expect(try !tmux.screen("ada").contains("Docs are done"), "replies stay in their thread")

        // /thread: the root and its reply; a reply with "@Bo" Tab-completed to "@Bob".
        try tmux.type("ada", "/thread 1")
        try tmux.press("ada", "Enter")
        try await tmux.waitFor("ada", "Docs are done")
        try await tmux.waitFor("ada", "Thread · Checklist for Friday")
        try tmux.type("ada", "Thanks @Bo")
        try tmux.press("ada", "Tab")
        try await tmux.waitFor("ada", "Thanks @Bob")
        try tmux.press("ada", "Enter")
        try await waitFor("the reply stored with its mention") {
            let replies = try await cast.bobAPI.thread(root.id, in: group.id).messages
            return replies.last?.text == "Thanks @Bob" && replies.last?.mentions == [cast.bob.user.id]
        }
        try tmux.save("ada", as: "thread")
        try tmux.press("ada", "Escape")
        try await tmux.waitFor("ada", "💬 2 replies")

        // /pin: the pinned line; /mute: the title says so and Bob's view is his own.
        try tmux.type("ada", "/pin 1")
        try tmux.press("ada", "Enter")
        try await tmux.waitFor("ada", "📌 Bob: Checklist for Friday")
        try tmux.type("ada", "/mute")
        try tmux.press("ada", "Enter")
        try await tmux.waitFor("ada", "Muted: only mentions notify you here")
        try await waitFor("muted on the server") { try await ParleyAPI(baseURL: cast.url, token: cast.ada.token).conversation(group.id).muted }
        #expect(try await cast.bobAPI.conversation(group.id).muted == false)

        // A mention in the direct chat (not on screen) puts "@" in its badge.
        _ = try await cast.bobAPI.send(.init(clientMessageId: "m1", text: "@Ada see the list", mentions: [cast.ada.user.id]), to: cast.direct.id)
        // "hi" was unread already: the badge reads "@2".
        try await waitFor("the mention's badge") { try tmux.screen("ada").contains("@2") }
        try tmux.save("ada", as: "pinned-muted")
    }
}
