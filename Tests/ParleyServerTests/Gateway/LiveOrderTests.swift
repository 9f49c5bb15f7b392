import Foundation
import NIOCore
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Synchronization
import Testing

/// Live events of a conversation reach every connection in seq order, so a client following
/// the contract never mistakes a reordering for a gap (and never catches up for nothing).
@Suite struct LiveOrderTests {
    // MARK: The orderer alone, on a manual clock

    /// What the orderer handed on, in order.
    final class Handed: Sendable {
        private let seqs = Mutex<[Int64]>([])
        func append(_ seq: Int64) { seqs.withLock { $0.append(seq) } }
        var all: [Int64] { seqs.withLock { $0 } }
    }

    static func event(_ seq: Int64) -> ConversationOrder.Event {
        .init(seq: seq, frame: ByteBuffer(string: "\(seq)"), recipients: [viewer])
    }

    static let viewer = EntityID()

    @Test func eventsAreHandedOnInSeqOrderAndALaterOneWaitsForTheOneBefore() async throws {
        let clock = ManualClock()
        let handed = Handed()
        let order = ConversationOrder(holdBound: .milliseconds(200), clock: clock.serverClock) { handed.append($0.seq) }
        let conversation = EntityID(), other = EntityID()
        order.publish(conversation, Self.event(5))  // a lane starts where its first event is
        order.publish(conversation, Self.event(7))
        order.publish(conversation, Self.event(8))
        #expect(handed.all == [5], "7 and 8 wait for 6")
        order.publish(other, Self.event(1))
        #expect(handed.all == [5, 1], "another conversation is not held up")
        order.publish(conversation, Self.event(6))
        #expect(handed.all == [5, 1, 6, 7, 8])
        order.publish(conversation, Self.event(7))
        #expect(handed.all == [5, 1, 6, 7, 8], "a repeat is not handed on twice")
        #expect(order.stats.held == 2 && order.stats.late == 1)
    }

    /// A notification that never comes: past the bound, the missing changes are read from the
    /// store and handed on before the held ones; not a moment before the bound.
    @Test func pastTheBoundTheMissingOnesAreReadFromTheStore() async throws {
        let clock = ManualClock()
        let handed = Handed()
        let order = ConversationOrder(holdBound: .milliseconds(200), clock: clock.serverClock) { handed.append($0.seq) }
        let asked = Mutex<[(Int64, Int64)]>([])
        order.attach(missingEvents: { _, viewer, after, before in
            #expect(viewer == Self.viewer)
            asked.withLock { $0.append((after, before)) }
            return (after + 1..<before).map(Self.event)
        })
        let conversation = EntityID()
        order.publish(conversation, Self.event(1))
        order.publish(conversation, Self.event(4))
        #expect(handed.all == [1])
        try await waitFor("the hold timer to sleep") { clock.sleepers == 1 }
        clock.advance(by: 0.199)
        // The hold's timer still sleeps, so nothing can have been read or handed on.
        #expect(clock.sleepers == 1, "the hold's timer is not due yet")
        #expect(handed.all == [1], "held until the bound")
        clock.advance(by: 0.002)
        try await waitFor("the store read") { handed.all == [1, 2, 3, 4] }
        #expect(asked.withLock { $0.map { [$0.0, $0.1] } } == [[1, 4]])
        // The notification turns up after all: already handed on, so dropped.
        order.publish(conversation, Self.event(2))
        order.publish(conversation, Self.event(5))
        #expect(handed.all == [1, 2, 3, 4, 5])
    }

    /// Another node's events of a conversation this node has not seen lately: the lane waits
    /// the settle window, so one that was a moment behind still goes first.
    @Test func aLaneStartedByAnotherNodeSettlesBeforeItHandsOn() async throws {
        let clock = ManualClock()
        let handed = Handed()
        let order = ConversationOrder(holdBound: .milliseconds(200), clock: clock.serverClock) { handed.append($0.seq) }
        let conversation = EntityID()
        order.publish(conversation, Self.event(8), fromAnotherNode: true)
        order.publish(conversation, Self.event(7), fromAnotherNode: true)
        #expect(handed.all.isEmpty)
        try await waitFor("the settle timer to sleep") { clock.sleepers == 1 }
        clock.advance(by: 0.03)
        try await waitFor("the settled events") { handed.all == [7, 8] }
        order.publish(conversation, Self.event(9), fromAnotherNode: true)
        #expect(handed.all == [7, 8, 9], "settled: the next one goes at once")
        // This node's own send announced its seq at commit: no settling for its lane.
        let mine = EntityID()
        order.expect(mine, seq: 3)
        order.publish(mine, Self.event(4))
        order.publish(mine, Self.event(3))
        #expect(handed.all == [7, 8, 9, 3, 4])
    }

