import Foundation
import ParleyProtocol
@testable import ParleyServer
import ParleyTestSupport
import Testing

/// The rules of `Chat/Rules/` where the store conformance suite does not already reach them,
/// on both stores; and the runner that lets SQLite run them (``InlineAsync``).
@Suite struct ChatRulesTests {
    static let now = Date(timeIntervalSince1970: 1_760_000_000)

    /// Deleted and system messages are not forwarded, and a refused send takes no seq: the
    /// next message is numbered as if it had never been tried.
    @Test(arguments: StoreKind.available)
    func refusedForwardsAndRepliesTakeNoSeq(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let scene = try await StoreTransactionConformanceTests.scene(store)
            let id = scene.direct.id
            let kept = try await store.send(StoreTransactionConformanceTests.draft(scene, "k1", text: "kept")).message
            let gone = try await store.send(StoreTransactionConformanceTests.draft(scene, "g1", text: "gone")).message
            _ = try await store.change(.delete, messageId: gone.id, in: id, by: scene.alice.id, now: Self.now)
            let group = try await store.createConversation(NewConversation(
                organizationId: scene.alice.organizationId, creatorId: scene.alice.id, type: .group, name: "g",
                participantIds: [scene.bob.id], now: Self.now))
            let renamed = try await store.rename(conversationId: group.conversation.id, by: scene.alice.id, to: "h", now: Self.now)
            let system = try #require(renamed.systemMessage)
            let before = try #require(try await store.conversation(id: id, viewer: scene.alice.id)).lastSeq
            func attempt(_ change: (inout MessageDraft) -> Void) async -> APIError? {
                var draft = StoreTransactionConformanceTests.draft(scene, "x\(UUID())", from: scene.bob.id, text: "")
                change(&draft)
                return await #expect(throws: APIError.self) { try await store.send(draft) }
            }
            #expect(await attempt { $0.forwardedFromId = gone.id }?.code == .invalidRequest, "a deleted message")
            #expect(await attempt { $0.forwardedFromId = system.id }?.code == .invalidRequest, "a system message")
            #expect(await attempt { $0.forwardedFromId = EntityID() }?.code == .notFound)
            #expect(await attempt { $0.replyToId = system.id; $0.text = "re" }?.code == .invalidRequest, "a reply into another conversation")
            #expect(try #require(try await store.conversation(id: id, viewer: scene.alice.id)).lastSeq == before, "no seq taken")
            var forward = StoreTransactionConformanceTests.draft(scene, "f1", from: scene.bob.id, text: "")
            forward.forwardedFromId = kept.id
            let copy = try await store.send(forward).message
            #expect(copy.seq == before + 1 && copy.text == "kept" && copy.senderId == scene.bob.id)
        }
    }

    @Test func inlineAsyncReturnsThrowsAndNestsOnTheCallingThread() throws {
        struct Failure: Error {}
        let caller = pthread_self()
        #expect(try InlineAsync.run { 6 * 7 } == 42)
        #expect(throws: Failure.self) { try InlineAsync.run { () async throws -> Int in throw Failure() } }
        let sameThread = try InlineAsync.run { () async throws -> Bool in
            let outer = pthread_equal(pthread_self(), caller) != 0
            let inner = try InlineAsync.run { pthread_equal(pthread_self(), caller) != 0 }
            return outer && inner
        }
        #expect(sameThread, "every job ran on the thread that called run")
    }
}
