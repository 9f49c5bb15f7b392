import Foundation
import GRDB
import Logging
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing
import ParleyPostgres

extension StoreConformanceTests {
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
                let error = await #expect(throws: ChatError.self) { try await attempt() }
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
            let notSender = await #expect(throws: ChatError.self) {
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
                let error = await #expect(throws: ChatError.self) {
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
            let systemChange = await #expect(throws: ChatError.self) {
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
            let mismatch = await #expect(throws: ChatError.self) { try await store.send(wrongType) }
            #expect(mismatch?.code == .invalidRequest)
            var notMine = draft(conversation.id, bob, "")
            notMine.type = .image
            notMine.attachmentId = image.id
            let foreign = await #expect(throws: ChatError.self) { try await store.send(notMine) }
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