    /// The store cannot say (it is down): the held events go on in order all the same; the
    /// clients catch the gap up themselves.
    @Test func aStoreThatCannotAnswerReleasesTheHeldEventsInOrder() async throws {
        let clock = ManualClock()
        let handed = Handed()
        let order = ConversationOrder(holdBound: .milliseconds(200), clock: clock.serverClock) { handed.append($0.seq) }
        order.attach(missingEvents: { _, _, _, _ in [] })
        let conversation = EntityID()
        order.publish(conversation, Self.event(1))
        order.publish(conversation, Self.event(5))
        order.publish(conversation, Self.event(3))
        try await waitFor("the hold timer to sleep") { clock.sleepers == 1 }
        clock.advance(by: 0.2)
        try await waitFor("the first gap given up") { handed.all == [1, 3] }
        // 4 is still missing: a second hold, with its own bound.
        try await waitFor("the second hold") { clock.sleepers == 1 }
        clock.advance(by: 0.2)
        try await waitFor("the rest") { handed.all == [1, 3, 5] }
    }

    /// Events published while the lane reads the store (seqs below the one it waited for):
    /// they go on in order with what the store said, and none stays held below what was handed
    /// on. (A lane that skipped over them and kept them held would, at its next fill, ask the
    /// store for a negative number of changes and crash the server.)
    @Test func eventsArrivingDuringAFillGoOnInOrderAndNoneIsLeftBehind() async throws {
        let clock = ManualClock()
        let handed = Handed()
        let order = ConversationOrder(holdBound: .milliseconds(200), clock: clock.serverClock) { handed.append($0.seq) }
        let conversation = EntityID()
        let reads = Handed()
        order.attach(missingEvents: { [order] id, _, after, before in
            reads.append(before - after)
            if reads.all.count == 1 {
                // While the store is read, 3 and 5 arrive; the store itself only knows 2.
                order.publish(id, Self.event(5))
                order.publish(id, Self.event(3))
                return [Self.event(2)]
            }
            return (after + 1..<before).map { Self.event($0) }
        })
        order.publish(conversation, Self.event(1))
        order.publish(conversation, Self.event(4))
        order.publish(conversation, Self.event(7))
        try await waitFor("the hold timer to sleep") { clock.sleepers == 1 }
        clock.advance(by: 0.2)
        try await waitFor("the filled run") { handed.all == [1, 2, 3, 4, 5] }
        // 6 is still missing: the next fill asks for exactly it.
        try await waitFor("the second hold") { clock.sleepers == 1 }
        clock.advance(by: 0.2)
        try await waitFor("the rest") { handed.all == [1, 2, 3, 4, 5, 6, 7] }
        #expect(reads.all == [3, 2], "each read asks for a positive range")
    }

    // MARK: From outside

    /// The scenario: 4 members each pipeline 300 sends into one group over their
    /// WebSocket at once; 4 readers record the seq of every `message.created` in arrival order.
    /// A node's cluster counters, for a failure's message.
    static func linkCounters(_ node: TestServer) -> String {
        guard let stats = node.app.cluster?.stats else { return "-" }
        return ["records_received", "records_dropped", "notifications_sent", "notify_failures", "spilled", "listener_restarts", "nodes_expired"]
            .map { "\($0) \(stats.value("parley_cluster_\($0)_total"))" }.joined(separator: ", ")
    }

