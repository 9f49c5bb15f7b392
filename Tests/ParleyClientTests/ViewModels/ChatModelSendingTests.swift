import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The chat screen's model sending, against a real server: what the user typed is checked
/// before anything is queued, a message shows at once and keeps its row through the swap to
/// the stored copy (never twice), refused messages can be resent or dropped, and the "New
/// messages" line stays where the chat was opened.
@MainActor @Suite struct ChatModelSendingTests {
    /// A client for `user` whose sends all fail as if the network were down (reads work)
    /// until the plan calms: what is written waits in the outbox.
    static func sendsFailing(_ user: TestUser) throws -> (client: ChatClient, plan: FaultPlan) {
        var odds = FaultPlan.Odds.none
        odds.failBeforeSend = 1
        let plan = FaultPlan(seed: 1, odds: odds)
        let transport = FaultyTransport(serverURL: user.server.baseURL, token: user.token, plan: plan)
        return (try ChatClientTests.client(user, transport: transport), plan)
    }

    /// Alice's client (not started, its sends failing until `plan.calm()`) and her chat with Bob.
    static func offlineChat() async throws -> (
        server: TestServer, client: ChatClient, chat: ChatModel, bob: TestUser, direct: Conversation, plan: FaultPlan
    ) {
        let server = try await TestServer.start()
        let (alice, bob, direct) = try await server.directPair()
        let (client, plan) = try sendsFailing(alice)
        return (server, client, ChatModel(client: client, conversationId: direct.id), bob, direct, plan)
    }

