import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// The conversation list: pages by activity, and a sync token that answers only what changed.
@Suite struct ListSyncTests {
    /// A user in 2,000 groups. The list pages (a request without `limit` stops at 200); a sync with
    /// nothing new moves less than 1 KB; after a message, a read and a departure, the sync
    /// carries those conversations and the one left, and the SDK's list follows.
    @Test(arguments: StoreKind.available)
    func aUserIn2000ConversationsPagesTheListAndSyncsOnlyWhatChanged(_ kind: StoreKind) async throws {
        let server = try await TestServer.start(store: kind) { $0.listSyncOverlap = .zero }
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let store = server.app.store
        var ids: [EntityID] = []
        let base = Date()
        for n in 0..<2_000 {
            ids.append(try await store.createConversation(NewConversation(
                organizationId: alice.auth.user.organizationId, creatorId: bob.id, type: .group, name: "g\(n)",
                participantIds: [alice.id], now: base.addingTimeInterval(Double(n - 2_000)))).conversation.id)
        }

        // One conversation has a message Alice has not read yet (and is the newest).
        _ = try await bob.api.send(.init(clientMessageId: "old", text: "earlier"), to: ids[20])

        // Pages, newest activity first, every conversation once.
        var seen: [Conversation] = []
        var before: String?
        var first: ConversationsResponse?
        repeat {
            let page = try await alice.api.conversationsPage(limit: 200, before: before)
            if first == nil { first = page }
            #expect(page.conversations.count <= 200 && page.syncToken != nil)
            seen += page.conversations
            before = page.hasMore == true ? page.nextBefore : nil
        } while before != nil
        let expectedOrder = [ids[20]] + ids.reversed().filter { $0 != ids[20] }
        #expect(seen.count == 2_000 && Set(seen.map(\.id)).count == 2_000, "each once: \(seen.count)")
        #expect(seen.map(\.id) == expectedOrder, "newest first: \(zip(seen.map(\.id), expectedOrder).prefix(3).map { "\($0.0.description.prefix(4)) \($0.1.description.prefix(4))" }) first mismatch at \(Array(zip(seen.map(\.id), expectedOrder)).firstIndex { $0.0 != $0.1 } ?? -1)")
        let v1 = try await server.raw("GET", "conversations", token: alice.token)
        let v1Page = try WireCoding.makeDecoder().decode(ConversationsResponse.self, from: v1.body)
        #expect(v1Page.conversations.count == 200 && v1Page.hasMore == true && v1Page.syncToken == nil)
        #expect(try await server.raw("GET", "conversations?before=nonsense", token: alice.token).status == 400)
        #expect(try await server.raw("GET", "conversations?changedSince=nonsense", token: alice.token).status == 400)

        // Nothing new: a few bytes.
        let token = try #require(first?.syncToken)
        let idle = try await server.raw("GET", "conversations?changedSince=\(token)", token: alice.token)
        #expect(idle.status == 200 && idle.body.count < 1024, "\(idle.body.count) bytes")
        let nothing = try WireCoding.makeDecoder().decode(ConversationChanges.self, from: idle.body)
        #expect(nothing.conversations.isEmpty && nothing.removedIds.isEmpty)

        // The SDK: a new device's first sync brings the newest page (one request); the rest
        // page in as the list model asks for them (the user scrolling to the end).
        let listRequests = {
            server.app.metrics.value("parley_http_requests_total", labels: ["method": "GET", "route": "/api/v1/conversations", "status": "200"])
        }
        let client = try ChatClientTests.client(alice, clock: ManualClock())
        var asked = listRequests()
        _ = await client.synchronize()
        #expect(listRequests() - asked == 1, "one page, not the whole list")
        #expect(try await client.database.conversations().map(\.id) == Array(expectedOrder.prefix(LiveTransport.firstPageSize)))
        let model = await ConversationListModel(client: client)
        await model.start()
        let (shown, more) = await (model.rows.count, model.hasMore)
        #expect(shown == LiveTransport.firstPageSize && more)
        asked = listRequests()
        var scrolls = 0
        while await model.hasMore, scrolls < 100 {
            await model.loadMore()
            scrolls += 1
        }
        #expect(listRequests() - asked == scrolls && scrolls == (2_000 - 50 + 49) / 50, "\(scrolls) pages")
        #expect(await model.rows.map(\.id) == expectedOrder, "every conversation once, newest first")
        await model.loadMore()
        #expect(listRequests() - asked == scrolls, "nothing more is asked at the end")

        let message = try await bob.api.send(.init(clientMessageId: "new", text: "news"), to: ids[10])
        _ = try await alice.api.markRead(ids[20], upToSeq: 1)
        _ = try await bob.api.removeParticipant(ids[30], userId: alice.id)
        let changes = try await alice.api.conversationChanges(since: nothing.syncToken)
        #expect(Set(changes.conversations.map(\.id)) == [ids[10], ids[20]])
        #expect(changes.removedIds == [ids[30]])
        #expect(changes.conversations.first { $0.id == ids[10] }?.lastMessage?.id == message.id)

        asked = listRequests()
        _ = await client.synchronize()
        #expect(listRequests() - asked == 1, "the sync asks for changes only")
        let local = try await client.database.conversations()
        #expect(local.count == 1_999, "the conversation left is gone")
        #expect(local.first?.id == ids[10] && local.first?.lastMessage?.text == "news", "the changed one is current and first")
        let again = try await alice.api.conversationChanges(since: changes.syncToken)
        #expect(again.conversations.isEmpty && again.removedIds.isEmpty)
        await model.stop()
    }
}