    static func pipelinedSendersArriveInOrder(senderNodes: [TestServer], readerNodes: [TestServer], perSender: Int = 300) async throws {
        let first = senderNodes[0]
        var members: [TestUser] = []
        for index in 0..<4 { members.append(try await senderNodes[index % senderNodes.count].register("member\(index)@x.io")) }
        let group = try await members[0].api.createConversation(.init(type: .group, participantIds: members.dropFirst().map(\.id), name: "busy"))
        _ = first
        var readers: [EventRecorder] = []
        var readerSockets: [RealtimeConnection] = []
        for (index, member) in members.enumerated() {
            let node = readerNodes[index % readerNodes.count]
            let socket = RealtimeConnection(serverURL: node.baseURL, token: member.token)
            _ = try await socket.connect()
            readerSockets.append(socket)
            readers.append(EventRecorder(socket))
        }
        var senderSockets: [RealtimeConnection] = []
        for (index, member) in members.enumerated() {
            let node = senderNodes[index % senderNodes.count]
            let socket = RealtimeConnection(serverURL: node.baseURL, token: member.token)
            _ = try await socket.connect()
            senderSockets.append(socket)
        }
        // One message first, seen by every reader: every node's lane of the conversation has
        // started, and what follows is the steady state. A lane that starts with its node's
        // own commit does not wait for other nodes' earlier commits still on the link (see
        // ConversationOrder.settleWindow): under load a node's readers missed the first 53
        // messages live, which a client catches up from the store.
        let opening: Message = try await senderSockets[0].send(
            .sendMessage(.init(conversationId: group.id, clientMessageId: "opening", text: "opening")), timeout: .seconds(60))
        for (index, reader) in readers.enumerated() {
            try await reader.wait(timeout: .seconds(60), "reader \(index): the opening message") { _ in
                reader.createdMessages.contains { $0.id == opening.id }
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for (index, socket) in senderSockets.enumerated() {
                for n in 0..<perSender {
                    tasks.addTask {
                        // Order is measured, not speed: a loaded machine may take a while for 1,200.
                        let _: Message = try await socket.send(
                            .sendMessage(.init(conversationId: group.id, clientMessageId: "s\(index)-\(n)", text: "\(index)/\(n)")),
                            timeout: .seconds(180))
                    }
                }
            }
            try await tasks.waitForAll()
        }
        let total = 4 * perSender + 1
        let nodes = senderNodes + readerNodes.filter { node in !senderNodes.contains { $0 === node } }
        for (index, reader) in readers.enumerated() {
            do {
                try await reader.wait(timeout: .seconds(120), "reader \(index): every message") { _ in
                    reader.createdMessages.filter { $0.conversationId == group.id && $0.type == .text }.count >= total
                }
            } catch {
                // Which numbers are missing, and what each node's orderer and link did: a failure
                // in CI says where to look.
                let seen = Set(reader.createdMessages.filter { $0.conversationId == group.id }.map(\.seq))
                let last = try await members[0].api.conversation(group.id).lastSeq
                let missing = (1...last).filter { !seen.contains($0) }
                let stats = nodes.map { node in
                    "\(node.baseURL): order \(node.app.fanOut.order.stats), link \(Self.linkCounters(node))"
                }
                Issue.record("reader \(index) on \(readerNodes[index % readerNodes.count].baseURL) misses \(missing.count) of \(last): \(missing.prefix(40)); \(stats)")
                throw error
            }
            let seqs = reader.createdMessages.filter { $0.conversationId == group.id && $0.type == .text }.map(\.seq)
            let afterHigher = zip(seqs, seqs.dropFirst()).filter { $0.0 > $0.1 }.count
            #expect(afterHigher == 0, "reader \(index): \(afterHigher) of \(seqs.count) frames came after a higher seq")
            #expect(Set(seqs).count == total && seqs.count == total, "reader \(index): nothing lost or doubled")
            let jumps = zip(seqs, seqs.dropFirst()).filter { $0.1 != $0.0 + 1 }.count
            #expect(jumps == 0, "reader \(index): \(jumps) jumps a client would take for a gap")
        }
        for socket in readerSockets + senderSockets { await socket.close() }
    }

    @Test(arguments: StoreKind.available)
    func pipelinedSendersIntoOneGroupReachEveryReaderInSeqOrder(_ kind: StoreKind) async throws {
        let server = try await TestServer.start(store: kind)
        defer { Task { await server.stop() } }
        try await Self.pipelinedSendersArriveInOrder(senderNodes: [server], readerNodes: [server])
    }

    /// Senders split across two nodes of one PostgreSQL, readers across both: each node puts
    /// its own commits and the other's notifications in one order.
    @Test(.needsPostgres)
    func sendersOnTwoNodesReachEveryReaderInSeqOrder() async throws {
        let (a, b) = try await ClusterTests.twoNodes()
        defer { Task { await b.stop(); await a.stop() } }
        try await Self.pipelinedSendersArriveInOrder(senderNodes: [a, b], readerNodes: [b, a])
    }

    /// Edits (`message.updated`, numbered by `updatedSeq`) are in the same order as the
    /// messages around them.
    @Test func editsFollowTheSequenceToo() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let bobSocket = try await bob.connect()
        let events = EventRecorder(bobSocket)
        let aliceSocket = try await alice.connect()
        let first = try await aliceSocket.sendMessage(.init(conversationId: direct.id, clientMessageId: "m0", text: "zero"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for n in 1...40 {
                tasks.addTask {
                    if n.isMultiple(of: 2) {
                        let edit = try await server.raw(
                            "PATCH", "conversations/\(direct.id)/messages/\(first.id)", token: alice.token, json: #"{"text":"edit \#(n)"}"#)
                        #expect(edit.status == 200)
                    } else {
                        _ = try await aliceSocket.sendMessage(.init(conversationId: direct.id, clientMessageId: "m\(n)", text: "\(n)"))
                    }
                }
            }
            try await tasks.waitForAll()
        }
        let last = try await alice.api.conversation(direct.id).lastSeq
        try await events.wait(timeout: .seconds(20), "every change") { events in
            events.contains { event in
                switch event {
                case .messageCreated(let e): e.message.seq == last
                case .messageUpdated(let e): e.message.updatedSeq == last
                default: false
                }
            }
        }
        let numbers: [Int64] = events.events.compactMap { event in
            switch event {
            case .messageCreated(let e): e.message.seq
            case .messageUpdated(let e): e.message.updatedSeq
            default: nil
            }
        }
        #expect(numbers == Array(numbers.sorted()), "\(numbers)")
        await aliceSocket.close()
        await bobSocket.close()
    }

    /// The SDK's side: a client reading a busy group takes no catch-up for a gap that is not
    /// there (it counts its catch-ups beside the cache hits).
    @Test func aClientInABusyGroupNeedsNoCatchUp() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        var members: [TestUser] = []
        for index in 0..<4 { members.append(try await server.register("member\(index)@x.io")) }
        let group = try await members[0].api.createConversation(.init(type: .group, participantIds: members.dropFirst().map(\.id), name: "busy"))
        let reader = members[3]
        let client = ChatClient(
            transport: LiveTransport(serverURL: server.baseURL, token: reader.token), database: try LocalDatabase.inMemory(),
            userId: reader.id, pollInterval: .seconds(3600))
        await client.start()
        _ = try await client.openConversation(group.id)
        try await waitFor("connected") { await client.connectionState == .connected }
        let before = await client.readCounts
        var sockets: [RealtimeConnection] = []
        for member in members.prefix(3) { sockets.append(try await member.connect()) }
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for (index, socket) in sockets.enumerated() {
                for n in 0..<100 {
                    tasks.addTask {
                        // 300 pipelined sends on a machine running the whole suite: a generous answer deadline.
                        let _: Message = try await socket.send(
                            .sendMessage(.init(conversationId: group.id, clientMessageId: "c\(index)-\(n)", text: "\(n)")), timeout: .seconds(90))
                    }
                }
            }
            try await tasks.waitForAll()
        }
        let last = try await reader.api.conversation(group.id).lastSeq
        do {
            try await waitFor("every message in the reader's cache", timeout: .seconds(90)) {
                try await client.database.messages(in: group.id, viewer: reader.id, limit: 1).last?.seq == last
            }
        } catch {
            // Say where the reader stopped, so a failure on a loaded machine can be read.
            let newest = try await client.database.messages(in: group.id, viewer: reader.id, limit: 1).last?.seq
            let synced = try await client.database.syncedSeq(group.id)
            Issue.record("last \(last), newest cached \(newest ?? -1), synced \(synced ?? -1), \(await client.connectionState), \(await client.readCounts)")
            throw error
        }
        let after = await client.readCounts
        #expect(after.gapCatchUps == before.gapCatchUps, "catch-ups for false gaps: \(after.gapCatchUps - before.gapCatchUps)")
        // (`catchUps` may still grow by the connection's own first sync, which can run late.)
        #expect(try await client.database.messages(in: group.id, viewer: reader.id, limit: 400).filter { $0.type == .text }.count == 300)
        for socket in sockets { await socket.close() }
        await client.stop()
    }
}
