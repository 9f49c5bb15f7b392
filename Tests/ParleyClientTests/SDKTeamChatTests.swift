import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Team chat in the SDK against a real server: thread replies through the outbox (offline too),
/// thread pages cached beside the timeline, mentions and mute in the list rows, pins and
/// previews in the cache.
@Suite struct SDKTeamChatTests {
    @Test func threadRepliesGoThroughTheOutboxAndStayOutOfTheTimeline() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, _) = try await server.directPair()
        let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id], name: "Crew"))
        let root = try await alice.api.send(.init(clientMessageId: "root", text: "Lunch?"), to: group.id)
        let client = try ChatClientTests.client(bob, clock: ManualClock())
        await client.start()
        _ = try await client.openConversation(group.id)
        try await waitFor("connected") { await client.connectionState == .connected }

        // A reply is shown at once in its thread (never in the timeline) and goes through the outbox.
        let reply = try await client.send(text: "Yes, 12:30", in: group.id, threadRootId: root.id, mentions: [alice.id])
        #expect(reply.threadRootId == root.id && reply.mentions == [alice.id] && reply.delivery == .sending)
        #expect(try await client.threadMessages(root.id, in: group.id).map(\.clientMessageId) == [reply.clientMessageId])
        #expect(try await !client.database.messages(in: group.id, viewer: bob.id).contains { $0.id == reply.id }, "not in the timeline")
        try await waitFor("the reply stored") {
            try await client.threadMessages(root.id, in: group.id).first?.isConfirmed == true
        }
        // The root's count arrives as its update; the timeline shows it with the thread line.
        try await waitFor("the root's thread count") {
            try await client.database.messages(in: group.id, viewer: bob.id).first { $0.serverId == root.id }?.thread?.replyCount == 1
        }
        // Alice's reply from elsewhere: in bob's cache through the thread page.
        _ = try await alice.api.send(.init(clientMessageId: "r2", text: "Great", threadRootId: root.id), to: group.id)
        try await waitFor("alice's reply in the thread") {
            await client.refreshThread(root.id, in: group.id)
            return try await client.threadMessages(root.id, in: group.id).map(\.text) == ["Yes, 12:30", "Great"]
        }
        let aliceView = try await alice.api.conversation(group.id)
        #expect(aliceView.mentionCount == 1)
        await client.stop()
    }

    /// A thread reply queued offline survives a restart with its root and mentions, in its
    /// thread and out of the timeline, and rebuilding the cache keeps it there.
    @Test func aQueuedThreadReplySurvivesARestart() async throws {
        let path = TestServer.temporaryDirectory() + "/client.sqlite"
        let conversation = EntityID(), root = EntityID(), me = EntityID(), other = EntityID()
        do {
            let database = try LocalDatabase.open(path: path)
            _ = try await database.enqueue(
                SendMessageRequest(clientMessageId: "t1", text: "later", threadRootId: root, mentions: [other]),
                in: conversation, senderId: me, now: Date(), preparations: [], context: [:])
        }
        let reopened = try LocalDatabase.open(path: path)
        let thread = try await reopened.messages(in: conversation, viewer: me, thread: root)
        #expect(thread.map(\.clientMessageId) == ["t1"] && thread.first?.mentions == [other] && thread.first?.delivery == .sending)
        #expect(try await reopened.messages(in: conversation, viewer: me).isEmpty)
        let queued = try await reopened.outboxHeads().first
        #expect(queued?.request.threadRootId == root && queued?.request.mentions == [other])
    }

    /// A list row moves with a thread reply as the server's view does: the reply is not the
    /// conversation's activity and counts only for the thread's members. Bob, who is not in the
    /// thread, keeps his count and last message; Alice, whose root it answers, gets one more.
    /// (The SDK counted every reply for everyone, and only members were corrected.)
    @Test(arguments: [false, true]) func aThreadReplyCountsOnlyForTheThreadsMembers(largeGroup: Bool) async throws {
        let server = try await TestServer.start { if largeGroup { $0.largeGroupSize = 2 } }
        defer { Task { await server.stop() } }
        let (alice, bob, _) = try await server.directPair()
        let carol = try await server.register("carol@x.io")
        let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id, carol.id], name: "Crew"))
        let root = try await alice.api.send(.init(clientMessageId: "root", text: "Plan?"), to: group.id)
        let clock = ManualClock()
        let bobClient = try ChatClientTests.client(bob, clock: clock), aliceClient = try ChatClientTests.client(alice, clock: clock)
        for client in [bobClient, aliceClient] {
            await client.start()
            await client.waitForFirstSync()
            try await waitFor("connected") { await client.connectionState == .connected }
        }
        #expect(try await bobClient.database.conversation(group.id)?.unreadCount == 1)

        _ = try await carol.api.send(.init(clientMessageId: "r1", text: "Pizza", threadRootId: root.id), to: group.id)
        // The reply and the root's count are two seqs; both rows reach them.
        for client in [bobClient, aliceClient] {
            try await waitFor("the reply's seqs in the row") {
                try await client.database.conversation(group.id)?.lastSeq == root.seq + 2
            }
        }
        try await waitFor("alice, in the thread, counts the reply") {
            try await aliceClient.database.conversation(group.id)?.unreadCount == 1
        }
        let bobRow = try #require(try await bobClient.database.conversation(group.id))
        #expect(bobRow.unreadCount == 1, "bob is not in the thread: only the root counts")
        #expect(bobRow.lastMessage?.id == root.id, "a thread reply is not the conversation's last message")
        #expect(bobRow.unreadCount == (try await bob.api.conversation(group.id)).unreadCount, "the row agrees with the server")

        // A mention reaches the list row live, in a large group too (no view is sent there).
        _ = try await alice.api.send(.init(clientMessageId: "m1", text: "@Bob and you?", mentions: [bob.id]), to: group.id)
        try await waitFor("the mention in bob's row") {
            let row = try await bobClient.database.conversation(group.id)
            return row?.mentionCount == 1 && row?.unreadCount == 2
        }
        for client in [bobClient, aliceClient] { await client.stop() }
    }

    @Test func muteMentionsAndPinsReachTheListAndTheCache() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, _) = try await server.directPair()
        let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id], name: "Crew"))
        let client = try ChatClientTests.client(bob, clock: ManualClock())
        await client.start()
        _ = try await client.openConversation(group.id)
        try await waitFor("connected") { await client.connectionState == .connected }
        let first = try await alice.api.send(.init(clientMessageId: "m1", text: "@Bob the rules", mentions: [bob.id]), to: group.id)
        try await waitFor("the mention in bob's list row") {
            try await client.database.conversation(group.id)?.mentionCount == 1
        }
        try await client.setMuted(true, in: group.id)
        #expect(try await client.database.conversation(group.id)?.muted == true)
        let users = [alice.id: alice.auth.user, bob.id: bob.auth.user]
        let row = ChatPresentation.listRow(
            ConversationRow(conversation: try #require(try await client.database.conversation(group.id)), title: "Crew"),
            me: bob.id, users: users)
        #expect(row.mentionBadge == "@" && row.isMuted && row.accessibilityLabel.contains("1 mention") && row.accessibilityLabel.contains("muted"))

        let stored = try #require(try await client.database.messages(in: group.id, viewer: bob.id).first { $0.serverId == first.id })
        try await client.setPinned(true, stored)
        #expect(try await client.pinnedMessages(in: group.id).map(\.serverId) == [first.id])
        #expect(ChatPresentation.pinnedLine(try await client.pinnedMessages(in: group.id), me: bob.id) { users[$0]?.displayName }
            == "📌 Alice: @Bob the rules")
        try await client.setPinned(false, stored)
        #expect(try await client.pinnedMessages(in: group.id).isEmpty)
        await client.stop()
    }

    /// The thread screen's model: root with its count, replies, a reply sent and confirmed;
    /// the chat model's pinned bar and "@" completion.
    @MainActor @Test func threadAndChatModelsShowThreadsPinsAndCompletions() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, _) = try await server.directPair()
        let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id], name: "Crew"))
        let root = try await alice.api.send(.init(clientMessageId: "root", text: "Retro notes"), to: group.id)
        _ = try await alice.api.send(.init(clientMessageId: "r1", text: "Went well", threadRootId: root.id), to: group.id)
        let clock = ManualClock()
        let client = try ChatClientTests.client(bob, clock: clock)
        await client.start()
        let names: @Sendable (EntityID) -> String? = { [alice = alice.auth.user, bob = bob.auth.user] in
            $0 == alice.id ? alice.displayName : $0 == bob.id ? bob.displayName : nil
        }
        let chat = ChatModel(client: client, conversationId: group.id, names: names)
        await chat.start()
        try await ChatClientTests.waitAdvancing("the root in the timeline, the reply not", clock: clock) {
            await MainActor.run { chat.messages.map(\.text) == ["Retro notes"] }
        }
        let thread = ThreadModel(client: client, conversationId: group.id, rootId: root.id)
        await thread.start()
        try await waitFor("the thread page") {
            await MainActor.run { thread.replies.map(\.text) == ["Went well"] && thread.root?.thread?.replyCount == 1 }
        }
        await thread.send("Agreed", mentions: [alice.id])
        #expect(thread.replies.map(\.text) == ["Went well", "Agreed"])
        try await waitFor("the reply confirmed and counted") {
            await MainActor.run { thread.replies.last?.isConfirmed == true && thread.root?.thread?.replyCount == 2 }
        }
        #expect(try await alice.api.conversation(group.id).mentionCount == 1)

        #expect(await chat.mentionCandidates(for: "thanks @al").map(\.name) == ["Alice"])
        #expect(await chat.mentions(in: "thanks @Alice") == [alice.id])
        let shown = try #require(chat.messages.first)
        await chat.setPinned(true, shown)
        #expect(chat.pinned.map(\.serverId) == [root.id])
        thread.stop()
        chat.stop()
        await client.stop()
    }
}
