import Foundation
@testable import ParleyClient
import ParleyProtocol
import Testing

/// The local database's durable queues besides the outbox's send order: edits and reactions
/// made offline, deletes of messages still on their way, never-sent messages taken back, and
/// the small settings kept beside the cache. Each is a promise to the user that survives a
/// restart and is kept exactly once.
@Suite struct LocalDatabaseQueuesTests {
    let world = SDKWorld()

    /// A database file in a fresh folder, and the folder (to reopen it, as after a restart).
    func onDisk() throws -> (database: LocalDatabase, folder: SDKTempFolder) {
        let folder = try SDKTempFolder()
        return (try LocalDatabase.open(path: folder.path("app.sqlite")), folder)
    }

    @Test func offlineChangesKeepTheirOrderAndSurviveARestart() async throws {
        let (database, folder) = try onDisk()
        defer { folder.remove() }
        let first = EntityID(), second = EntityID(), elsewhere = EntityID()
        let made: [(MessageChange, EntityID, EntityID)] = [
            (.edit("line one\nline two — ünïcode ✓"), first, world.conversationId),
            (.react("👍🏽"), second, world.conversationId),
            (.react("🏳️‍🌈"), first, elsewhere),
            (.unreact("👍🏽"), second, world.conversationId),
            (.edit(""), first, world.conversationId),
        ]
        var positions: [Int64] = []
        for (change, message, conversation) in made {
            positions.append(try await database.enqueue(change, of: message, in: conversation).position)
        }
        #expect(positions == positions.sorted() && Set(positions).count == 5)
        let reopened = try LocalDatabase.open(path: folder.path("app.sqlite"))
        let pending = try await reopened.pendingChanges()
        #expect(pending.map(\.change) == made.map(\.0), "every kind, in the order made, text exactly as typed")
        #expect(pending.map(\.messageId) == made.map(\.1) && pending.map(\.conversationId) == made.map(\.2))
        #expect(pending.allSatisfy { $0.attempts == 0 })
    }

    /// A failed attempt is counted on that change only; a finished one goes, and its answer
    /// lands in the cache in the same step (a crash between the two would lose or repeat it).
    @Test func attemptsAreCountedPerChangeAndAFinishAppliesItsAnswer() async throws {
        let database = try LocalDatabase.inMemory()
        try await world.track(database)
        let original = world.message(1, from: world.me, text: "tpyo")
        try await database.apply([original])
        let edit = try await database.enqueue(.edit("typo"), of: original.id, in: world.conversationId)
        let reaction = try await database.enqueue(.react("🎉"), of: original.id, in: world.conversationId)
        try await database.changeAttemptFailed(edit)
        try await database.changeAttemptFailed(edit)
        #expect(try await database.pendingChanges().map(\.attempts) == [2, 0])
        var answered = original
        answered.text = "typo"
        answered.updatedSeq = 2
        answered.editedAt = world.start.addingTimeInterval(2)
        try await database.finish(edit, applying: answered)
        #expect(try await database.pendingChanges().map(\.position) == [reaction.position])
        let shown = try #require(try await database.message(serverId: original.id, viewer: world.me))
        #expect(shown.text == "typo" && shown.editedAt != nil && shown.updatedSeq == 2)
        // A refusal finishes without an answer; finishing twice changes nothing more.
        try await database.finish(reaction, applying: nil)
        try await database.finish(reaction, applying: nil)
        #expect(try await database.pendingChanges().isEmpty)
        #expect(try await database.message(serverId: original.id, viewer: world.me)?.text == "typo")
    }

    /// An answer older than what the cache already shows (a later edit arrived by event first)
    /// does not roll the message back, and the change is done all the same.
    @Test func aLateAnswerDoesNotRollTheMessageBack() async throws {
        let database = try LocalDatabase.inMemory()
        try await world.track(database)
        let change = try await database.enqueue(.edit("second"), of: EntityID(), in: world.conversationId)
        try await database.apply([world.message(1, text: "third", updatedSeq: 5)])
        try await database.finish(change, applying: world.message(1, text: "second", updatedSeq: 4))
        #expect(try await database.messages(in: world.conversationId, viewer: world.me).map(\.text) == ["third"])
        #expect(try await database.pendingChanges().isEmpty)
    }

