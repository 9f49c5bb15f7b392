import Foundation
@testable import ParleyClient
import ParleyProtocol
import Testing

/// The cached directory and what the cache does for people: names and pictures that follow
/// profile events, presence that a stale snapshot cannot turn back, blocked senders folded
/// away everywhere they show, threads kept out of the timeline, and conversations forgotten
/// with their messages but not with what is still being sent.
@Suite struct LocalDatabaseDirectoryTests {
    let world = SDKWorld()
    let organization = EntityID()

    func person(_ id: EntityID, _ name: String, online: Bool = false, seen: TimeInterval? = nil, picture: String? = nil) -> User {
        User(
            id: id, organizationId: organization, email: "\(id)@x.io", displayName: name, isOnline: online,
            lastSeenAt: seen.map { world.start.addingTimeInterval($0) }, avatarUrl: picture)
    }

    @Test func theDirectoryIsSortedByNameAndUnicodeSurvives() async throws {
        let database = try LocalDatabase.inMemory()
        let zoe = person(world.other, "Zoë Ångström 🌍"), ada = person(world.me, "Ada"), bob = person(world.third, "Bob")
        try await database.store(users: [zoe, ada, bob])
        #expect(try await database.users().map(\.displayName) == ["Ada", "Bob", "Zoë Ångström 🌍"])
        #expect(try await database.user(world.other) == zoe)
        #expect(try await database.user(EntityID()) == nil)
        // Storing the same people again replaces, never duplicates.
        try await database.store(users: [zoe, ada])
        #expect(try await database.users().count == 3)
    }

