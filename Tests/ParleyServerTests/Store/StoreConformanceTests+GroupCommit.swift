import Foundation
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing
import ParleySQLite

/// Group commit on every store: concurrent sends share transactions, each still gets its own
/// answer, a refused send does not undo its batch, and nothing is acknowledged unstored.
extension StoreConformanceTests {
    /// Pipelined sends (queued one after another without waiting, as a WebSocket connection
    /// does) take their seqs in the order they were queued, across several conversations.
    @Test(arguments: StoreKind.available)
    func pipelinedSendsKeepTheirOrder(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let now = Date()
            let alice = try await store.register(organization: "acme", email: "a@x.io", displayName: "A", passwordHash: "x", now: now)
            let bob = try await store.register(organization: "acme", email: "b@x.io", displayName: "B", passwordHash: "x", now: now)
            var conversations: [EntityID] = []
            for n in 0..<4 {
                conversations.append(try await store.createConversation(NewConversation(
                    organizationId: alice.organizationId, creatorId: alice.id, type: .group, name: "g\(n)",
                    participantIds: [bob.id], now: now)).conversation.id)
            }
            var pending: [(conversation: EntityID, n: Int, send: PendingSend)] = []
            for n in 0..<400 {
                let conversation = conversations[n % 4]
                pending.append((conversation, n, store.enqueueSend(MessageDraft(
                    conversationId: conversation, senderId: alice.id, clientMessageId: "p\(n)", type: .text, text: "p\(n)", now: now))))
            }
            var seqs: [EntityID: [(n: Int, seq: Int64)]] = [:]
            for item in pending {
                seqs[item.conversation, default: []].append((item.n, try await item.send.result().message.seq))
            }
            for (_, list) in seqs {
                #expect(list.map(\.seq) == list.map(\.seq).sorted(), "queued order is seq order")
                #expect(Set(list.map(\.seq)).count == list.count)
            }
        }
    }

    /// A queue of sends mixing plain ones (PostgreSQL stores a batch's plain sends in one
    /// statement), a location with metadata, and a reply that makes its conversation's sends go
    /// one by one: every answer is as if sent alone, seqs follow the queue without a gap, and
    /// metadata and unread counters are intact.
    @Test(arguments: StoreKind.available)
    func aMixedQueueOfSendsAnswersEachAsIfAlone(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let now = Date()
            let alice = try await store.register(organization: "acme", email: "a@x.io", displayName: "A", passwordHash: "x", now: now)
            let bob = try await store.register(organization: "acme", email: "b@x.io", displayName: "B", passwordHash: "x", now: now)
            var groups: [Conversation] = []
            for n in 0..<2 {
                groups.append(try await store.createConversation(NewConversation(
                    organizationId: alice.organizationId, creatorId: alice.id, type: .group, name: "g\(n)",
                    participantIds: [bob.id], now: now)).conversation)
            }
            let first = try await store.send(MessageDraft(
                conversationId: groups[1].id, senderId: bob.id, clientMessageId: "first", type: .text, text: "first", now: now)).message
            var pending: [(conversation: EntityID, sender: EntityID, send: PendingSend)] = []
            for n in 0..<60 {
                let conversation = groups[n % 2].id
                let sender = n.isMultiple(of: 3) ? bob.id : alice.id
                var draft = MessageDraft(conversationId: conversation, senderId: sender, clientMessageId: "m\(n)", type: .text, text: "m\(n)", now: now)
                if n == 10 {
                    draft.type = .location
                    draft.text = ""
                    draft.metadata = ["latitude": "51.5", "longitude": "-0.12"]
                }
                if n == 31 { draft.replyToId = first.id }
                pending.append((conversation, sender, store.enqueueSend(draft)))
            }
            var seqs: [EntityID: [Int64]] = [:]
            for item in pending {
                let result = try await item.send.result()
                #expect(result.created && result.message.senderId == item.sender)
                seqs[item.conversation, default: []].append(result.message.seq)
            }
            for (conversation, list) in seqs {
                let start = conversation == groups[1].id ? first.seq : groups[0].lastSeq
                #expect(list == Array((start + 1)...(start + Int64(list.count))), "gapless, in queue order: \(list)")
            }
            let page = try await store.messages(conversationId: groups[0].id, viewer: bob.id, before: nil, after: nil, limit: 100)
            let location = try #require(page.messages.first { $0.clientMessageId == "m10" })
            #expect(location.type == .location && location.metadata == ["latitude": "51.5", "longitude": "-0.12"])
            let reply = try #require(try await store.messages(conversationId: groups[1].id, viewer: bob.id, before: nil, after: nil, limit: 100)
                .messages.first { $0.clientMessageId == "m31" })
            #expect(reply.replyToId == first.id)
            // Bob has read nothing: every message of Alice's is unread to him, none of his own.
            for group in groups {
                let fromAlice = pending.filter { $0.conversation == group.id && $0.sender == alice.id }.count
                #expect(try await store.conversation(id: group.id, viewer: bob.id)?.unreadCount == fromAlice)
                let fromBob = pending.filter { $0.conversation == group.id && $0.sender == bob.id }.count + (group.id == groups[1].id ? 1 : 0)
                #expect(try await store.conversation(id: group.id, viewer: alice.id)?.unreadCount == fromBob)
            }
        }
    }

    @Test(arguments: StoreKind.available)
    func concurrentSendsShareTransactionsAndKeepEveryInvariant(kind: StoreKind) async throws {
      try await withStore(kind) { store, _ in
        let now = Date()
        let alice = try await store.register(organization: "acme", email: "a@x.io", displayName: "A", passwordHash: "x", now: now)
        let bob = try await store.register(organization: "acme", email: "b@x.io", displayName: "B", passwordHash: "x", now: now)
        let eve = try await store.register(organization: "acme", email: "e@x.io", displayName: "E", passwordHash: "x", now: now)
        let group = try await store.createConversation(NewConversation(
            organizationId: alice.organizationId, creatorId: alice.id, type: .group, name: "g", participantIds: [bob.id], now: now))
        let id = group.conversation.id
        let base = group.conversation.lastSeq

        // 400 sends from 2 senders, with every 10th one a retry of an earlier id, and every
        // 25th from Eve, who is not in the conversation.
        let results = await withTaskGroup(of: (Int, Result<SendResult, any Error>).self) { tasks in
            for n in 0..<400 {
                tasks.addTask {
                    let sender = n.isMultiple(of: 25) ? eve.id : (n.isMultiple(of: 2) ? alice.id : bob.id)
                    let clientId = n.isMultiple(of: 10) && n > 0 ? "c\(n - 2)" : "c\(n)"
                    let draft = MessageDraft(
                        conversationId: id, senderId: sender, clientMessageId: clientId, type: .text, text: "m\(n)", now: now)
                    return (n, await Result(catching: { try await store.send(draft) }))
                }
            }
            return await tasks.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        var stored: [EntityID: Message] = [:]
        for (n, result) in results {
            switch result {
            case .success(let sent): stored[sent.message.id] = sent.message
            case .failure(let error):
                #expect(n.isMultiple(of: 25), "only Eve's sends fail: \(n) \(error)")
                #expect((error as? ChatError)?.code == .notFound)
            }
        }
        let page = try await store.messages(conversationId: id, viewer: alice.id, before: nil, after: base, limit: 1000)
        #expect(page.messages.map(\.seq) == Array((base + 1)...(base + Int64(stored.count))), "gapless")
        #expect(Set(page.messages.map(\.id)) == Set(stored.keys), "every answer is stored, nothing else is")
        #expect(Set(page.messages.map { "\($0.senderId)/\($0.clientMessageId)" }).count == page.messages.count, "exactly once")
        let stats = try #require(store as? any GroupCommitting).writeBatchStats
        #expect(stats.writes == 400)
        #expect(stats.batches < stats.writes, "concurrent sends were coalesced")
        print("[\(kind)] group commit: 400 concurrent sends in \(stats.batches) transactions")
      }
    }
}

