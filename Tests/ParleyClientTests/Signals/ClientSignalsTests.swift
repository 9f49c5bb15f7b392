import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Receipts, typing and presence through the SDK against a real server.
@Suite struct ClientSignalsTests {
    @Test func readReceiptsTurnTheSendersTicksAndClearTheBadge() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let aliceClient = try ChatClientTests.client(alice)
        let bobClient = try ChatClientTests.client(bob)
        await aliceClient.start()
        await bobClient.start()
        _ = try await aliceClient.openConversation(direct.id)
        _ = try await bobClient.openConversation(direct.id)
        for index in 1...3 { try await aliceClient.send(text: "m\(index)", in: direct.id) }
        // Bob's client stores them and says so: delivered.
        try await waitFor("delivered ticks") {
            try await aliceClient.database.messages(in: direct.id, viewer: alice.id).map(\.delivery) == [.delivered, .delivered, .delivered]
        }
        try await waitFor("bob's badge") { try await bobClient.database.conversation(direct.id)?.unreadCount == 3 }
        // Bob sees the first two, in several marks: one read goes out.
        await bobClient.markRead(direct.id, upTo: 1)
        await bobClient.markRead(direct.id, upTo: 2)
        try await waitFor("read ticks") {
            try await aliceClient.database.messages(in: direct.id, viewer: alice.id).map(\.delivery) == [.read, .read, .delivered]
        }
        try await waitFor("bob's badge after the read") {
            try await bobClient.database.conversation(direct.id)?.unreadCount == 1
        }
        let member = try await alice.api.conversation(direct.id).members.first { $0.userId == bob.id }
        #expect(member?.readSeq == 2 && member?.deliveredSeq == 3)
        await aliceClient.stop()
        await bobClient.stop()
    }

    @Test func readsMadeOfflineAreSentOnReconnect() async throws {
        let directory = TestServer.temporaryDirectory()
        let server = try await TestServer.start(dataDirectory: directory)
        let port = server.port
        let (alice, bob, direct) = try await server.directPair()
        for index in 1...4 { _ = try await alice.api.send(.init(clientMessageId: "a\(index)", text: "\(index)"), to: direct.id) }
        let bobClient = try ChatClientTests.client(bob)
        await bobClient.start()
        _ = try await bobClient.openConversation(direct.id)
        await server.stop()
        await bobClient.markRead(direct.id, upTo: 2)
        await bobClient.markRead(direct.id, upTo: 4)
        await bobClient.flushReceipts()
        let restarted = try await TestServer.start(dataDirectory: directory, port: port)
        defer { Task { await restarted.stop() } }
        try await waitFor("the queued read arrives", timeout: .seconds(30)) {
            await bobClient.networkBecameAvailable()
            let me = try await restarted.api(token: bob.token).conversation(direct.id)
            return me.readSeq == 4 && me.unreadCount == 0
        }
        await bobClient.stop()
    }

    @Test func typingShowsOnTheOtherSideAndEndsOnSend() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io", name: "Bob")
        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        let aliceClient = try ChatClientTests.client(alice)
        let bobClient = try ChatClientTests.client(bob)
        await aliceClient.start()
        await bobClient.start()
        let chat = await ChatModel(client: aliceClient, conversationId: direct.id, names: { $0 == bob.id ? "Bob" : nil })
        await chat.start()
        // Typing is live only: Alice must be connected to hear it (on a busy machine she may
        // connect after Bob).
        try await waitFor("both connected") {
            let bobState = await bobClient.connectionState
            let aliceState = await aliceClient.connectionState
            return bobState == .connected && aliceState == .connected
        }
        // Bob keeps typing, as a keyboard would report (the SDK debounces what it sends).
        try await waitFor("the typing line") {
            await bobClient.userIsTyping(in: direct.id)
            return await chat.typingLine == "Bob is typing…"
        }
        await bobClient.userSent(in: direct.id)
        try await waitFor("the line clears") { await chat.typingLine == nil }
        await chat.stop()
        await aliceClient.stop()
        await bobClient.stop()
    }

    @Test func presenceReachesTheDirectory() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let aliceClient = try ChatClientTests.client(alice)
        await aliceClient.start()
        let directory = await DirectoryModel(client: aliceClient)
        await directory.start()
        try await waitFor("alice connected") { await aliceClient.connectionState == .connected }
        let bobSocket = try await bob.connect()
        try await waitFor("bob online") {
            await directory.users.first { $0.id == bob.id }?.isOnline == true
        }
        await bobSocket.close()
        try await waitFor("bob offline with last seen") {
            let entry = await directory.users.first { $0.id == bob.id }
            return entry?.isOnline == false && entry?.lastSeenAt != nil
        }
        await directory.stop()
        await aliceClient.stop()
    }
}