    /// A directory snapshot fetched before a live presence event must not undo it for the
    /// people the event was about; everyone else takes the snapshot's presence.
    @Test func aSnapshotKeepsFresherPresence() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(users: [person(world.other, "Bo"), person(world.third, "Cy", online: true)])
        try await database.apply(presence: PresenceEvent(userId: world.other, isOnline: true))
        // The snapshot was read before Bo came online, and renames Bo.
        let snapshot = [person(world.other, "Bo B.", online: false, seen: 10), person(world.third, "Cy", online: false, seen: 20)]
        try await database.store(users: snapshot, keepingPresenceOf: [world.other])
        let bo = try #require(try await database.user(world.other))
        #expect(bo.isOnline && bo.lastSeenAt == nil && bo.displayName == "Bo B.", "the name follows, the presence stays")
        let cy = try #require(try await database.user(world.third))
        #expect(!cy.isOnline && cy.lastSeenAt == world.start.addingTimeInterval(20))
    }

    /// Going offline records when; coming online again keeps the last "seen" time (an event
    /// without one does not erase it); someone not cached is not invented by presence.
    @Test func presenceEventsMoveOnlineAndLastSeen() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(users: [person(world.other, "Bo", online: true)])
        let seen = world.start.addingTimeInterval(300)
        try await database.apply(presence: PresenceEvent(userId: world.other, isOnline: false, lastSeenAt: seen))
        #expect(try await database.user(world.other).map { ($0.isOnline, $0.lastSeenAt) }! == (false, seen))
        try await database.apply(presence: PresenceEvent(userId: world.other, isOnline: true))
        #expect(try await database.user(world.other).map { ($0.isOnline, $0.lastSeenAt) }! == (true, seen))
        try await database.apply(presence: PresenceEvent(userId: EntityID(), isOnline: true))
        #expect(try await database.users().count == 1)
    }

    /// A profile event renames and changes or removes the picture, leaving presence as the
    /// presence events set it; someone new is added.
    @Test func profileEventsChangeNameAndPictureNotPresence() async throws {
        let database = try LocalDatabase.inMemory()
        try await database.store(users: [person(world.other, "Bo", online: true, picture: "/api/v1/attachments/old")])
        try await database.apply(profile: person(world.other, "Robert", online: false, seen: 99, picture: nil))
        let bo = try #require(try await database.user(world.other))
        #expect(bo.displayName == "Robert" && bo.avatarUrl == nil, "a removed picture is removed")
        #expect(bo.isOnline && bo.lastSeenAt == nil, "the profile event's presence is not live")
        let newcomer = person(world.third, "Newcomer", picture: "/api/v1/attachments/new")
        try await database.apply(profile: newcomer)
        #expect(try await database.user(world.third) == newcomer)
    }

    /// Blocking someone folds their messages away in every cached conversation and in the
    /// list's last message; unblocking unfolds them; nobody else's messages are touched, and
    /// system messages (which name them) are not theirs to fold.
    @Test func blockingFoldsASendersMessagesEverywhereAndUnblockingUndoesIt() async throws {
        let database = try LocalDatabase.inMemory()
        let group = EntityID()
        try await world.track(database)
        try await database.applyInitialPage(MessagesPage(messages: [], hasMore: false), conversation: world.conversation(group, type: .group, lastSeq: 0))
        let lastInGroup = world.message(2, in: group, from: world.other, cmid: "g2")
        try await database.apply([
            world.message(1, from: world.other), world.message(2, from: world.me, cmid: "mine"),
            world.message(1, in: group, from: world.other, cmid: "g1", type: .system), lastInGroup,
        ])
        try await database.store(conversation: world.conversation(group, type: .group, lastSeq: 2, lastMessage: lastInGroup))
        let touched = try await database.markMessages(of: world.other, senderBlocked: true)
        #expect(touched == [world.conversationId, group])
        let direct = try await database.messages(in: world.conversationId, viewer: world.me)
        #expect(direct.map(\.senderBlocked) == [true, false], "only their message folds")
        let groupShown = try await database.messages(in: group, viewer: world.me)
        #expect(groupShown.map(\.senderBlocked) == [false, true], "a system message stays")
        #expect(try await database.conversation(group)?.lastMessage?.senderBlocked == true)

        _ = try await database.markMessages(of: world.other, senderBlocked: false)
        #expect(try await database.messages(in: world.conversationId, viewer: world.me).allSatisfy { !$0.senderBlocked })
        #expect(try await database.conversation(group)?.lastMessage?.senderBlocked == nil)
        #expect(try await database.markMessages(of: EntityID(), senderBlocked: true).isEmpty)
    }

    /// Thread replies stay out of the timeline and show in their thread, their own sends too
    /// (temporary ones at the end of their thread).
    @Test func threadRepliesShowInTheirThreadOnly() async throws {
        let database = try LocalDatabase.inMemory()
        try await world.track(database)
        let root = world.message(1, text: "root")
        var reply = world.message(2, text: "in thread")
        reply.threadRootId = root.id
        var otherReply = world.message(4, text: "another thread")
        otherReply.threadRootId = EntityID()
        try await database.apply([root, reply, world.message(3, text: "timeline"), otherReply])
        _ = try await database.enqueue(
            .init(clientMessageId: "tr", text: "my reply", threadRootId: root.id), in: world.conversationId, senderId: world.me, now: world.start)
        _ = try await database.enqueue(.init(clientMessageId: "tl", text: "my line"), in: world.conversationId, senderId: world.me, now: world.start)
        let timeline = try await database.messages(in: world.conversationId, viewer: world.me)
        #expect(timeline.map(\.text) == ["root", "timeline", "my line"])
        let thread = try await database.messages(in: world.conversationId, viewer: world.me, thread: root.id)
        #expect(thread.map(\.text) == ["in thread", "my reply"])
        #expect(thread.allSatisfy { $0.threadRootId == root.id })
    }

    /// Leaving a conversation drops its row and stored messages; a message still being sent to
    /// it stays in the outbox (the server decides), and other conversations are untouched.
    @Test func forgettingAConversationKeepsWhatIsStillBeingSent() async throws {
        let database = try LocalDatabase.inMemory()
        let kept = EntityID()
        try await world.track(database)
        try await world.track(database, kept)
        try await database.apply([world.message(1), world.message(1, in: kept, cmid: "k1")])
        _ = try await database.enqueue(.init(clientMessageId: "unsent", text: "x"), in: world.conversationId, senderId: world.me, now: world.start)
        try await database.forget(conversations: [world.conversationId])
        try await database.forget(conversations: [])
        #expect(try await database.conversation(world.conversationId) == nil)
        #expect(try await database.syncedSeq(world.conversationId) == nil)
        #expect(try await database.messages(in: world.conversationId, viewer: world.me).map(\.clientMessageId) == ["unsent"])
        #expect(try await database.outboxCount() == 1)
        #expect(try await database.messages(in: kept, viewer: world.me).map(\.clientMessageId) == ["k1"])
        #expect(try await database.syncedConversations().map(\.id) == [kept])
    }

    /// Lookups by the server's id find stored messages only; the lower edge ignores what is
    /// still being sent; a hidden message leaves the pinned bar as well as the timeline.
    @Test func lookupsEdgesAndHiddenPins() async throws {
        let database = try LocalDatabase.inMemory()
        try await world.track(database, lastSeq: 9)
        #expect(try await database.oldestStoredSeq(in: world.conversationId) == nil)
        _ = try await database.enqueue(.init(clientMessageId: "q", text: "q"), in: world.conversationId, senderId: world.me, now: world.start)
        #expect(try await database.oldestStoredSeq(in: world.conversationId) == nil, "a message on its way has no seq")
        var pinned = world.message(7, text: "pinned")
        pinned.pinnedAt = world.start.addingTimeInterval(8)
        try await database.apply([pinned, world.message(9)])
        #expect(try await database.oldestStoredSeq(in: world.conversationId) == 7)
        #expect(try await database.message(serverId: pinned.id, viewer: world.me)?.text == "pinned")
        #expect(try await database.message(serverId: EntityID(), viewer: world.me) == nil)
        #expect(try await database.pinnedMessages(in: world.conversationId, viewer: world.me).map(\.text) == ["pinned"])
        try await database.hide(senderId: world.other, clientMessageId: pinned.clientMessageId)
        try await database.hide(senderId: world.other, clientMessageId: pinned.clientMessageId)
        #expect(try await database.pinnedMessages(in: world.conversationId, viewer: world.me).isEmpty)
        #expect(try await database.messages(in: world.conversationId, viewer: world.me).map(\.seq) == [9, nil])
    }
}
