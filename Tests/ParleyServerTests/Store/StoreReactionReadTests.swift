import Foundation
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing

/// Reactions are read for a whole page of messages at once (SQLite: one statement over the
/// page's ids): each message gets its own, each emoji its users oldest first, a removed one
/// is gone, and a message without any has none, on a full page of the maximum size.
@Suite struct StoreReactionReadTests {
    @Test(arguments: StoreKind.available)
    func aFullPageGetsEachMessagesOwnReactionsInOrder(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            var messages: [Message] = []
            // Room left on the page for the group's system messages.
            for n in 0..<(Limits.messagesPageMax - 10) {
                messages.append(try await world.send("m\(n)", by: world.alice, in: world.group))
            }
            func react(_ emoji: String, _ user: User, _ message: Message, add: Bool = true, at second: Double) async throws {
                _ = try await store.change(
                    .reaction(emoji, add: add), messageId: message.id, in: world.group.id, by: user.id,
                    now: RulesWorld.now.addingTimeInterval(second))
            }
            // Every third message: Carol then Bob with 👍; every fifth: Alice with 🎉, then removed on every tenth.
            for (n, message) in messages.enumerated() {
                if n % 3 == 0 {
                    try await react("👍", world.carol, message, at: Double(n))
                    try await react("👍", world.bob, message, at: Double(n) + 0.5)
                }
                if n % 5 == 0 { try await react("🎉", world.alice, message, at: Double(n) + 0.7) }
                if n % 10 == 0 { try await react("🎉", world.alice, message, add: false, at: Double(n) + 0.8) }
            }
            let page = try await store.messages(
                conversationId: world.group.id, viewer: world.bob.id, before: nil, after: 0, limit: Limits.messagesPageMax)
            let read = page.messages.filter { $0.type != .system }
            #expect(read.map(\.id) == messages.map(\.id))
            for (n, message) in read.enumerated() {
                var expected: [String: [EntityID]] = [:]
                if n % 3 == 0 { expected["👍"] = [world.carol.id, world.bob.id] }
                if n % 5 == 0 && n % 10 != 0 { expected["🎉"] = [world.alice.id] }
                #expect(message.reactions == expected, "m\(n)")
            }
        }
    }
}
