import Foundation
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing

/// What a read's answer carries: the reader's watermark, their unread count, and the
/// conversation's `lastSeq` the count was taken at. A client uses that seq to tell which
/// events the count already holds, so it must be the seq of the very snapshot the count was
/// taken from, on both stores, also while sends go on in the same conversation.
@Suite(.serialized) struct ReadAnswerTests {
    static let now = Date(timeIntervalSince1970: 1_761_000_000)

    /// Bob's unread count by brute force: others' messages, not system, not deleted, above his watermark.
    static func bruteUnread(_ messages: [Message], reader: EntityID, readSeq: Int64, upTo lastSeq: Int64) -> Int {
        messages.filter {
            $0.seq > readSeq && $0.seq <= lastSeq && $0.senderId != reader && $0.type != .system && $0.deletedAt == nil
        }.count
    }

    static func everything(_ store: any ParleyStore, _ id: EntityID, viewer: EntityID) async throws -> [Message] {
        try await store.messages(conversationId: id, viewer: viewer, before: nil, after: nil, limit: Limits.messagesPageMax).messages
    }

    /// Seeded histories in a group (sends by everyone, Bob's own, system lines from renames,
    /// deletes) with Bob's reads by seq (below his watermark, above the last seq) and by ids, and
    /// delivery receipts: every answer's seq is the conversation's last seq, its count is the
    /// brute-force count at that seq and watermark, and the view read just after agrees.
    @Test(arguments: StoreKind.available, [UInt64(1), 2, 3])
    func everyAnswerCarriesTheSeqItsCountWasTakenAt(kind: StoreKind, seed: UInt64) async throws {
        try await withStore(kind) { store, _ in
            var random = SeededGenerator(seed: seed)
            let scene = try await StoreTransactionConformanceTests.scene(store)
            let (alice, bob, carol) = (scene.alice.id, scene.bob.id, scene.carol.id)
            let group = try await store.createConversation(NewConversation(
                organizationId: scene.alice.organizationId, creatorId: alice, type: .group, name: "g",
                participantIds: [bob, carol], now: Self.now)).conversation
            let id = group.id
            var watermark: Int64 = 0
            var reads = 0
            for step in 0..<70 {
                let lastSeq = try #require(try await store.conversation(id: id, viewer: bob)).lastSeq
                let roll = Int.random(in: 0..<12, using: &random)
                switch lastSeq == 0 ? 0 : roll {
                case 0..<3:
                    let sender = [alice, carol, bob].randomElement(using: &random)!
                    _ = try await store.send(MessageDraft(
                        conversationId: id, senderId: sender, clientMessageId: "s\(seed)-\(step)", type: .text, text: "m\(step)", now: Self.now))
                case 3:
                    _ = try await store.rename(conversationId: id, by: alice, to: "g\(step)", now: Self.now)
                case 4:
                    let live = try await Self.everything(store, id, viewer: alice).filter { $0.deletedAt == nil && $0.type != .system }
                    guard let victim = live.randomElement(using: &random) else { continue }
                    _ = try await store.change(.delete, messageId: victim.id, in: id, by: victim.senderId, now: Self.now)
                case 5:
                    let delivered = try await store.markDelivered(conversationId: id, userId: bob, upToSeq: Int64.random(in: 0...lastSeq + 2, using: &random))
                    #expect(delivered.lastSeq == lastSeq, "seed \(seed) step \(step): a delivery receipt's seq")
                default:
                    let change: WatermarkChange
                    let target: Int64
                    if Bool.random(using: &random) {
                        target = Int64.random(in: 0...lastSeq + 3, using: &random)
                        change = try await store.markRead(conversationId: id, userId: bob, upToSeq: target, messageIds: nil)
                    } else {
                        let picked = try await Self.everything(store, id, viewer: bob).shuffled(using: &random).prefix(3)
                        guard !picked.isEmpty else { continue }
                        target = picked.map(\.seq).max()!
                        change = try await store.markRead(conversationId: id, userId: bob, upToSeq: nil, messageIds: picked.map(\.id))
                    }
                    reads += 1
                    watermark = max(watermark, min(target, lastSeq))
                    let messages = try await Self.everything(store, id, viewer: bob)
                    let label = "seed \(seed) step \(step) (\(kind)): read to \(target) at \(lastSeq)"
                    #expect(change.lastSeq == lastSeq, "\(label)")
                    #expect(change.member.readSeq == watermark, "\(label)")
                    #expect(change.unreadCount == Self.bruteUnread(messages, reader: bob, readSeq: watermark, upTo: lastSeq), "\(label)")
                    let view = try #require(try await store.conversation(id: id, viewer: bob))
                    #expect(view.lastSeq == change.lastSeq && view.readSeq == change.member.readSeq && view.unreadCount == change.unreadCount, "\(label)")
                }
            }
            #expect(reads > 10, "seed \(seed): too few reads to mean anything")
        }
    }

