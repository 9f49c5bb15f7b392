import Foundation
import GRDB
import ParleyProtocol
@testable import ParleyRules
@testable import ParleyStorage
import ParleyTestSupport
import PostgresNIO
import Testing
@testable import ParleySQLite
@testable import ParleyPostgres

/// The unread, mention and thread rules are written once (`ChatSQL`) and kept by each store as
/// O(1) counters moved on every send, delete, read and block. These tests play a conversation
/// with every kind of message the rules tell apart, then count with the rules' own SQL on the
/// store's database and compare with what the store's counters answer: a counter that drifts
/// from the rule, on either store, fails here.
@Suite struct ChatSQLTests {
    @Test(arguments: StoreKind.available)
    func theCountersAgreeWithTheRulesCountedFromTheMessages(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let ada = try await register(store, "ada@acme.test")
            let bob = try await register(store, "bob@acme.test")
            let cy = try await register(store, "cy@acme.test")
            let group = try await store.createConversation(NewConversation(
                organizationId: ada.organizationId, creatorId: ada.id, type: .group, name: "Rules",
                participantIds: [bob.id, cy.id], now: t0)).conversation.id
            // Ada blocks Cy: Cy's messages never count for her.
            _ = try await store.writing { tx in
                try await BlockRules.setBlocked(true, user: cy.id, by: Identity(userId: ada.id, organizationId: ada.organizationId), now: t0, in: tx)
            }
            let root = try await send(store, group, ada, "a root of Ada's")
            _ = try await send(store, group, bob, "one")
            _ = try await send(store, group, bob, "two")
            let deleted = try await send(store, group, bob, "gone")
            _ = try await store.change(.delete, messageId: deleted.id, in: group, by: bob.id, now: t0)
            _ = try await send(store, group, ada, "Ada's own")
            _ = try await send(store, group, cy, "from someone Ada blocks")
            var mention = draft(group, bob, "@Ada look")
            mention.mentions = [ada.id]
            _ = try await store.send(mention)
            var blockedMention = draft(group, cy, "@Ada from Cy")
            blockedMention.mentions = [ada.id]
            _ = try await store.send(blockedMention)
            var reply = draft(group, bob, "in Ada's thread")
            reply.threadRootId = root.id
            _ = try await store.send(reply)

            let view = try #require(try await store.conversation(id: group, viewer: ada.id))
            let rules = try await counts(for: ada.id, in: group, readSeq: view.readSeq, on: store)
            #expect(rules.unread == 3, "one, two, the mention")
            #expect(rules.threads == 1)
            #expect(rules.mentions == 1)
            #expect(view.unreadCount == rules.unread + rules.threads)
            #expect(view.mentionCount == rules.mentions)

            // A read up to the middle takes the base again from the rules.
            let middle = try #require(try await store.messages(conversationId: group, viewer: ada.id, before: nil, after: nil, limit: 50, includingThreads: false)
                .messages.first { $0.text == "two" })
            _ = try await store.markRead(conversationId: group, userId: ada.id, upToSeq: middle.seq, messageIds: nil)
            let after = try #require(try await store.conversation(id: group, viewer: ada.id))
            let rulesAfter = try await counts(for: ada.id, in: group, readSeq: after.readSeq, on: store)
            #expect(after.unreadCount == rulesAfter.unread + rulesAfter.threads)
            #expect(after.mentionCount == rulesAfter.mentions)
            #expect(rulesAfter.unread == 1, "the mention after the read")
        }
    }

    @Test(arguments: StoreKind.available)
    func searchFindsNeitherDeletedNorSystemMessages(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let ada = try await register(store, "ada@acme.test")
            let bob = try await register(store, "bob@acme.test")
            let direct = try await createDirect(store, ada, bob)
            let kept = try await send(store, direct.id, bob, "searchable walrus")
            let gone = try await send(store, direct.id, bob, "deleted walrus")
            _ = try await store.change(.delete, messageId: gone.id, in: direct.id, by: bob.id, now: t0)
            var systemLine = draft(direct.id, bob, "system walrus")
            systemLine.type = .system
            let system = systemLine
            _ = try await store.writing { tx in try await tx.insertMessage(system) }
            let hits = try await store.search("walrus", viewer: ada.id, conversationId: nil, limit: 10, offset: 0)
            #expect(hits.results.map(\.message.id) == [kept.id])
        }
    }

    // MARK: - Counting with the rules' SQL

    struct RuleCounts { var unread: Int; var threads: Int; var mentions: Int }

    /// Counts with `ChatSQL`'s fragments on the store's own database, for one member.
    func counts(for member: EntityID, in conversation: EntityID, readSeq: Int64, on store: any ParleyStore) async throws -> RuleCounts {
        let who = "'\(member.description)'", where_ = "'\(conversation.description)'", seq = String(readSeq)
        let sql = [
            ChatSQL.unreadMessages(member: who, conversation: where_, readSeq: seq),
            ChatSQL.unreadThreadReplies(member: who, conversation: where_, readSeq: seq),
            ChatSQL.unreadMentions(member: who, conversation: where_, readSeq: seq),
        ]
        var values: [Int] = []
        for statement in sql {
            if let sqlite = store as? SQLiteStore {
                values.append(try await sqlite.writer.read { db in try Int.fetchOne(db, sql: statement) ?? -1 })
            } else {
                let postgres = try #require(store as? PostgresStore)
                let rows = try await postgres.client.query(PostgresQuery(unsafeSQL: statement), logger: postgres.logger).collect()
                values.append(Int(try rows.first?.decode(Int64.self) ?? -1))
            }
        }
        return RuleCounts(unread: values[0], threads: values[1], mentions: values[2])
    }
}
