import Foundation
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Synchronization
import Testing
import FoundationNetworking

extension ClusterRelayEventTests {
    // MARK: Typing and presence

    /// Typing stops on the other node when the typist says so and when their last connection
    /// closes (the lapse timer is ten minutes here, so only the close can end it), and the
    /// lapse arrives before the offline presence.
    @Test func typingStopsOnTheOtherNodeWhenTheTypistStopsOrDisconnects() async throws {
        let slowLapse: (inout ServerConfiguration) -> Void = { $0.typingTimeout = .seconds(600) }
        let (a, b) = try await Self.twoNodes(configure: slowLapse)
        defer { Task { await b.stop(); await a.stop() } }
        let (alice, bob, direct) = try await Self.aliceOnABobOnB(a, b)
        let aliceEvents = EventRecorder(try await alice.connect())
        let bobSocket = try await bob.connect()
        // Typing goes to users B knows are online elsewhere.
        try await Self.waitUntilKnownElsewhere([alice], by: b)

        func typing(_ isTyping: Bool) async throws {
            try await bobSocket.perform(.typing(TypingCommand(conversationId: direct.id, isTyping: isTyping)))
        }
        try await typing(true)
        try await aliceEvents.wait(timeout: .seconds(30), "typing") { Self.typing($0, of: bob.id) == [true] }
        try await typing(false)
        try await aliceEvents.wait(timeout: .seconds(30), "stopped") { Self.typing($0, of: bob.id) == [true, false] }
        try await typing(true)
        try await aliceEvents.wait(timeout: .seconds(30), "typing again") { Self.typing($0, of: bob.id) == [true, false, true] }
        await bobSocket.close()
        try await aliceEvents.wait(timeout: .seconds(30), "the lapse and Bob offline") { events in
            Self.typing(events, of: bob.id) == [true, false, true, false] && Self.presence(events, of: bob.id).contains { !$0.isOnline }
        }
        let events = aliceEvents.events
        let lapse = try #require(events.lastIndex { if case .typing(let t) = $0 { t.userId == bob.id && !t.isTyping } else { false } })
        let offline = try #require(events.firstIndex { if case .presence(let p) = $0 { p.userId == bob.id && !p.isOnline } else { false } })
        #expect(lapse < offline, "the typing indicator is cleared before the user is shown offline")
    }

    /// Presence and focus cross nodes but never organizations: a user of another organization
    /// on B learns nothing of Alice's, and a focus names the conversation to its participants
    /// only.
    @Test func presenceAndFocusStayInsideTheOrganizationAcrossNodes() async throws {
        let (a, b) = try await ClusterTests.twoNodes()
        defer { Task { await b.stop(); await a.stop() } }
        let alice = try await a.register("alice@x.io")
        let frank = try await a.register("frank@globex.io", organization: "globex")
        let bob = try await b.register("bob@x.io")
        let carol = try await b.register("carol@x.io")
        let eve = try await b.register("eve@globex.io", organization: "globex")
        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        let bobEvents = EventRecorder(try await bob.connect())
        let carolEvents = EventRecorder(try await carol.connect())
        let eveEvents = EventRecorder(try await eve.connect())
        try await Self.waitUntilKnownElsewhere([bob, carol, eve], by: a)

        let aliceSocket = try await alice.connect()
        for (name, recorder) in [("Bob", bobEvents), ("Carol", carolEvents)] {
            try await recorder.wait(timeout: .seconds(30), "\(name): Alice online") { Self.presence($0, of: alice.id).contains { $0.isOnline } }
        }
        // Frank's presence comes after Alice's from the same node: once Eve has it, she would
        // have had Alice's too.
        let frankSocket = try await frank.connect()
        try await eveEvents.wait(timeout: .seconds(30), "Eve: Frank online") { Self.presence($0, of: frank.id).count == 1 }
        #expect(Self.presence(eveEvents.events, of: alice.id).isEmpty, "another organization learned of Alice")
        #expect(Self.presence(bobEvents.events, of: frank.id).isEmpty && Self.presence(carolEvents.events, of: frank.id).isEmpty)

        // Alice looks at her conversation with Bob: Bob learns where, Carol only that she is online.
        try await aliceSocket.perform(.focus(FocusCommand(conversationId: direct.id)))
        try await bobEvents.wait(timeout: .seconds(30), "Bob: Alice's focus") { events in
            Self.presence(events, of: alice.id).contains { $0.isOnline && $0.conversationId == direct.id }
        }
        try await carolEvents.wait(timeout: .seconds(30), "Carol: Alice online again") { Self.presence($0, of: alice.id).count == 2 }
        #expect(Self.presence(carolEvents.events, of: alice.id).allSatisfy { $0.conversationId == nil }, "a non-participant learned the conversation")
        try await frankSocket.perform(.focus(FocusCommand(conversationId: nil)))
        try await eveEvents.wait(timeout: .seconds(30), "Eve: Frank's focus") { Self.presence($0, of: frank.id).count == 2 }
        #expect(Self.presence(eveEvents.events, of: alice.id).isEmpty, "another organization learned of Alice's focus")
        await aliceSocket.close()
        await frankSocket.close()
    }

