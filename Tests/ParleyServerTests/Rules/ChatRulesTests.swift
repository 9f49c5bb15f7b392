import Foundation
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing
@testable import ParleySQLite

/// The rules of `ParleyRules` where the store conformance suite does not already reach them,
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
            func attempt(_ change: (inout MessageDraft) -> Void) async -> ChatError? {
                var draft = StoreTransactionConformanceTests.draft(scene, "x\(UUID())", from: scene.bob.id, text: "")
                change(&draft)
                return await #expect(throws: ChatError.self) { try await store.send(draft) }
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

    /// ReadRules: only a participant reads a conversation's history, changes, members and
    /// readers; an outsider of the same organization, another organization's user, a former
    /// member and an unknown id all get "not found", as for a conversation that does not exist.
    @Test(arguments: StoreKind.available)
    func onlyParticipantsReadAConversation(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let scene = try await StoreTransactionConformanceTests.scene(store)
            let id = scene.direct.id
            let hello = try await store.send(StoreTransactionConformanceTests.draft(scene, "h1", text: "hello")).message
            let dave = try await store.register(organization: "other", email: "dave@y.io", displayName: "Dave", passwordHash: "h", now: Self.now)
            let group = try await store.createConversation(NewConversation(
                organizationId: scene.alice.organizationId, creatorId: scene.alice.id, type: .group, name: "g",
                participantIds: [scene.bob.id, scene.carol.id], now: Self.now)).conversation
            _ = try await store.removeParticipant(conversationId: group.id, by: scene.alice.id, userId: scene.carol.id, now: Self.now)

            func refusals(_ conversation: EntityID, _ viewer: EntityID) async -> [ErrorCode?] {
                [
                    await #expect(throws: ChatError.self) { try await store.messages(conversationId: conversation, viewer: viewer, before: nil, after: nil, limit: 10) }?.code,
                    await #expect(throws: ChatError.self) { try await store.changes(conversationId: conversation, viewer: viewer, since: 0, limit: 10) }?.code,
                    await #expect(throws: ChatError.self) { try await store.participants(conversationId: conversation, viewer: viewer, after: nil, limit: 10) }?.code,
                    await #expect(throws: ChatError.self) {
                        try await store.readers(conversationId: conversation, messageId: hello.id, viewer: viewer, after: nil, limit: 10)
                    }?.code,
                ]
            }
            let notFound = [ErrorCode?](repeating: .notFound, count: 4)
            #expect(await refusals(id, scene.carol.id) == notFound, "an outsider of the same organization")
            #expect(await refusals(id, dave.id) == notFound, "another organization's user")
            #expect(await refusals(id, EntityID()) == notFound, "nobody")
            #expect(await refusals(EntityID(), scene.alice.id) == notFound, "no such conversation")
            #expect(await refusals(group.id, scene.carol.id) == notFound, "a former member")

            // A participant reads all four; who read a message asks for one of this conversation.
            let history = try await store.messages(conversationId: id, viewer: scene.bob.id, before: nil, after: nil, limit: 10)
            #expect(history.messages.map(\.id) == [hello.id])
            let changes = try await store.changes(conversationId: id, viewer: scene.bob.id, since: 0, limit: 10)
            #expect(changes.lastSeq == hello.seq && changes.messages.map(\.id) == [hello.id])
            #expect(try await store.participants(conversationId: id, viewer: scene.bob.id, after: nil, limit: 10).participants.count == 2)
            let elsewhere = try await store.send(MessageDraft(
                conversationId: group.id, senderId: scene.alice.id, clientMessageId: "g1", type: .text, text: "in the group", now: Self.now)).message
            let wrong = await #expect(throws: ChatError.self) {
                try await store.readers(conversationId: id, messageId: elsewhere.id, viewer: scene.bob.id, after: nil, limit: 10)
            }
            #expect(wrong?.code == .notFound, "a message of another conversation")
        }
    }

    /// ConversationRules: only a group changes, only by its participants, only with active users
    /// of its organization, and never past the participant cap (at creation or by adding).
    @Test(arguments: StoreKind.available)
    func groupsChangeByTheirMembersWithinTheOrganizationAndTheCap(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let scene = try await StoreTransactionConformanceTests.scene(store)
            let organization = scene.alice.organizationId
            let group = try await store.createConversation(NewConversation(
                organizationId: organization, creatorId: scene.alice.id, type: .group, name: "g",
                participantIds: [scene.bob.id], now: Self.now)).conversation
            func code(_ body: () async throws -> ConversationChange) async -> ErrorCode? {
                await #expect(throws: ChatError.self) { _ = try await body() }?.code
            }
            #expect(await code { try await store.rename(conversationId: group.id, by: scene.carol.id, to: "x", now: Self.now) } == .notFound)
            #expect(await code {
                try await store.addParticipants(conversationId: group.id, by: scene.carol.id, userIds: [scene.carol.id], now: Self.now)
            } == .notFound, "an outsider cannot add themselves")
            let dave = try await store.register(organization: "other", email: "dave@y.io", displayName: "Dave", passwordHash: "h", now: Self.now)
            #expect(await code { try await store.addParticipants(conversationId: group.id, by: scene.alice.id, userIds: [dave.id], now: Self.now) } == .notFound)
            let eve = try await store.register(organization: "acme", email: "eve@x.io", displayName: "Eve", passwordHash: "h", now: Self.now)
            _ = try await store.deactivate(userId: eve.id, organizationId: organization, now: Self.now) { _ in }
            #expect(await code { try await store.addParticipants(conversationId: group.id, by: scene.alice.id, userIds: [eve.id], now: Self.now) } == .notFound,
                    "a deactivated user")
            #expect(await code {
                try await store.addParticipants(conversationId: scene.direct.id, by: scene.alice.id, userIds: [scene.carol.id], now: Self.now)
            } == .invalidRequest, "a direct conversation does not change")
            let unchanged = try #require(try await store.conversation(id: group.id, viewer: scene.alice.id))
            #expect(unchanged.memberCount == 2 && unchanged.lastSeq == group.lastSeq, "the refusals wrote nothing")

            // The cap: 1,000 members with the creator.
            var crowd: [EntityID] = []
            for n in 0..<Limits.maxGroupParticipants {
                crowd.append(try await store.register(organization: "acme", email: "m\(n)@x.io", displayName: "M\(n)", passwordHash: "h", now: Self.now).id)
            }
            #expect(await code {
                try await store.createConversation(NewConversation(
                    organizationId: organization, creatorId: scene.alice.id, type: .group, name: "too many", participantIds: crowd, now: Self.now))
            } == .invalidRequest, "1,001 with the creator")
            let full = try await store.createConversation(NewConversation(
                organizationId: organization, creatorId: scene.alice.id, type: .group, name: "full",
                participantIds: Array(crowd.dropLast()), now: Self.now)).conversation
            #expect(full.memberCount == Limits.maxGroupParticipants)
            #expect(await code {
                try await store.addParticipants(conversationId: full.id, by: scene.alice.id, userIds: [crowd.last!], now: Self.now)
            } == .invalidRequest, "one more than the cap")
            #expect(try await store.conversation(id: full.id, viewer: scene.alice.id)?.memberCount == Limits.maxGroupParticipants, "nothing was added")
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
