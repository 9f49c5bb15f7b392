import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The open chat kept across a relaunch (what ParleyChat keeps in `@SceneStorage`): the same
/// user gets it back; another user, a chat since left or a garbled value gets nothing and no
/// error; a chat opened meanwhile (a tapped notification) is not replaced.
@MainActor @Suite struct ChatSessionRestorationTests {
    @Test func theOpenChatComesBackForItsUserOnly() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (_, bob, direct) = try await server.directPair()
        let carol = try await server.register("carol@x.io", name: "Carol")
        let folder = TestServer.temporaryDirectory()
        func session(_ name: String, database: String? = nil) -> ChatSession {
            ChatSession(
                server: server.baseURL, store: FileSessionStore(path: "\(folder)/\(name).json"),
                databaseDirectory: "\(folder)/\(database ?? name)-db")
        }

        let first = session("alice")
        await first.signIn(organization: "acme", email: "alice@x.io", password: TestUser.password)
        #expect(first.keptSelection == "", "no chat open, nothing kept")
        let group = try #require(await first.groupConversation(named: "Launch", with: [bob.id, carol.id]))
        first.selection = direct.id
        let kept = first.keptSelection
        #expect(kept.hasSuffix(direct.id.description))
        let keptGroup = { first.selection = group; defer { first.selection = direct.id }; return first.keptSelection }()

        // The relaunch: a new session signed in from the stored copy (on a new device database,
        // so the chat comes from the server; the first session's own database stays its own).
        let again = session("alice", database: "alice-relaunched")
        await again.resume()
        #expect(again.state == .signedIn)
        #expect(await again.restoreSelection("garbled") == false)
        #expect(await again.restoreSelection("\(EntityID()) \(direct.id)") == false, "another user's chat")
        #expect(await again.restoreSelection(kept))
        #expect(again.selection == direct.id && again.error == nil)
        #expect(await again.restoreSelection(keptGroup) == false, "a chat is open already")

        // A group left since is not reopened, and says nothing.
        #expect(await again.leaveGroup(group))
        again.selection = nil
        #expect(await again.restoreSelection(keptGroup) == false)
        #expect(again.selection == nil && again.error == nil)
        await again.signOut()

        // Bob on this device does not get Alice's chat, though he is in it.
        let bobs = session("bob")
        await bobs.signIn(organization: "acme", email: "bob@x.io", password: TestUser.password)
        #expect(await bobs.restoreSelection(kept) == false)
        #expect(bobs.selection == nil)
        _ = bob
        await bobs.signOut()
    }
}