    // MARK: Nodes joining and leaving

    /// B starts while Alice is already on A: it knows she is online before its first client
    /// connects. Stopped, B takes Bob offline everywhere (once); restarted under the same node
    /// id, Bob comes back online and messages flow both ways again.
    @Test func aLateNodeKnowsWhoIsOnlineAndAStoppedNodeTakesItsUsersOffline() async throws {
        let (a, url) = try await Self.firstNode()
        let nodes = StartedNodes(a)
        defer { Task { await nodes.stopAll() } }
        let alice = try await a.register("alice@x.io")
        let bob = try await a.register("bob@x.io")
        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        let aliceSocket = try await alice.connect()
        let aliceEvents = EventRecorder(aliceSocket)

        let nodeId = "node-b-\(UUID().uuidString.prefix(6).lowercased())"
        let b = try await Self.node(on: url) { $0.cluster?.nodeId = nodeId }
        nodes.add(b)
        // Before any client of B connects. Not asserted at the instant B starts: on a saturated
        // machine A's heartbeat can be late past the dead-after bound, and B counts A's users
        // from A's next one.
        let cluster = try #require(b.app.cluster)
        try await waitFor("B to know Alice is online, with no client of its own") { cluster.isOnlineElsewhere(alice.id) }
        #expect(try await b.api(token: bob.token).users().first { $0.id == alice.id }?.isOnline == true)
        #expect(!a.app.fanOut.isOnline(bob.id))

        let bobSocket = try await Self.connect(bob, to: b)
        let bobEvents = EventRecorder(bobSocket)
        try await aliceEvents.wait(timeout: .seconds(30), "Bob online through B") { Self.presence($0, of: bob.id).filter(\.isOnline).count == 1 }
        _ = try await aliceSocket.sendMessage(.init(conversationId: direct.id, clientMessageId: "a1", text: "to B"))
        try await bobEvents.wait(timeout: .seconds(30), "the message on B") { _ in bobEvents.createdMessages.map(\.text) == ["to B"] }

        await nodes.stop(b)
        try await aliceEvents.wait(timeout: .seconds(30), "Bob offline after B stopped") { events in
            Self.presence(events, of: bob.id).contains { !$0.isOnline && $0.lastSeenAt != nil }
        }
        try await waitFor("A to forget Bob") { !a.app.fanOut.isOnline(bob.id) }
        #expect(try await alice.api.users().first { $0.id == bob.id }?.isOnline == false)

        let b2 = try await Self.node(on: url) { $0.cluster?.nodeId = nodeId }
        nodes.add(b2)
        #expect(try #require(b2.app.cluster).isOnlineElsewhere(alice.id))
        #expect(try #require(b2.app.cluster).nodeId == nodeId)
        let bobAgain = try await Self.connect(bob, to: b2)
        let bobAgainEvents = EventRecorder(bobAgain)
        try await aliceEvents.wait(timeout: .seconds(30), "Bob online through the restarted B") { Self.presence($0, of: bob.id).filter(\.isOnline).count == 2 }
        try await waitFor("A to know Bob is on B again") { a.app.fanOut.isOnline(bob.id) }
        _ = try await aliceSocket.sendMessage(.init(conversationId: direct.id, clientMessageId: "a2", text: "to B again"))
        // Bob answers once A's message is with him. Sent at once, his reply (B's own commit,
        // handed on without waiting) can overtake A's on the fresh B2, which then drops A's as
        // older and leaves it to the client's catch-up: the trade ConversationOrder documents.
        try await bobAgainEvents.wait(timeout: .seconds(30), "A's message on the restarted B") { _ in
            bobAgainEvents.createdMessages.map(\.text) == ["to B again"]
        }
        let reply = try await bobAgain.sendMessage(.init(conversationId: direct.id, clientMessageId: "b1", text: "from B again"))
        try await bobAgainEvents.wait(timeout: .seconds(30), "both messages on the restarted B") { _ in
            bobAgainEvents.createdMessages.map(\.text) == ["to B again", "from B again"]
        }
        try await aliceEvents.wait(timeout: .seconds(30), "Bob's reply on A") { _ in aliceEvents.createdMessages.contains { $0.id == reply.id } }
        #expect(aliceEvents.createdMessages.map(\.text) == ["to B", "to B again", "from B again"])
        let bobPresence = Self.presence(aliceEvents.events, of: bob.id)
        #expect(bobPresence.map(\.isOnline) == [true, false, true], "each change announced once")
        await bobAgain.close()
        await aliceSocket.close()
    }

