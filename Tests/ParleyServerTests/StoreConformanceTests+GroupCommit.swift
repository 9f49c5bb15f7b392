import Foundation
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

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
                #expect((error as? APIError)?.code == .notFound)
            }
        }
        let page = try await store.messages(conversationId: id, viewer: alice.id, before: nil, after: base, limit: 1000)
        #expect(page.messages.map(\.seq) == Array((base + 1)...(base + Int64(stored.count))), "gapless")
        #expect(Set(page.messages.map(\.id)) == Set(stored.keys), "every answer is stored, nothing else is")
        #expect(Set(page.messages.map { "\($0.senderId)/\($0.clientMessageId)" }).count == page.messages.count, "exactly once")
        let stats = try #require(store as? any GroupCommitting).sendBatchStats
        #expect(stats.sends == 400)
        #expect(stats.batches < stats.sends, "concurrent sends were coalesced")
        print("[\(kind)] group commit: 400 concurrent sends in \(stats.batches) transactions")
      }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
