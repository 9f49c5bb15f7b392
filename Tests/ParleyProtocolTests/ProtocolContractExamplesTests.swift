import Foundation
import ParleyProtocol
import Testing

/// The JSON of shared/PROTOCOL.md and docs/protocol.md, as a third-party client or an older
/// server writes it, decodes into the right values; what we write decodes back the same.
@Suite struct ProtocolContractExamplesTests {
    static let decoder = WireCoding.makeDecoder()
    static let alice = EntityID("6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01")!
    static let bob = EntityID("0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12")!
    static let org = EntityID("11111111-2222-4333-8444-555555555555")!
    static let conv = EntityID("aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee")!
    static let msg = EntityID("99999999-8888-4777-8666-555555555555")!
    /// 2026-11-22T10:15:30.123Z
    static let date = Date(millisecondsSince1970: 1_795_342_530_123)

    static let userJSON = """
        {"id": "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01", "organizationId": "11111111-2222-4333-8444-555555555555",
         "email": "alice@acme.test", "displayName": "Alice", "isOnline": false,
         "lastSeenAt": "2026-11-22T10:15:30.123Z", "role": "admin"}
        """
    static let user = User(
        id: alice, organizationId: org, email: "alice@acme.test", displayName: "Alice", isOnline: false,
        lastSeenAt: date, role: .admin)

    static let messageJSON = """
        {"id": "99999999-8888-4777-8666-555555555555", "conversationId": "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee",
         "seq": 12, "updatedSeq": 15, "senderId": "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01", "clientMessageId": "tmp-7",
         "type": "image", "text": "look", "replyToId": "0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12",
         "attachment": {"id": "0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12", "name": "cat.png", "contentType": "image/png",
                        "size": 2048, "url": "/api/v1/attachments/0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12", "width": 640, "height": 480},
         "metadata": {"caption": "a cat"}, "reactions": {"👍": ["0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12", "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01"]},
         "createdAt": "2026-11-22T10:15:30.123Z", "editedAt": "2026-11-22T10:16:00.000Z"}
        """
    static let message = Message(
        id: msg, conversationId: conv, seq: 12, updatedSeq: 15, senderId: alice, clientMessageId: "tmp-7", type: .image,
        text: "look", replyToId: bob,
        attachment: Attachment(id: bob, name: "cat.png", contentType: "image/png", size: 2048, url: "/api/v1/attachments/\(bob)", width: 640, height: 480),
        metadata: ["caption": "a cat"], reactions: ["👍": [bob, alice]], createdAt: date,
        editedAt: Date(millisecondsSince1970: 1_795_342_560_000))

    static let conversationJSON = """
        {"id": "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", "type": "group", "name": "Team",
         "participantIds": ["6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01", "0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12"],
         "createdAt": "2026-11-22T10:15:30.123Z", "lastActivityAt": "2026-11-22T10:15:30.123Z", "lastSeq": 15,
         "lastMessage": \(messageJSON), "unreadCount": 3, "readSeq": 9,
         "members": [{"userId": "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01", "readSeq": 9, "deliveredSeq": 15},
                     {"userId": "0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12", "readSeq": 0, "deliveredSeq": 2}]}
        """
    static let conversation = Conversation(
        id: conv, type: .group, name: "Team", participantIds: [alice, bob], createdAt: date, lastActivityAt: date,
        lastSeq: 15, lastMessage: message, unreadCount: 3, readSeq: 9,
        members: [Member(userId: alice, readSeq: 9, deliveredSeq: 15), Member(userId: bob, readSeq: 0, deliveredSeq: 2)])

    func decode<T: Decodable>(_ type: T.Type, _ json: String) throws -> T {
        try Self.decoder.decode(type, from: Data(json.utf8))
    }

    func roundTrip<T: Codable & Equatable>(_ value: T) throws {
        let data = try WireCoding.makeEncoder().encode(value)
        #expect(try Self.decoder.decode(T.self, from: data) == value, "\(String(decoding: data, as: UTF8.self))")
    }

    // MARK: Objects

