import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// `conversation.updated` after new messages: at once for the first, folded under a burst,
/// and always converging on the latest state.
@Suite struct ActivityTests {
    @Test func aBurstIsFoldedAndTheLastViewIsCurrent() async throws {
        let clock = ManualClock()
        let server = try await TestServer.start { $0.clock = clock.serverClock }
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let bobEvents = EventRecorder(try await bob.connect())
        let socket = try await alice.connect()
        _ = try await socket.sendMessage(SendMessageRequest(conversationId: direct.id, clientMessageId: "first", text: "first"))
        @Sendable func updates(_ events: [ServerEvent]) -> [Conversation] {
            events.compactMap { if case .conversationUpdated(let event) = $0, event.conversation.id == direct.id { event.conversation } else { nil } }
        }
        // A quiet conversation's first message is announced at once.
        try await bobEvents.wait("the first update") { updates($0).contains { $0.lastSeq == direct.lastSeq + 1 } }
        for n in 1...50 {
            _ = try await socket.sendMessage(SendMessageRequest(conversationId: direct.id, clientMessageId: "m\(n)", text: "m\(n)"))
        }
        let last = direct.lastSeq + 51
        try await bobEvents.wait("all fifty messages") { _ in bobEvents.createdMessages.count == 51 }
        // The window has not ended on the manual clock: the burst is waiting as one update.
        try await waitFor("the folded update to be scheduled") { clock.sleepers >= 1 }
        #expect(updates(bobEvents.events).count == 1)
        clock.advance(by: 1)
        try await bobEvents.wait("an update with the last message") { updates($0).contains { $0.lastSeq == last } }
        let seen = updates(bobEvents.events)
        #expect(seen.count == 2, "the first at once, the next fifty folded into one")
        let newest = try #require(seen.max { $0.lastSeq < $1.lastSeq })
        #expect(newest.unreadCount == 51)
        #expect(newest.lastMessage?.text == "m50")
        await socket.close()
    }
}
