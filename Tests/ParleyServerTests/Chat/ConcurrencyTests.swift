import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing
import ParleySQLite

/// The invariants under concurrent senders: gapless seq, exactly once, acknowledged means stored.
@Suite struct ConcurrencyTests {
    @Test func fortyConcurrentSendsOverHTTPAndWebSocketAreGaplessAndUnique() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let users = try await withThrowingTaskGroup(of: TestUser.self) { group in
            for index in 0..<4 { group.addTask { try await server.register("u\(index)@x.io") } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let conversation = try await users[0].api.createConversation(
            .init(type: .group, participantIds: users.dropFirst().map(\.id), name: "load"))
        var sockets: [RealtimeConnection] = []
        for user in users { sockets.append(try await user.connect()) }
        let watcher = EventRecorder(try await users[1].connect())

        let messages = try await withThrowingTaskGroup(of: Message.self) { group in
            for index in 0..<40 {
                let user = users[index % users.count]
                let socket = sockets[index % sockets.count]
                let request = SendMessageRequest(conversationId: conversation.id, clientMessageId: "c-\(index)", text: "message \(index)")
                group.addTask {
                    index.isMultiple(of: 2)
                        ? try await socket.sendMessage(request)
                        : try await user.api.send(request, to: conversation.id)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(messages.map(\.seq).sorted() == Array(1...40))
        #expect(Set(messages.map(\.id)).count == 40)
        let history = try await users[2].api.messages(conversation.id, limit: 200)
        #expect(history.messages.map(\.seq) == Array(1...40))
        #expect(Set(history.messages.map(\.clientMessageId)).count == 40)
        let events = try await watcher.wait { $0.count >= 40 }
        let delivered = watcher.createdMessages
        #expect(delivered.count == 40 && Set(delivered.map(\.seq)).count == 40, "\(events.count) events")
        for socket in sockets { await socket.close() }
    }

    @Test func concurrentRetriesOfOneClientMessageIdStoreOneMessage() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let sockets = [try await alice.connect(), try await alice.connect()]
        let bobEvents = EventRecorder(try await bob.connect())
        let request = SendMessageRequest(conversationId: direct.id, clientMessageId: "same", text: "only once")
        let results = try await withThrowingTaskGroup(of: Message.self) { group in
            for index in 0..<20 {
                group.addTask {
                    switch index % 3 {
                    case 0: try await sockets[0].sendMessage(request)
                    case 1: try await sockets[1].sendMessage(request)
                    default: try await alice.api.send(request, to: direct.id)
                    }
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(Set(results.map(\.id)).count == 1)
        #expect(try await bob.api.conversation(direct.id).lastSeq == 1)
        let marker = try await alice.api.send(.init(clientMessageId: "after", text: "x"), to: direct.id)
        try await bobEvents.wait { events in events.contains { $0 == .messageCreated(.init(message: marker)) } }
        #expect(bobEvents.createdMessages.map(\.clientMessageId) == ["same", "after"])
        for socket in sockets { await socket.close() }
    }

    @Test func storeSequenceIsGaplessUnderManyConcurrentWriters() async throws {
        let directory = TestServer.temporaryDirectory()
        let store = try SQLiteStore(path: directory + "/store.sqlite")
        let now = Date()
        let users = try await (0..<8).asyncMap { index in
            try await store.register(organization: "acme", email: "w\(index)@x.io", displayName: "W\(index)", passwordHash: "x", now: now)
        }
        let change = try await store.createConversation(NewConversation(
            organizationId: users[0].organizationId, creatorId: users[0].id, type: .group, name: "g",
            participantIds: users.map(\.id), now: now))
        let id = change.conversation.id
        try await withThrowingTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    for index in 0..<50 {
                        _ = try await store.send(MessageDraft(
                            conversationId: id, senderId: users[writer].id, clientMessageId: "w\(writer)-\(index)",
                            type: .text, text: "t", now: Date()))
                        // Every third send is retried at once, as an outbox would after a lost reply.
                        if index % 3 == 0 {
                            let again = try await store.send(MessageDraft(
                                conversationId: id, senderId: users[writer].id, clientMessageId: "w\(writer)-\(index)",
                                type: .text, text: "t", now: Date()))
                            #expect(!again.created)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let changes = try await store.changes(conversationId: id, viewer: users[0].id, since: 0, limit: 500)
        #expect(changes.lastSeq == 400)
        #expect(changes.messages.map(\.seq) == Array(1...400))
        // Per sender, the order of its own sends is kept.
        for writer in 0..<8 {
            let own = changes.messages.filter { $0.senderId == users[writer].id }.map(\.clientMessageId)
            #expect(own == (0..<50).map { "w\(writer)-\($0)" })
        }
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
