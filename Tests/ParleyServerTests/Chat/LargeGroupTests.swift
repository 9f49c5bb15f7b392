import Foundation
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing

/// Large groups (here "large" is more than 4 members, so a test needs only a few users):
/// receipts become counts, typing beyond three typists a count, member lists are paged.
@Suite struct LargeGroupTests {
    /// A server where groups of more than 4 are large, on a clock the test moves.
    static func start(_ clock: ManualClock, _ kind: StoreKind) async throws -> TestServer {
        try await TestServer.start(store: kind) {
            $0.clock = clock.serverClock
            $0.largeGroupSize = 4
        }
    }

    /// Six members: alice (the creator) and five more.
    static func bigGroup(_ server: TestServer) async throws -> (users: [TestUser], group: Conversation) {
        var users: [TestUser] = []
        for name in ["alice", "bob", "carol", "dave", "erin", "frank"] { users.append(try await server.register("\(name)@x.io")) }
        let group = try await users[0].api.createConversation(
            .init(type: .group, participantIds: users.dropFirst().map(\.id), name: "all hands"))
        return (users, group)
    }

    static func receipts(_ recorder: EventRecorder) -> [ReceiptEvent] {
        recorder.events.compactMap { if case .receipt(let event) = $0 { event } else { nil } }
    }

    static func summaries(_ recorder: EventRecorder) -> [ReceiptSummaryEvent] {
        recorder.events.compactMap { if case .receiptSummary(let event) = $0 { event } else { nil } }
    }

    @Test(arguments: StoreKind.available)
    func receiptsInALargeGroupAreCountedAtMostEveryIntervalAndReadersArePaged(_ kind: StoreKind) async throws {
        let clock = ManualClock()
        let server = try await Self.start(clock, kind)
        defer { Task { await server.stop() } }
        let (users, group) = try await Self.bigGroup(server)
        let bobSocket = try await users[1].connect()
        let bob = EventRecorder(bobSocket)
        let carolSocket = try await users[2].connect()
        let carol = EventRecorder(carolSocket)
        var sent: [Message] = []
        for n in 1...3 { sent.append(try await users[0].api.send(.init(clientMessageId: "m\(n)", text: "m\(n)"), to: group.id)) }
        let newest = sent[2].seq

        let _: ReadResponse = try await bobSocket.send(.read(.init(conversationId: group.id, upToSeq: newest)))
        // The first receipt of a quiet window is counted at once.
        try await carol.wait("a summary") { _ in !Self.summaries(carol).isEmpty }
        #expect(Self.summaries(carol) == [ReceiptSummaryEvent(conversationId: group.id, seq: newest, readCount: 1, deliveredCount: 1)])
        #expect(Self.receipts(carol).isEmpty, "no member's receipt goes to the whole group")
        try await bob.wait("bob's own receipt") { _ in !Self.receipts(bob).isEmpty }
        #expect(Self.receipts(bob).map(\.userId) == [users[1].id], "the reader's own devices get their watermarks")

        // Carol reads within the interval: folded until it ends.
        let _: ReadResponse = try await carolSocket.send(.read(.init(conversationId: group.id, upToSeq: newest)))
        try await waitFor("the fold to wait for the interval") { clock.sleepers >= 1 }
        #expect(Self.summaries(bob).count == 1)
        clock.advance(by: 2)
        try await bob.wait("the folded summary") { _ in Self.summaries(bob).count == 2 }
        #expect(Self.summaries(bob).last?.readCount == 2)
        #expect(Self.receipts(bob).allSatisfy { $0.userId == users[1].id })

        // Who read the newest message: paged by user id.
        let readers = Set([users[1].id, users[2].id])
        let first = try await Self.get(ReadersPage.self, server, "conversations/\(group.id)/messages/\(sent[2].id)/reads?limit=1", users[3])
        #expect(first.userIds.count == 1 && first.hasMore && first.userIds[0] == readers.min())
        let second = try await Self.get(
            ReadersPage.self, server, "conversations/\(group.id)/messages/\(sent[2].id)/reads?limit=1&after=\(first.userIds[0])", users[3])
        #expect(second.userIds == [readers.max()!] && !second.hasMore)
        // The same through the SDK's REST client.
        let viaSDK = try await users[3].api.readers(of: sent[2].id, in: group.id, limit: 1)
        #expect(viaSDK == first)
        #expect(try await users[3].api.readers(of: sent[2].id, in: group.id, after: viaSDK.userIds[0]) == second)
        let outsider = try await server.register("mallory@x.io")
        let refused = try await server.raw("GET", "conversations/\(group.id)/messages/\(sent[2].id)/reads", token: outsider.token)
        #expect(refused.status == 404)
        let unknown = try await server.raw("GET", "conversations/\(group.id)/messages/\(EntityID())/reads", token: users[3].token)
        #expect(unknown.status == 404 && errorCode(unknown.body) == .notFound)
        let badCursor = try await server.raw("GET", "conversations/\(group.id)/messages/\(sent[2].id)/reads?after=x", token: users[3].token)
        #expect(badCursor.status == 400)
        await bobSocket.close()
        await carolSocket.close()
    }

