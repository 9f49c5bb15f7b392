import Foundation
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Synchronization
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every kind of event crosses nodes once and in order: edits, deletes and reactions,
/// conversation changes, delivered receipts, typing and its lapse, presence and focus (inside
/// the organization only); a node that joins late or restarts; the records a node receives
/// (its own, malformed, repeated); and push, which must not buzz a user online on another
/// node. Runs when PARLEY_TEST_POSTGRES_URL is set, like ClusterTests.
@Suite(.needsPostgres) struct ClusterRelayEventTests {
    /// Another node on the database `url` names, listening before it returns.
    static func node(on url: String, configure: (inout ServerConfiguration) -> Void = { _ in }) async throws -> TestServer {
        let node = try await TestServer.start { configuration in
            configuration.databaseURL = url
            ClusterTests.fastCluster(&configuration)
            configure(&configuration)
        }
        try await #require(node.app.cluster).waitUntilListening()
        return node
    }

    /// A node that owns a fresh database (dropped by its `stop()`).
    static func firstNode(configure: (inout ServerConfiguration) -> Void = { _ in }) async throws -> (node: TestServer, url: String) {
        let node = try await TestServer.start(store: .postgres) { configuration in
            ClusterTests.fastCluster(&configuration)
            configure(&configuration)
        }
        try await #require(node.app.cluster).waitUntilListening()
        return (node, try #require(node.database?.url))
    }

    /// Two nodes (as ClusterTests.twoNodes) with `configure` applied to both.
    static func twoNodes(configure: (inout ServerConfiguration) -> Void) async throws -> (a: TestServer, b: TestServer) {
        let (a, url) = try await firstNode(configure: configure)
        return (a, try await node(on: url, configure: configure))
    }

    /// Alice registered on A, Bob on B, and their direct conversation.
    static func aliceOnABobOnB(_ a: TestServer, _ b: TestServer) async throws -> (alice: TestUser, bob: TestUser, direct: Conversation) {
        let alice = try await a.register("alice@x.io")
        let bob = try await b.register("bob@x.io")
        return (alice, bob, try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id])))
    }

    /// A connection of `user` to `node` (which need not be the node the user registered on).
    static func connect(_ user: TestUser, to node: TestServer) async throws -> RealtimeConnection {
        let connection = RealtimeConnection(serverURL: node.baseURL, token: user.token)
        _ = try await connection.connect(timeout: .seconds(40))
        return connection
    }

    /// The numbers (`seq` of a creation, `updatedSeq` of a change) of a conversation's
    /// message events, in arrival order.
    static func numbers(_ events: [ServerEvent], in conversationId: EntityID) -> [Int64] {
        events.compactMap { event in
            switch event {
            case .messageCreated(let e) where e.message.conversationId == conversationId: e.message.seq
            case .messageUpdated(let e) where e.message.conversationId == conversationId: e.message.updatedSeq
            default: nil
            }
        }
    }

    static func presence(_ events: [ServerEvent], of userId: EntityID) -> [PresenceEvent] {
        events.compactMap { if case .presence(let p) = $0, p.userId == userId { p } else { nil } }
    }

    static func typing(_ events: [ServerEvent], of userId: EntityID) -> [Bool] {
        events.compactMap { if case .typing(let t) = $0, t.userId == userId { t.isTyping } else { nil } }
    }

    static func conversationUpdates(_ events: [ServerEvent], of conversationId: EntityID) -> [Conversation] {
        events.compactMap { if case .conversationUpdated(let e) = $0, e.conversation.id == conversationId { e.conversation } else { nil } }
    }

    /// Waits until node `observer` knows each user is online on another node.
    static func waitUntilKnownElsewhere(_ users: [TestUser], by observer: TestServer) async throws {
        let cluster = try #require(observer.app.cluster)
        for user in users {
            try await waitFor("\(observer.baseURL) to know \(user.auth.user.email) is online elsewhere") { cluster.isOnlineElsewhere(user.id) }
        }
    }

    // MARK: Message changes

    /// A message created on A, edited on A, reacted to on B and deleted on A: each connection of
    /// each participant, on either node, gets exactly the four events in number order, with the
    /// text byte for byte (quotes, backslashes, tabs and newlines survive the one-line records).
    @Test func editsReactionsAndDeletesCrossNodesOnceAndInOrder() async throws {
        let (a, b) = try await ClusterTests.twoNodes()
        defer { Task { await b.stop(); await a.stop() } }
        let (alice, bob, direct) = try await Self.aliceOnABobOnB(a, b)
        let aliceSocket = try await alice.connect()
        let bobOnB = try await bob.connect()
        let bobOnA = try await Self.connect(bob, to: a)
        let recorders = [EventRecorder(aliceSocket), EventRecorder(bobOnB), EventRecorder(bobOnA)]

        let text = "line one\nline \"two\"\twith \\ backslash, 👩‍👩‍👧 and \u{2028} separator\r\nend"
        // Each change once every connection has the one before: a node's first own commit in
        // a conversation starts its lane there, and another node's earlier events still on the
        // link would then be left to the client's catch-up (ConversationOrder.settleWindow), a
        // known limit this test is not about.
        func seenEverywhere(_ seq: Int64) async throws {
            for (index, recorder) in recorders.enumerated() {
                try await recorder.wait(timeout: .seconds(30), "connection \(index): seq \(seq)") { Self.numbers($0, in: direct.id).contains(seq) }
            }
        }
        let sent = try await aliceSocket.sendMessage(.init(conversationId: direct.id, clientMessageId: "m1", text: text))
        #expect(sent.text == text)
        try await seenEverywhere(sent.seq)
        let edited = try await alice.api.editMessage(sent.id, in: direct.id, text: "edited\non \"A\"")
        try await seenEverywhere(edited.updatedSeq)
        let reacted = try await bob.api.react(sent.id, in: direct.id, emoji: "👍")
        let deleted = try await alice.api.deleteMessage(sent.id, in: direct.id)
        let expected = [sent.seq, edited.updatedSeq, reacted.updatedSeq, deleted.updatedSeq]
        #expect(expected == Array(sent.seq...sent.seq + 3), "each change takes the next number")

        for (index, recorder) in recorders.enumerated() {
            try await recorder.wait(timeout: .seconds(30), "connection \(index): the delete") { events in
                Self.numbers(events, in: direct.id).contains(deleted.updatedSeq)
            }
            let events = recorder.events.filter { event in
                switch event {
                case .messageCreated(let e), .messageUpdated(let e): e.message.conversationId == direct.id
                default: false
                }
            }
            #expect(Self.numbers(events, in: direct.id) == expected, "connection \(index): once each, in order")
            guard events.count == 4,
                case .messageCreated(let created) = events[0], case .messageUpdated(let edit) = events[1],
                case .messageUpdated(let reaction) = events[2], case .messageUpdated(let delete) = events[3]
            else {
                Issue.record("connection \(index): \(events.map(\.type))")
                continue
            }
            #expect(created.message.text == text)
            #expect(edit.message.text == "edited\non \"A\"" && edit.message.editedAt != nil)
            #expect(reaction.message.reactions == ["👍": [bob.id]])
            #expect(delete.message.deletedAt != nil && delete.message.id == sent.id)
        }
        for socket in [aliceSocket, bobOnB, bobOnA] { await socket.close() }
    }

    /// Alice pipelines sends through A while her edits of the first message go through B, at
    /// once: readers on both nodes see every number of the conversation exactly once, in order
    /// (the hold bound is long, so a number can only be missing if a record was lost).
    @Test func concurrentSendsAndEditsOnTwoNodesReachReadersOnBothWithoutGapsOrRepeats() async throws {
        let longHold: (inout ServerConfiguration) -> Void = { $0.orderHoldBound = .seconds(60) }
        let (a, b) = try await Self.twoNodes(configure: longHold)
        defer { Task { await b.stop(); await a.stop() } }
        let (alice, bob, direct) = try await Self.aliceOnABobOnB(a, b)
        let readers = [EventRecorder(try await Self.connect(bob, to: a)), EventRecorder(try await Self.connect(bob, to: b))]
        let aliceSocket = try await alice.connect()
        let aliceOnB = b.api(token: alice.token)
        // The first message starts every node's lane of the conversation (see LiveOrderTests).
        let first = try await aliceSocket.sendMessage(.init(conversationId: direct.id, clientMessageId: "first", text: "first"))
        for (index, reader) in readers.enumerated() {
            try await reader.wait(timeout: .seconds(30), "reader \(index): the first message") { events in
                Self.numbers(events, in: direct.id).contains(first.seq)
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for n in 1...30 {
                tasks.addTask {
                    let _: Message = try await aliceSocket.send(
                        .sendMessage(.init(conversationId: direct.id, clientMessageId: "s\(n)", text: "send \(n)")), timeout: .seconds(60))
                }
            }
            tasks.addTask {
                for n in 1...15 { _ = try await aliceOnB.editMessage(first.id, in: direct.id, text: "edit \(n)") }
            }
            try await tasks.waitForAll()
        }
        let last = try await alice.api.conversation(direct.id).lastSeq
        #expect(last == first.seq + 45)
        for (index, reader) in readers.enumerated() {
            try await reader.wait(timeout: .seconds(60), "reader \(index): number \(last)") { events in
                Self.numbers(events, in: direct.id).contains(last)
            }
            #expect(Self.numbers(reader.events, in: direct.id) == Array(first.seq...last), "reader \(index)")
            let finalEdit = reader.events.last { if case .messageUpdated = $0 { true } else { false } }
            if case .messageUpdated(let e)? = finalEdit { #expect(e.message.text == "edit 15") } else { Issue.record("reader \(index): no edit") }
        }
        await aliceSocket.close()
    }

    // MARK: Conversations and receipts

    /// A group made, renamed and changed on A reaches its members on B: the new view, the
    /// system messages, a removed member's own empty view, and then nothing more for them; a
    /// delivered receipt sent on B reaches the sender on A.
    @Test func conversationChangesAndDeliveredReceiptsCrossNodes() async throws {
        let (a, b) = try await ClusterTests.twoNodes()
        defer { Task { await b.stop(); await a.stop() } }
        let alice = try await a.register("alice@x.io")
        let bob = try await b.register("bob@x.io")
        let carol = try await b.register("carol@x.io")
        let aliceSocket = try await alice.connect()
        let aliceEvents = EventRecorder(aliceSocket)
        let bobSocket = try await bob.connect()
        let bobEvents = EventRecorder(bobSocket)
        let carolSocket = try await carol.connect()
        let carolEvents = EventRecorder(carolSocket)
        // Conversation views go to members A knows are online (on B).
        try await Self.waitUntilKnownElsewhere([bob, carol], by: a)

        let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id, carol.id], name: "Plans"))
        for (name, recorder) in [("Bob", bobEvents), ("Carol", carolEvents)] {
            try await recorder.wait(timeout: .seconds(30), "\(name) to learn of the group") { events in
                Self.conversationUpdates(events, of: group.id).contains { $0.name == "Plans" }
            }
        }
        _ = try await alice.api.rename(group.id, to: "Launch")
        for (name, recorder) in [("Bob", bobEvents), ("Carol", carolEvents)] {
            try await recorder.wait(timeout: .seconds(30), "\(name): the new name and its system message") { events in
                Self.conversationUpdates(events, of: group.id).contains { $0.name == "Launch" }
                    && events.contains { if case .messageCreated(let e) = $0 { e.message.conversationId == group.id && e.message.type == .system } else { false } }
            }
        }

        // Carol is removed on A: her node tells her, with nothing of hers left in it.
        _ = try await alice.api.removeParticipant(group.id, userId: carol.id)
        try await carolEvents.wait(timeout: .seconds(30), "Carol's view without her") { events in
            Self.conversationUpdates(events, of: group.id).contains { !$0.participantIds.contains(carol.id) }
        }
        let removedView = try #require(Self.conversationUpdates(carolEvents.events, of: group.id).last)
        #expect(removedView.unreadCount == 0 && removedView.readSeq == 0)

        // What Alice sends next reaches Bob but not Carol: a direct message sent after it is
        // Carol's marker (A publishes its records in order).
        let secret = try await alice.api.send(SendMessageRequest(clientMessageId: "after", text: "without Carol"), to: group.id)
        try await bobEvents.wait(timeout: .seconds(30), "Bob: the message after the removal") { _ in
            bobEvents.createdMessages.contains { $0.id == secret.id }
        }
        let toCarol = try await alice.api.createConversation(.init(type: .direct, participantIds: [carol.id]))
        let marker = try await alice.api.send(SendMessageRequest(clientMessageId: "marker", text: "marker"), to: toCarol.id)
        try await carolEvents.wait(timeout: .seconds(30), "Carol: the marker") { _ in
            carolEvents.createdMessages.contains { $0.id == marker.id }
        }
        #expect(!carolEvents.createdMessages.contains { $0.id == secret.id }, "a removed member on another node got the group's message")

        // Bob's phone says the group reached it (on B): Alice, on A, sees the watermark move.
        try await bobSocket.perform(.delivered(DeliveredCommand(conversationId: group.id, upToSeq: secret.seq)))
        try await aliceEvents.wait(timeout: .seconds(30), "Bob's delivered receipt") { events in
            events.contains { if case .receipt(let r) = $0 { r.userId == bob.id && r.deliveredSeq == secret.seq && r.readSeq < secret.seq } else { false } }
        }
        for socket in [aliceSocket, bobSocket, carolSocket] { await socket.close() }
    }
}

/// The nodes a test started, stopped newest first (the first owns the database, dropped last).
final class StartedNodes: Sendable {
    private let running: Mutex<[TestServer]>

    init(_ first: TestServer) { running = Mutex([first]) }

    func add(_ node: TestServer) { running.withLock { $0.append(node) } }

    /// Stops one node now (it is not stopped again at the end).
    func stop(_ node: TestServer) async {
        running.withLock { $0.removeAll { $0 === node } }
        await node.stop()
    }

    func stopAll() async {
        for node in running.withLock({ $0 }).reversed() { await node.stop() }
    }
}