    /// Reads racing sends in the same conversation (one lane of the group commit): each answer's
    /// count is exactly the count at the seq it names, never one taken before or after it.
    @Test(arguments: StoreKind.available)
    func answersTakenWhileMessagesArriveNameTheSeqOfTheirCount(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let scene = try await StoreTransactionConformanceTests.scene(store)
            let id = scene.direct.id
            let base = try #require(try await store.conversation(id: id, viewer: scene.bob.id)).lastSeq
            let answers = try await withThrowingTaskGroup(of: WatermarkChange?.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        _ = try await store.send(StoreTransactionConformanceTests.draft(scene, "race-\(index)", text: "\(index)"))
                        return nil
                    }
                    if index % 2 == 0 {
                        group.addTask {
                            try await store.markRead(conversationId: id, userId: scene.bob.id, upToSeq: base + Int64(index / 2), messageIds: nil)
                        }
                    }
                }
                var answers: [WatermarkChange] = []
                for try await answer in group { if let answer { answers.append(answer) } }
                return answers
            }
            #expect(answers.count == 20)
            let messages = try await Self.everything(store, id, viewer: scene.bob.id)
            #expect(messages.count == 40)
            for answer in answers {
                #expect(answer.lastSeq >= base && answer.lastSeq <= base + 40)
                #expect(answer.member.readSeq <= answer.lastSeq)
                #expect(
                    answer.unreadCount == Self.bruteUnread(messages, reader: scene.bob.id, readSeq: answer.member.readSeq, upTo: answer.lastSeq),
                    "\(kind): read \(answer.member.readSeq) at \(answer.lastSeq)")
            }
        }
    }

    /// Over HTTP and the WebSocket the answer carries `lastSeq` (the conversation's, also for a
    /// read below the watermark), the OpenAPI document lists it as optional, and an old client's
    /// two fields are unchanged.
    @Test func theWireAnswerCarriesLastSeqOnBothTransports() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        for index in 1...5 { _ = try await alice.api.send(.init(clientMessageId: "a\(index)", text: "\(index)"), to: direct.id) }
        let http = try await server.raw("POST", "conversations/\(direct.id)/read", token: bob.token, json: #"{"upToSeq":2}"#)
        #expect(http.status == 200)
        let json = try #require(try JSONSerialization.jsonObject(with: http.body) as? [String: Any])
        #expect(json.keys.sorted() == ["lastSeq", "readSeq", "unreadCount"])
        #expect((json["lastSeq"] as? NSNumber)?.int64Value == 5)
        #expect((json["readSeq"] as? NSNumber)?.int64Value == 2 && (json["unreadCount"] as? NSNumber)?.intValue == 3)

        let socket = try await bob.connect()
        let below: ReadResponse = try await socket.send(.read(.init(conversationId: direct.id, upToSeq: 1)))
        #expect(below.readSeq == 2 && below.unreadCount == 3 && below.lastSeq == 5, "a read below the watermark still says its seq")
        _ = try await alice.api.send(.init(clientMessageId: "a6", text: "6"), to: direct.id)
        let ids: ReadResponse = try await socket.send(.read(.init(conversationId: direct.id, upToSeq: 4)))
        #expect(ids.readSeq == 4 && ids.unreadCount == 2 && ids.lastSeq == 6)
        await socket.close()

        let document = try await server.raw("GET", "openapi.json")
        let root = try #require(try JSONSerialization.jsonObject(with: document.body) as? [String: Any])
        let schema = try #require(((root["components"] as? [String: Any])?["schemas"] as? [String: Any])?["ReadResponse"] as? [String: Any])
        #expect((schema["properties"] as? [String: Any])?.keys.sorted() == ["lastSeq", "readSeq", "unreadCount"])
        #expect((schema["required"] as? [String])?.sorted() == ["readSeq", "unreadCount"], "lastSeq stays optional: older servers leave it out")
    }

    /// The whole path with a real server: the SDK's cache takes a real read answer that is ahead
    /// of its row (race 1) and a real view that is behind it (race 2), and its badge ends at the
    /// server's count each time.
    @Test func theSDKsBadgeFollowsRealAnswersAndViewsInEitherOrder() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let database = try LocalDatabase.inMemory()
        var sent: [Message] = []
        for index in 1...3 { sent.append(try await alice.api.send(.init(clientMessageId: "a\(index)", text: "\(index)"), to: direct.id)) }
        try await database.store(conversation: try await bob.api.conversation(direct.id))
        #expect(try await database.conversation(direct.id)?.unreadCount == 3)

        // Race 1: two more messages, then Bob reads up to 3; the answer comes before their events.
        for index in 4...5 { sent.append(try await alice.api.send(.init(clientMessageId: "a\(index)", text: "\(index)"), to: direct.id)) }
        let answer = try await bob.api.markRead(direct.id, upToSeq: 3)
        #expect(answer.lastSeq == 5 && answer.unreadCount == 2)
        try await database.apply(ownRead: answer, in: direct.id, userId: bob.id)
        for message in sent[3...] { _ = try await database.applyToListRow(message, changeSeq: message.seq, viewer: bob.id) }
        var row = try #require(try await database.conversation(direct.id))
        #expect(row.lastSeq == 5 && row.readSeq == 3 && row.unreadCount == 2)

        // Race 2: Bob reads everything on another device; the view is read, then message 6 is
        // sent and its event applied before the view arrives.
        _ = try await bob.api.markRead(direct.id, upToSeq: 5)
        let view = try await bob.api.conversation(direct.id)
        let sixth = try await alice.api.send(.init(clientMessageId: "a6", text: "6"), to: direct.id)
        _ = try await database.applyToListRow(sixth, changeSeq: sixth.seq, viewer: bob.id)
        try await database.store(conversation: view)
        row = try #require(try await database.conversation(direct.id))
        let truth = try await bob.api.conversation(direct.id)
        #expect(row.lastSeq == truth.lastSeq && row.readSeq == truth.readSeq && row.unreadCount == truth.unreadCount)
        #expect(row.readSeq == 5 && row.unreadCount == 1)
    }
}