    /// A delete of a message on its way follows it: queued, then stored (with its server id),
    /// then deleted; listed once however often the user taps, and only for its sender.
    @Test func aPendingRevokeFollowsItsMessage() async throws {
        let database = try LocalDatabase.inMemory()
        try await world.track(database)
        let pending = try await database.enqueue(.init(clientMessageId: "oops", text: "wrong chat"), in: world.conversationId, senderId: world.me, now: world.start)
        for _ in 0..<3 {
            try await database.enqueueRevoke(clientMessageId: "oops", senderId: world.me, conversationId: world.conversationId)
        }
        var revokes = try await database.pendingRevokes(senderId: world.me)
        #expect(revokes == [PendingRevoke(clientMessageId: "oops", conversationId: world.conversationId, serverId: nil, isDeleted: false, outboxState: "queued")])
        #expect(try await database.pendingRevokes(senderId: world.other).isEmpty, "another user's list is their own")

        let stored = world.stored(pending, seq: 1)
        try await database.apply([stored])
        revokes = try await database.pendingRevokes(senderId: world.me)
        #expect(revokes.first?.serverId == stored.id && revokes.first?.outboxState == nil && revokes.first?.isDeleted == false)

        var deleted = stored
        deleted.updatedSeq = 2
        deleted.text = ""
        deleted.deletedAt = world.start.addingTimeInterval(2)
        try await database.apply([deleted])
        #expect(try await database.pendingRevokes(senderId: world.me).first?.isDeleted == true)
        try await database.finishRevoke(clientMessageId: "oops", senderId: world.me)
        #expect(try await database.pendingRevokes(senderId: world.me).isEmpty)
    }

    @Test func aRevokeOfARefusedMessageSaysItFailed() async throws {
        let database = try LocalDatabase.inMemory()
        try await world.track(database)
        _ = try await database.enqueue(.init(clientMessageId: "r", text: "x"), in: world.conversationId, senderId: world.me, now: world.start)
        try await database.outboxRejected(clientMessageId: "r", reason: "blocked")
        try await database.enqueueRevoke(clientMessageId: "r", senderId: world.me, conversationId: world.conversationId)
        let revoke = try #require(try await database.pendingRevokes(senderId: world.me).first)
        #expect(revoke.outboxState == "failed" && revoke.serverId == nil)
        // Finishing another sender's revoke with the same client id leaves this one.
        try await database.finishRevoke(clientMessageId: "r", senderId: world.other)
        #expect(try await database.pendingRevokes(senderId: world.me).count == 1)
    }

    /// Only a message that never left the device can be taken back silently: once an attempt
    /// was made the server may have it (a lost answer), and dropping it locally would leave a
    /// message the user believes gone on everyone else's screen.
    @Test func onlyANeverTriedMessageIsDiscardedSilently() async throws {
        let database = try LocalDatabase.inMemory()
        try await world.track(database)
        for cmid in ["fresh", "tried", "refused", "stored"] {
            _ = try await database.enqueue(.init(clientMessageId: cmid, text: cmid), in: world.conversationId, senderId: world.me, now: world.start)
        }
        try await database.outboxAttemptFailed(clientMessageId: "tried", retryAt: world.start.addingTimeInterval(5))
        try await database.outboxRejected(clientMessageId: "refused", reason: "too long")
        let storedCopy = try #require(try await database.message(senderId: world.me, clientMessageId: "stored", viewer: world.me))
        try await database.apply([world.stored(storedCopy, seq: 1)])

        #expect(try await database.discardNeverSent(clientMessageId: "fresh"))
        #expect(try await database.discardNeverSent(clientMessageId: "fresh") == false, "gone already")
        #expect(try await database.discardNeverSent(clientMessageId: "tried") == false)
        #expect(try await database.discardNeverSent(clientMessageId: "refused") == false)
        #expect(try await database.discardNeverSent(clientMessageId: "stored") == false)
        #expect(try await database.discardNeverSent(clientMessageId: "unknown") == false)

        let shown = try await database.messages(in: world.conversationId, viewer: world.me)
        #expect(shown.map(\.clientMessageId) == ["stored", "tried", "refused"])
        #expect(try await database.outboxClientMessageIds() == ["tried", "refused"])
        #expect(try await database.outboxState(clientMessageId: "tried")! == ("queued", 1))
        #expect(try await database.outboxState(clientMessageId: "refused")! == ("failed", 0))
        #expect(try await database.outboxState(clientMessageId: "stored") == nil)
    }

