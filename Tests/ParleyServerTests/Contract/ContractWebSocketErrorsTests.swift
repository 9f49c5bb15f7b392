import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Invariant 4 over the WebSocket: a command into a conversation the user is not in (another
/// organization's, the same organization's, a former one, an unknown id) or with bad fields
/// gets one error reply with the exact code and a message; the connection stays usable; no seq
/// is taken (the next good send gets lastSeq + 1); no participant hears of it (no message,
/// typing, receipt or located presence); and what members read back is unchanged.
@Suite(.serialized) struct ContractWebSocketErrorsTests {
    /// The error a command got, or nil when it succeeded.
    static func refusal(_ work: () async throws -> Void) async -> ClientError? {
        do {
            try await work()
            return nil
        } catch let error as ClientError {
            return error
        } catch {
            return ClientError(kind: .decoding, message: "\(error)")
        }
    }

    /// Events that would tell `listener` something about `user`'s refused commands.
    static func leaked(_ events: [ServerEvent], from user: EntityID) -> [ServerEvent] {
        events.filter { event in
            switch event {
            case .messageCreated(let e), .messageUpdated(let e): e.message.senderId == user
            case .typing(let e): e.userId == user
            case .receipt(let e): e.userId == user
            case .presence(let e): e.userId == user && e.conversationId != nil
            default: false
            }
        }
    }

    /// Waits until `recorder` has alice's typing event: everything the server queued for that
    /// connection before it has arrived too.
    static func barrier(_ world: ContractWorld, _ socket: RealtimeConnection, _ recorder: EventRecorder) async throws {
        try await socket.perform(.typing(.init(conversationId: world.direct.id, isTyping: true)))
        let alice = world.alice.id
        try await recorder.wait(timeout: .seconds(20), "alice's typing") { events in
            events.contains { if case .typing(let e) = $0 { e.userId == alice && e.isTyping } else { false } }
        }
    }

    /// An outsider's open socket must be as powerless as their HTTP requests: no message, typing
    /// indicator, receipt or "looking at this conversation" may reach the members.
    @Test(arguments: StoreKind.available)
    func outsidersCommandsAreNotFoundReachNobodyAndTakeNoSeq(_ kind: StoreKind) async throws {
        let world = try await ContractWorld.build(kind)
        defer { Task { await world.server.stop() } }
        let bobSocket = try await world.bob.connect()
        let bobEvents = EventRecorder(bobSocket)
        let aliceSocket = try await world.alice.connect()
        let before = try await world.snapshot()
        let ghost = EntityID()
        for outsider in [world.mallory, world.carol, world.erin] {
            let socket = try await outsider.connect()
            for conversation in [world.direct.id, world.group.id, ghost] {
                let commands: [(String, () async throws -> Void)] = [
                    ("send", { _ = try await socket.sendMessage(.init(conversationId: conversation, clientMessageId: "ws-\(conversation)", text: "hi")) }),
                    ("reply", { _ = try await socket.sendMessage(.init(
                        conversationId: conversation, clientMessageId: "re-\(conversation)", text: "re", replyToId: world.directMessages[0].id)) }),
                    ("typing", { try await socket.perform(.typing(.init(conversationId: conversation, isTyping: true))) }),
                    ("typing stop", { try await socket.perform(.typing(.init(conversationId: conversation, isTyping: false))) }),
                    ("read", { _ = try await socket.read(.init(conversationId: conversation, upToSeq: 99)) }),
                    ("read ids", { _ = try await socket.read(.init(conversationId: conversation, messageIds: [world.directMessages[1].id])) }),
                    ("delivered", { try await socket.perform(.delivered(.init(conversationId: conversation, upToSeq: 99))) }),
                    ("focus", { try await socket.perform(.focus(.init(conversationId: conversation))) }),
                ]
                for (name, command) in commands {
                    let context = "\(outsider.auth.user.email) \(name) into \(conversation)"
                    let error = await Self.refusal(command)
                    #expect(error?.code == .notFound, "\(context): \(String(describing: error))")
                    #expect(error?.message.isEmpty == false, "\(context)")
                    for secret in ContractWorld.secrets where error?.message.contains(secret) == true {
                        Issue.record("\(context): the error shows \(secret)")
                    }
                }
            }
            // Still usable: a ping answers and the outsider's own conversations still work.
            try await socket.ping()
            if outsider.id == world.mallory.id {
                let own = try await socket.sendMessage(.init(conversationId: world.evil.id, clientMessageId: "own", text: "mine"))
                #expect(own.seq == 2)
            }
            #expect(await socket.closedReason == nil)
            await socket.close()
        }
        try await Self.barrier(world, aliceSocket, bobEvents)
        for outsider in [world.mallory, world.carol, world.erin] {
            let leaked = Self.leaked(bobEvents.events, from: outsider.id)
            #expect(leaked.isEmpty, "\(outsider.auth.user.email): \(leaked.map(\.type))")
        }
        var after = try await world.snapshot()
        // Mallory's own message is the one change; everything of alice and bob is as it was.
        after.lists[4] = before.lists[4]
        after.histories[2] = before.histories[2]
        #expect(after == before)
        let next = try await aliceSocket.sendMessage(.init(conversationId: world.direct.id, clientMessageId: "next", text: "next"))
        #expect(next.seq == world.direct.lastSeq + 6, "seq \(next.seq): a refused command took a seq")
        await aliceSocket.close()
        await bobSocket.close()
    }

    /// A member's malformed or refused commands, frame by frame as a buggy client sends them:
    /// the exact code, the reply addressed to the frame, and nothing stored or moved.
    @Test func badFieldsFromAMemberGetTheirCodeAndChangeNothing() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let socket = try await world.alice.connect()
        let probe = RawFrameProbe(socket)
        let c = world.direct.id
        let ghost = EntityID()
        let evilMessage = world.evilMessage.id
        func send(_ data: String) -> String { #"{"type":"message.send","data":{"conversationId":"\#(c)",\#(data)}}"# }
        let frames: [(String, ErrorCode)] = [
            (send(#""clientMessageId":"b1","text":""#), .invalidRequest),
            (send(#""clientMessageId":"b2","text":"   \n""#), .invalidRequest),
            (send(#""clientMessageId":"b3","text":null"#), .invalidRequest),
            (send(#""clientMessageId":"b4","text":"\#(String(repeating: "x", count: 5001))""#), .invalidRequest),
            (send(#""clientMessageId":"","text":"x""#), .invalidRequest),
            (send(#""text":"no client id""#), .invalidRequest),
            (send(#""clientMessageId":"b5","text":"x","type":"system""#), .invalidRequest),
            (send(#""clientMessageId":"b6","text":"x","type":"sticker""#), .invalidRequest),
            (send(#""clientMessageId":"b7","text":"x","replyToId":"\#(ghost)""#), .invalidRequest),
            (send(#""clientMessageId":"b8","text":"x","replyToId":"\#(evilMessage)""#), .invalidRequest),
            (send(#""clientMessageId":"b9","forwardOf":"\#(evilMessage)""#), .notFound),
            (send(#""clientMessageId":"b10","text":"","type":"image","attachmentId":"\#(world.evilAttachment.id)""#), .invalidRequest),
            (send(#""clientMessageId":"b11","text":"x","metadata":{"k":1}"#), .invalidRequest),
            (#"{"type":"message.send","data":{"conversationId":"\#(world.group.id)","clientMessageId":"d1","text":"reused"}}"#, .conflict),
            (#"{"type":"message.send","data":{"conversationId":"\#(ghost)","clientMessageId":"b12","text":"x"}}"#, .notFound),
            (#"{"type":"message.send","data":{"conversationId":42,"clientMessageId":"b13","text":"x"}}"#, .invalidRequest),
            (#"{"type":"message.send","data":{"conversationId":"\#(world.evil.id)","clientMessageId":"b14","text":"x"}}"#, .notFound),
            (#"{"type":"typing","data":{"conversationId":"\#(c)","isTyping":"yes"}}"#, .invalidRequest),
            (#"{"type":"typing","data":{"conversationId":"\#(c)"}}"#, .invalidRequest),
            (#"{"type":"typing","data":{"isTyping":true}}"#, .invalidRequest),
            (#"{"type":"typing","data":{"conversationId":"\#(ghost)","isTyping":true}}"#, .notFound),
            (#"{"type":"read","data":{"conversationId":"\#(c)","upToSeq":-1}}"#, .invalidRequest),
            (#"{"type":"read","data":{"conversationId":"\#(c)","upToSeq":"3"}}"#, .invalidRequest),
            (#"{"type":"read","data":{"conversationId":"\#(c)"}}"#, .invalidRequest),
            (#"{"type":"read","data":{"conversationId":"\#(c)","messageIds":[]}}"#, .invalidRequest),
            (#"{"type":"read","data":{"conversationId":"\#(c)","messageIds":["\#(evilMessage)"]}}"#, .invalidRequest),
            (#"{"type":"read","data":{"conversationId":"\#(c)","upToSeq":2,"messageIds":["\#(world.directMessages[1].id)"]}}"#, .invalidRequest),
            (#"{"type":"read","data":{"upToSeq":2}}"#, .invalidRequest),
            (#"{"type":"read","data":{"conversationId":"\#(world.evil.id)","upToSeq":1}}"#, .notFound),
            (#"{"type":"delivered","data":{"conversationId":"\#(c)","upToSeq":-1}}"#, .invalidRequest),
            (#"{"type":"delivered","data":{"conversationId":"\#(c)"}}"#, .invalidRequest),
            (#"{"type":"delivered","data":{"conversationId":"\#(ghost)","upToSeq":1}}"#, .notFound),
            (#"{"type":"focus","data":{"conversationId":"nope"}}"#, .invalidRequest),
            (#"{"type":"focus","data":{"conversationId":"\#(ghost)"}}"#, .notFound),
            (#"{"type":"focus","data":{"conversationId":"\#(world.evil.id)"}}"#, .notFound),
            (#"{"type":"message.edit","data":{"conversationId":"\#(c)","messageId":"\#(world.directMessages[0].id)","text":"x"}}"#, .invalidRequest),
        ]
        var before = try await world.snapshot()
        for (index, frame) in frames.enumerated() {
            let id = "bad-\(index)"
            let text = "{\"id\":\"\(id)\"," + frame.0.dropFirst()
            let reply = try await probe.send(text)
            let context = "frame \(index): \(text.prefix(140))"
            #expect(reply.replyTo == id, "\(context)")
            #expect(!reply.ok && reply.error?.code == frame.1, "\(context): \(String(describing: reply.error))")
            #expect(reply.error?.message.isEmpty == false, "\(context)")
            expectNoSecret(reply.error?.message ?? "", context)
            let after = try await world.snapshot()
            #expect(after == before, "\(context) changed something")
            before = after
        }
        try await socket.ping()
        let next = try await socket.sendMessage(.init(conversationId: c, clientMessageId: "after-bad", text: "fine"))
        #expect(next.seq == world.direct.lastSeq + 6)
        await socket.close()
    }

    func expectNoSecret(_ message: String, _ context: String) {
        for secret in ContractWorld.secrets where message.contains(secret) {
            Issue.record("\(context): the error shows \(secret)")
        }
    }

    /// A member removed while connected must lose the conversation on that same socket at
    /// once: a server that checked membership only when the socket opened would let them post.
    @Test func aMemberRemovedWhileConnectedIsRefusedOnTheSameSocket() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let group = world.group.id
        _ = try await world.alice.api.addParticipants(group, userIds: [world.carol.id])
        let carolSocket = try await world.carol.connect()
        let bobSocket = try await world.bob.connect()
        let bobEvents = EventRecorder(bobSocket)
        let aliceSocket = try await world.alice.connect()
        let joined = try await carolSocket.sendMessage(.init(conversationId: group, clientMessageId: "in", text: "I am in"))
        _ = try await world.alice.api.removeParticipant(group, userId: world.carol.id)
        let lastSeq = try await world.alice.api.conversation(group).lastSeq
        #expect(lastSeq == joined.seq + 1)
        let commands: [(String, () async throws -> Void)] = [
            ("send", { _ = try await carolSocket.sendMessage(.init(conversationId: group, clientMessageId: "out", text: "still here?")) }),
            ("retry of the earlier send", { _ = try await carolSocket.sendMessage(.init(conversationId: group, clientMessageId: "in", text: "I am in")) }),
            ("typing", { try await carolSocket.perform(.typing(.init(conversationId: group, isTyping: true))) }),
            ("read", { _ = try await carolSocket.read(.init(conversationId: group, upToSeq: lastSeq)) }),
            ("delivered", { try await carolSocket.perform(.delivered(.init(conversationId: group, upToSeq: lastSeq))) }),
            ("focus", { try await carolSocket.perform(.focus(.init(conversationId: group))) }),
        ]
        for (name, command) in commands {
            let error = await Self.refusal(command)
            #expect(error?.code == .notFound, "\(name): \(String(describing: error))")
        }
        try await Self.barrier(world, aliceSocket, bobEvents)
        let leaked = Self.leaked(bobEvents.events, from: world.carol.id).filter {
            if case .messageCreated(let e) = $0 { e.message.clientMessageId != "in" } else { true }
        }
        #expect(leaked.isEmpty, "\(leaked.map(\.type))")
        #expect(try await world.alice.api.conversation(group).lastSeq == lastSeq)
        let members = try await world.alice.api.conversation(group).members.map(\.userId)
        #expect(!members.contains(world.carol.id))
        for socket in [carolSocket, bobSocket, aliceSocket] { await socket.close() }
    }

    /// A member's sends racing their removal: each either lands before the removal's system
    /// message or is refused with `not_found`; none is stored after it (a message from someone
    /// already out of the group), and the sequence stays gapless.
    @Test func sendsRacingTheSendersRemovalLandBeforeItOrNotAtAll() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        for round in 0..<4 {
            let group = try await world.alice.api.createConversation(
                .init(type: .group, participantIds: [world.bob.id], name: "race \(round)"))
            let bobSocket = try await world.bob.connect()
            let sends = (0..<24).map { SendMessageRequest(conversationId: group.id, clientMessageId: "race-\(round)-\($0)", text: "r\($0)") }
            async let outcomes = withTaskGroup(of: Result<Message, ClientError>?.self) { tasks in
                for request in sends {
                    tasks.addTask {
                        do { return .success(try await bobSocket.sendMessage(request)) } catch let error as ClientError {
                            return .failure(error)
                        } catch { return nil }
                    }
                }
                var all: [Result<Message, ClientError>?] = []
                for await outcome in tasks { all.append(outcome) }
                return all
            }
            let removed = try await world.alice.api.removeParticipant(group.id, userId: world.bob.id)
            let results = await outcomes
            let history = try await world.alice.api.messages(group.id, limit: 200).messages
            let removal = try #require(history.first { $0.type == .system && $0.metadata?["action"] == "participant.removed" })
            var accepted: [Message] = []
            for result in results {
                switch result {
                case .success(let message): accepted.append(message)
                case .failure(let error): #expect(error.code == .notFound, "round \(round): \(error)")
                case nil: Issue.record("round \(round): a send failed without a contract error")
                }
            }
            #expect(accepted.allSatisfy { $0.seq < removal.seq }, "round \(round): stored after the removal: \(accepted.map(\.seq)) vs \(removal.seq)")
            #expect(history.map(\.seq) == Array(1...Int64(history.count)), "round \(round): \(history.map(\.seq))")
            #expect(history.filter { $0.senderId == world.bob.id }.map(\.id).sorted() == accepted.map(\.id).sorted())
            #expect(removed.lastSeq == removal.seq && !removed.participantIds.contains(world.bob.id))
            await bobSocket.close()
        }
    }

    /// Sends pipelined on two sockets, good ones mixed with refused ones (unknown and foreign
    /// conversations, empty text, a reused id, a foreign reply): the good ones take exactly the
    /// next seqs with no gap, every refused one gets its code, and history holds exactly the
    /// good ones. A refused send that burnt a seq would look like a lost message to every client.
    @Test(arguments: [UInt64(7), 20261125])
    func pipelinedRefusedSendsAmongGoodOnesLeaveNoGap(_ seed: UInt64) async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let c = world.direct.id
        let start = try await world.alice.api.conversation(c).lastSeq
        let sockets = [try await world.alice.connect(), try await world.bob.connect()]
        var random = SeededGenerator(seed: seed)
        struct Planned: Sendable {
            var socket: Int
            var request: SendMessageRequest
            var expected: ErrorCode?
        }
        var plan: [Planned] = []
        for index in 0..<80 {
            let socket = Int.random(in: 0...1, using: &random)
            let id = "p\(seed)-\(index)"
            let kinds: [(SendMessageRequest, ErrorCode?)] = [
                (.init(conversationId: c, clientMessageId: id, text: "good \(index)"), nil),
                (.init(conversationId: c, clientMessageId: id, text: "good again \(index)"), nil),
                (.init(conversationId: EntityID(), clientMessageId: id, text: "nowhere"), .notFound),
                (.init(conversationId: world.evil.id, clientMessageId: id, text: "foreign"), .notFound),
                (.init(conversationId: c, clientMessageId: id, text: "  "), .invalidRequest),
                (.init(conversationId: c, clientMessageId: id, text: "re", replyToId: world.evilMessage.id), .invalidRequest),
                (.init(conversationId: world.group.id, clientMessageId: socket == 0 ? "d1" : "d2", text: "reused"), .conflict),
            ]
            let (request, expected) = kinds[Int.random(in: 0..<kinds.count, using: &random)]
            plan.append(Planned(socket: socket, request: request, expected: expected))
        }
        let outcomes = try await withThrowingTaskGroup(of: (Int, Result<Message, ClientError>).self) { group in
            for (index, item) in plan.enumerated() {
                let socket = sockets[item.socket]
                group.addTask {
                    do {
                        return (index, .success(try await socket.sendMessage(item.request)))
                    } catch let error as ClientError {
                        return (index, .failure(error))
                    }
                }
            }
            var all: [Int: Result<Message, ClientError>] = [:]
            for try await (index, outcome) in group { all[index] = outcome }
            return all
        }
        var stored: [Int64: String] = [:]
        for (index, item) in plan.enumerated() {
            switch outcomes[index] {
            case .success(let message):
                #expect(item.expected == nil, "\(index): \(item.request.text) was accepted")
                stored[message.seq] = message.text
            case .failure(let error):
                #expect(error.code == item.expected, "\(index): \(item.request.text): \(error)")
            case nil:
                Issue.record("\(index): no reply")
            }
        }
        let goods = plan.count(where: { $0.expected == nil })
        #expect(stored.count == goods)
        #expect(stored.keys.sorted() == Array((start + 1)...(start + Int64(goods))), "seqs \(stored.keys.sorted())")
        let history = try await world.bob.api.messages(c, after: start, limit: 200).messages
        #expect(Dictionary(uniqueKeysWithValues: history.map { ($0.seq, $0.text) }) == stored)
        #expect(try await world.alice.api.conversation(c).lastSeq == start + Int64(goods))
        #expect(try await world.alice.api.conversation(world.group.id).lastSeq == world.group.lastSeq + 2)
        for socket in sockets { await socket.close() }
    }
}
