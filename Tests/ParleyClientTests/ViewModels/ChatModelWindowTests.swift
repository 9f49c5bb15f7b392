import Foundation
import Synchronization
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// A long, busy chat on a phone: a burst of incoming messages is one reload of the window (seed
/// 004's 0.1 s), not one per message; and a window scrolled back through many pages lets the
/// old ones go once the newest is on screen, getting them back from the cache on the way up.
@MainActor @Suite struct ChatModelWindowTests {
    /// Alice's chat with Bob after Bob wrote `count` messages, open at its newest page; the
    /// client's time moves only with `clock`.
    static func longChat(
        _ server: TestServer, count: Int, clock: ManualClock
    ) async throws -> (client: ChatClient, chat: ChatModel, bob: TestUser, direct: Conversation) {
        let (alice, bob, direct) = try await server.directPair()
        for n in 1...count { _ = try await bob.api.send(.init(clientMessageId: "b\(n)", text: "\(n)"), to: direct.id) }
        let client = try ChatClientTests.client(alice, clock: clock)
        await client.start()
        let chat = ChatModel(client: client, conversationId: direct.id)
        await chat.start()
        try await ChatClientTests.waitAdvancing("the newest page", clock: clock) {
            await MainActor.run { chat.messages.last?.seq == Int64(count) }
        }
        return (client, chat, bob, direct)
    }

    @Test func aBurstOfMessagesIsOneReload() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let clock = ManualClock()
        let client = try ChatClientTests.client(alice, clock: clock)
        await client.start()
        let chat = ChatModel(client: client, conversationId: direct.id)
        await chat.start()
        try await waitFor("connected") { await client.connectionState == .connected }
        let before = chat.reloads
        for n in 1...30 { _ = try await bob.api.send(.init(clientMessageId: "b\(n)", text: "\(n)"), to: direct.id) }
        try await waitFor("all thirty cached") { try await client.database.messages(in: direct.id, viewer: alice.id).count == 30 }
        #expect(chat.reloads == before, "nothing is read while the burst lasts (the clock stands still)")
        #expect(chat.messages.count < 30)
        // Time passes the coalescing wait (in its own steps, until the reload shows).
        try await ChatClientTests.waitAdvancing("the thirty shown", clock: clock) { await MainActor.run { chat.messages.count == 30 } }
        // One reload for the thirty; the receipts that follow them may change the window once
        // or twice more (each is its own, later change).
        #expect(chat.reloads - before <= 3, "\(chat.reloads - before) reloads for thirty messages")
        chat.stop()
        await client.stop()
    }

    /// The top of the list appearing twice before the page arrives asks for it once: one page
    /// read, no message twice.
    @Test func theTopReachedTwiceLoadsOnePage() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (client, chat, _, _) = try await Self.longChat(server, count: 120, clock: ManualClock())
        let shown = chat.messages.count
        // Each page the client reads counts as a cache hit or a miss.
        func pagesRead() async -> Int { let counts = await client.readCounts; return counts.cacheHits + counts.cacheMisses }
        let before = await pagesRead()
        async let first: Void = chat.loadOlder()
        async let second: Void = chat.loadOlder()
        _ = await (first, second)
        #expect(await pagesRead() - before == 1, "one page read, not two")
        let seqs = chat.messages.compactMap(\.seq)
        #expect(seqs == Array((seqs.first ?? 1)...120), "in order, none twice")
        #expect(chat.messages.count == shown + 50 || seqs.first == 1, "one page more: \(chat.messages.count)")
        #expect(!chat.isLoadingOlder)
        chat.stop()
        await client.stop()
    }

    @Test func aLongWindowLetsTheOldPagesGoAndGetsThemBack() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let clock = ManualClock()
        let (client, chat, bob, direct) = try await Self.longChat(server, count: 160, clock: clock)
        while chat.canLoadOlder { await chat.loadOlder() }
        #expect(chat.messages.compactMap(\.seq) == Array(1...160), "scrolled back to the start")
        await chat.trimWindow(keeping: 40)
        #expect(chat.messages.compactMap(\.seq) == Array(121...160), "the newest 40 stay")
        #expect(chat.canLoadOlder)
        // New messages still come in; the window grows from its new start.
        _ = try await bob.api.send(.init(clientMessageId: "b161", text: "161"), to: direct.id)
        try await ChatClientTests.waitAdvancing("the new one", clock: clock) { await MainActor.run { chat.messages.last?.seq == 161 } }
        #expect(chat.messages.first?.seq == 121)
        // Back up: the pages come again (from the cache).
        await chat.loadOlder(limit: 50)
        #expect(chat.messages.first?.seq == 71 && chat.messages.count == 91)
        await chat.trimWindow(keeping: 500)
        #expect(chat.messages.count == 91, "a window within the bound stays as it is")
        // What screens call at the newest: nothing below the bound, back to `keeping` above it.
        await chat.trimWindowIfLong(most: 100, keeping: 30)
        #expect(chat.messages.count == 91, "91 is within 100")
        await chat.loadOlder(limit: 50)
        #expect(chat.messages.count == 141)
        await chat.trimWindowIfLong(most: 100, keeping: 30)
        #expect(chat.messages.compactMap(\.seq) == Array(132...161), "over 100: the newest 30 stay")
        chat.stop()
        await client.stop()
    }
}
