import Foundation
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// What the retention sweep, the export and the erasure read and change at the store: the
/// exact cutoff, the organization's own messages only, forwards that carry a user's words,
/// attachments whose bytes another record still needs, and an erasure refused by its check
/// that must leave the account as it was.
@Suite struct LifecycleStoreTests {
    static func attachment(of user: User, sha: String = String(repeating: "cd", count: 32), at: Date = t0) -> StoredAttachment {
        StoredAttachment(
            id: EntityID(), uploaderId: user.id, organizationId: user.organizationId, name: "report.pdf", contentType: "application/pdf",
            size: 2048, sha256: sha, createdAt: at.wholeMilliseconds)
    }

    static func sendFile(_ store: any ParleyStore, _ conversationId: EntityID, _ sender: User, _ file: StoredAttachment) async throws -> Message {
        var message = draft(conversationId, sender, "see attached")
        message.type = .file
        message.attachmentId = file.id
        return try await store.send(message).message
    }

    static func delete(_ store: any ParleyStore, _ message: Message, by user: User) async throws {
        _ = try await store.change(.delete, messageId: message.id, in: message.conversationId, by: user.id, now: t0.addingTimeInterval(500))
    }

    @Test(arguments: StoreKind.available)
    func retentionIsSetClearedAndListedPerOrganization(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let acme = try await register(store, "a@x.io").organizationId
            let other = try await register(store, "b@y.io", organization: "other").organizationId
            #expect(try await store.retentionPolicies().isEmpty)
            #expect(try await store.setMessageRetention(days: 30, organizationId: acme)?.messageRetentionDays == 30)
            #expect(try await store.setMessageRetention(days: 1, organizationId: other)?.messageRetentionDays == 1)
            let policies = try await store.retentionPolicies()
            #expect(Dictionary(uniqueKeysWithValues: policies.map { ($0.organizationId, $0.days) }) == [acme: 30, other: 1])
            // Clearing one leaves the other; an unknown organization is nil and creates nothing.
            let cleared = try #require(try await store.setMessageRetention(days: nil, organizationId: acme))
            #expect(cleared.messageRetentionDays == nil && cleared.id == acme)
            #expect(try await store.organization(id: acme)?.messageRetentionDays == nil)
            #expect(try await store.setMessageRetention(days: 7, organizationId: EntityID()) == nil)
            #expect(try await store.retentionPolicies().map(\.organizationId) == [other])
        }
    }

    @Test(arguments: StoreKind.available)
    func expiredMessagesStopAtTheCutoffAndStayInTheirOrganization(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let mallory = try await register(store, "mallory@y.io", organization: "evil")
            let eve = try await register(store, "eve@y.io", organization: "evil")
            let group = try await store.createConversation(NewConversation(
                organizationId: alice.organizationId, creatorId: alice.id, type: .group, name: "g", participantIds: [bob.id], now: t0)
            ).conversation
            let old = try await send(store, group.id, alice, "old", at: t0)
            let oldDeleted = try await send(store, group.id, bob, "gone", at: t0)
            try await Self.delete(store, oldDeleted, by: bob)
            _ = try await store.rename(conversationId: group.id, by: alice.id, to: "renamed", now: t0)  // a system message
            let atCutoff = try await send(store, group.id, bob, "exactly at the cutoff", at: t0.addingTimeInterval(10))
            _ = try await send(store, group.id, bob, "new", at: t0.addingTimeInterval(20))
            let foreign = try await createDirect(store, mallory, eve)
            let foreignOld = try await send(store, foreign.id, mallory, "old elsewhere", at: t0)

            let cutoff = t0.addingTimeInterval(10)
            let expired = try await store.expiredMessages(organizationId: alice.organizationId, before: cutoff, limit: 100)
            #expect(expired == [MessageRef(id: old.id, conversationId: group.id)])
            // One millisecond later, the message at the old cutoff is due too.
            let later = try await store.expiredMessages(organizationId: alice.organizationId, before: cutoff.addingTimeInterval(0.001), limit: 100)
            #expect(Set(later.map(\.id)) == [old.id, atCutoff.id])
            #expect(try await store.expiredMessages(organizationId: mallory.organizationId, before: cutoff, limit: 100).map(\.id) == [foreignOld.id])
            #expect(try await store.expiredMessages(organizationId: alice.organizationId, before: t0, limit: 100).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func expiredMessagesHonourTheLimitWithoutRepeats(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let direct = try await createDirect(store, alice, bob)
            var sent: Set<EntityID> = []
            for index in 0..<7 { sent.insert(try await send(store, direct.id, alice, "m\(index)", at: t0.addingTimeInterval(Double(index))).id) }
            let cutoff = t0.addingTimeInterval(100)
            let firstBatch = try await store.expiredMessages(organizationId: alice.organizationId, before: cutoff, limit: 3)
            #expect(firstBatch.count == 3 && Set(firstBatch.map(\.id)).count == 3)
            #expect(try await store.expiredMessages(organizationId: alice.organizationId, before: cutoff, limit: 0).isEmpty)
            // The sweep deletes what it got and asks again until nothing is left: every message once.
            var swept: [EntityID] = []
            while true {
                let batch = try await store.expiredMessages(organizationId: alice.organizationId, before: cutoff, limit: 3)
                guard !batch.isEmpty else { break }
                for ref in batch {
                    _ = try await store.writing { tx in try await MessageRules.expire(ref, now: cutoff, in: tx) }
                    swept.append(ref.id)
                }
                #expect(swept.count <= sent.count, "the sweep found a deleted message again")
                if swept.count > sent.count { break }
            }
            #expect(swept.count == sent.count && Set(swept) == sent)
            let page = try await store.messages(conversationId: direct.id, viewer: bob.id, before: nil, after: nil, limit: 20)
            #expect(page.messages.map(\.seq).prefix(7) == [1, 2, 3, 4, 5, 6, 7], "the tombstones keep their seqs")
            #expect(page.messages.prefix(7).allSatisfy { $0.deletedAt != nil && $0.text.isEmpty })
            #expect(try await store.conversation(id: direct.id, viewer: bob.id)?.unreadCount == 0)
        }
    }

    @Test(arguments: StoreKind.available)
    func aUsersWordsIncludeForwardsOfThemButNotSystemMessages(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let carol = try await register(store, "carol@x.io")
            let withBob = try await createDirect(store, alice, bob)
            let bobCarol = try await createDirect(store, bob, carol)
            let original = try await send(store, withBob.id, alice, "alice's secret")
            let reply = try await send(store, withBob.id, bob, "bob's own words")
            var forward = draft(bobCarol.id, bob, "")
            forward.forwardedFromId = original.id
            let forwarded = try await store.send(forward).message
            let group = try await store.createConversation(NewConversation(
                organizationId: alice.organizationId, creatorId: alice.id, type: .group, name: "g", participantIds: [bob.id], now: t0)
            ).conversation
            _ = try await store.rename(conversationId: group.id, by: alice.id, to: "system by alice", now: t0)

            let words = try await store.undeletedMessages(of: alice.id, limit: 10)
            #expect(words.count == 2)
            #expect(words.contains(MessageRef(id: original.id, conversationId: withBob.id)))
            #expect(words.contains(MessageRef(id: forwarded.id, conversationId: bobCarol.id)))
            // Bob's forward is his message too (he sent it): his export and erasure reach it.
            let bobs = try await store.undeletedMessages(of: bob.id, limit: 10).map(\.id)
            #expect(bobs.count == 2 && bobs.contains(reply.id) && bobs.contains(forwarded.id))
            #expect(try await store.undeletedMessages(of: alice.id, limit: 1).count == 1)
            // Once the forward is deleted, only the original holds her words.
            try await Self.delete(store, forwarded, by: bob)
            #expect(try await store.undeletedMessages(of: alice.id, limit: 10).map(\.id) == [original.id])
            try await Self.delete(store, original, by: alice)
            #expect(try await store.undeletedMessages(of: alice.id, limit: 10).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func anExportPagesEverySentMessageOnceDeletedOnesIncluded(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let direct = try await createDirect(store, alice, bob)
            var mine: [EntityID] = []
            for index in 0..<9 {
                let message = try await send(store, direct.id, index.isMultiple(of: 4) ? bob : alice, "m\(index)", at: t0.addingTimeInterval(Double(index)))
                if message.senderId == alice.id { mine.append(message.id) }
            }
            let deletedId = mine[1]
            let deleted = try #require(try await store.reading { tx in try await tx.message(deletedId) })
            try await Self.delete(store, deleted, by: alice)
            var exported: [Message] = []
            var after: EntityID?
            while true {
                let page = try await store.messagesSent(by: alice.id, after: after, limit: 2)
                guard let last = page.last else { break }
                exported += page
                after = last.id
            }
            #expect(exported.map(\.id) == mine.sorted())
            #expect(exported.first { $0.id == mine[1] }?.deletedAt != nil)
            #expect(try await store.messagesSent(by: alice.id, after: mine.max(), limit: 10).isEmpty)
            #expect(try await store.messagesSent(by: EntityID(), after: nil, limit: 10).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func anOrphanStaysWhileAForwardStillShowsItAndSharedBytesAreReported(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let carol = try await register(store, "carol@x.io")
            let first = Self.attachment(of: alice, at: t0)
            let twin = Self.attachment(of: alice, at: t0.addingTimeInterval(1))  // same bytes, uploaded again
            let lone = Self.attachment(of: bob, sha: String(repeating: "ef", count: 32))
            for file in [first, twin, lone] { try await store.createAttachment(file) }
            #expect(try await store.attachments(uploadedBy: alice.id) == [first, twin])
            #expect(try await store.orphanedAttachments(limit: 10).isEmpty)

            let direct = try await createDirect(store, alice, bob)
            let message = try await Self.sendFile(store, direct.id, alice, first)
            var forward = draft(try await createDirect(store, bob, carol).id, bob, "")
            forward.forwardedFromId = message.id
            let forwarded = try await store.send(forward).message
            #expect(forwarded.attachment?.id == first.id)

            // The original goes; the forward still shows the file: not an orphan, not deletable.
            try await Self.delete(store, message, by: alice)
            #expect(try await store.orphanedAttachments(limit: 10).isEmpty)
            let kept = try await store.deleteAttachmentIfUnused(first.id)
            #expect(!kept.deleted)
            #expect(try await store.attachment(id: first.id, viewer: carol.id) == first)

            // The forward goes too: now an orphan, deleted, and its bytes still belong to the twin.
            try await Self.delete(store, forwarded, by: bob)
            #expect(try await store.orphanedAttachments(limit: 10) == [first])
            let gone = try await store.deleteAttachmentIfUnused(first.id)
            #expect(gone.deleted && gone.bytesShared)
            #expect(try await store.orphanedAttachments(limit: 10).isEmpty)
            #expect(try await store.attachments(uploadedBy: alice.id) == [twin])
            // The last record of some bytes: they may go.
            let last = try await store.deleteAttachmentIfUnused(twin.id)
            #expect(last.deleted && !last.bytesShared)
            #expect(try await store.deleteAttachmentIfUnused(twin.id).deleted == false)
            #expect(try await store.attachments(uploadedBy: bob.id) == [lone])
        }
    }

    @Test(arguments: StoreKind.available)
    func anErasureRefusedByItsCheckChangesNothing(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let admin = try await register(store, "admin@x.io")  // the organization's first user: its only admin
            let bob = try await register(store, "bob@x.io")
            try await store.registerDevice(token: "admin-phone", userId: admin.id, platform: "ios", environment: .production, now: t0)
            struct LastAdmin: Error {}
            await #expect(throws: LastAdmin.self) {
                try await store.eraseProfile(userId: admin.id, organizationId: admin.organizationId, now: t0) { admins in
                    // Told how many active admins the erasure would leave: none.
                    #expect(admins == 0)
                    throw LastAdmin()
                }
            }
            #expect(try await store.user(id: admin.id)?.displayName == "Admin")
            #expect(try await store.credentials(organization: "acme", email: "admin@x.io")?.passwordHash == "hash")
            #expect(try await store.userState(id: admin.id)?.isActive == true)
            #expect(try await store.devices(userId: admin.id).map(\.token) == ["admin-phone"])
            // Another organization's id erases nobody.
            #expect(try await store.eraseProfile(userId: bob.id, organizationId: EntityID(), now: t0) { _ in } == false)
            #expect(try await store.user(id: bob.id)?.displayName == "Bob")
        }
    }

    @Test(arguments: StoreKind.available)
    func anErasedProfileKeepsNoNameEmailPasswordOrDevice(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let admin = try await register(store, "admin@x.io")
            let bob = try await register(store, "bob@x.io")
            let direct = try await createDirect(store, bob, admin)
            let message = try await send(store, direct.id, bob, "kept until retention")
            try await store.registerDevice(token: "bob-phone", userId: bob.id, platform: "ios", environment: .sandbox, now: t0)
            let report = Report(
                id: .timeOrdered(at: t0), reporterId: bob.id, userId: admin.id, reason: "bob's words about admin", status: .open, createdAt: t0)
            try await store.createReport(report, organizationId: bob.organizationId)
            _ = try await store.writing { tx in
                try await BlockRules.setBlocked(true, user: bob.id, by: Identity(userId: admin.id, organizationId: admin.organizationId), now: t0, in: tx)
            }
            let erasedAt = t0.addingTimeInterval(60)
            struct WrongCount: Error {}
            let erasedNow = try await store.eraseProfile(userId: bob.id, organizationId: bob.organizationId, now: erasedAt) { admins in
                if admins != 1 { throw WrongCount() }  // the admin stays
            }
            #expect(erasedNow)
            // Active users only are looked up; the erased account shows where it is still listed,
            // in the admin's blocked list: with no name and no address.
            #expect(try await store.user(id: bob.id) == nil)
            let erased = try #require(try await store.blockedUsers(by: admin.id).first)
            #expect(erased.id == bob.id && erased.displayName == "Deleted user" && !erased.email.contains("bob"))
            #expect(try await store.credentials(organization: "acme", email: "bob@x.io") == nil)
            #expect(try await store.userState(id: bob.id)?.isActive == false)
            #expect(try await store.devices(userId: bob.id).isEmpty)
            let reports = try await store.reports(organizationId: bob.organizationId, status: nil, before: nil, limit: 10).reports
            #expect(reports.map(\.reason) == [""] && reports.first?.userId == admin.id)
            // His email is free again for a new account; the messages wait for their own deletion.
            _ = try await register(store, "bob@x.io")
            #expect(try await store.undeletedMessages(of: bob.id, limit: 10).map(\.id) == [message.id])
            // Erasing again is allowed (the sweep may retry) and keeps the account erased.
            #expect(try await store.eraseProfile(userId: bob.id, organizationId: bob.organizationId, now: erasedAt.addingTimeInterval(5)) { _ in })
            #expect(try await store.blockedUsers(by: admin.id).map(\.displayName) == ["Deleted user"])
            #expect(try await store.userState(id: bob.id)?.isActive == false)
        }
    }
}
