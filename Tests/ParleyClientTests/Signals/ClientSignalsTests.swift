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
        let clock = ManualClock()
        let aliceClient = try ChatClientTests.client(alice, clock: clock)
        let bobClient = try ChatClientTests.client(bob, clock: clock)
        await aliceClient.start()
        await bobClient.start()
        _ = try await aliceClient.openConversation(direct.id)
        _ = try await bobClient.openConversation(direct.id)
        for index in 1...3 { try await aliceClient.send(text: "m\(index)", in: direct.id) }
        // Bob's client stores them and says so once its receipts' batching wait has passed: delivered.
        try await ChatClientTests.waitAdvancing("delivered ticks", clock: clock) {
            try await aliceClient.database.messages(in: direct.id, viewer: alice.id).map(\.delivery) == [.delivered, .delivered, .delivered]
        }
        try await waitFor("bob's badge") { try await bobClient.database.conversation(direct.id)?.unreadCount == 3 }
        // Bob sees the first two, in several marks: one read goes out, once the batch's time passes.
        await bobClient.markRead(direct.id, upTo: 1)
        await bobClient.markRead(direct.id, upTo: 2)
        try await ChatClientTests.waitAdvancing("read ticks", clock: clock) {
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
        // No time passes: the reads are sent by the sync that the reconnect starts, not by a timer.
        let bobClient = try ChatClientTests.client(bob, clock: ManualClock())
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
        let clock = ManualClock()
        let aliceClient = try ChatClientTests.client(alice, clock: clock)
        let bobClient = try ChatClientTests.client(bob, clock: clock)
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
        // Bob keeps typing, as a keyboard would report, a key every 0.1 s of the clock (the SDK
        // debounces what it sends: `true` at once and again every 2 s).
        try await ChatClientTests.waitAdvancing("the typing line", clock: clock) {
            await bobClient.userIsTyping(in: direct.id)
            return await chat.typingLine == "Bob is typing…"
        }
        await bobClient.userSent(in: direct.id)
        // The clock stands still: the line clears on Bob's `false`, not by lapsing.
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
        let aliceClient = try ChatClientTests.client(alice, clock: ManualClock())
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