    /// B paused long enough for the others to expire it (its rows deleted, its users dropped
    /// from their replicas): on its next heartbeat it finds itself gone, registers again and
    /// announces its users, so A sees Bob online again (no push to him, the right presence).
    @Test func aNodeExpiredByMistakeRejoinsWithItsUsers() async throws {
        let (a, b) = try await ClusterTests.twoNodes()
        defer { Task { await b.stop(); await a.stop() } }
        let (alice, bob, direct) = try await Self.aliceOnABobOnB(a, b)
        let bobEvents = EventRecorder(try await bob.connect())
        try await Self.waitUntilKnownElsewhere([bob], by: a)
        let nodeB = try #require(b.app.cluster).nodeId
        // What expiring B does to A, then to the tables (in this order: B's rejoin must be
        // what brings Bob back on A).
        try await #require(a.app.cluster).receive("D node-expirer \(nodeB)")
        #expect(!a.app.fanOut.isOnline(bob.id))
        try await #require(a.database).execute([
            "DELETE FROM parley_node_users WHERE node_id = '\(nodeB)'", "DELETE FROM parley_nodes WHERE node_id = '\(nodeB)'",
        ])
        try await waitFor("B to rejoin and announce Bob") { a.app.fanOut.isOnline(bob.id) }
        #expect(try await alice.api.users().first { $0.id == bob.id }?.isOnline == true)
        let sent = try await alice.api.send(SendMessageRequest(clientMessageId: "after", text: "after the rejoin"), to: direct.id)
        try await bobEvents.wait(timeout: .seconds(30), "the message on B") { _ in bobEvents.createdMessages.contains { $0.id == sent.id } }
    }

    // MARK: Records as they arrive

    /// The inbound parser on a live node: its own records (NOTIFY comes back to the sender)
    /// and malformed ones do nothing; a payload's records apply in order; a repeated sequence
    /// record is delivered once; each record reaches only the users it names; presence
    /// records keep the replica per node, and a dead node's users go with it.
    @Test func recordsAreAppliedOnceInOrderAndMalformedOrOwnOnesAreIgnored() async throws {
        let (server, _) = try await Self.firstNode { $0.orderHoldBound = .seconds(60) }
        defer { Task { await server.stop() } }
        let node = try #require(server.app.cluster)
        let (alice, bob, direct) = try await server.directPair()
        let aliceSocket = try await alice.connect()
        let aliceEvents = EventRecorder(aliceSocket)
        let bobSocket = try await bob.connect()
        let bobEvents = EventRecorder(bobSocket)
        func frame(_ event: ServerEvent) throws -> String {
            String(decoding: try WireCoding.makeEncoder().encode(event), as: UTF8.self)
        }
        func typing(_ isTyping: Bool) throws -> String {
            try frame(.typing(TypingEvent(conversationId: direct.id, userId: alice.id, isTyping: isTyping)))
        }
        func message(_ seq: Int64) throws -> String {
            try frame(.messageCreated(MessageEvent(message: Message(
                id: EntityID(), conversationId: direct.id, seq: seq, updatedSeq: seq, senderId: alice.id, clientMessageId: "r\(seq)",
                type: .text, text: "relayed \(seq)", createdAt: Date()))))
        }

        await node.receive("U \(node.nodeId) \(bob.id) \(try typing(true))")
        await node.receive([
            "U", "U node-x", "U node-x not-an-id", "Q node-x \(direct.id) nine \(bob.id) {}", "Q node-x \(direct.id) 1",
            "P node-x", "X node-x \(bob.id)", "S node-x nine", "Z node-x \(bob.id) {}", "", "O node-x not-an-id",
        ].joined(separator: "\n"))
        await node.receive("U node-x \(bob.id),\(EntityID()) \(try typing(true))\nU node-x \(bob.id) \(try typing(false))")
        try await bobEvents.wait(timeout: .seconds(30), "the two typing records") { Self.typing($0, of: alice.id).count == 2 }
        #expect(Self.typing(bobEvents.events, of: alice.id) == [true, false], "own and malformed records did nothing; the rest in order")
        try await bobSocket.ping()  // a malformed record closed no connection

        // Sequence records: a repeat is dropped, a later one waits for the one before.
        let start = direct.lastSeq + 1
        await node.receive("Q node-x \(direct.id) \(start) \(bob.id) \(try message(start))")
        await node.receive("Q node-x \(direct.id) \(start) \(bob.id) \(try message(start))")
        await node.receive("Q node-x \(direct.id) \(start + 2) \(bob.id) \(try message(start + 2))")
        await node.receive("Q node-x \(direct.id) \(start + 1) \(bob.id) \(try message(start + 1))")
        try await bobEvents.wait(timeout: .seconds(30), "three relayed messages") { _ in bobEvents.createdMessages.count >= 3 }
        #expect(bobEvents.createdMessages.map(\.seq) == [start, start + 1, start + 2])
        // Organization records skip the excluded users: Bob is excluded, Alice gets it.
        let carol = EntityID()
        let carolOnline = try frame(.presence(PresenceEvent(userId: carol, isOnline: true)))
        await node.receive("O node-x \(alice.auth.user.organizationId) \(bob.id) \(carolOnline)")
        await node.receive("O node-x \(EntityID()) - \(carolOnline)")
        try await aliceEvents.wait(timeout: .seconds(30), "the organization record") { !Self.presence($0, of: carol).isEmpty }
        try await bobSocket.ping()
        try await aliceSocket.ping()
        #expect(Self.presence(bobEvents.events, of: carol).isEmpty, "an excluded user got the record")
        #expect(Self.presence(aliceEvents.events, of: carol).count == 1, "another organization's record was delivered")
        #expect(aliceEvents.createdMessages.isEmpty, "a sequence record reached a user it did not name")

        // Presence: per node, so one node's offline does not hide another's online; a dead node's users go.
        let organization = alice.auth.user.organizationId
        await node.receive("P \(node.nodeId) \(carol) \(organization) 1")
        #expect(!node.isOnlineElsewhere(carol), "its own presence record counted as another node's")
        await node.receive("P node-x \(carol) \(organization) 1\nP node-y \(carol) \(organization) 1")
        #expect(node.isOnlineElsewhere(carol) && server.app.fanOut.isOnline(carol))
        await node.receive("P node-x \(carol) \(organization) 0")
        #expect(node.isOnlineElsewhere(carol), "offline on one node, still online on another")
        await node.receive("D node-z node-y")
        #expect(!node.isOnlineElsewhere(carol) && !server.app.fanOut.isOnline(carol))
        await aliceSocket.close()
        await bobSocket.close()
    }

    // MARK: Push in a cluster

    /// A node with push that starts while Bob is connected to another node does not notify
    /// him (it loaded who is online when it joined); once he is gone everywhere it does, with
    /// the unread count of what he missed.
    @Test func pushSkipsAUserOnlineOnAnotherNodeAndReachesThemOnceTheyLeave() async throws {
        let apns = try await TestAPNs.start()
        let (b, url) = try await Self.firstNode()
        let nodes = StartedNodes(b)
        defer { Task { await nodes.stopAll(); await apns.stop() } }
        let (alice, bob, direct) = try await b.directPair()
        try await bob.api.registerDevice(token: deviceToken(1), environment: .sandbox)
        let bobSocket = try await bob.connect()
        // Bob's `hello` can reach him before B has written his presence row (the row is written
        // just after registration): A must join after the row is there, or it would learn of
        // him from B's record instead of loading him at its start.
        let bCluster = try #require(b.app.cluster)
        try await waitFor("B to record Bob's presence") { bCluster.recorded.withLock { $0.contains(bob.id) } }
        let apnsConfiguration = apns.configuration()
        let a = try await Self.node(on: url) { $0.apns = apnsConfiguration }
        nodes.add(a)
        #expect(a.app.fanOut.isOnline(bob.id), "the push node did not load who is online elsewhere")

        let aliceOnA = a.api(token: alice.token)
        _ = try await aliceOnA.send(SendMessageRequest(clientMessageId: "m1", text: "while you are on B"), to: direct.id)
        try await waitFor("the push decision") { a.app.metrics.value("parley_push_skipped_total", labels: ["why": "connected"]) == 1 }

        await bobSocket.close()
        try await waitFor("A to see Bob gone") { !a.app.fanOut.isOnline(bob.id) }
        let second = try await aliceOnA.send(SendMessageRequest(clientMessageId: "m2", text: "now you are away"), to: direct.id)
        let requests = await apns.waitForRequests(1, timeout: .seconds(30))
        #expect(requests.count == 1 && requests.first?.token == deviceToken(1))
        let payload = try JSONDecoder().decode(PushNotificationPayload.self, from: try #require(requests.first).body)
        #expect(payload.messageId == second.id && payload.aps.alert.body == "now you are away")
        #expect(payload.aps.badge == 2, "both messages are unread")
        #expect(a.app.metrics.value("parley_push_skipped_total", labels: ["why": "connected"]) == 1)
        #expect(b.app.metrics.value("parley_push_notifications_total", labels: ["outcome": "delivered"]) == 0, "a node without push sent one")
    }
}