extension StoreConformanceTests {
    /// A send whose write fails after its checks passed (here a trigger refuses its insert, as
    /// a full disk or a constraint would) fails alone: the others in its batch are stored, the
    /// seq it had taken is given back (no gap), and refused sends are still answered as such.
    @Test(arguments: StoreKind.available)
    func aWriteThatFailsInABatchFailsAloneAndLeavesNoGap(kind: StoreKind) async throws {
        try await withStore(kind) { store, fixture in
            try await fixture.poisonInserts(textLike: "poison")
            let now = Date()
            let alice = try await store.register(organization: "acme", email: "a@x.io", displayName: "A", passwordHash: "x", now: now)
            let bob = try await store.register(organization: "acme", email: "b@x.io", displayName: "B", passwordHash: "x", now: now)
            let eve = try await store.register(organization: "acme", email: "e@x.io", displayName: "E", passwordHash: "x", now: now)
            let group = try await store.createConversation(NewConversation(
                organizationId: alice.organizationId, creatorId: alice.id, type: .group, name: "g", participantIds: [bob.id], now: now))
            let id = group.conversation.id, base = group.conversation.lastSeq
            // Queued without waiting, as a connection pipelines them: they commit in batches.
            var pending: [(n: Int, send: PendingSend)] = []
            for n in 0..<120 {
                let sender = n % 10 == 3 ? eve.id : alice.id
                let text = n % 9 == 4 ? "poison" : "m\(n)"
                pending.append((n, store.enqueueSend(MessageDraft(
                    conversationId: id, senderId: sender, clientMessageId: "w\(n)", type: .text, text: text, now: now))))
            }
            var stored: [Int: Message] = [:]
            for (n, send) in pending {
                do {
                    stored[n] = try await send.result().message
                    #expect(n % 10 != 3 && n % 9 != 4, "send \(n) should have failed")
                } catch let error as ChatError {
                    #expect(n % 10 == 3 && error.code == .notFound, "send \(n): \(error)")
                } catch {
                    #expect(n % 9 == 4 && n % 10 != 3, "only the poisoned writes fail otherwise: \(n) \(error)")
                }
            }
            let expected = (0..<120).filter { $0 % 10 != 3 && $0 % 9 != 4 }
            #expect(stored.keys.sorted() == expected)
            let page = try await store.messages(conversationId: id, viewer: alice.id, before: nil, after: base, limit: 200)
            #expect(page.messages.map(\.seq) == Array((base + 1)...(base + Int64(expected.count))), "gapless")
            #expect(page.messages.map(\.text) == expected.map { "m\($0)" }, "in queued order, the failed ones left out")
            let stats = try #require(store as? any GroupCommitting).writeBatchStats
            #expect(stats.batches < 120, "the sends shared transactions, so failures met their batches")
            let view = try #require(try await store.conversation(id: id, viewer: bob.id))
            #expect(view.unreadCount == expected.count, "the counters saw only what was stored")
        }
    }
}

