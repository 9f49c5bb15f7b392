import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The conversation list and directory screens' models against a real server: rows named
/// from the directory (fetched once when someone is unknown), newest activity first, the app
/// badge as the sum of the rows, the banner counting what waits to be sent, and presence
/// following people as they come online.
@MainActor @Suite struct ListAndDirectoryModelTests {
    @Test func rowsAreNamedOrderedAndCounted() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let carol = try await server.register("carol@x.io", name: "Carol Ñandú")
        let group = try await bob.api.createConversation(.init(type: .group, participantIds: [alice.id], name: "Launch 🚀"))
        let trio = try await carol.api.createConversation(.init(type: .group, participantIds: [alice.id, bob.id]))
        _ = try await bob.api.send(.init(clientMessageId: "d1", text: "hi"), to: direct.id)
        _ = try await bob.api.send(.init(clientMessageId: "d2", text: "there"), to: direct.id)
        _ = try await carol.api.send(.init(clientMessageId: "t1", text: "all"), to: trio.id)
        _ = try await bob.api.send(.init(clientMessageId: "g1", text: "go"), to: group.id)
        let client = try ChatClientTests.client(alice)
        await client.start()
        let list = ConversationListModel(client: client)
        await list.start()
        try await waitFor("three rows, four unread") { await MainActor.run { list.rows.count == 3 && list.totalUnread == 4 } }
        #expect(list.rows.map(\.id) == [group.id, trio.id, direct.id], "newest activity first")
        let titles = Dictionary(uniqueKeysWithValues: list.rows.map { ($0.id, $0.title) })
        #expect(titles[group.id] == "Launch 🚀")
        #expect(titles[direct.id] == "Bob", "the other person's name, from the directory")
        #expect(Set((titles[trio.id] ?? "").components(separatedBy: ", ")) == ["Bob", "Carol Ñandú"], "everyone but me")
        #expect(list.rows.first { $0.id == direct.id }?.lastMessageText == "there")
        #expect(!list.isLoading && list.outboxCount == 0)
        list.stop()
        await client.stop()
    }

    /// Unsendable for now, what the user writes waits in the outbox: the banner counts it once
    /// the client is offline; when sends go through again the count goes back to zero.
    @Test func theBannerCountsWhatWaitsToBeSent() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let (client, plan) = try ChatModelSendingTests.sendsFailing(alice)
        await client.start()
        let list = ConversationListModel(client: client)
        await list.start()
        try await waitFor("the row") { await MainActor.run { list.rows.count == 1 } }
        for n in 1...2 { try await client.send(text: "waiting \(n)", in: direct.id) }
        await list.reload()
        #expect(list.outboxCount == 2)
        await client.stop()
        try await waitFor("the offline banner with the count") {
            await MainActor.run { list.connection == .disconnected && list.banner?.contains("2") == true }
        }
        plan.calm()
        await client.start()
        try await waitFor("sent") { try await bob.api.messages(direct.id).messages.count == 2 }
        try await waitFor("the count back to zero") {
            await list.reload()
            return await MainActor.run { list.outboxCount == 0 }
        }
        #expect(try await bob.api.messages(direct.id).messages.map(\.text) == ["waiting 1", "waiting 2"])
        list.stop()
        await client.stop()
    }

    /// Names given by the app win over the directory's; someone nobody knows reads as
    /// "someone", never as an id.
    @Test func theAppsNamesWinAndUnknownPeopleAreSomeone() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let client = try ChatClientTests.client(alice)
        await client.start()
        let bobId = bob.id
        let named = ConversationListModel(client: client) { $0 == bobId ? "Robert (work)" : nil }
        await named.start()
        try await waitFor("the row") { await MainActor.run { named.rows.count == 1 } }
        #expect(named.rows.first?.title == "Robert (work)")
        let anonymous = ConversationListModel(client: client) { _ in nil }
        await anonymous.start()
        let title = try #require(anonymous.rows.first?.title)
        #expect(title == ParleyStrings.text("who.someone") && !title.contains(bob.id.description))
        #expect(anonymous.rows.first?.id == direct.id)
        named.stop()
        anonymous.stop()
        await client.stop()
    }

    /// The directory screen lists everyone by name and follows presence: someone coming online
    /// shows online without a refresh.
    @Test func theDirectoryFollowsPresence() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, _) = try await server.directPair()
        _ = try await server.register("zed@x.io", name: "Ærin")
        let client = try ChatClientTests.client(alice)
        await client.start()
        try await waitFor("connected") { await client.connectionState == .connected }
        let directory = DirectoryModel(client: client)
        await directory.start()
        // The refresh's answer lands through the change it announces, just after `start`.
        try await waitFor("the directory") { await MainActor.run { directory.users.count == 3 } }
        #expect(directory.users.map(\.displayName) == directory.users.map(\.displayName).sorted())
        #expect(Set(directory.users.map(\.displayName)) == ["Alice", "Bob", "Ærin"])
        #expect(directory.users.first { $0.id == bob.id }?.isOnline == false)
        let socket = try await bob.connect()
        try await waitFor("Bob online") { await MainActor.run { directory.users.first { $0.id == bob.id }?.isOnline == true } }
        await socket.close()
        try await waitFor("Bob offline again") {
            await MainActor.run { directory.users.first { $0.id == bob.id }.map { !$0.isOnline && $0.lastSeenAt != nil } == true }
        }
        directory.stop()
        await client.stop()
    }
}