    @Test(arguments: StoreKind.available)
    func aLargeGroupLeavesOutItsMemberListsWhichArePaged(_ kind: StoreKind) async throws {
        let clock = ManualClock()
        let server = try await Self.start(clock, kind)
        defer { Task { await server.stop() } }
        let (users, group) = try await Self.bigGroup(server)
        #expect(group.memberCount == 6 && group.participantIds.isEmpty && group.members.isEmpty)
        let shown = try await server.raw("GET", "conversations/\(group.id)", token: users[1].token)
        let json = try #require(try JSONSerialization.jsonObject(with: shown.body) as? [String: Any])
        #expect(json["memberCount"] as? Int == 6)
        #expect(json["participantIds"] == nil && json["members"] == nil, "left out, not empty: \(json.keys.sorted())")

        var seen: [Member] = []
        var after: EntityID?
        repeat {
            let page = try await Self.get(
                ParticipantsPage.self, server,
                "conversations/\(group.id)/participants?limit=4" + (after.map { "&after=\($0)" } ?? ""), users[1])
            seen += page.participants
            after = page.hasMore ? page.participants.last?.userId : nil
        } while after != nil
        #expect(seen.map(\.userId) == users.map(\.id).sorted(), "every member once, by id")
        let firstPage = try await users[1].api.participants(of: group.id, limit: 4)
        #expect(firstPage.participants.count == 4 && firstPage.hasMore)
        #expect(try await users[1].api.allParticipants(of: group.id) == seen, "the SDK's pages are the same members")
        let outsider = try await server.register("mallory@x.io")
        #expect(try await server.raw("GET", "conversations/\(group.id)/participants", token: outsider.token).status == 404)

        // A small group keeps its member lists and its per-member receipts.
        let small = try await users[0].api.createConversation(.init(type: .group, participantIds: [users[1].id, users[2].id], name: "s"))
        #expect(small.memberCount == 3 && small.participantIds.count == 3 && small.members.count == 3)
        let message = try await users[0].api.send(.init(clientMessageId: "s1", text: "hi"), to: small.id)
        let carolSocket = try await users[2].connect()
        let carol = EventRecorder(carolSocket)
        let bobSocket = try await users[1].connect()
        let _: ReadResponse = try await bobSocket.send(.read(.init(conversationId: small.id, upToSeq: message.seq)))
        try await carol.wait("bob's receipt") { _ in Self.receipts(carol).contains { $0.userId == users[1].id } }
        #expect(Self.summaries(carol).isEmpty)
        await bobSocket.close()
        await carolSocket.close()
    }