    /// The connection came back: waiting entries are due at once, refused ones stay refused
    /// (a retry must not resend what the server said no to).
    @Test func retryNowWakesQueuedEntriesButNotRefusedOnes() async throws {
        let database = try LocalDatabase.inMemory()
        let conversations = [world.conversationId, EntityID(), EntityID()]
        for (index, conversation) in conversations.enumerated() {
            _ = try await database.enqueue(.init(clientMessageId: "m\(index)", text: "x"), in: conversation, senderId: world.me, now: world.start)
        }
        try await database.outboxAttemptFailed(clientMessageId: "m0", retryAt: world.start.addingTimeInterval(3600))
        try await database.outboxAttemptFailed(clientMessageId: "m1", retryAt: world.start.addingTimeInterval(60))
        try await database.outboxRejected(clientMessageId: "m2", reason: "no")
        #expect(try await database.dueOutboxEntries(now: world.start).isEmpty)
        #expect(try await database.nextOutboxAttempt() == world.start.addingTimeInterval(60))
        try await database.outboxRetryNow()
        let due = try await database.dueOutboxEntries(now: world.start)
        #expect(due.map(\.request.clientMessageId) == ["m0", "m1"] && due.map(\.attempts) == [1, 1], "attempts are kept")
        #expect(try await database.outboxCounts() == (queued: 2, failed: 1))
    }

    /// A preparation's progress (the uploaded id) replaces the request and scratch it started
    /// from, so a restart does not upload the file again.
    @Test func preparationProgressReplacesTheRequestAndScratch() async throws {
        let database = try LocalDatabase.inMemory()
        _ = try await database.enqueue(
            .init(clientMessageId: "file", text: "caption", type: .file), in: world.conversationId, senderId: world.me, now: world.start,
            preparations: ["downscale", "upload"], context: ["file": "/tmp/a b/ü.jpg"])
        var head = try #require(try await database.outboxHeads().first)
        #expect(head.preparations == ["downscale", "upload"] && head.context == ["file": "/tmp/a b/ü.jpg"])
        var request = head.request
        let uploaded = EntityID()
        request.attachmentId = uploaded
        try await database.outboxPrepared(clientMessageId: "file", request: request, context: ["attachmentId": uploaded.description], remaining: [])
        head = try #require(try await database.outboxHeads().first)
        #expect(head.request.attachmentId == uploaded && head.request.text == "caption" && head.request.conversationId == world.conversationId)
        #expect(head.preparations.isEmpty && head.context == ["attachmentId": uploaded.description])
    }

    /// Settings live beside the cache: a cache rebuild (an app update, a logout that keeps the
    /// outbox) keeps them; nil removes one.
    @Test func settingsSurviveACacheRebuild() async throws {
        let database = try LocalDatabase.inMemory()
        #expect(try await database.setting("listSyncToken") == nil)
        try await database.setSetting("listSyncToken", to: "tok-1")
        try await database.setSetting("emoji", to: "🙂 ✓")
        try await database.setSetting("listSyncToken", to: "tok-2")
        try await database.reset()
        #expect(try await database.setting("listSyncToken") == "tok-2")
        #expect(try await database.setting("emoji") == "🙂 ✓")
        try await database.setSetting("emoji", to: nil)
        #expect(try await database.setting("emoji") == nil)
    }
}
