import Foundation
import GRDB
import Logging
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// One contract, every store: each test runs on SQLite (a temporary file) and, when
/// `PARLEY_TEST_POSTGRES_URL` is set, on PostgreSQL (a fresh database per test, dropped after).
/// The store is called directly; the HTTP tests cover the layers above it.
@Suite struct StoreConformanceTests {
    // MARK: Users and organizations

    @Test(arguments: StoreKind.available)
    func registerCredentialsAndDuplicateEmailPerOrganization(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await store.register(organization: "Acme", email: "alice@x.io", displayName: "Alice", passwordHash: "h1", now: t0)
            let found = try #require(try await store.credentials(organization: "acme", email: "alice@x.io"))
            #expect(found.user == alice)
            #expect(found.passwordHash == "h1")
            #expect(try await store.credentials(organization: "acme", email: "nobody@x.io") == nil)
            #expect(try await store.credentials(organization: "other", email: "alice@x.io") == nil)
            // The organization's name is matched without case; the email is taken there.
            let duplicate = await #expect(throws: ChatError.self) {
                try await store.register(organization: "ACME", email: "alice@x.io", displayName: "A2", passwordHash: "h", now: t0)
            }
            #expect(duplicate?.code == .conflict)
            // The same email in another organization is another user.
            let other = try await store.register(organization: "Other", email: "alice@x.io", displayName: "Alice O", passwordHash: "h2", now: t0)
            #expect(other.organizationId != alice.organizationId)
            #expect(try await store.credentials(organization: "other", email: "alice@x.io")?.passwordHash == "h2")
            let bob = try await store.register(organization: "acme", email: "bob@x.io", displayName: "bob", passwordHash: "h3", now: t0)
            #expect(bob.organizationId == alice.organizationId)
            #expect(try await store.user(id: bob.id) == bob)
            #expect(try await store.user(id: EntityID()) == nil)
            // Directory: by name without case, then email; matching name or email, % and _ literal.
            let carol = try await store.register(organization: "acme", email: "c_1@x.io", displayName: "Carol", passwordHash: "h", now: t0)
            #expect(try await store.users(organizationId: alice.organizationId, matching: nil, limit: 10).map(\.id) == [alice.id, bob.id, carol.id])
            #expect(try await store.users(organizationId: alice.organizationId, matching: "ALI", limit: 10).map(\.id) == [alice.id])
            #expect(try await store.users(organizationId: alice.organizationId, matching: "bob@", limit: 10).map(\.id) == [bob.id])
            #expect(try await store.users(organizationId: alice.organizationId, matching: "c_", limit: 10).map(\.id) == [carol.id])
            #expect(try await store.users(organizationId: alice.organizationId, matching: "%", limit: 10).isEmpty)
            #expect(try await store.users(organizationId: alice.organizationId, matching: nil, limit: 2).count == 2)
            // Ten first registrations of one email in a new organization at once: one user.
            let outcomes = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        do {
                            _ = try await store.register(organization: "Race", email: "same@x.io", displayName: "R\(index)", passwordHash: "h", now: t0)
                            return true
                        } catch let error as ChatError {
                            return error.code != .conflict
                        } catch {
                            return true
                        }
                    }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == 1)
            // Last seen keeps milliseconds.
            let seen = Date(timeIntervalSince1970: 1_800_000_000.123_456)
            try await store.setLastSeen(userId: bob.id, at: seen)
            #expect(try await store.user(id: bob.id)?.lastSeenAt == seen.wholeMilliseconds)
        }
    }

    @Test(arguments: StoreKind.available)
    func organizationsAreIsolated(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let mallory = try await register(store, "mallory@y.io", organization: "evil")
            #expect(try await store.users(organizationId: alice.organizationId, matching: nil, limit: 10).map(\.id) == [alice.id, bob.id])
            #expect(try await store.users(organizationId: mallory.organizationId, matching: nil, limit: 10).map(\.id) == [mallory.id])
            // Another organization's user is "not found", as is an unknown one.
            for stranger in [mallory.id, EntityID()] {
                let error = await #expect(throws: ChatError.self) {
                    try await store.createConversation(NewConversation(
                        organizationId: alice.organizationId, creatorId: alice.id, type: .group, name: "g", participantIds: [stranger], now: t0))
                }
                #expect(error?.code == .notFound)
            }
            let direct = try await createDirect(store, alice, bob)
            _ = try await send(store, direct.id, alice, "hello")
            #expect(try await store.conversation(id: direct.id, viewer: mallory.id) == nil)
            #expect(try await store.conversations(viewer: mallory.id).isEmpty)
            try await expectNotFound { try await store.messages(conversationId: direct.id, viewer: mallory.id, before: nil, after: nil, limit: 10) }
            try await expectNotFound { try await store.changes(conversationId: direct.id, viewer: mallory.id, since: 0, limit: 10) }
            try await expectNotFound { try await store.send(draft(direct.id, mallory, "intrude")) }
            try await expectNotFound { try await store.markRead(conversationId: direct.id, userId: mallory.id, upToSeq: 1, messageIds: nil) }
            try await expectNotFound { try await store.markDelivered(conversationId: direct.id, userId: mallory.id, upToSeq: 1) }
            #expect(try await store.search("hello", viewer: mallory.id, conversationId: nil, limit: 10, offset: 0).results.isEmpty)
            #expect(try await store.search("hello", viewer: mallory.id, conversationId: direct.id, limit: 10, offset: 0).results.isEmpty)
        }
    }

    // MARK: Conversations

    @Test(arguments: StoreKind.available)
    func directConversationIsOnePerPair(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let carol = try await register(store, "carol@x.io")
            let first = try await store.createConversation(direct(alice, bob))
            #expect(first.created)
            #expect(Set(first.audience) == [alice.id, bob.id])
            #expect(first.conversation.participantIds == [alice.id, bob.id].sorted())
            let again = try await store.createConversation(direct(bob, alice))
            #expect(!again.created)
            #expect(again.audience.isEmpty)
            #expect(again.conversation.id == first.conversation.id)
            // Both ends creating it at once still make one.
            let ids = try await withThrowingTaskGroup(of: EntityID.self) { group in
                for index in 0..<10 {
                    group.addTask { try await store.createConversation(index.isMultiple(of: 2) ? direct(alice, carol) : direct(carol, alice)).conversation.id }
                }
                return try await group.reduce(into: Set<EntityID>()) { $0.insert($1) }
            }
            #expect(ids.count == 1)
            #expect(try await store.conversations(viewer: alice.id).count == 2)
            let invalid = await #expect(throws: ChatError.self) {
                try await store.createConversation(NewConversation(
                    organizationId: alice.organizationId, creatorId: alice.id, type: .direct, participantIds: [bob.id, carol.id], now: t0))
            }
            #expect(invalid?.code == .invalidRequest)
        }
    }

    @Test(arguments: StoreKind.available)
    func groupRenameAddRemoveWriteSystemMessagesWithSeq(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let carol = try await register(store, "carol@x.io")
            let outsider = try await register(store, "dave@x.io")
            let created = try await store.createConversation(NewConversation(
                organizationId: alice.organizationId, creatorId: alice.id, type: .group, name: "Team", participantIds: [bob.id], now: t0))
            let id = created.conversation.id
            #expect(created.conversation.name == "Team")
            #expect(created.conversation.lastSeq == 0)
            #expect(created.systemMessage == nil)

            let renamed = try await store.rename(conversationId: id, by: bob.id, to: "Crew", now: t0.addingTimeInterval(1))
            let renameMessage = try #require(renamed.systemMessage)
            #expect(renameMessage.seq == 1 && renameMessage.type == .system && renameMessage.senderId == bob.id)
            #expect(renameMessage.metadata == ["action": "renamed", "name": "Crew"])
            #expect(renamed.conversation.name == "Crew" && renamed.conversation.lastSeq == 1)
            #expect(renamed.conversation.lastMessage == renameMessage)
            #expect(renamed.conversation.lastActivityAt == t0.addingTimeInterval(1))
            let same = try await store.rename(conversationId: id, by: alice.id, to: "Crew", now: t0)
            #expect(same.systemMessage == nil && same.audience.isEmpty && same.conversation.lastSeq == 1)

            let added = try await store.addParticipants(conversationId: id, by: alice.id, userIds: [carol.id, bob.id], now: t0)
            #expect(added.systemMessage?.seq == 2)
            #expect(added.systemMessage?.metadata?["userIds"] == carol.id.description)
            #expect(Set(added.conversation.participantIds) == [alice.id, bob.id, carol.id])
            #expect(Set(added.audience) == [alice.id, bob.id, carol.id])
            let none = try await store.addParticipants(conversationId: id, by: alice.id, userIds: [carol.id], now: t0)
            #expect(none.systemMessage == nil && none.conversation.lastSeq == 2)

            let removed = try await store.removeParticipant(conversationId: id, by: alice.id, userId: carol.id, now: t0)
            #expect(removed.systemMessage?.seq == 3)
            #expect(removed.systemMessage?.metadata?["action"] == "participant.removed")
            #expect(Set(removed.audience) == [alice.id, bob.id, carol.id])
            #expect(Set(removed.conversation.participantIds) == [alice.id, bob.id])
            #expect(try await store.conversation(id: id, viewer: carol.id) == nil)
            #expect(try await store.participantIds(conversationId: id) == [alice.id, bob.id].sorted())
            let left = try await store.removeParticipant(conversationId: id, by: bob.id, userId: bob.id, now: t0)
            #expect(left.systemMessage?.metadata?["action"] == "participant.left")
            #expect(left.systemMessage?.seq == 4)

            let page = try await store.messages(conversationId: id, viewer: alice.id, before: nil, after: nil, limit: 10)
            #expect(page.messages.map(\.seq) == [1, 2, 3, 4])
            #expect(page.messages.allSatisfy { $0.type == .system })

            // Who may change what.
            try await expectNotFound { try await store.rename(conversationId: id, by: outsider.id, to: "x", now: t0) }
            try await expectNotFound { try await store.rename(conversationId: EntityID(), by: alice.id, to: "x", now: t0) }
            let missing = await #expect(throws: ChatError.self) {
                try await store.removeParticipant(conversationId: id, by: alice.id, userId: outsider.id, now: t0)
            }
            #expect(missing?.code == .notFound && missing?.message == "Participant not found")
            let direct = try await createDirect(store, alice, carol)
            let directChange = await #expect(throws: ChatError.self) {
                try await store.rename(conversationId: direct.id, by: alice.id, to: "x", now: t0)
            }
            #expect(directChange?.code == .invalidRequest)
        }
    }

    // MARK: Sending

    @Test(arguments: StoreKind.available)
    func sendIsGaplessUnderEightConcurrentSenders(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            var users: [User] = []
            for index in 0..<8 { users.append(try await register(store, "u\(index)@x.io")) }
            let group = try await store.createConversation(NewConversation(
                organizationId: users[0].organizationId, creatorId: users[0].id, type: .group, name: "load",
                participantIds: users.dropFirst().map(\.id), now: t0)).conversation
            let results = try await withThrowingTaskGroup(of: [SendResult].self) { tasks in
                for user in users {
                    tasks.addTask {
                        var results: [SendResult] = []
                        for index in 0..<50 {
                            results.append(try await store.send(draft(group.id, user, "m \(index)", clientMessageId: "\(user.id)-\(index)")))
                        }
                        return results
                    }
                }
                return try await tasks.reduce(into: []) { $0 += $1 }
            }
            #expect(results.allSatisfy { $0.created })
            #expect(results.map(\.message.seq).sorted() == Array(1...400))
            #expect(Set(results.map(\.message.id)).count == 400)
            #expect(results.allSatisfy { Set($0.participantIds) == Set(users.map(\.id)) })
            // Each sender's own messages are in order of sending.
            for user in users {
                let own = results.filter { $0.message.senderId == user.id }.map(\.message)
                #expect(own.map(\.seq) == own.map(\.seq).sorted())
            }
            let all = try await store.messages(conversationId: group.id, viewer: users[3].id, before: nil, after: 0, limit: 1000)
            #expect(all.messages.map(\.seq) == Array(1...400))
            #expect(try await store.conversation(id: group.id, viewer: users[1].id)?.lastSeq == 400)
        }
    }

    /// Measures sends per second (printed, not asserted: machines differ) with 8 tasks sending
    /// 200 messages each, one conversation per task; checks every conversation came out gapless.
    @Test(arguments: StoreKind.available)
    func concurrentSendRateIntoEightConversations(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            var pairs: [(User, EntityID)] = []
            let hub = try await register(store, "hub@x.io")
            for index in 0..<8 {
                let user = try await register(store, "sender\(index)@x.io")
                pairs.append((user, try await createDirect(store, user, hub).id))
            }
            let started = ContinuousClock.now
            let seqs = try await withThrowingTaskGroup(of: (EntityID, [Int64]).self) { tasks in
                for (user, conversation) in pairs {
                    tasks.addTask {
                        var seqs: [Int64] = []
                        for index in 0..<200 {
                            do {
                                seqs.append(try await store.send(draft(conversation, user, "rate \(index)")).message.seq)
                            } catch {
                                Issue.record("send \(index) failed: \(String(reflecting: error))")
                                throw error
                            }
                        }
                        return (conversation, seqs)
                    }
                }
                return try await tasks.reduce(into: [:]) { $0[$1.0] = $1.1 }
            }
            let elapsed = ContinuousClock.now - started
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            print("[\(kind)] 8 tasks x 200 sends into 8 conversations: \(Int(1600 / seconds)) sends/s (\(elapsed))")
            #expect(seqs.count == 8)
            #expect(seqs.values.allSatisfy { $0 == Array(1...200) })
        }
    }

    @Test(arguments: StoreKind.available)
    func twentyConcurrentRetriesStoreOneMessageAndBurnNoSeq(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let conversation = try await createDirect(store, alice, bob)
            _ = try await send(store, conversation.id, bob, "before")
            let retry = draft(conversation.id, alice, "once", clientMessageId: "retry-1")
            let results = try await withThrowingTaskGroup(of: SendResult.self) { group in
                for _ in 0..<20 { group.addTask { try await store.send(retry) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter(\.created).count == 1)
            #expect(Set(results.map(\.message.id)).count == 1)
            #expect(results.allSatisfy { $0.message.seq == 2 && $0.message.text == "once" })
            #expect(results.allSatisfy { Set($0.participantIds) == [alice.id, bob.id] })
            // No seq was taken by the losers: the next message is 3.
            #expect(try await send(store, conversation.id, bob, "after").seq == 3)
            let page = try await store.messages(conversationId: conversation.id, viewer: alice.id, before: nil, after: nil, limit: 10)
            #expect(page.messages.map(\.seq) == [1, 2, 3])
            #expect(page.messages.filter { $0.clientMessageId == "retry-1" }.count == 1)
            // A later retry returns the original unchanged.
            let late = try await store.send(retry)
            #expect(!late.created && late.message == results[0].message)
            // The same clientMessageId in another conversation is a conflict.
            let carol = try await register(store, "carol@x.io")
            let other = try await createDirect(store, alice, carol)
            let conflict = await #expect(throws: ChatError.self) {
                try await store.send(draft(other.id, alice, "elsewhere", clientMessageId: "retry-1"))
            }
            #expect(conflict?.code == .conflict)
            #expect(try await store.conversation(id: other.id, viewer: alice.id)?.lastSeq == 0)
            // One new clientMessageId sent to two conversations at once: one message, the
            // other conversation's counter untouched (the loser rolls its seq back).
            let outcomes = try await withThrowingTaskGroup(of: (created: Bool, conflict: Bool).self) { group in
                for index in 0..<20 {
                    let target = index.isMultiple(of: 2) ? conversation.id : other.id
                    group.addTask {
                        do {
                            return (try await store.send(draft(target, alice, "split", clientMessageId: "split-1")).created, false)
                        } catch let error as ChatError where error.code == .conflict {
                            return (false, true)
                        }
                    }
                }
                return try await group.reduce(into: [(created: Bool, conflict: Bool)]()) { $0.append($1) }
            }
            #expect(outcomes.filter(\.created).count == 1)
            #expect(outcomes.filter(\.conflict).count == 10)
            let seqs = [
                try await store.conversation(id: conversation.id, viewer: alice.id)?.lastSeq,
                try await store.conversation(id: other.id, viewer: alice.id)?.lastSeq,
            ]
            #expect(seqs == [4, 0] || seqs == [3, 1])
        }
    }

    @Test(arguments: StoreKind.available)
    func messagesPageBeforeAfterAndLimit(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let conversation = try await createDirect(store, alice, bob)
            for index in 1...10 { _ = try await send(store, conversation.id, index.isMultiple(of: 2) ? bob : alice, "message \(index)") }
            func page(before: Int64? = nil, after: Int64? = nil, limit: Int) async throws -> ([Int64], Bool) {
                let page = try await store.messages(conversationId: conversation.id, viewer: bob.id, before: before, after: after, limit: limit)
                return (page.messages.map(\.seq), page.hasMore)
            }
            #expect(try await page(limit: 3) == ([8, 9, 10], true))
            #expect(try await page(before: 8, limit: 3) == ([5, 6, 7], true))
            #expect(try await page(before: 3, limit: 3) == ([1, 2], false))
            #expect(try await page(after: 0, limit: 3) == ([1, 2, 3], true))
            #expect(try await page(after: 7, limit: 5) == ([8, 9, 10], false))
            #expect(try await page(before: 9, after: 2, limit: 3) == ([3, 4, 5], true))
            #expect(try await page(before: 9, after: 2, limit: 10) == ([3, 4, 5, 6, 7, 8], false))
            #expect(try await page(after: 10, limit: 3) == ([], false))
            let message = try #require(try await store.messages(conversationId: conversation.id, viewer: bob.id, before: 2, after: nil, limit: 1).messages.first)
            #expect(message.text == "message 1" && message.senderId == alice.id && message.createdAt == t0.wholeMilliseconds)
            // A reply must point into the same conversation.
            let carol = try await register(store, "carol@x.io")
            let other = try await createDirect(store, alice, carol)
            let otherMessage = try await send(store, other.id, alice, "elsewhere")
            var reply = draft(conversation.id, alice, "re")
            reply.replyToId = otherMessage.id
            let invalid = await #expect(throws: ChatError.self) { try await store.send(reply) }
            #expect(invalid?.code == .invalidRequest)
            reply.replyToId = message.id
            #expect(try await store.send(reply).message.replyToId == message.id)
            // Metadata round-trips.
            var located = draft(conversation.id, bob, "here")
            located.type = .location
            located.metadata = ["lat": "1.5", "lon": "2.5"]
            let sent = try await store.send(located).message
            #expect(try await store.messages(conversationId: conversation.id, viewer: alice.id, before: nil, after: nil, limit: 1).messages == [sent])
        }
    }

    @Test(arguments: StoreKind.available)
    func changesSinceFollowUpdatedSeq(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let conversation = try await createDirect(store, alice, bob)
            let first = try await send(store, conversation.id, alice, "one")
            _ = try await send(store, conversation.id, bob, "two")
            _ = try await send(store, conversation.id, alice, "three")
            let edited = try await store.change(.text("one!"), messageId: first.id, in: conversation.id, by: alice.id, now: t0)
            #expect(edited.message.updatedSeq == 4 && edited.message.seq == 1)
            let since3 = try await store.changes(conversationId: conversation.id, viewer: bob.id, since: 3, limit: 10)
            #expect(since3.messages.map(\.id) == [first.id])
            #expect(since3.messages.first?.text == "one!")
            #expect(since3.lastSeq == 4 && !since3.hasMore)
            let all = try await store.changes(conversationId: conversation.id, viewer: bob.id, since: 0, limit: 2)
            #expect(all.messages.map(\.updatedSeq) == [2, 3])
            #expect(all.hasMore && all.lastSeq == 4)
            let none = try await store.changes(conversationId: conversation.id, viewer: bob.id, since: 4, limit: 10)
            #expect(none.messages.isEmpty && none.lastSeq == 4 && !none.hasMore)
        }
    }
}