    @Test(arguments: StoreKind.available)
    func typingInALargeGroupNamesThreeAndCountsTheRest(_ kind: StoreKind) async throws {
        let clock = ManualClock()
        let server = try await Self.start(clock, kind)
        defer { Task { await server.stop() } }
        let (users, group) = try await Self.bigGroup(server)
        let watcherSocket = try await users[0].connect()
        let watcher = EventRecorder(watcherSocket)
        var sockets: [RealtimeConnection] = []
        for user in users[1...4] { sockets.append(try await user.connect()) }
        @Sendable func typing() -> [TypingEvent] { watcher.events.compactMap { if case .typing(let e) = $0 { e } else { nil } } }
        @Sendable func counts() -> [Int] { watcher.events.compactMap { if case .typingSummary(let e) = $0 { e.count } else { nil } } }

        for socket in sockets[0..<3] {
            let _: EmptyPayload = try await socket.send(.typing(.init(conversationId: group.id, isTyping: true)))
        }
        try await watcher.wait("three named typists and a count") { _ in typing().count == 3 && counts() == [3] }
        let _: EmptyPayload = try await sockets[3].send(.typing(.init(conversationId: group.id, isTyping: true)))
        try await waitFor("the count to wait for its interval") { clock.sleepers >= 1 }
        #expect(typing().count == 3, "the fourth typist is not named")
        clock.advance(by: 2)
        try await watcher.wait("the fourth counted") { _ in counts() == [3, 4] }
        #expect(Set(typing().map(\.userId)) == Set(users[1...3].map(\.id)))
        for socket in sockets { await socket.close() }
        await watcherSocket.close()
    }

