import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The group sheet's actions on ChatSession against a real server: rename, add, remove and
/// leave reach the server and the list; a change the server refuses says why and changes
/// nothing.
@MainActor @Suite struct ChatSessionGroupTests {
    /// A session of its own (session file and databases in a new folder), signed in as Alice.
    static func aliceSession(_ server: TestServer, hooks: MessageHooks = MessageHooks()) async -> ChatSession {
        let folder = TestServer.temporaryDirectory()
        let session = ChatSession(
            server: server.baseURL, store: FileSessionStore(path: folder + "/session.json"), databaseDirectory: folder + "/db", hooks: hooks)
        await session.signIn(organization: "acme", email: "alice@x.io", password: TestUser.password)
        return session
    }

    @Test func renameAddRemoveAndLeaveAGroup() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let carol = try await server.register("carol@x.io", name: "Carol")
        let dave = try await server.register("dave@x.io", name: "Dave")
        let session = await Self.aliceSession(server)
        let list = try #require(session.list)
        let group = try #require(await session.groupConversation(named: "Launch", with: [bob.id, carol.id]))
        session.selection = group

        #expect(await session.renameGroup(group, to: "Launch crew"))
        try await waitFor("the new name in the list") { await MainActor.run { list.rows.first { $0.id == group }?.title == "Launch crew" } }
        #expect(await session.addMembers([dave.id], to: group))
        #expect(Set(try await alice.api.conversation(group).participantIds) == [alice.id, bob.id, carol.id, dave.id])
        #expect(await session.removeMember(bob.id, from: group))
        #expect(Set(try await alice.api.conversation(group).participantIds) == [alice.id, carol.id, dave.id])

        // A direct chat has no members to change: refused in words, nothing changed.
        #expect(await session.addMembers([carol.id], to: direct.id) == false)
        #expect(session.error?.isEmpty == false)
        #expect(try await alice.api.conversation(direct.id).participantIds.count == 2)

        #expect(await session.leaveGroup(group))
        #expect(session.error == nil && session.selection == nil, "the open group closes")
        try await waitFor("the group gone from the list") { await MainActor.run { !list.rows.contains { $0.id == group } } }
        #expect(Set(try await carol.api.conversation(group).participantIds) == [carol.id, dave.id])
        await session.signOut()
    }
}
