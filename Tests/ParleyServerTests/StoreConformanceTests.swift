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
            let duplicate = await #expect(throws: APIError.self) {
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
                        } catch let error as APIError {
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
                let error = await #expect(throws: APIError.self) {
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
            let invalid = await #expect(throws: APIError.self) {
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
            let missing = await #expect(throws: APIError.self) {
                try await store.removeParticipant(conversationId: id, by: alice.id, userId: outsider.id, now: t0)
            }
            #expect(missing?.code == .notFound && missing?.message == "Participant not found")
            let direct = try await createDirect(store, alice, carol)
            let directChange = await #expect(throws: APIError.self) {
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
            let conflict = await #expect(throws: APIError.self) {
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
                        } catch let error as APIError where error.code == .conflict {
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
            let invalid = await #expect(throws: APIError.self) { try await store.send(reply) }
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

    // MARK: Receipts

    @Test(arguments: StoreKind.available)
    func watermarksNeverGoBackAreClampedAndCountUnread(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let conversation = try await createDirect(store, alice, bob)
            var sent: [Message] = []
            for index in 1...4 { sent.append(try await send(store, conversation.id, alice, "m\(index)")) }
            _ = try await send(store, conversation.id, bob, "own")  // seq 5: not unread for bob
            #expect(try await store.conversation(id: conversation.id, viewer: bob.id)?.unreadCount == 4)
            #expect(try await store.conversation(id: conversation.id, viewer: alice.id)?.unreadCount == 1)

            let delivered = try await store.markDelivered(conversationId: conversation.id, userId: bob.id, upToSeq: 2)
            #expect(delivered.changed && delivered.member == Member(userId: bob.id, readSeq: 0, deliveredSeq: 2))
            #expect(delivered.unreadCount == 4 && Set(delivered.participantIds) == [alice.id, bob.id])
            let read = try await store.markRead(conversationId: conversation.id, userId: bob.id, upToSeq: 3, messageIds: nil)
            #expect(read.changed && read.member == Member(userId: bob.id, readSeq: 3, deliveredSeq: 3))
            #expect(read.unreadCount == 1)
            // Lower targets change nothing.
            let lower = try await store.markRead(conversationId: conversation.id, userId: bob.id, upToSeq: 1, messageIds: nil)
            #expect(!lower.changed && lower.member.readSeq == 3 && lower.member.deliveredSeq == 3)
            let lowerDelivered = try await store.markDelivered(conversationId: conversation.id, userId: bob.id, upToSeq: 2)
            #expect(!lowerDelivered.changed && lowerDelivered.member.deliveredSeq == 3)
            // Past the counter is clamped to it.
            let clamped = try await store.markDelivered(conversationId: conversation.id, userId: bob.id, upToSeq: 99)
            #expect(clamped.member.deliveredSeq == 5 && clamped.member.readSeq == 3)
            let byIds = try await store.markRead(conversationId: conversation.id, userId: bob.id, upToSeq: nil, messageIds: [sent[3].id, sent[0].id])
            #expect(byIds.member.readSeq == 4 && byIds.unreadCount == 0)
            let all = try await store.markRead(conversationId: conversation.id, userId: bob.id, upToSeq: 1000, messageIds: nil)
            #expect(all.member == Member(userId: bob.id, readSeq: 5, deliveredSeq: 5))
            // Receipts racing each other: the highest wins, whatever the order of commits.
            for index in 0..<4 { _ = try await send(store, conversation.id, alice, "more \(index)") }  // seqs 6...9
            try await withThrowingTaskGroup(of: Void.self) { group in
                for target in (5...9).reversed() {
                    group.addTask { _ = try await store.markRead(conversationId: conversation.id, userId: bob.id, upToSeq: Int64(target), messageIds: nil) }
                    group.addTask { _ = try await store.markDelivered(conversationId: conversation.id, userId: bob.id, upToSeq: Int64(target)) }
                }
                try await group.waitForAll()
            }
            let raced = try await store.markRead(conversationId: conversation.id, userId: bob.id, upToSeq: 0, messageIds: nil)
            #expect(raced.member == Member(userId: bob.id, readSeq: 9, deliveredSeq: 9) && raced.unreadCount == 0 && !raced.changed)
            // Deleted and system messages are not unread.
            let deleted = try await send(store, conversation.id, alice, "oops")
            _ = try await store.change(.delete, messageId: deleted.id, in: conversation.id, by: alice.id, now: t0)
            _ = try await send(store, conversation.id, alice, "real")
            let view = try #require(try await store.conversation(id: conversation.id, viewer: bob.id))
            #expect(view.unreadCount == 1 && view.readSeq == 9)
            #expect(view.members.first { $0.userId == bob.id }?.deliveredSeq == 9)
            let views = try await store.conversationViews(id: conversation.id, viewers: [alice.id, bob.id, EntityID()], listingMembersUpTo: .max)
            #expect(views.count == 2)
            #expect(views[bob.id]?.unreadCount == 1 && views[bob.id]?.readSeq == 9)
            #expect(views[alice.id]?.unreadCount == 1 && views[alice.id]?.readSeq == 0)
            // Bad requests.
            for attempt in [
                { try await store.markRead(conversationId: conversation.id, userId: bob.id, upToSeq: -1, messageIds: nil) },
                { try await store.markRead(conversationId: conversation.id, userId: bob.id, upToSeq: nil, messageIds: nil) },
                { try await store.markRead(conversationId: conversation.id, userId: bob.id, upToSeq: nil, messageIds: [EntityID()]) },
                { try await store.markDelivered(conversationId: conversation.id, userId: bob.id, upToSeq: -5) },
            ] as [@Sendable () async throws -> WatermarkChange] {
                let error = await #expect(throws: APIError.self) { try await attempt() }
                #expect(error?.code == .invalidRequest)
            }
            try await expectNotFound { try await store.markRead(conversationId: EntityID(), userId: bob.id, upToSeq: 1, messageIds: nil) }
        }
    }

    // MARK: Edits, deletes, reactions

    @Test(arguments: StoreKind.available)
    func editDeleteAndReactionTakeTheNextSeqAsUpdatedSeq(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let conversation = try await createDirect(store, alice, bob)
            let message = try await send(store, conversation.id, alice, "hello")
            _ = try await send(store, conversation.id, bob, "hi")
            let later = t0.addingTimeInterval(60)

            let edit = try await store.change(.text("hello!"), messageId: message.id, in: conversation.id, by: alice.id, now: later)
            #expect(edit.changed && edit.message.updatedSeq == 3 && edit.message.text == "hello!")
            #expect(edit.message.editedAt == later && Set(edit.participantIds) == [alice.id, bob.id])
            let same = try await store.change(.text("hello!"), messageId: message.id, in: conversation.id, by: alice.id, now: later)
            #expect(!same.changed && same.message.updatedSeq == 3)
            let notSender = await #expect(throws: APIError.self) {
                try await store.change(.text("mine"), messageId: message.id, in: conversation.id, by: bob.id, now: later)
            }
            #expect(notSender?.code == .forbidden)

            let react = try await store.change(.reaction("👍", add: true), messageId: message.id, in: conversation.id, by: bob.id, now: later)
            #expect(react.changed && react.message.updatedSeq == 4 && react.message.reactions == ["👍": [bob.id]])
            let twice = try await store.change(.reaction("👍", add: true), messageId: message.id, in: conversation.id, by: bob.id, now: later)
            #expect(!twice.changed && twice.message.updatedSeq == 4)
            let second = try await store.change(
                .reaction("👍", add: true), messageId: message.id, in: conversation.id, by: alice.id, now: later.addingTimeInterval(1))
            #expect(second.message.reactions == ["👍": [bob.id, alice.id]] && second.message.updatedSeq == 5)
            let unreact = try await store.change(.reaction("👍", add: false), messageId: message.id, in: conversation.id, by: bob.id, now: later)
            #expect(unreact.changed && unreact.message.reactions == ["👍": [alice.id]] && unreact.message.updatedSeq == 6)
            let absent = try await store.change(.reaction("🎉", add: false), messageId: message.id, in: conversation.id, by: bob.id, now: later)
            #expect(!absent.changed)

            let delete = try await store.change(.delete, messageId: message.id, in: conversation.id, by: alice.id, now: later)
            #expect(delete.changed && delete.message.updatedSeq == 7 && delete.message.text.isEmpty)
            #expect(delete.message.deletedAt == later && delete.message.reactions.isEmpty && delete.message.seq == 1)
            #expect(!(try await store.change(.delete, messageId: message.id, in: conversation.id, by: alice.id, now: later)).changed)
            for attempt in [MessageEdit.text("again"), .reaction("👍", add: true)] {
                let error = await #expect(throws: APIError.self) {
                    try await store.change(attempt, messageId: message.id, in: conversation.id, by: alice.id, now: later)
                }
                #expect(error?.code == .invalidRequest)
            }
            // The counter moved with every change, and the feed shows them in order.
            let view = try #require(try await store.conversation(id: conversation.id, viewer: bob.id))
            #expect(view.lastSeq == 7)
            #expect(view.lastActivityAt == t0.wholeMilliseconds)
            let feed = try await store.changes(conversationId: conversation.id, viewer: bob.id, since: 2, limit: 10)
            #expect(feed.messages.map(\.id) == [message.id] && feed.messages[0].updatedSeq == 7 && feed.lastSeq == 7)
            #expect(try await send(store, conversation.id, bob, "next").seq == 8)
            // Unknown, other-conversation and system messages.
            try await expectNotFound { try await store.change(.delete, messageId: EntityID(), in: conversation.id, by: alice.id, now: later) }
            let outsider = try await register(store, "eve@x.io")
            try await expectNotFound { try await store.change(.reaction("x", add: true), messageId: message.id, in: conversation.id, by: outsider.id, now: later) }
            let group = try await store.createConversation(NewConversation(
                organizationId: alice.organizationId, creatorId: alice.id, type: .group, name: "g", participantIds: [bob.id], now: t0))
            let system = try #require(try await store.rename(conversationId: group.conversation.id, by: alice.id, to: "h", now: t0).systemMessage)
            try await expectNotFound { try await store.change(.delete, messageId: system.id, in: conversation.id, by: alice.id, now: later) }
            let systemChange = await #expect(throws: APIError.self) {
                try await store.change(.reaction("x", add: true), messageId: system.id, in: group.conversation.id, by: bob.id, now: later)
            }
            #expect(systemChange?.code == .invalidRequest)
        }
    }

    // MARK: Search

    @Test(arguments: StoreKind.available)
    func searchFindsWordsAndPrefixesInTheViewersConversationsOnly(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let carol = try await register(store, "carol@x.io")
            let mallory = try await register(store, "mallory@y.io", organization: "evil")
            let mallet = try await register(store, "mallet@y.io", organization: "evil")
            let ab = try await createDirect(store, alice, bob)
            let bc = try await createDirect(store, bob, carol)
            let evil = try await createDirect(store, mallory, mallet)
            let old = try await send(store, ab.id, alice, "The Launch is on Friday", at: t0)
            let new = try await send(store, ab.id, bob, "launch party tonight", at: t0.addingTimeInterval(10))
            let hidden = try await send(store, bc.id, carol, "secret launch plans", at: t0.addingTimeInterval(20))
            _ = try await send(store, evil.id, mallory, "evil launch", at: t0.addingTimeInterval(30))
            _ = try await send(store, ab.id, alice, "nothing to see", at: t0.addingTimeInterval(40))

            let byWord = try await store.search("launch", viewer: alice.id, conversationId: nil, limit: 10, offset: 0)
            #expect(byWord.results.map(\.message.id) == [new.id, old.id])
            #expect(byWord.results.map(\.conversationId) == [ab.id, ab.id])
            #expect(byWord.results.map(\.seq) == [new.seq, old.seq])
            #expect(byWord.results.last?.snippet.contains("[Launch]") == true)
            #expect(byWord.nextOffset == nil)
            // The last word is a prefix; every word must match; case does not matter.
            #expect(try await store.search("LAUN", viewer: alice.id, conversationId: nil, limit: 10, offset: 0).results.map(\.message.id) == [new.id, old.id])
            #expect(try await store.search("launch fri", viewer: alice.id, conversationId: nil, limit: 10, offset: 0).results.map(\.message.id) == [old.id])
            #expect(try await store.search("fri launch", viewer: alice.id, conversationId: nil, limit: 10, offset: 0).results.isEmpty)
            #expect(try await store.search("party", viewer: alice.id, conversationId: nil, limit: 10, offset: 0).results.first?.snippet.contains("[party]") == true)
            // Bob sees both of his conversations; the other organization's never.
            #expect(try await store.search("launch", viewer: bob.id, conversationId: nil, limit: 10, offset: 0).results.map(\.message.id) == [hidden.id, new.id, old.id])
            #expect(try await store.search("launch", viewer: bob.id, conversationId: bc.id, limit: 10, offset: 0).results.map(\.message.id) == [hidden.id])
            #expect(try await store.search("launch", viewer: alice.id, conversationId: bc.id, limit: 10, offset: 0).results.isEmpty)
            #expect(try await store.search("evil", viewer: alice.id, conversationId: nil, limit: 10, offset: 0).results.isEmpty)
            #expect(try await store.search("launch", viewer: mallory.id, conversationId: nil, limit: 10, offset: 0).results.count == 1)
            // Paging.
            let first = try await store.search("launch", viewer: bob.id, conversationId: nil, limit: 2, offset: 0)
            #expect(first.results.map(\.message.id) == [hidden.id, new.id] && first.nextOffset == 2)
            let rest = try await store.search("launch", viewer: bob.id, conversationId: nil, limit: 2, offset: 2)
            #expect(rest.results.map(\.message.id) == [old.id] && rest.nextOffset == nil)
            // A long text's snippet is an excerpt around the match, marked where it was cut.
            let words = (1...30).map { "word\($0)" }
            let long = try await send(store, ab.id, bob, (words[..<20] + ["Rendezvous"] + words[20...]).joined(separator: " "), at: t0.addingTimeInterval(50))
            let excerpt = try #require(try await store.search("rendez", viewer: alice.id, conversationId: nil, limit: 10, offset: 0).results.first)
            #expect(excerpt.message.id == long.id)
            #expect(excerpt.snippet.contains("[Rendezvous]") && excerpt.snippet.hasPrefix("…"))
            #expect(excerpt.snippet.split(separator: " ").count <= 13 && !excerpt.snippet.contains("word1 "))
            // Deleted and edited text; nothing for blank or quote-laden queries.
            _ = try await store.change(.delete, messageId: new.id, in: ab.id, by: bob.id, now: t0)
            _ = try await store.change(.text("The rocket is on Friday"), messageId: old.id, in: ab.id, by: alice.id, now: t0)
            #expect(try await store.search("launch", viewer: alice.id, conversationId: nil, limit: 10, offset: 0).results.isEmpty)
            #expect(try await store.search("rocket", viewer: alice.id, conversationId: nil, limit: 10, offset: 0).results.map(\.message.id) == [old.id])
            #expect(try await store.search("   ", viewer: alice.id, conversationId: nil, limit: 10, offset: 0).results.isEmpty)
            #expect(try await store.search("\"' OR 1=1 --", viewer: alice.id, conversationId: nil, limit: 10, offset: 0).results.isEmpty)
        }
    }

    // MARK: Attachments and devices

    @Test(arguments: StoreKind.available)
    func attachmentsAreVisibleToUploaderAndToParticipantsOfTheirMessages(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let carol = try await register(store, "carol@x.io")
            let image = StoredAttachment(
                id: EntityID(), uploaderId: alice.id, organizationId: alice.organizationId, name: "cat.png",
                contentType: "image/png", size: 1234, sha256: String(repeating: "ab", count: 32), width: 640, height: 480,
                createdAt: t0.wholeMilliseconds)
            try await store.createAttachment(image)
            #expect(try await store.attachment(id: image.id, viewer: alice.id) == image)
            #expect(try await store.attachment(id: image.id, viewer: bob.id) == nil)
            #expect(try await store.attachment(id: EntityID(), viewer: alice.id) == nil)

            let conversation = try await createDirect(store, alice, bob)
            var wrongType = draft(conversation.id, alice, "")
            wrongType.type = .video
            wrongType.attachmentId = image.id
            let mismatch = await #expect(throws: APIError.self) { try await store.send(wrongType) }
            #expect(mismatch?.code == .invalidRequest)
            var notMine = draft(conversation.id, bob, "")
            notMine.type = .image
            notMine.attachmentId = image.id
            let foreign = await #expect(throws: APIError.self) { try await store.send(notMine) }
            #expect(foreign?.code == .invalidRequest)

            var photo = draft(conversation.id, alice, "look")
            photo.type = .image
            photo.attachmentId = image.id
            let sent = try await store.send(photo).message
            #expect(sent.attachment == image.wire)
            #expect(try await store.messages(conversationId: conversation.id, viewer: bob.id, before: nil, after: nil, limit: 1).messages.first?.attachment == image.wire)
            #expect(try await store.attachment(id: image.id, viewer: bob.id) == image)
            #expect(try await store.attachment(id: image.id, viewer: carol.id) == nil)

            // A forward copies the attachment into a conversation the forwarder is in.
            let bc = try await createDirect(store, bob, carol)
            var forward = draft(bc.id, bob, "")
            forward.forwardedFromId = sent.id
            let copy = try await store.send(forward).message
            #expect(copy.attachment == image.wire && copy.type == .image && copy.text == "look" && copy.forwardedFromId == sent.id)
            #expect(try await store.attachment(id: image.id, viewer: carol.id) == image)
            var carolForward = draft(bc.id, carol, "")
            carolForward.forwardedFromId = sent.id
            try await expectNotFound { try await store.send(carolForward) }

            // Deleting the messages hides it again from everyone but the uploader.
            _ = try await store.change(.delete, messageId: copy.id, in: bc.id, by: bob.id, now: t0)
            #expect(try await store.attachment(id: image.id, viewer: carol.id) == nil)
            _ = try await store.change(.delete, messageId: sent.id, in: conversation.id, by: alice.id, now: t0)
            #expect(try await store.attachment(id: image.id, viewer: bob.id) == nil)
            #expect(try await store.attachment(id: image.id, viewer: alice.id) == image)
        }
    }

    @Test(arguments: StoreKind.available)
    func devicesRegisterMoveAndUnregister(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            try await store.registerDevice(token: "t1", userId: alice.id, platform: "ios", environment: .sandbox, now: t0)
            try await store.registerDevice(token: "t2", userId: alice.id, platform: "android", environment: .production, now: t0.addingTimeInterval(1))
            #expect(try await store.devices(userId: alice.id) == [
                RegisterDeviceRequest(platform: "ios", token: "t1", environment: .sandbox),
                RegisterDeviceRequest(platform: "android", token: "t2", environment: .production),
            ])
            // A token registered by another user moves to them.
            try await store.registerDevice(token: "t1", userId: bob.id, platform: "ios", environment: .production, now: t0.addingTimeInterval(2))
            #expect(try await store.devices(userId: alice.id).map(\.token) == ["t2"])
            #expect(try await store.devices(userId: bob.id) == [RegisterDeviceRequest(platform: "ios", token: "t1", environment: .production)])
            #expect(try await store.unregisterDevice(token: "t1", userId: alice.id) == false)
            #expect(try await store.unregisterDevice(token: "t1", userId: bob.id) == true)
            #expect(try await store.unregisterDevice(token: "t1", userId: bob.id) == false)
            #expect(try await store.devices(userId: bob.id).isEmpty)
        }
    }

    // MARK: Migrations

    @Test(arguments: StoreKind.available)
    func reopeningIsANoOpAndConcurrentMigrationsBothSucceed(kind: StoreKind) async throws {
        try await withStore(kind) { store, fixture in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let conversation = try await createDirect(store, alice, bob)
            _ = try await send(store, conversation.id, alice, "kept")
            // Two more stores on the same database, opened at once: both migrate (or find it done).
            let reopened = try await withThrowingTaskGroup(of: (any ParleyStore).self) { group in
                for _ in 0..<2 { group.addTask { try await fixture.open() } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for other in reopened {
                #expect(try await other.messages(conversationId: conversation.id, viewer: bob.id, before: nil, after: nil, limit: 10).messages.map(\.text) == ["kept"])
                try await other.close()
            }
            if let postgres = store as? PostgresStore {
                #expect(try await postgres.migrate().isEmpty)
            }
            #expect(try await send(store, conversation.id, bob, "still").seq == 2)
        }
    }

    @Test(arguments: StoreKind.available)
    func freshDatabasesMigratedConcurrentlyBothWork(kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        do {
            let stores = try await withThrowingTaskGroup(of: (any ParleyStore).self) { group in
                for _ in 0..<3 { group.addTask { try await fixture.open() } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let alice = try await register(stores[0], "alice@x.io")
            #expect(try await stores[2].user(id: alice.id) == alice)
            for store in stores { try await store.close() }
        } catch {
            await fixture.destroy()
            throw error
        }
        await fixture.destroy()
    }
}

// MARK: - Fixtures

/// Fixed times: the stores keep milliseconds.
private let t0 = Date(timeIntervalSince1970: 1_760_000_000.25)

/// Where a test's store lives: a temporary SQLite file or a fresh PostgreSQL database.
struct StoreFixture: Sendable {
    let kind: StoreKind
    let path: String?
    let database: TestDatabase?

    static func make(_ kind: StoreKind) async throws -> StoreFixture {
        switch kind {
        case .sqlite:
            let directory = TestServer.temporaryDirectory()
            return StoreFixture(kind: kind, path: (directory as NSString).appendingPathComponent("parley.sqlite"), database: nil)
        case .postgres:
            return StoreFixture(kind: kind, path: nil, database: try await TestDatabase.create())
        }
    }

    /// A store on this fixture's database, migrated.
    func open() async throws -> any ParleyStore {
        if let path { return try SQLiteStore(path: path) }
        var logger = Logger(label: "parley.test.store")
        logger.logLevel = .critical
        return try await PostgresStore.connect(url: database!.url, logger: logger, startTimeout: .seconds(120))
    }

    /// Makes every insert of a message whose text is LIKE `pattern` fail (a write error the
    /// store did not expect, as a broken disk or constraint would give), on either store.
    func poisonInserts(textLike pattern: String) async throws {
        try await execute(kind == .sqlite
            ? ["CREATE TRIGGER poison BEFORE INSERT ON messages WHEN NEW.text LIKE '\(pattern)' BEGIN SELECT RAISE(ABORT, 'poisoned'); END"]
            : [
                """
                CREATE FUNCTION poison() RETURNS trigger AS $$
                BEGIN IF NEW.text LIKE '\(pattern)' THEN RAISE EXCEPTION 'poisoned'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql
                """,
                "CREATE TRIGGER poison BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION poison()",
            ])
    }

    /// Runs SQL on the fixture's database beside the store (a trigger, a fault to inject).
    func execute(_ statements: [String]) async throws {
        if let path {
            let queue = try DatabaseQueue(path: path)
            try await queue.write { db in
                for sql in statements { try db.execute(sql: sql) }
            }
            try queue.close()
        } else {
            try await database!.execute(statements)
        }
    }

    func destroy() async {
        if let path { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        await database?.drop()
    }
}

/// Runs `body` on a fresh store of `kind`, closing and destroying it after.
func withStore(_ kind: StoreKind, _ body: (any ParleyStore, StoreFixture) async throws -> Void) async throws {
    let fixture = try await StoreFixture.make(kind)
    do {
        let store = try await fixture.open()
        do {
            try await body(store, fixture)
        } catch {
            try? await store.close()
            throw error
        }
        try await store.close()
    } catch {
        await fixture.destroy()
        throw error
    }
    await fixture.destroy()
}

private func register(_ store: any ParleyStore, _ email: String, organization: String = "acme") async throws -> User {
    try await store.register(
        organization: organization, email: email, displayName: String(email.prefix { $0 != "@" }).capitalized,
        passwordHash: "hash", now: t0)
}

private func direct(_ creator: User, _ other: User) -> NewConversation {
    NewConversation(organizationId: creator.organizationId, creatorId: creator.id, type: .direct, participantIds: [other.id], now: t0)
}

private func createDirect(_ store: any ParleyStore, _ creator: User, _ other: User) async throws -> Conversation {
    try await store.createConversation(direct(creator, other)).conversation
}

private func draft(_ conversationId: EntityID, _ sender: User, _ text: String, clientMessageId: String? = nil, at: Date = t0) -> MessageDraft {
    MessageDraft(
        conversationId: conversationId, senderId: sender.id, clientMessageId: clientMessageId ?? UUID().uuidString,
        type: .text, text: text, now: at)
}

private func send(_ store: any ParleyStore, _ conversationId: EntityID, _ sender: User, _ text: String, at: Date = t0) async throws -> Message {
    let result = try await store.send(draft(conversationId, sender, text, at: at))
    #expect(result.created)
    return result.message
}

private func expectNotFound<T>(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> T
) async throws {
    do {
        _ = try await body()
        Issue.record("expected not_found, got a result", sourceLocation: sourceLocation)
    } catch let error as APIError {
        #expect(error.code == .notFound, sourceLocation: sourceLocation)
    }
}