    /// New messages in a large group: one `conversation.activity` frame for every connected
    /// member (the newest message, folded within the activity window) instead of each member's
    /// `conversation.updated` view; a small group keeps the views.
    @Test(arguments: StoreKind.available)
    func newMessagesInALargeGroupAreOneActivityFrameNotPerMemberViews(_ kind: StoreKind) async throws {
        let clock = ManualClock()
        let server = try await Self.start(clock, kind)
        defer { Task { await server.stop() } }
        let (users, group) = try await Self.bigGroup(server)
        let pair = try await users[0].api.createConversation(.init(type: .direct, participantIds: [users[1].id]))
        let bobSocket = try await users[1].connect()
        let bob = EventRecorder(bobSocket)
        let carolSocket = try await users[2].connect()
        let carol = EventRecorder(carolSocket)
        @Sendable func activity(_ recorder: EventRecorder) -> [ConversationActivityEvent] {
            recorder.events.compactMap { if case .conversationActivity(let e) = $0 { e } else { nil } }
        }
        @Sendable func views(_ recorder: EventRecorder, of id: EntityID) -> [Conversation] {
            recorder.events.compactMap { if case .conversationUpdated(let e) = $0, e.conversation.id == id { e.conversation } else { nil } }
        }

        // The first message of a quiet group: at once, after its message.created.
        let first = try await users[0].api.send(.init(clientMessageId: "a1", text: "hello all"), to: group.id)
        for recorder in [bob, carol] {
            try await recorder.wait("the activity") { _ in activity(recorder).count == 1 }
            #expect(activity(recorder) == [ConversationActivityEvent(
                conversationId: group.id, lastSeq: first.seq, lastActivityAt: first.createdAt, lastMessage: first)])
            let created = recorder.events.firstIndex { if case .messageCreated(let e) = $0 { e.message.id == first.id } else { false } }
            let announced = recorder.events.firstIndex { if case .conversationActivity = $0 { true } else { false } }
            #expect(try #require(created) < #require(announced), "the message comes before the row that shows it")
        }

        // More within the window: folded into one more frame at its end, carrying the newest.
        var more: [Message] = []
        for n in 2...4 { more.append(try await users[n - 1].api.send(.init(clientMessageId: "a\(n)", text: "m\(n)"), to: group.id)) }
        try await waitFor("the fold to wait for the window") { clock.sleepers >= 1 }
        #expect(activity(bob).count == 1)
        clock.advance(by: 0.2)
        try await bob.wait("the folded activity") { _ in activity(bob).count == 2 }
        try await carol.wait("the folded activity") { _ in activity(carol).count == 2 }
        #expect(activity(bob).last?.lastMessage == more.last && activity(bob).last?.lastSeq == more.last?.seq)
        #expect(activity(carol).last == activity(bob).last, "one frame for all")

        // A direct conversation keeps its per-member views, and no activity frame.
        _ = try await users[0].api.send(.init(clientMessageId: "d1", text: "just us"), to: pair.id)
        try await bob.wait("the direct view") { _ in views(bob, of: pair.id).contains { $0.lastSeq > 0 } }
        #expect(activity(bob).allSatisfy { $0.conversationId == group.id })
        #expect(views(bob, of: group.id).isEmpty && views(carol, of: group.id).isEmpty, "no per-member view of the large group")
        await bobSocket.close()
        await carolSocket.close()
    }

    /// The SDK keeps a large group's list row exact from the events alone: unread counts,
    /// last message and seq equal the server's view after others' messages, its own, a delete
    /// and an event delivered twice, without reading the conversation again.
    @Test(arguments: StoreKind.available)
    func theSDKsListRowOfALargeGroupFollowsTheEventsExactly(_ kind: StoreKind) async throws {
        let server = try await TestServer.start(store: kind) { $0.largeGroupSize = 4 }
        defer { Task { await server.stop() } }
        let (users, group) = try await Self.bigGroup(server)
        let bob = users[1]
        let database = try LocalDatabase.inMemory()
        let client = ChatClient(
            transport: LiveTransport(serverURL: server.baseURL, token: bob.token), database: database, userId: bob.id,
            policy: .init(maxAttempts: 1000, heartbeat: .seconds(10)))
        await client.start()
        _ = await client.synchronize()
        try await waitFor("bob connected") { await client.connectionState == .connected }
        let readsBefore = await client.readCounts.networkReads

        var sent: [Message] = []
        for n in 0..<6 {
            let sender = users[[0, 2, 3, 1, 4, 0][n]]
            sent.append(try await sender.api.send(.init(clientMessageId: "s\(n)", text: "m\(n)"), to: group.id))
        }
        _ = try await users[0].api.deleteMessage(sent[0].id, in: group.id)
        let last = try await users[5].api.send(.init(clientMessageId: "last", text: "the newest"), to: group.id)

        let truth = try await bob.api.conversation(group.id)
        #expect(truth.unreadCount == 5, "six from others less one deleted; bob's own does not count")
        try await waitFor("the row to reach the server's view") {
            (try? await database.conversation(group.id))?.lastSeq == truth.lastSeq
        }
        let row = try #require(try await database.conversation(group.id))
        #expect(row.unreadCount == truth.unreadCount && row.lastMessage?.id == last.id && row.lastSeq == truth.lastSeq)
        #expect(row.participantIds.isEmpty && row.memberCount == 6)
        #expect(await client.readCounts.networkReads == readsBefore, "followed from events, nothing read again")

        // An event delivered twice counts once; one past a missed event is not guessed at.
        #expect(try await database.applyToListRow(last, changeSeq: last.seq, viewer: bob.id) == .applied)
        #expect(try await database.conversation(group.id)?.unreadCount == truth.unreadCount)
        var skipped = last
        skipped.seq = last.seq + 2
        skipped.updatedSeq = skipped.seq
        #expect(try await database.applyToListRow(skipped, changeSeq: skipped.seq, viewer: bob.id) == .stale)
        #expect(try await database.conversation(group.id)?.lastSeq == truth.lastSeq)
        await client.stop()
    }

    static func get<T: Decodable>(_ type: T.Type, _ server: TestServer, _ path: String, _ user: TestUser) async throws -> T {
        let answer = try await server.raw("GET", path, token: user.token)
        #expect(answer.status == 200, "\(path): \(String(decoding: answer.body, as: UTF8.self))")
        return try WireCoding.makeDecoder().decode(T.self, from: answer.body)
    }
}
