import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Typing, presence, receipts and unread counts, through real WebSockets.
@Suite struct SignalTests {
    func typingEvents(_ recorder: EventRecorder) -> [TypingEvent] {
        recorder.events.compactMap { if case .typing(let event) = $0 { event } else { nil } }
    }

    @Test func typingLapsesThreeSecondsAfterTheLastTrue() async throws {
        let clock = ManualClock()
        let server = try await TestServer.start { $0.clock = clock.serverClock }
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let aliceSocket = try await alice.connect()
        let bobEvents = EventRecorder(try await bob.connect())
        let aliceEvents = EventRecorder(aliceSocket)
        let _: EmptyPayload = try await aliceSocket.send(.typing(.init(conversationId: direct.id, isTyping: true)))
        clock.advance(by: 1)
        let _: EmptyPayload = try await aliceSocket.send(.typing(.init(conversationId: direct.id, isTyping: true)))
        try await bobEvents.wait("two typing events") { _ in self.typingEvents(bobEvents).count == 2 }
        // 2.9 s after the last true: still typing (the first true's deadline has passed).
        clock.advance(by: 2.9)
        try await waitFor("the sweeper to wait for the later deadline") { clock.sleepers >= 1 }
        #expect(await server.app.signals.activeTypingCount == 1)
        #expect(typingEvents(bobEvents).map(\.isTyping) == [true, true])
        clock.advance(by: 0.2)
        try await bobEvents.wait("the lapse") { events in
            events.contains { if case .typing(let e) = $0 { !e.isTyping } else { false } }
        }
        #expect(typingEvents(bobEvents).map(\.isTyping) == [true, true, false])
        #expect(typingEvents(bobEvents).allSatisfy { $0.userId == alice.id && $0.conversationId == direct.id })
        #expect(typingEvents(aliceEvents).isEmpty, "the typer is not told about themselves")
        #expect(await server.app.signals.activeTypingCount == 0)
        await aliceSocket.close()
    }

