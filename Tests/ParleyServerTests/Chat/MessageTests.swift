import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

@Suite struct MessageTests {
    struct Room {
        let server: TestServer
        let alice: TestUser
        let bob: TestUser
        let conversation: Conversation
    }

    func room() async throws -> Room {
        let server = try await TestServer.start()
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let conversation = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        return Room(server: server, alice: alice, bob: bob, conversation: conversation)
    }

    @Test func sendStoresTrimmedTextWithNextSeq() async throws {
        let room = try await room()
        defer { Task { await room.server.stop() } }
        let answer = try await room.server.raw(
            "POST", "conversations/\(room.conversation.id)/messages", token: room.alice.token,
            json: #"{"clientMessageId":"tmp-1","text":"  hello \n"}"#)
        #expect(answer.status == 201)
        let message = try WireCoding.makeDecoder().decode(Message.self, from: answer.body)
        #expect(message.text == "hello" && message.seq == 1 && message.updatedSeq == 1)
        #expect(message.type == .text && message.senderId == room.alice.id && message.clientMessageId == "tmp-1")
        let object = try JSONSerialization.jsonObject(with: answer.body) as! [String: Any]
        #expect(object["replyToId"] == nil && object["deletedAt"] == nil)
        let second = try await room.bob.api.send(.init(clientMessageId: "tmp-1", text: "same temp id, other sender"), to: room.conversation.id)
        #expect(second.seq == 2)
    }

    @Test func repeatedClientMessageIdReturnsTheOriginal() async throws {
        let room = try await room()
        defer { Task { await room.server.stop() } }
        let path = "conversations/\(room.conversation.id)/messages"
        let first = try await room.server.raw("POST", path, token: room.alice.token, json: #"{"clientMessageId":"dup","text":"one"}"#)
        let again = try await room.server.raw("POST", path, token: room.alice.token, json: #"{"clientMessageId":"dup","text":"changed"}"#)
        #expect(first.status == 201 && again.status == 200)
        let decoder = WireCoding.makeDecoder()
        #expect(try decoder.decode(Message.self, from: first.body) == decoder.decode(Message.self, from: again.body))
        #expect(try await room.alice.api.conversation(room.conversation.id).lastSeq == 1)
        let other = try await room.alice.api.createConversation(.init(type: .group, participantIds: [room.bob.id], name: "g"))
        let elsewhere = try await room.server.raw(
            "POST", "conversations/\(other.id)/messages", token: room.alice.token, json: #"{"clientMessageId":"dup","text":"x"}"#)
        #expect(elsewhere.status == 409 && errorCode(elsewhere.body) == .conflict)
        #expect(try await room.alice.api.conversation(other.id).lastSeq == 0)
    }

    @Test func textLimitsCountCharactersNotBytes() async throws {
        let room = try await room()
        defer { Task { await room.server.stop() } }
        let id = room.conversation.id
        // "e" + combining acute: one character, two scalars, three bytes.
        let longest = String(repeating: "e\u{301}", count: Limits.maxTextCharacters)
        let stored = try await room.alice.api.send(.init(clientMessageId: "max", text: longest), to: id)
        #expect(stored.text.count == 5000)
        for (cmid, text) in [
            ("over", String(repeating: "a", count: 5001)), ("empty", ""), ("blank", " \n\t "), ("nul", "a\u{0}b"),
        ] {
            await #expect(throws: ClientError.self, "\(cmid)") {
                try await room.alice.api.send(.init(clientMessageId: cmid, text: text), to: id)
            }
        }
        #expect(try await room.alice.api.conversation(id).lastSeq == 1)
    }

    @Test(arguments: [
        (#"{"clientMessageId":"a"}"#, 400),
        (#"{"text":"no client id"}"#, 400),
        (#"{"clientMessageId":"","text":"x"}"#, 400),
        (#"{"clientMessageId":"a","text":"x","type":"system"}"#, 400),
        (#"{"clientMessageId":"a","text":"x","type":"sticker"}"#, 400),
        (#"{"clientMessageId":"a","text":"x","type":"image"}"#, 400),
        (#"{"clientMessageId":"a","text":"x","type":"image","attachmentId":"6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01"}"#, 400),
        (#"{"clientMessageId":"a","text":"x","attachmentId":"6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01"}"#, 400),
        (#"{"clientMessageId":"a","text":"","type":"location","metadata":{"latitude":"95","longitude":"0"}}"#, 400),
        (#"{"clientMessageId":"a","text":"x","replyToId":"6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01"}"#, 400),
        (#"{"clientMessageId":"a","text":"x","metadata":{"k":1}}"#, 400),
        (#"{"clientMessageId":["a"],"text":"x"}"#, 400),
        (#"[1,2,3]"#, 400),
        (#"{"clientMessageId":"a","text":"x\u0000y"}"#, 400),
        (#"{"clientMessageId":"a","text":"x""#, 400),
        (#"{"clientMessageId":"a","text":"\#(String(repeating: "x", count: 70_000))"}"#, 413),
    ])
    func badSendsChangeNothing(_ body: String, _ status: Int) async throws {
        let room = try await room()
        defer { Task { await room.server.stop() } }
        let answer = try await room.server.raw(
            "POST", "conversations/\(room.conversation.id)/messages", token: room.alice.token, json: body)
        #expect(answer.status == status)
        #expect(errorCode(answer.body) == ErrorCode(httpStatus: status))
        #expect(try await room.alice.api.conversation(room.conversation.id).lastSeq == 0)
    }

    @Test func locationAndRepliesAreAccepted() async throws {
        let room = try await room()
        defer { Task { await room.server.stop() } }
        let id = room.conversation.id
        let place = try await room.alice.api.send(
            .init(clientMessageId: "loc", text: "", type: .location, metadata: ["latitude": "48.85", "longitude": "2.35", "name": "Paris"]), to: id)
        #expect(place.type == .location && place.metadata?["name"] == "Paris" && place.text.isEmpty)
        let reply = try await room.bob.api.send(.init(clientMessageId: "re", text: "nice", replyToId: place.id), to: id)
        #expect(reply.replyToId == place.id)
    }

    @Test func injectionShapedInputIsStoredVerbatim() async throws {
        let room = try await room()
        defer { Task { await room.server.stop() } }
        let nasty = [
            "'); DROP TABLE messages; --", "<script>alert(1)</script>", "%_\\", "\u{202E}rtl", "{{7*7}}", "${jndi:ldap://x}",
        ]
        for (index, text) in nasty.enumerated() {
            _ = try await room.alice.api.send(.init(clientMessageId: "n\(index)", text: text), to: room.conversation.id)
        }
        let history = try await room.bob.api.messages(room.conversation.id)
        #expect(history.messages.map(\.text) == nasty)
        #expect(try await room.alice.api.users(matching: "'; --").isEmpty)
    }

    @Test func historyPagesByBeforeAfterAndLimit() async throws {
        let room = try await room()
        defer { Task { await room.server.stop() } }
        let id = room.conversation.id
        for index in 1...12 {
            _ = try await room.alice.api.send(.init(clientMessageId: "h\(index)", text: "m\(index)"), to: id)
        }
        let api = room.bob.api
        let newest = try await api.messages(id, limit: 5)
        #expect(newest.messages.map(\.seq) == [8, 9, 10, 11, 12] && newest.hasMore)
        let older = try await api.messages(id, before: 8, limit: 5)
        #expect(older.messages.map(\.seq) == [3, 4, 5, 6, 7] && older.hasMore)
        let oldest = try await api.messages(id, before: 3, limit: 5)
        #expect(oldest.messages.map(\.seq) == [1, 2] && !oldest.hasMore)
        let after = try await api.messages(id, after: 9)
        #expect(after.messages.map(\.seq) == [10, 11, 12] && !after.hasMore)
        let between = try await api.messages(id, before: 10, after: 2, limit: 3)
        #expect(between.messages.map(\.seq) == [3, 4, 5] && between.hasMore)
        let all = try await api.messages(id)
        #expect(all.messages.count == 12 && !all.hasMore)
        let clamped = try await room.server.raw("GET", "conversations/\(id)/messages?limit=100000", token: room.bob.token)
        #expect(clamped.status == 200)
        for query in ["limit=0", "limit=-3", "limit=ten", "before=x", "after=1.5"] {
            let answer = try await room.server.raw("GET", "conversations/\(id)/messages?\(query)", token: room.bob.token)
            #expect(answer.status == 400 && errorCode(answer.body) == .invalidRequest, "\(query)")
        }
    }

    @Test func changesFeedPagesByUpdatedSeq() async throws {
        let room = try await room()
        defer { Task { await room.server.stop() } }
        let id = room.conversation.id
        for index in 1...7 {
            _ = try await room.alice.api.send(.init(clientMessageId: "c\(index)", text: "m\(index)"), to: id)
        }
        var since: Int64 = 2
        var seen: [Int64] = []
        var pages = 0
        while true {
            let page = try await room.bob.api.changes(id, since: since, limit: 2)
            pages += 1
            #expect(page.lastSeq == 7)
            seen += page.messages.map(\.updatedSeq)
            guard page.hasMore, let last = page.messages.last else { break }
            since = last.updatedSeq
        }
        #expect(seen == [3, 4, 5, 6, 7] && pages == 3)
        let current = try await room.bob.api.changes(id, since: 7)
        #expect(current.messages.isEmpty && !current.hasMore && current.lastSeq == 7)
        let negative = try await room.server.raw("GET", "conversations/\(id)/changes?since=-1", token: room.bob.token)
        #expect(negative.status == 400)
    }
}
