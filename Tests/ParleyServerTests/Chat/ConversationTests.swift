import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

@Suite struct ConversationTests {
    @Test func directConversationsAreOnePerPair() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let body = #"{"type":"direct","participantIds":["\#(bob.id)"]}"#
        let first = try await server.raw("POST", "conversations", token: alice.token, json: body)
        #expect(first.status == 201)
        let again = try await server.raw("POST", "conversations", token: alice.token, json: body)
        #expect(again.status == 200)
        let reverse = try await server.raw(
            "POST", "conversations", token: bob.token, json: #"{"type":"direct","participantIds":["\#(alice.id)"]}"#)
        #expect(reverse.status == 200)
        let decoder = WireCoding.makeDecoder()
        let ids = try [first, again, reverse].map { try decoder.decode(Conversation.self, from: $0.body).id }
        #expect(Set(ids).count == 1)
        let conversation = try decoder.decode(Conversation.self, from: first.body)
        #expect(conversation.type == .direct && conversation.name == nil && conversation.lastSeq == 0)
        #expect(Set(conversation.participantIds) == [alice.id, bob.id])
        #expect(conversation.members.allSatisfy { $0.readSeq == 0 && $0.deliveredSeq == 0 })
    }

    @Test func concurrentDirectOpensCreateOneConversation() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let ids = try await withThrowingTaskGroup(of: EntityID.self) { group in
            for index in 0..<10 {
                let (me, other) = index.isMultiple(of: 2) ? (alice, bob) : (bob, alice)
                group.addTask { try await me.api.createConversation(.init(type: .direct, participantIds: [other.id])).id }
            }
            return try await group.reduce(into: Set<EntityID>()) { $0.insert($1) }
        }
        #expect(ids.count == 1)
    }

    @Test(arguments: [
        #"{"type":"direct","participantIds":[]}"#,
        #"{"type":"direct","participantIds":["SELF"]}"#,
        #"{"type":"direct","participantIds":["OTHER","OTHER2"]}"#,
        #"{"type":"direct","participantIds":["OTHER"],"name":"x"}"#,
        #"{"type":"channel","participantIds":["OTHER"]}"#,
        #"{"type":"group","participantIds":["not-a-uuid"]}"#,
        #"{"type":"group","participantIds":["OTHER"],"name":"   "}"#,
        #"{"participantIds":["OTHER"]}"#,
    ])
    func invalidConversationsAreRejected(_ template: String) async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let carol = try await server.register("carol@x.io")
        let body = template.replacingOccurrences(of: "SELF", with: alice.id.description)
            .replacingOccurrences(of: "OTHER2", with: carol.id.description)
            .replacingOccurrences(of: "OTHER", with: bob.id.description)
        let answer = try await server.raw("POST", "conversations", token: alice.token, json: body)
        #expect(answer.status == 400 && errorCode(answer.body) == .invalidRequest, "\(body)")
        #expect(try await alice.api.conversations().isEmpty)
    }

    @Test func groupsRenameAndChangeMembersWithSystemMessages() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let carol = try await server.register("carol@x.io")
        let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id, bob.id], name: " Team "))
        #expect(group.name == "Team" && Set(group.participantIds) == [alice.id, bob.id])

        let renamed = try await bob.api.rename(group.id, to: "Launch")
        #expect(renamed.name == "Launch" && renamed.lastSeq == 1)
        let same = try await bob.api.rename(group.id, to: "Launch")
        #expect(same.lastSeq == 1, "a rename that changes nothing takes no seq")
        let added = try await alice.api.addParticipants(group.id, userIds: [carol.id, bob.id])
        #expect(Set(added.participantIds) == [alice.id, bob.id, carol.id] && added.lastSeq == 2)
        let removed = try await carol.api.removeParticipant(group.id, userId: bob.id)
        #expect(Set(removed.participantIds) == [alice.id, carol.id] && removed.lastSeq == 3)

        let history = try await alice.api.messages(group.id)
        #expect(history.messages.map(\.seq) == [1, 2, 3])
        #expect(history.messages.allSatisfy { $0.type == .system })
        #expect(history.messages.map(\.senderId) == [bob.id, alice.id, carol.id])
        #expect(history.messages[0].metadata?["name"] == "Launch")
        // System messages are not unread for anyone.
        #expect(try await alice.api.conversation(group.id).unreadCount == 0)
    }

    @Test func directConversationsCannotBeChanged() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let carol = try await server.register("carol@x.io")
        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        let rename = try await server.raw("PATCH", "conversations/\(direct.id)", token: alice.token, json: #"{"name":"x"}"#)
        #expect(rename.status == 400)
        let add = try await server.raw(
            "POST", "conversations/\(direct.id)/participants", token: alice.token, json: #"{"userIds":["\#(carol.id)"]}"#)
        #expect(add.status == 400)
        let remove = try await server.raw("DELETE", "conversations/\(direct.id)/participants/\(bob.id)", token: alice.token)
        #expect(remove.status == 400)
        #expect(try await alice.api.conversation(direct.id).lastSeq == 0)
    }

    @Test func listIsNewestActivityFirstWithLastMessageAndUnread() async throws {
        let clock = ManualClock()
        let server = try await TestServer.start { $0.clock = clock.serverClock }
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let carol = try await server.register("carol@x.io")
        let withBob = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        let withCarol = try await alice.api.createConversation(.init(type: .direct, participantIds: [carol.id]))
        _ = try await bob.api.send(.init(clientMessageId: "b1", text: "one"), to: withBob.id)
        _ = try await bob.api.send(.init(clientMessageId: "b2", text: "two"), to: withBob.id)
        clock.advance(by: 1)
        _ = try await carol.api.send(.init(clientMessageId: "c1", text: "hey"), to: withCarol.id)
        let list = try await alice.api.conversations()
        #expect(list.map(\.id) == [withCarol.id, withBob.id])
        #expect(list[1].lastMessage?.text == "two" && list[1].unreadCount == 2 && list[1].lastSeq == 2)
        #expect(list[0].unreadCount == 1)
        // The sender's own messages are never unread for them.
        #expect(try await bob.api.conversation(withBob.id).unreadCount == 0)
    }

    @Test func malformedPathIdsAreNotFound() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        for path in ["conversations/nope", "conversations/1%27%20OR%201=1", "conversations/\(EntityID())/messages"] {
            let answer = try await server.raw("GET", path, token: alice.token)
            #expect(answer.status == 404 && errorCode(answer.body) == .notFound, "\(path)")
        }
        let route = try await server.raw("GET", "no/such/route", token: alice.token)
        #expect(route.status == 404 && errorCode(route.body) == .notFound)
    }
}