    /// The contract's User, Message and Conversation decode field for field (a conversation
    /// without `memberCount`, as older servers send it, counts its participants).
    @Test func contractObjectsDecodeFieldForField() throws {
        #expect(try decode(User.self, Self.userJSON) == Self.user)
        #expect(try decode(Message.self, Self.messageJSON) == Self.message)
        let conversation = try decode(Conversation.self, Self.conversationJSON)
        #expect(conversation == Self.conversation)
        #expect(conversation.memberCount == 2)
        #expect(conversation.listsAllMembers)
        try roundTrip(Self.user)
        try roundTrip(Self.message)
        try roundTrip(Self.conversation)
    }

    /// An older server's user has no `role`; it decodes with none rather than failing the login.
    @Test func aUserFromBeforeRolesDecodes() throws {
        let json = #"{"id":"6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01","organizationId":"11111111-2222-4333-8444-555555555555","email":"a@b.io","displayName":"A","isOnline":true}"#
        let user = try decode(User.self, json)
        #expect(user.role == nil)
        #expect(user.lastSeenAt == nil)
        #expect(user.isOnline)
    }

    /// A large group leaves out `participantIds` and `members`: they decode empty and
    /// `memberCount` is kept, and encoding it again leaves them out again (not `[]`).
    @Test func aLargeGroupWithoutMemberListsDecodesAndStaysWithout() throws {
        let json = """
            {"id": "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee", "type": "group", "name": "All hands",
             "createdAt": "2026-11-22T10:15:30.123Z", "lastActivityAt": "2026-11-22T10:15:30.123Z", "lastSeq": 4,
             "unreadCount": 0, "readSeq": 4, "memberCount": 2500}
            """
        let conversation = try decode(Conversation.self, json)
        #expect(conversation.participantIds.isEmpty)
        #expect(conversation.members.isEmpty)
        #expect(conversation.memberCount == 2500)
        #expect(!conversation.listsAllMembers)
        let object = try #require(JSONSerialization.jsonObject(with: WireCoding.makeEncoder().encode(conversation)) as? [String: Any])
        #expect(object["participantIds"] == nil)
        #expect(object["members"] == nil)
        #expect(object["memberCount"] as? Int == 2500)
    }

    /// A message from the contract's minimal shape (no `updatedSeq`, no `reactions`, no
    /// `text`) decodes: never edited (`updatedSeq == seq`), no reactions, empty text.
    @Test func aMinimalMessageTakesTheDocumentedDefaults() throws {
        let json = #"{"id":"99999999-8888-4777-8666-555555555555","conversationId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","seq":3,"senderId":"6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01","clientMessageId":"c","type":"file","createdAt":"2026-11-22T10:15:30Z"}"#
        let message = try decode(Message.self, json)
        #expect(message.updatedSeq == 3)
        #expect(message.reactions.isEmpty)
        #expect(message.text == "")
        #expect(message.createdAt.millisecondsSince1970 == 1_795_342_530_000)
        #expect(message.attachment == nil && message.metadata == nil && message.replyToId == nil && message.forwardedFromId == nil)
    }

    // MARK: WebSocket frames