    @Test func typedTextIsCheckedBeforeAnythingIsQueued() async throws {
        let (server, client, chat, _, _, _) = try await Self.offlineChat()
        defer { Task { await server.stop() } }
        for refused in ["", "   \n\t  ", String(repeating: "x", count: Limits.maxTextCharacters + 1)] {
            await chat.send(refused)
            #expect(chat.lastError?.isEmpty == false, "\(refused.prefix(5))… is refused with a sentence")
        }
        #expect(try await client.database.outboxCount() == 0 && chat.messages.isEmpty)
        // The limit counts characters as people see them: 5,000 accented letters (10,000 bytes)
        // and 5,000 letters padded with spaces are both within it.
        await chat.send(String(repeating: "é", count: Limits.maxTextCharacters))
        await chat.send("  " + String(repeating: "y", count: Limits.maxTextCharacters) + " \n")
        #expect(chat.lastError == nil, "a good send clears the last error")
        await chat.send("  hi there \n")
        #expect(chat.messages.map(\.text.count) == [Limits.maxTextCharacters, Limits.maxTextCharacters, 8])
        #expect(chat.messages.last?.text == "hi there" && chat.messages.allSatisfy { $0.delivery == .sending && $0.seq == nil })
        // Mentions beyond the contract's maximum are cut, not sent to be refused.
        let many = (0..<(Limits.maxMentions + 10)).map { _ in EntityID() }
        await chat.send("@everyone", mentions: many)
        let heads = try await client.database.outboxHeads()
        #expect(heads.count == 1, "one conversation, one head")
        let pending = try await client.database.message(senderId: client.userId, clientMessageId: try #require(chat.messages.last?.clientMessageId), viewer: client.userId)
        #expect(pending?.mentions == Array(many.prefix(Limits.maxMentions)))
        #expect(try await client.database.outboxCount() == 4)
    }

    /// Written offline, three messages go out when the client connects: in the order written,
    /// each once, each row swapping to its stored copy in place (the screen never shows four).
    @Test func queuedMessagesGoOutInOrderAndKeepTheirRows() async throws {
        let (server, client, chat, bob, direct, plan) = try await Self.offlineChat()
        defer { Task { await server.stop() } }
        await chat.start()
        for text in ["first", "second ✓", "third 🎉"] { await chat.send(text) }
        let rows = chat.messages.map(\.id)
        #expect(rows.count == 3 && chat.messages.allSatisfy { $0.delivery == .sending })
        plan.calm()
        await client.start()
        var mostShown = 0
        try await waitFor("all three stored") {
            await MainActor.run {
                mostShown = max(mostShown, chat.messages.count)
                return chat.messages.compactMap(\.seq) == [1, 2, 3]
            }
        }
        #expect(mostShown == 3, "the swap never showed a message twice")
        #expect(chat.messages.map(\.id) == rows && chat.messages.map(\.text) == ["first", "second ✓", "third 🎉"])
        #expect(chat.messages.allSatisfy { $0.delivery != .sending })
        #expect(try await bob.api.messages(direct.id).messages.map(\.text) == ["first", "second ✓", "third 🎉"])
        chat.stop()
        await client.stop()
    }

    /// A message the server refused shows as failed; discarding drops it for good, resending
    /// puts it after what was queued meanwhile, and each goes out once.
    @Test func aRefusedMessageIsDiscardedOrResentOnce() async throws {
        let (server, client, chat, bob, direct, plan) = try await Self.offlineChat()
        defer { Task { await server.stop() } }
        await chat.start()
        await chat.send("dropped")
        await chat.send("resent")
        await chat.send("queued")
        let (dropped, resent) = (chat.messages[0], chat.messages[1])
        // The server said no to two of them (the outbox records a refusal this way).
        for message in [dropped, resent] {
            try await client.database.outboxRejected(clientMessageId: message.clientMessageId, reason: "forbidden")
        }
        await chat.reload()
        #expect(chat.messages.map(\.delivery) == [.failed(reason: "forbidden"), .failed(reason: "forbidden"), .sending])
        await chat.discard(dropped)
        #expect(chat.messages.map(\.text) == ["resent", "queued"])
        await chat.resend(chat.messages[0])
        #expect(chat.lastError == nil)
        #expect(chat.messages.map(\.text) == ["queued", "resent"], "a resent message goes to the end")
        plan.calm()
        await client.start()
        try await waitFor("both stored") { await MainActor.run { chat.messages.compactMap(\.seq) == [1, 2] } }
        #expect(try await bob.api.messages(direct.id).messages.map(\.text) == ["queued", "resent"], "the dropped one never went")
        #expect(try await client.database.outboxCount() == 0)
        chat.stop()
        await client.stop()
    }

    /// Opened with unread messages, the chat remembers where they begin; reading them does not
    /// move the line while the chat is open, and the next opening has none.
    @Test func theNewMessagesLineStaysWhereTheChatOpened() async throws {
        let (server, client, chat, bob, direct, plan) = try await Self.offlineChat()
        defer { Task { await server.stop() } }
        plan.calm()
        _ = try await bob.api.send(.init(clientMessageId: "b1", text: "one"), to: direct.id)
        await client.start()
        try await waitFor("the list synced") { try await client.database.conversation(direct.id)?.unreadCount == 1 }
        for n in 2...3 { _ = try await bob.api.send(.init(clientMessageId: "b\(n)", text: "\(n)"), to: direct.id) }
        try await waitFor("three unread") { try await client.database.conversation(direct.id)?.unreadCount == 3 }
        await chat.start()
        #expect(chat.unreadAfter == 0)
        try await waitFor("three shown") { await MainActor.run { chat.messages.count == 3 } }
        await chat.messagesBecameVisible(chat.messages)
        try await waitFor("read on the server") { try await bob.api.conversation(direct.id).members.first { $0.userId == client.userId }?.readSeq == 3 }
        try await waitFor("the badge cleared") { try await client.database.conversation(direct.id)?.unreadCount == 0 }
        #expect(chat.unreadAfter == 0, "the line stays while the chat is open")
        chat.stop()
        let reopened = ChatModel(client: client, conversationId: direct.id)
        await reopened.start()
        #expect(reopened.unreadAfter == nil)
        // Nothing to mark: a screen showing only messages on their way sends no read.
        await reopened.messagesBecameVisible([])
        reopened.stop()
        await client.stop()
    }
}
