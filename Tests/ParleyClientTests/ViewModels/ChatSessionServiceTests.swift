import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// An app's own action service through the session (what `ParleyChat(hooks:)` takes): every
/// chat screen the session makes acts through it, and what it passes on still reaches the
/// server.
@MainActor @Suite struct ChatSessionServiceTests {
    @Test func theChatsOfASessionActThroughTheAppsService() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (_, bob, direct) = try await server.directPair()
        let made = InteractionLayerTests.RecordingServices()
        let hooks = MessageHooks(service: { client in made.make(client) })
        let session = await ChatSessionGroupTests.aliceSession(server, hooks: hooks)
        let chat = try #require(session.chat(direct.id))
        await chat.start()
        await chat.send("through the app's service")
        try await waitFor("stored on the server") {
            try await bob.api.messages(direct.id).messages.contains { $0.text == "through the app's service" }
        }
        _ = await chat.search("service")
        #expect(made.log == ["send", "search"], "\(made.log)")
        chat.stop()
        await session.signOut()
    }
}
