import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Edit, delete, reactions, forward and search: each change takes a seq and reaches everyone.
@Suite struct MessageOperationTests {
    struct Room {
        let server: TestServer
        let alice: TestUser
        let bob: TestUser
        let conversation: Conversation
        var path: String { "conversations/\(conversation.id)/messages" }
    }

    func room() async throws -> Room {
        let server = try await TestServer.start()
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let conversation = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id], name: "g"))
        return Room(server: server, alice: alice, bob: bob, conversation: conversation)
    }

    func decode<T: Decodable>(_ type: T.Type, _ answer: (status: Int, body: Data)) throws -> T {
        try WireCoding.makeDecoder().decode(T.self, from: answer.body)
    }

    @Test func onlyTheSenderEditsAndEachEditTakesTheNextSeq() async throws {
        let room = try await room()
        defer { Task { await room.server.stop() } }
        let bobEvents = EventRecorder(try await room.bob.connect())
        let original = try await room.alice.api.send(.init(clientMessageId: "e1", text: "helo"), to: room.conversation.id)
        let edited = try await room.server.raw("PATCH", "\(room.path)/\(original.id)", token: room.alice.token, json: #"{"text":" hello "}"#)
        #expect(edited.status == 200)
        let message = try decode(Message.self, edited)
        #expect(message.text == "hello" && message.editedAt != nil && message.seq == 1 && message.updatedSeq == 2)
        let same = try await room.server.raw("PATCH", "\(room.path)/\(original.id)", token: room.alice.token, json: #"{"text":"hello"}"#)
        #expect(try decode(Message.self, same).updatedSeq == 2, "no change, no seq")
        let stranger = try await room.server.raw("PATCH", "\(room.path)/\(original.id)", token: room.bob.token, json: #"{"text":"mine now"}"#)
        #expect(stranger.status == 403 && errorCode(stranger.body) == .forbidden)
        let empty = try await room.server.raw("PATCH", "\(room.path)/\(original.id)", token: room.alice.token, json: #"{"text":"  "}"#)
        #expect(empty.status == 400)
        try await bobEvents.wait { events in
            events.contains { if case .messageUpdated(let e) = $0 { e.message.text == "hello" } else { false } }
        }
        #expect(try await room.bob.api.conversation(room.conversation.id).lastSeq == 2)
    }

    @Test func deleteLeavesATombstoneThatTheChangesFeedShowsOnce() async throws {
        let room = try await room()
        defer { Task { await room.server.stop() } }
        let first = try await room.alice.api.send(.init(clientMessageId: "d1", text: "oops", metadata: ["k": "v"]), to: room.conversation.id)
        _ = try await room.alice.api.send(.init(clientMessageId: "d2", text: "fine"), to: room.conversation.id)
        let bobTry = try await room.server.raw("DELETE", "\(room.path)/\(first.id)", token: room.bob.token)
        #expect(bobTry.status == 403)
        let deleted = try decode(Message.self, try await room.server.raw("DELETE", "\(room.path)/\(first.id)", token: room.alice.token))
        #expect(deleted.text.isEmpty && deleted.deletedAt != nil && deleted.metadata == nil && deleted.updatedSeq == 3)
        let again = try decode(Message.self, try await room.server.raw("DELETE", "\(room.path)/\(first.id)", token: room.alice.token))
        #expect(again.updatedSeq == 3, "deleting a deleted message changes nothing")
        let changes = try await room.bob.api.changes(room.conversation.id, since: 0)
        #expect(changes.messages.map(\.updatedSeq) == [2, 3])
        #expect(changes.messages.filter { $0.id == first.id }.count == 1 && changes.messages.last?.deletedAt != nil)
        let edit = try await room.server.raw("PATCH", "\(room.path)/\(first.id)", token: room.alice.token, json: #"{"text":"back"}"#)
        #expect(edit.status == 400)
        #expect(try await room.bob.api.conversation(room.conversation.id).unreadCount == 1, "a deleted message is not unread")
    }

    @Test func reactionsAreOnePerUserPerEmoji() async throws {
        let room = try await room()
        defer { Task { await room.server.stop() } }
        let message = try await room.alice.api.send(.init(clientMessageId: "r1", text: "party?"), to: room.conversation.id)
        let url = "\(room.path)/\(message.id)/reactions"
        var answer = try await room.server.raw("POST", url, token: room.bob.token, json: #"{"emoji":"🎉"}"#)
        #expect(try decode(Message.self, answer).reactions == ["🎉": [room.bob.id]])
        answer = try await room.server.raw("POST", url, token: room.bob.token, json: #"{"emoji":"🎉"}"#)
        #expect(try decode(Message.self, answer).updatedSeq == 2, "the same reaction twice takes no seq")
        answer = try await room.server.raw("POST", url, token: room.alice.token, json: #"{"emoji":"🎉"}"#)
        #expect(try decode(Message.self, answer).reactions == ["🎉": [room.bob.id, room.alice.id]])
        answer = try await room.server.raw("DELETE", "\(url)/%F0%9F%8E%89", token: room.bob.token)
        #expect(try decode(Message.self, answer).reactions == ["🎉": [room.alice.id]])
        #expect(try decode(Message.self, answer).updatedSeq == 4)
        for bad in [#"{"emoji":""}"#, #"{"emoji":"a b"}"#, #"{"emoji":"waytoolongforanemoji"}"#] {
            #expect(try await room.server.raw("POST", url, token: room.bob.token, json: bad).status == 400, "\(bad)")
        }
        let mallory = try await room.server.register("mallory@x.io", organization: "evil")
        #expect(try await room.server.raw("POST", url, token: mallory.token, json: #"{"emoji":"👀"}"#).status == 404)
    }

    @Test func forwardCopiesIntoAnotherConversationTheCallerIsIn() async throws {
        let room = try await room()
        defer { Task { await room.server.stop() } }
        let carol = try await room.server.register("carol@x.io")
        let source = try await room.bob.api.send(.init(clientMessageId: "f1", text: "worth sharing"), to: room.conversation.id)
        let direct = try await room.alice.api.createConversation(.init(type: .direct, participantIds: [carol.id]))
        let forwarded = try await room.alice.api.send(.init(clientMessageId: "fw", text: "", forwardOf: source.id), to: direct.id)
        #expect(forwarded.text == "worth sharing" && forwarded.forwardedFromId == source.id)
        #expect(forwarded.senderId == room.alice.id && forwarded.conversationId == direct.id && forwarded.seq == 1)
        // Carol cannot forward what she cannot read.
        let withCarol = try await carol.api.createConversation(.init(type: .direct, participantIds: [room.bob.id]))
        let sneaky = try await room.server.raw(
            "POST", "conversations/\(withCarol.id)/messages", token: carol.token, json: #"{"clientMessageId":"x","forwardOf":"\#(source.id)"}"#)
        #expect(sneaky.status == 404)
        let withText = try await room.server.raw(
            "POST", "conversations/\(direct.id)/messages", token: room.alice.token,
            json: #"{"clientMessageId":"y","text":"extra","forwardOf":"\#(source.id)"}"#)
        #expect(withText.status == 400)
    }

    @Test func searchFindsOnlyTheCallersConversationsAndFollowsEdits() async throws {
        let room = try await room()
        defer { Task { await room.server.stop() } }
        let carol = try await room.server.register("carol@x.io")
        let private_ = try await room.bob.api.createConversation(.init(type: .direct, participantIds: [carol.id]))
        _ = try await room.bob.api.send(.init(clientMessageId: "s0", text: "the launch secret is pineapple"), to: private_.id)
        let hit = try await room.bob.api.send(.init(clientMessageId: "s1", text: "Launch plan for Friday"), to: room.conversation.id)
        _ = try await room.alice.api.send(.init(clientMessageId: "s2", text: "launching the rocket"), to: room.conversation.id)

        var answer = try await room.server.raw("GET", "search?q=launch", token: room.alice.token)
        var results = try decode(SearchResponse.self, answer).results
        #expect(Set(results.map(\.message.clientMessageId)) == ["s1", "s2"], "prefix match, nothing from bob and carol's chat")
        #expect(results.first { $0.message.id == hit.id }?.snippet.contains("[Launch]") == true)
        answer = try await room.server.raw("GET", "search?q=pineapple", token: room.alice.token)
        #expect(try decode(SearchResponse.self, answer).results.isEmpty)
        answer = try await room.server.raw("GET", "search?q=pineapple", token: carol.token)
        #expect(try decode(SearchResponse.self, answer).results.count == 1)

        _ = try await room.server.raw("PATCH", "\(room.path)/\(hit.id)", token: room.bob.token, json: #"{"text":"Plan for Friday"}"#)
        answer = try await room.server.raw("GET", "search?q=launch&conversationId=\(room.conversation.id)", token: room.alice.token)
        results = try decode(SearchResponse.self, answer).results
        #expect(results.map(\.message.clientMessageId) == ["s2"], "an edit updates the index")
        answer = try await room.server.raw("GET", "search?q=launch&limit=1", token: room.bob.token)
        let page = try decode(SearchResponse.self, answer)
        #expect(page.results.count == 1 && page.nextOffset == 1)
        for query in ["", "q=%22%22%22", "q=AND%20OR%20NOT", "q=a*(b"] {
            let tricky = try await room.server.raw("GET", "search?\(query)", token: room.alice.token)
            #expect(tricky.status == 200 || tricky.status == 400, "\(query)")
        }
    }
}