    @Test func typingClearsAtOnceWhenTheTypersLastConnectionCloses() async throws {
        let server = try await TestServer.start { $0.typingTimeout = .seconds(30) }
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id], name: "g"))
        let phone = try await alice.connect()
        let laptop = try await alice.connect()
        let bobEvents = EventRecorder(try await bob.connect())
        let _: EmptyPayload = try await phone.send(.typing(.init(conversationId: group.id, isTyping: true)))
        try await bobEvents.wait { _ in self.typingEvents(bobEvents).count == 1 }
        await phone.close()
        try await laptop.ping()
        #expect(typingEvents(bobEvents).count == 1, "another connection is still open")
        await laptop.close()
        // The lapse is 30 s here: a `false` within the wait comes from the close, not a timer.
        try await bobEvents.wait(timeout: .seconds(10)) { _ in self.typingEvents(bobEvents).last?.isTyping == false }
        #expect(await server.app.signals.activeTypingCount == 0)
    }

    @Test func typingFalseAndOutsiders() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let carol = try await server.register("carol@x.io")
        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        let aliceSocket = try await alice.connect()
        let bobEvents = EventRecorder(try await bob.connect())
        let _: EmptyPayload = try await aliceSocket.send(.typing(.init(conversationId: direct.id, isTyping: true)))
        let _: EmptyPayload = try await aliceSocket.send(.typing(.init(conversationId: direct.id, isTyping: false)))
        // A second false changes nothing and is not repeated.
        let _: EmptyPayload = try await aliceSocket.send(.typing(.init(conversationId: direct.id, isTyping: false)))
        try await bobEvents.wait { _ in self.typingEvents(bobEvents).count == 2 }
        #expect(typingEvents(bobEvents).map(\.isTyping) == [true, false])
        let carolSocket = try await carol.connect()
        do {
            let _: EmptyPayload = try await carolSocket.send(.typing(.init(conversationId: direct.id, isTyping: true)))
            Issue.record("an outsider cannot type into a conversation")
        } catch let error as ClientError {
            #expect(error.code == .notFound)
        }
        #expect(await server.app.signals.activeTypingCount == 0)
        await aliceSocket.close()
        await carolSocket.close()
    }

    @Test func readWatermarksNeverMoveBackAndBatchesTakeTheHighest() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        var sent: [Message] = []
        for index in 1...10 { sent.append(try await bob.api.send(.init(clientMessageId: "b\(index)", text: "\(index)"), to: direct.id)) }
        let bobSocket = try await bob.connect()
        let bobEvents = EventRecorder(bobSocket)
        let aliceSocket = try await alice.connect()

        let six: ReadResponse = try await aliceSocket.send(.read(.init(conversationId: direct.id, upToSeq: 6)))
        #expect(six == ReadResponse(readSeq: 6, unreadCount: 4, lastSeq: 10))
        let three: ReadResponse = try await aliceSocket.send(.read(.init(conversationId: direct.id, upToSeq: 3)))
        #expect(three == ReadResponse(readSeq: 6, unreadCount: 4, lastSeq: 10))
        let batch = try await server.raw(
            "POST", "conversations/\(direct.id)/read", token: alice.token,
            json: #"{"messageIds":["\#(sent[7].id)","\#(sent[6].id)"]}"#)
        #expect(batch.status == 200)
        #expect(try WireCoding.makeDecoder().decode(ReadResponse.self, from: batch.body) == ReadResponse(readSeq: 8, unreadCount: 2, lastSeq: 10))
        let clamped: ReadResponse = try await aliceSocket.send(.read(.init(conversationId: direct.id, upToSeq: 99)))
        #expect(clamped == ReadResponse(readSeq: 10, unreadCount: 0, lastSeq: 10))

        let receipts = try await bobEvents.wait { events in
            events.contains { if case .receipt(let r) = $0 { r.readSeq == 10 } else { false } }
        }.compactMap { if case .receipt(let r) = $0 { r } else { nil } }
        #expect(receipts.map(\.readSeq) == [6, 8, 10], "the no-op read sends no receipt")
        #expect(receipts.allSatisfy { $0.userId == alice.id && $0.deliveredSeq >= $0.readSeq })
        let members = try await bob.api.conversation(direct.id).members
        #expect(members.first { $0.userId == alice.id } == Member(userId: alice.id, readSeq: 10, deliveredSeq: 10))
        #expect(members.first { $0.userId == bob.id } == Member(userId: bob.id, readSeq: 0, deliveredSeq: 0))

        for body in [#"{}"#, #"{"upToSeq":-1}"#, #"{"messageIds":[]}"#, #"{"upToSeq":1,"messageIds":["\#(sent[0].id)"]}"#,
                     #"{"messageIds":["\#(EntityID())"]}"#] {
            let answer = try await server.raw("POST", "conversations/\(direct.id)/read", token: alice.token, json: body)
            #expect(answer.status == 400, "\(body)")
        }
        await aliceSocket.close()
        await bobSocket.close()
    }

    @Test func deliveredMovesUpOnlyAndReadRaisesIt() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        for index in 1...5 { _ = try await bob.api.send(.init(clientMessageId: "b\(index)", text: "\(index)"), to: direct.id) }
        let socket = try await alice.connect()
        let _: EmptyPayload = try await socket.send(.delivered(.init(conversationId: direct.id, upToSeq: 4)))
        let _: EmptyPayload = try await socket.send(.delivered(.init(conversationId: direct.id, upToSeq: 2)))
        var me = try await alice.api.conversation(direct.id).members.first { $0.userId == alice.id }
        #expect(me == Member(userId: alice.id, readSeq: 0, deliveredSeq: 4))
        let answer = try await server.raw("POST", "conversations/\(direct.id)/read", token: alice.token, json: #"{"upToSeq":5}"#)
        #expect(answer.status == 200)
        me = try await alice.api.conversation(direct.id).members.first { $0.userId == alice.id }
        #expect(me == Member(userId: alice.id, readSeq: 5, deliveredSeq: 5))
        let http = try await server.raw("POST", "conversations/\(direct.id)/delivered", token: alice.token, json: #"{"upToSeq":1}"#)
        #expect(try WireCoding.makeDecoder().decode(Member.self, from: http.body) == me)
        await socket.close()
    }

    @Test func aReadOnOneDeviceClearsTheBadgeOnTheOthers() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let phone = try await alice.connect()
        let tablet = EventRecorder(try await alice.connect())
        for index in 1...3 { _ = try await bob.api.send(.init(clientMessageId: "b\(index)", text: "\(index)"), to: direct.id) }
        try await tablet.wait { events in
            events.contains { if case .conversationUpdated(let e) = $0 { e.conversation.unreadCount == 3 } else { false } }
        }
        let _: ReadResponse = try await phone.send(.read(.init(conversationId: direct.id, upToSeq: 3)))
        try await tablet.wait { events in
            events.contains { if case .conversationUpdated(let e) = $0 { e.conversation.unreadCount == 0 && e.conversation.readSeq == 3 } else { false } }
        }
        await phone.close()
    }

    @Test func unreadCountsStayExactUnderConcurrentSendsAndReads() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let senders = [try await server.register("bob@x.io"), try await server.register("carol@x.io")]
        let group = try await alice.api.createConversation(.init(type: .group, participantIds: senders.map(\.id), name: "busy"))
        let devices = [try await alice.connect(), try await alice.connect()]
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for (index, sender) in senders.enumerated() {
                tasks.addTask {
                    for n in 0..<20 { _ = try await sender.api.send(.init(clientMessageId: "s\(index)-\(n)", text: "x"), to: group.id) }
                }
            }
            for (index, device) in devices.enumerated() {
                tasks.addTask {
                    for step in 1...15 {
                        let _: ReadResponse = try await device.send(.read(.init(conversationId: group.id, upToSeq: Int64(step * 3 - index))))
                    }
                }
            }
            _ = try await alice.api.send(.init(clientMessageId: "own", text: "mine"), to: group.id)
            try await tasks.waitForAll()
        }
        let view = try await alice.api.conversation(group.id)
        let history = try await alice.api.messages(group.id, limit: 200).messages
        let expected = history.filter { $0.senderId != alice.id && $0.seq > view.readSeq && $0.type != .system }.count
        #expect(view.unreadCount == expected)
        #expect(view.readSeq > 0 && view.readSeq <= view.lastSeq && view.lastSeq == 41)
        let final: ReadResponse = try await devices[1].send(.read(.init(conversationId: group.id, upToSeq: view.lastSeq)))
        #expect(final == ReadResponse(readSeq: 41, unreadCount: 0, lastSeq: 41))
        for device in devices { await device.close() }
    }

    @Test func presenceStaysInsideTheOrganization() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let carol = try await server.register("carol@x.io")
        let mallory = try await server.register("mallory@x.io", organization: "evil")
        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        let bobEvents = EventRecorder(try await bob.connect())
        let carolEvents = EventRecorder(try await carol.connect())
        let malloryEvents = EventRecorder(try await mallory.connect())
        let aliceSocket = try await alice.connect()
        let presence: @Sendable ([ServerEvent]) -> [PresenceEvent] = { events in
            events.compactMap { if case .presence(let p) = $0, p.userId == alice.id { p } else { nil } }
        }
        try await bobEvents.wait { presence($0).count == 1 }
        #expect(presence(bobEvents.events).first?.isOnline == true)
        #expect(try await bob.api.users(matching: "alice").first?.isOnline == true)

        let _: EmptyPayload = try await aliceSocket.send(.focus(.init(conversationId: direct.id)))
        try await bobEvents.wait { presence($0).count == 2 }
        try await carolEvents.wait { presence($0).count == 2 }
        #expect(presence(bobEvents.events).last?.conversationId == direct.id)
        #expect(presence(carolEvents.events).last?.conversationId == nil, "only participants learn where she is")

        await aliceSocket.close()
        try await bobEvents.wait(timeout: .seconds(2)) { presence($0).last?.isOnline == false }
        let offline = presence(bobEvents.events).last!
        #expect(offline.lastSeenAt != nil)
        let directory = try await bob.api.users(matching: "alice").first!
        #expect(!directory.isOnline && directory.lastSeenAt == offline.lastSeenAt)
        let malloryDevice = try await mallory.connect()
        try await malloryDevice.ping()
        #expect(presence(malloryEvents.events).isEmpty, "another organization sees none of it")
        await malloryDevice.close()
    }
}