extension StoreConformanceTests {
    /// 60 members read a busy group at once (and 2 outsiders try): every watermark lands
    /// exactly, each member's unread count is right, the outsiders change nothing, and on
    /// SQLite the reads shared transactions (one fsync for many).
    @Test func concurrentReadsShareTransactionsAndLandExactly() async throws {
        let directory = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(path: directory + "/parley.sqlite")
        let now = Date()
        var members: [User] = []
        for n in 0..<60 {
            members.append(try await store.register(organization: "acme", email: "m\(n)@x.io", displayName: "M\(n)", passwordHash: "x", now: now))
        }
        let outsiders = [
            try await store.register(organization: "acme", email: "o1@x.io", displayName: "O1", passwordHash: "x", now: now),
            try await store.register(organization: "acme", email: "o2@x.io", displayName: "O2", passwordHash: "x", now: now),
        ]
        let group = try await store.createConversation(NewConversation(
            organizationId: members[0].organizationId, creatorId: members[0].id, type: .group, name: "g",
            participantIds: members.dropFirst().map(\.id), now: now)).conversation
        for n in 0..<10 {
            _ = try await store.send(MessageDraft(
                conversationId: group.id, senderId: members[0].id, clientMessageId: "s\(n)", type: .text, text: "\(n)", now: now))
        }
        let last = group.lastSeq + 10
        let before = store.writeBatchStats
        let results = await withTaskGroup(of: (Int, Result<WatermarkChange, any Error>).self) { tasks in
            for (index, user) in (members.dropFirst() + outsiders).enumerated() {
                tasks.addTask {
                    let target = last - Int64(index % 5)
                    return (index, await Result { try await store.markRead(conversationId: group.id, userId: user.id, upToSeq: target, messageIds: nil) })
                }
            }
            return await tasks.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
        for (index, result) in results {
            let target = last - Int64(index % 5)
            switch result {
            case .success(let change):
                #expect(index < 59 && change.member.readSeq == target && change.unreadCount == Int(last - target))
            case .failure(let error):
                #expect(index >= 59 && (error as? ChatError)?.code == .notFound, "\(index): \(error)")
            }
        }
        for (index, user) in members.dropFirst().enumerated() {
            let view = try #require(try await store.conversation(id: group.id, viewer: user.id))
            #expect(view.readSeq == last - Int64(index % 5) && view.unreadCount == index % 5)
        }
        let after = store.writeBatchStats
        let (batches, moves) = (after.batches - before.batches, after.writes - before.writes)
        #expect(moves == 61 && batches < moves, "reads shared transactions: \(batches) for \(moves)")
        try await store.close()
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

extension StoreConformanceTests {
    /// Blocks inside batches: queued plain sends (PostgreSQL stores them in one
    /// statement) of a blocked user into the blocker's direct conversation are each refused
    /// without taking a seq, while the same batch's group sends count as unread for everyone
    /// but the blocker.
    @Test(arguments: StoreKind.available)
    func aBatchRefusesBlockedDirectSendsAndCountsGroupSendsForNobodyWhoBlocks(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let now = Date()
            let alice = try await store.register(organization: "acme", email: "a@x.io", displayName: "A", passwordHash: "x", now: now)
            let bob = try await store.register(organization: "acme", email: "b@x.io", displayName: "B", passwordHash: "x", now: now)
            let carol = try await store.register(organization: "acme", email: "c@x.io", displayName: "C", passwordHash: "x", now: now)
            let direct = try await store.createConversation(NewConversation(
                organizationId: alice.organizationId, creatorId: alice.id, type: .direct, participantIds: [bob.id], now: now)).conversation
            let group = try await store.createConversation(NewConversation(
                organizationId: alice.organizationId, creatorId: alice.id, type: .group, name: "g",
                participantIds: [bob.id, carol.id], now: now)).conversation
            let bobIdentity = Identity(userId: bob.id, organizationId: bob.organizationId)
            let shared = try await store.writing { tx in try await BlockRules.setBlocked(true, user: alice.id, by: bobIdentity, now: now, in: tx) }
            #expect(Set(shared ?? []) == [direct.id, group.id])
            var pending: [(direct: Bool, send: PendingSend)] = []
            for n in 0..<40 {
                let inDirect = n.isMultiple(of: 2)
                pending.append((inDirect, store.enqueueSend(MessageDraft(
                    conversationId: inDirect ? direct.id : group.id, senderId: alice.id, clientMessageId: "q\(n)", type: .text,
                    text: "q\(n)", now: now))))
            }
            var refused = 0
            var groupSeqs: [Int64] = []
            for item in pending {
                do {
                    let result = try await item.send.result()
                    #expect(!item.direct, "a blocked direct send was stored")
                    groupSeqs.append(result.message.seq)
                } catch let error as ChatError {
                    #expect(item.direct && error.code == .forbidden)
                    refused += 1
                }
            }
            #expect(refused == 20 && groupSeqs.sorted() == Array(1...20))
            #expect(try await store.conversation(id: direct.id, viewer: bob.id)?.lastSeq == 0)
            #expect(try await store.conversation(id: group.id, viewer: bob.id)?.unreadCount == 0)
            #expect(try await store.conversation(id: group.id, viewer: carol.id)?.unreadCount == 20)
            // Bob's own message still counts for the others, and his count moves for carol's.
            _ = try await store.send(MessageDraft(
                conversationId: group.id, senderId: carol.id, clientMessageId: "c1", type: .text, text: "c1", now: now))
            #expect(try await store.conversation(id: group.id, viewer: bob.id)?.unreadCount == 1)
            #expect(try await store.totalUnread(userId: bob.id) == 1)
        }
    }
}