    /// `hello` as the contract shows it.
    @Test func helloDecodes() throws {
        let event = try decode(ServerEvent.self, #"{"type": "hello", "data": {"user": \#(Self.userJSON), "sessionId": "s-1", "heartbeatSeconds": 30}}"#)
        #expect(event == .hello(HelloEvent(user: Self.user, sessionId: "s-1", heartbeatSeconds: 30)))
        #expect(event.type == "hello")
    }

    /// Every server event of both documents, from its JSON.
    @Test(arguments: [
        (#"{"type":"message.created","data":{"message":\#(messageJSON)}}"#, ServerEvent.messageCreated(MessageEvent(message: message))),
        (#"{"type":"message.updated","data":{"message":\#(messageJSON)}}"#, .messageUpdated(MessageEvent(message: message))),
        (#"{"type":"conversation.updated","data":{"conversation":\#(conversationJSON)}}"#, .conversationUpdated(ConversationEvent(conversation: conversation))),
        (#"{"type":"typing","data":{"conversationId":"AAAAAAAA-BBBB-4CCC-8DDD-EEEEEEEEEEEE","userId":"6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01","isTyping":true}}"#,
         .typing(TypingEvent(conversationId: conv, userId: alice, isTyping: true))),
        (#"{"type":"receipt","data":{"conversationId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","userId":"0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12","readSeq":4,"deliveredSeq":6}}"#,
         .receipt(ReceiptEvent(conversationId: conv, userId: bob, readSeq: 4, deliveredSeq: 6))),
        (#"{"type":"presence","data":{"userId":"6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01","isOnline":false,"lastSeenAt":"2026-11-22T10:15:30.123Z"}}"#,
         .presence(PresenceEvent(userId: alice, isOnline: false, lastSeenAt: date))),
        (#"{"type":"presence","data":{"userId":"6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01","isOnline":true,"conversationId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"}}"#,
         .presence(PresenceEvent(userId: alice, isOnline: true, conversationId: conv))),
        (#"{"type":"receipt.summary","data":{"conversationId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","seq":40,"readCount":7,"deliveredCount":31}}"#,
         .receiptSummary(ReceiptSummaryEvent(conversationId: conv, seq: 40, readCount: 7, deliveredCount: 31))),
        (#"{"type":"typing.summary","data":{"conversationId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","count":5}}"#,
         .typingSummary(TypingSummaryEvent(conversationId: conv, count: 5))),
        (#"{"type":"conversation.activity","data":{"conversationId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","lastSeq":15,"lastActivityAt":"2026-11-22T10:15:30.123Z","lastMessage":\#(messageJSON)}}"#,
         .conversationActivity(ConversationActivityEvent(conversationId: conv, lastSeq: 15, lastActivityAt: date, lastMessage: message))),
    ])
    func everyServerEventDecodes(json: String, expected: ServerEvent) throws {
        let event = try decode(ServerEvent.self, json)
        #expect(event == expected)
        #expect(event.type == (try decode(FrameHeader.self, json).type))
        try roundTrip(event)
    }

    /// The data of a `typing` event with its key order reversed and `data` before `type`:
    /// readers must not depend on key order.
    @Test func keyOrderDoesNotMatter() throws {
        let event = try decode(ServerEvent.self, #"{"data":{"isTyping":false,"userId":"6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01","conversationId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"},"type":"typing"}"#)
        #expect(event == .typing(TypingEvent(conversationId: Self.conv, userId: Self.alice, isTyping: false)))
    }

    /// Every command of the contract's table, from its JSON.
    @Test(arguments: [
        (#"{"id":"c1","type":"message.send","data":{"conversationId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","clientMessageId":"tmp-1","text":"hi"}}"#,
         ClientCommand.sendMessage(SendMessageRequest(conversationId: conv, clientMessageId: "tmp-1", text: "hi"))),
        (#"{"id":"c1","type":"message.send","data":{"conversationId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","clientMessageId":"fw","forwardOf":"99999999-8888-4777-8666-555555555555","replyToId":"0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12"}}"#,
         .sendMessage(SendMessageRequest(conversationId: conv, clientMessageId: "fw", text: "", replyToId: bob, forwardOf: msg))),
        (#"{"id":"c1","type":"message.send","data":{"conversationId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","clientMessageId":"loc","text":"","type":"location","metadata":{"latitude":"52.52","longitude":"13.40","name":"Berlin"}}}"#,
         .sendMessage(SendMessageRequest(conversationId: conv, clientMessageId: "loc", text: "", type: .location, metadata: ["latitude": "52.52", "longitude": "13.40", "name": "Berlin"]))),
        (#"{"id":"c1","type":"typing","data":{"conversationId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","isTyping":true}}"#,
         .typing(TypingCommand(conversationId: conv, isTyping: true))),
        (#"{"id":"c1","type":"read","data":{"conversationId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","upToSeq":12}}"#,
         .read(ReadRequest(conversationId: conv, upToSeq: 12))),
        (#"{"id":"c1","type":"read","data":{"conversationId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","messageIds":["99999999-8888-4777-8666-555555555555"]}}"#,
         .read(ReadRequest(conversationId: conv, messageIds: [msg]))),
        (#"{"id":"c1","type":"delivered","data":{"conversationId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","upToSeq":13}}"#,
         .delivered(DeliveredCommand(conversationId: conv, upToSeq: 13))),
        (#"{"id":"c1","type":"focus","data":{"conversationId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"}}"#, .focus(FocusCommand(conversationId: conv))),
        (#"{"id":"c1","type":"focus","data":{"conversationId":null}}"#, .focus(FocusCommand(conversationId: nil))),
        (#"{"id":"c1","type":"focus","data":{}}"#, .focus(FocusCommand(conversationId: nil))),
        (#"{"id":"c1","type":"focus","data":null}"#, .focus(FocusCommand(conversationId: nil))),
        (#"{"id":"c1","type":"focus"}"#, .focus(FocusCommand(conversationId: nil))),
        (#"{"id":"c1","type":"ping","data":{}}"#, .ping),
        (#"{"id":"c1","type":"ping"}"#, .ping),
    ])
    func everyCommandDecodes(json: String, expected: ClientCommand) throws {
        let frame = try decode(ClientFrame.self, json)
        #expect(frame == ClientFrame(id: "c1", command: expected))
        try roundTrip(frame)
    }

    /// Replies as the contract shows them; `retryAfter` is read from a throttled send's error.
    @Test func repliesDecode() throws {
        let ok = try decode(ReplyFrame<Message>.self, #"{"replyTo": "c1", "ok": true, "data": \#(Self.messageJSON)}"#)
        #expect(ok == ReplyFrame(replyTo: "c1", data: Self.message))
        let failed = try decode(ReplyFrame<Message>.self, #"{"replyTo": "c1", "ok": false, "error": {"code": "invalid_request", "message": "text must not be empty"}}"#)
        #expect(failed == ReplyFrame(replyTo: "c1", error: ErrorInfo(code: .invalidRequest, message: "text must not be empty")))
        let throttled = try decode(ReplyFrame<Message>.self, #"{"replyTo":"c9","ok":false,"error":{"code":"rate_limited","message":"slow down","retryAfter":3}}"#)
        guard case .failure(let error) = throttled.result else {
            Issue.record("a rate-limited reply must decode as a failure")
            return
        }
        #expect(error.retryAfter == 3)
        #expect(error.code == .rateLimited)
        let anonymous = try decode(ReplyFrame<EmptyPayload>.self, #"{"replyTo": null, "ok": false, "error": {"code": "invalid_request", "message": "not JSON"}}"#)
        #expect(anonymous.replyTo == nil)
        let read = try decode(ReplyFrame<ReadResponse>.self, #"{"replyTo":"r","ok":true,"data":{"readSeq":12,"unreadCount":0}}"#)
        #expect(read == ReplyFrame(replyTo: "r", data: ReadResponse(readSeq: 12, unreadCount: 0)))
        let empty = try decode(ReplyFrame<EmptyPayload>.self, #"{"replyTo":"p","ok":true,"data":{}}"#)
        #expect(empty == ReplyFrame(replyTo: "p", data: EmptyPayload()))
    }

    /// An ok reply without data, or a failed one without an error, is refused rather than read
    /// as success: the SDK would otherwise drop a send it believes stored.
    @Test func repliesMissingTheirPayloadFail() {
        #expect(throws: DecodingError.self) { try decode(ReplyFrame<Message>.self, #"{"replyTo":"c1","ok":true}"#) }
        #expect(throws: DecodingError.self) { try decode(ReplyFrame<Message>.self, #"{"replyTo":"c1","ok":false}"#) }
        #expect(throws: DecodingError.self) { try decode(ReplyFrame<Message>.self, #"{"replyTo":"c1","data":{}}"#) }
        #expect(throws: DecodingError.self) { try decode(ReplyFrame<EmptyPayload>.self, #"{"replyTo":"c1","ok":"true","data":{}}"#) }
    }
}
