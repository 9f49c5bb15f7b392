import Foundation
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
import ParleyTestSupport
import Testing

/// v1.2's large groups (here "large" is more than 4 members, so a test needs only a few users):
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
        let outsider = try await server.register("mallory@x.io")
        #expect(try await server.raw("GET", "conversations/\(group.id)/participants", token: outsider.token).status == 404)

        // A small group keeps v1's shape and its per-member receipts.
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

    static func get<T: Decodable>(_ type: T.Type, _ server: TestServer, _ path: String, _ user: TestUser) async throws -> T {
        let answer = try await server.raw("GET", path, token: user.token)
        #expect(answer.status == 200, "\(path): \(String(decoding: answer.body, as: UTF8.self))")
        return try WireCoding.makeDecoder().decode(T.self, from: answer.body)
    }
}
