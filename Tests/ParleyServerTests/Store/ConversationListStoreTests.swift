import Foundation
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// The conversation list at the store: pages by cursor that neither skip nor repeat a
/// conversation when activity times tie, changes since a sync token (departures included),
/// each member's own view read together without one member's counts leaking into another's,
/// and the receipt counts of a large group.
@Suite struct ConversationListStoreTests {
    static func group(_ store: any ParleyStore, _ creator: User, _ others: [User], name: String = "g", at: Date = t0) async throws -> Conversation {
        try await store.createConversation(NewConversation(
            organizationId: creator.organizationId, creatorId: creator.id, type: .group, name: name, participantIds: others.map(\.id), now: at)
        ).conversation
    }

    /// A sync token the store's clock has moved past, so a change made next is after it.
    static func token(_ store: any ParleyStore) async throws -> Int64 {
        let token = try await store.clockMilliseconds()
        while try await store.clockMilliseconds() <= token { await Task.yield() }
        return token
    }

    @Test(arguments: StoreKind.available)
    func pagesCoverEveryConversationOnceWhenActivityTimesTie(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            var others: [User] = []
            for index in 0..<4 { others.append(try await register(store, "u\(index)@x.io")) }
            // Five groups created in the same millisecond, two directs later, one with a message later still.
            for index in 0..<5 { _ = try await Self.group(store, alice, [others[index % 4]], name: "tie \(index)") }
            let early = try await store.createConversation(NewConversation(
                organizationId: alice.organizationId, creatorId: alice.id, type: .direct, participantIds: [others[0].id], now: t0.addingTimeInterval(5)))
            let busy = try await createDirect(store, alice, others[1])
            _ = try await send(store, busy.id, others[1], "latest", at: t0.addingTimeInterval(9))
            let everything = try await store.conversations(viewer: alice.id)
            #expect(everything.count == 7)
            #expect(everything.first?.id == busy.id && everything[1].id == early.conversation.id)

            for limit in [1, 2, 3, 7, 8] {
                var seen: [Conversation] = []
                var cursor: ListCursor?
                repeat {
                    let page = try await store.conversations(viewer: alice.id, limit: limit, before: cursor)
                    #expect(page.page.count <= limit)
                    seen += page.page
                    cursor = page.next
                    if seen.count > 7 { break }
                } while cursor != nil
                #expect(seen.map(\.id) == everything.map(\.id), "limit \(limit)")
            }
            // Within a tie, by id.
            let ties = everything.suffix(5).map(\.id)
            #expect(ties == ties.sorted())
            // A cursor survives its wire form.
            let first = try await store.conversations(viewer: alice.id, limit: 3, before: nil)
            let wire = try #require(first.next?.wire)
            #expect(ListCursor(wire) == first.next)
            let rest = try await store.conversations(viewer: alice.id, limit: 10, before: ListCursor(wire))
            #expect(rest.page.map(\.id) == Array(everything.dropFirst(3).map(\.id)) && rest.next == nil)
            // Another member sees only theirs.
            #expect(try await store.conversations(viewer: others[3].id, limit: 10, before: nil).page.count == 1)
        }
    }

    @Test(arguments: StoreKind.available)
    func changesSinceATokenListWhatMovedAndWhatWasLeft(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let carol = try await register(store, "carol@x.io")
            let quiet = try await createDirect(store, alice, carol)
            let talk = try await createDirect(store, alice, bob)
            let team = try await Self.group(store, alice, [bob, carol])
            let start = try await Self.token(store)
            let nothing = try await store.conversationChanges(viewer: alice.id, since: start)
            #expect(nothing.changed.isEmpty && nothing.removedIds.isEmpty)

            _ = try await send(store, talk.id, bob, "hello")
            let afterSend = try await store.conversationChanges(viewer: alice.id, since: start)
            #expect(afterSend.changed.map(\.id) == [talk.id])
            #expect(afterSend.changed.first?.unreadCount == 1)

            // Reading changes only the reader's view: Bob's list does not move.
            let beforeRead = try await Self.token(store)
            _ = try await store.markRead(conversationId: talk.id, userId: alice.id, upToSeq: 1, messageIds: nil)
            #expect(try await store.conversationChanges(viewer: alice.id, since: beforeRead).changed.map(\.id) == [talk.id])
            #expect(try await store.conversationChanges(viewer: bob.id, since: beforeRead).changed.isEmpty)

            // Leaving: gone from the leaver's changes, listed as removed; the others see the change.
            let beforeLeave = try await Self.token(store)
            _ = try await store.removeParticipant(conversationId: team.id, by: carol.id, userId: carol.id, now: t0)
            let carolSync = try await store.conversationChanges(viewer: carol.id, since: beforeLeave)
            #expect(carolSync.removedIds == [team.id] && carolSync.changed.isEmpty)
            #expect(try await store.conversationChanges(viewer: alice.id, since: beforeLeave).changed.map(\.id) == [team.id])
            #expect(try await store.conversationChanges(viewer: carol.id, since: start).removedIds == [team.id])
            #expect(try await store.conversationChanges(viewer: carol.id, since: try await Self.token(store)).removedIds.isEmpty)

            // Added back: the departure is forgotten and the group is a change again.
            let beforeReturn = try await Self.token(store)
            _ = try await store.addParticipants(conversationId: team.id, by: alice.id, userIds: [carol.id], now: t0)
            let back = try await store.conversationChanges(viewer: carol.id, since: beforeLeave)
            #expect(back.removedIds.isEmpty && back.changed.map(\.id) == [team.id])
            #expect(try await store.conversationChanges(viewer: carol.id, since: beforeReturn).changed.map(\.id) == [team.id])
            #expect(!(try await store.conversationChanges(viewer: carol.id, since: beforeReturn).changed.map(\.id).contains(quiet.id)))
        }
    }

    @Test(arguments: StoreKind.available)
    func viewsReadTogetherEqualEachMembersOwnView(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let carol = try await register(store, "carol@x.io")
            let dave = try await register(store, "dave@x.io")
            let outsider = try await register(store, "eve@x.io")
            let team = try await Self.group(store, alice, [bob, carol, dave])
            for index in 0..<4 { _ = try await send(store, team.id, index.isMultiple(of: 2) ? alice : bob, "m\(index)") }
            var mention = draft(team.id, carol, "@dave look")
            mention.mentions = [dave.id]
            _ = try await store.send(mention)
            _ = try await store.markRead(conversationId: team.id, userId: bob.id, upToSeq: 2, messageIds: nil)
            _ = try await store.mute(ConversationSettings(muted: true, mutedUntil: nil), conversationId: team.id, by: carol.id, now: t0)

            var expected: [EntityID: Conversation] = [:]
            for member in [alice, bob, carol, dave] { expected[member.id] = try await store.conversation(id: team.id, viewer: member.id) }
            #expect(expected[dave.id]?.mentionCount == 1 && expected[dave.id]?.unreadCount == 5)
            #expect(expected[bob.id]?.readSeq == 2 && expected[bob.id]?.unreadCount == 2)
            #expect(expected[carol.id]?.muted == true && expected[alice.id]?.muted == false)

            // An outsider first (someone who left while the event was on its way) must not shape the others.
            let viewers = [outsider.id, dave.id, alice.id, carol.id, bob.id]
            let listed = try await store.conversationViews(id: team.id, viewers: viewers, listingMembersUpTo: .max)
            #expect(Set(listed.keys) == [alice.id, bob.id, carol.id, dave.id])
            for (id, view) in listed { #expect(view == expected[id], "view of \(id)") }

            // A large group: no member lists, every member's own part still theirs.
            let large = try await store.conversationViews(id: team.id, viewers: viewers, listingMembersUpTo: 2)
            #expect(Set(large.keys) == [alice.id, bob.id, carol.id, dave.id])
            for (id, view) in large {
                let own = try #require(expected[id])
                #expect(view.unreadCount == own.unreadCount && view.mentionCount == own.mentionCount && view.readSeq == own.readSeq)
                #expect(view.muted == own.muted && view.lastSeq == own.lastSeq && view.memberCount == 4 && !view.listsAllMembers)
            }
            #expect(try await store.conversationViews(id: team.id, viewers: [], listingMembersUpTo: .max).isEmpty)
            #expect(try await store.conversationViews(id: EntityID(), viewers: [alice.id], listingMembersUpTo: .max).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func receiptCountsFollowTheNewestMessage(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let carol = try await register(store, "carol@x.io")
            let team = try await Self.group(store, alice, [bob, carol])
            // No message yet: nothing to read, so nobody is behind.
            #expect(try await store.receiptSummary(conversationId: team.id) == ReceiptSummaryEvent(
                conversationId: team.id, seq: 0, readCount: 3, deliveredCount: 3))
            for index in 0..<3 { _ = try await send(store, team.id, alice, "m\(index)") }
            #expect(try await store.receiptSummary(conversationId: team.id) == ReceiptSummaryEvent(
                conversationId: team.id, seq: 3, readCount: 0, deliveredCount: 0))
            _ = try await store.markDelivered(conversationId: team.id, userId: carol.id, upToSeq: 3)
            _ = try await store.markRead(conversationId: team.id, userId: bob.id, upToSeq: 3, messageIds: nil)
            _ = try await store.markRead(conversationId: team.id, userId: alice.id, upToSeq: 2, messageIds: nil)
            // A read counts as delivered too; a watermark short of the newest counts for neither.
            #expect(try await store.receiptSummary(conversationId: team.id) == ReceiptSummaryEvent(
                conversationId: team.id, seq: 3, readCount: 1, deliveredCount: 2))
            // A new message resets the counts to who has reached it.
            _ = try await send(store, team.id, bob, "m3")
            #expect(try await store.receiptSummary(conversationId: team.id) == ReceiptSummaryEvent(
                conversationId: team.id, seq: 4, readCount: 0, deliveredCount: 0))
            #expect(try await store.receiptSummary(conversationId: EntityID()).seq == 0)
        }
    }
}
