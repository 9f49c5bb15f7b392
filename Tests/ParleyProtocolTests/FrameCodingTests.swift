import Foundation
import ParleyProtocol
import Testing

/// Every frame of the contract survives encode → decode, and looks as the contract says.
@Suite struct FrameCodingTests {
    static let alice = EntityID("6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01")!
    static let bob = EntityID("0B5E2C1A-77A4-4F63-8C1E-5F7D8E9A0B12")!
    static let conversationId = EntityID()
    static let date = Date(millisecondsSince1970: 1_795_000_000_123)

    static let message = Message(
        id: EntityID(), conversationId: conversationId, seq: 7, updatedSeq: 9, senderId: alice,
        clientMessageId: "tmp-1", type: .location, text: "here", replyToId: EntityID(),
        attachment: Attachment(id: EntityID(), name: "a.png", contentType: "image/png", size: 10, url: "/a", width: 2, height: 3),
        metadata: ["latitude": "1.5", "longitude": "2.5"], reactions: ["👍": [alice, bob]],
        createdAt: date, editedAt: date, deletedAt: nil)

    static let user = User(id: alice, organizationId: EntityID(), email: "a@x.io", displayName: "Alice", isOnline: false, lastSeenAt: date)

    static let conversation = Conversation(
        id: conversationId, type: .group, name: "Team", participantIds: [alice, bob], createdAt: date,
        lastActivityAt: date, lastSeq: 9, lastMessage: message, unreadCount: 2, readSeq: 7,
        members: [Member(userId: alice, readSeq: 7, deliveredSeq: 9), Member(userId: bob, readSeq: 0, deliveredSeq: 0)])

    func roundTrip<T: Codable & Equatable>(_ value: T) throws -> T {
        let data = try WireCoding.makeEncoder().encode(value)
        let decoded = try WireCoding.makeDecoder().decode(T.self, from: data)
        #expect(decoded == value, "\(String(decoding: data, as: UTF8.self))")
        return decoded
    }

    func json(_ value: some Encodable) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: WireCoding.makeEncoder().encode(value)) as! [String: Any]
    }

    @Test(arguments: [
        ClientCommand.sendMessage(SendMessageRequest(
            conversationId: conversationId, clientMessageId: "c-1", text: "hi", type: .text,
            replyToId: EntityID(), attachmentId: nil, metadata: ["k": "v"])),
        .typing(TypingCommand(conversationId: conversationId, isTyping: true)),
        .read(ReadRequest(conversationId: conversationId, upToSeq: 4)),
        .read(ReadRequest(conversationId: conversationId, messageIds: [EntityID(), EntityID()])),
        .delivered(DeliveredCommand(conversationId: conversationId, upToSeq: 3)),
        .focus(FocusCommand(conversationId: conversationId)),
        .focus(FocusCommand(conversationId: nil)),
        .ping,
    ])
    func clientFramesRoundTrip(_ command: ClientCommand) throws {
        let frame = ClientFrame(id: "c42", command: command)
        _ = try roundTrip(frame)
        let object = try json(frame)
        #expect(object["id"] as? String == "c42")
        #expect(object["type"] as? String == command.type)
        #expect(object["data"] is [String: Any])
    }

    @Test(arguments: [
        ServerEvent.hello(HelloEvent(user: user, sessionId: "s1", heartbeatSeconds: 30)),
        .messageCreated(MessageEvent(message: message)),
        .messageUpdated(MessageEvent(message: message)),
        .conversationUpdated(ConversationEvent(conversation: conversation)),
        .typing(TypingEvent(conversationId: conversationId, userId: alice, isTyping: false)),
        .receipt(ReceiptEvent(conversationId: conversationId, userId: bob, readSeq: 3, deliveredSeq: 5)),
        .presence(PresenceEvent(userId: alice, isOnline: false, lastSeenAt: date, conversationId: conversationId)),
        .presence(PresenceEvent(userId: alice, isOnline: true)),
    ])
    func serverEventsRoundTrip(_ event: ServerEvent) throws {
        _ = try roundTrip(event)
        let object = try json(event)
        #expect(object["type"] as? String == event.type)
        #expect(object["id"] == nil)
    }

    @Test func repliesRoundTrip() throws {
        _ = try roundTrip(ReplyFrame(replyTo: "c1", data: Self.message))
        _ = try roundTrip(ReplyFrame(replyTo: "c2", data: EmptyPayload()))
        _ = try roundTrip(ReplyFrame(replyTo: "c3", data: ReadResponse(readSeq: 6, unreadCount: 4)))
        _ = try roundTrip(ReplyFrame<EmptyPayload>(replyTo: "c4", error: ErrorInfo(code: .notFound, message: "no")))
        let ok = try json(ReplyFrame(replyTo: "c2", data: EmptyPayload()))
        #expect(ok["ok"] as? Bool == true)
        #expect((ok["data"] as? [String: Any])?.isEmpty == true)
    }

    @Test func replyWithoutIdCarriesExplicitNull() throws {
        let frame = ReplyFrame<EmptyPayload>(replyTo: nil, error: ErrorInfo(code: .invalidRequest, message: "bad"))
        let text = String(decoding: try WireCoding.makeEncoder().encode(frame), as: UTF8.self)
        #expect(text.contains("\"replyTo\":null"))
        let object = try json(frame)
        #expect(object["ok"] as? Bool == false)
        #expect((object["error"] as? [String: Any])?["code"] as? String == "invalid_request")
        _ = try roundTrip(frame)
    }

    @Test func httpBodiesRoundTrip() throws {
        _ = try roundTrip(RegisterRequest(organization: "acme", email: "a@x.io", password: "pw-123456", displayName: "A"))
        _ = try roundTrip(LoginRequest(organization: "acme", email: "a@x.io", password: "pw-123456"))
        _ = try roundTrip(AuthResponse(token: "t", user: Self.user))
        _ = try roundTrip(UsersResponse(users: [Self.user]))
        _ = try roundTrip(CreateConversationRequest(type: .direct, participantIds: [Self.bob]))
        _ = try roundTrip(ConversationsResponse(conversations: [Self.conversation]))
        _ = try roundTrip(RenameConversationRequest(name: "n"))
        _ = try roundTrip(AddParticipantsRequest(userIds: [Self.bob]))
        _ = try roundTrip(MessagesPage(messages: [Self.message], hasMore: true))
        _ = try roundTrip(ChangesPage(messages: [Self.message], lastSeq: 9, hasMore: false))
        _ = try roundTrip(SendMessageRequest(clientMessageId: "x", text: "t"))
        _ = try roundTrip(EditMessageRequest(text: "e"))
        _ = try roundTrip(ReactionRequest(emoji: "🎉"))
        _ = try roundTrip(ReadRequest(upToSeq: 5))
        _ = try roundTrip(ReadResponse(readSeq: 5, unreadCount: 0))
        _ = try roundTrip(RegisterDeviceRequest(token: "abc", environment: .sandbox))
        _ = try roundTrip(ErrorBody(error: ErrorInfo(code: .payloadTooLarge, message: "big")))
    }

    @Test func idsAreLowercaseAndDatesHaveMilliseconds() throws {
        let object = try json(Self.user)
        #expect(object["id"] as? String == "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01")
        let upper = try json(Message(
            id: Self.bob, conversationId: Self.bob, seq: 1, updatedSeq: 1, senderId: Self.bob,
            clientMessageId: "c", type: .text, text: "t", createdAt: Self.date))
        #expect(upper["id"] as? String == "0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12")
        #expect(object["lastSeenAt"] as? String == "2026-11-18T11:06:40.123Z")
    }

    @Test func absentOptionalsAreLeftOut() throws {
        let plain = Message(
            id: EntityID(), conversationId: EntityID(), seq: 1, updatedSeq: 1, senderId: Self.alice,
            clientMessageId: "c", type: .text, text: "t", createdAt: Self.date)
        let object = try json(plain)
        for key in ["replyToId", "attachment", "metadata", "editedAt", "deletedAt"] {
            #expect(object[key] == nil, "\(key) should be absent")
        }
        #expect((object["reactions"] as? [String: Any])?.isEmpty == true)
        let online = try json(User(id: Self.alice, organizationId: Self.bob, email: "e", displayName: "d", isOnline: true))
        #expect(online["lastSeenAt"] == nil)
    }

    @Test func timestampsRoundTripExactlyAtMillisecondPrecision() throws {
        for ms: Int64 in [0, 1, 999, 1_795_000_000_123, 951_782_400_000, 4_102_444_799_999, -1, -86_400_001] {
            let date = Date(millisecondsSince1970: ms)
            let text = WireCoding.formatTimestamp(date)
            #expect(WireCoding.parseTimestamp(text)?.millisecondsSince1970 == ms, "\(text)")
            #expect(try date.formatted(Date.ISO8601FormatStyle()).prefix(19) == text.prefix(19))
        }
        #expect(WireCoding.formatTimestamp(Date(millisecondsSince1970: 951_782_400_000)) == "2000-02-29T00:00:00.000Z")
        #expect(WireCoding.parseTimestamp("2026-11-22T12:15:30.5+02:00")?.millisecondsSince1970 == 1_795_342_530_500)
    }

    @Test func datesWithoutFractionDecode() throws {
        #expect(WireCoding.parseTimestamp("2026-11-22T10:15:30Z") != nil)
        #expect(WireCoding.parseTimestamp("2026-11-22T10:15:30.123Z")?.millisecondsSince1970 == 1_795_342_530_123)
        #expect(WireCoding.parseTimestamp("yesterday") == nil)
    }

    @Test func unknownCommandAndEventTypesAreRejected() throws {
        let decoder = WireCoding.makeDecoder()
        #expect(throws: DecodingError.self) {
            try decoder.decode(ClientFrame.self, from: Data(#"{"id":"1","type":"nope","data":{}}"#.utf8))
        }
        #expect(throws: ServerEvent.UnknownType.self) {
            try decoder.decode(ServerEvent.self, from: Data(#"{"type":"future.thing","data":{}}"#.utf8))
        }
    }

    @Test func headerReadsIdsOnlyWhenStrings() throws {
        let decoder = WireCoding.makeDecoder()
        #expect(try decoder.decode(FrameHeader.self, from: Data(#"{"id":"a","type":"ping"}"#.utf8)).id == "a")
        #expect(try decoder.decode(FrameHeader.self, from: Data(#"{"id":5,"type":"ping"}"#.utf8)).id == nil)
        let reply = try decoder.decode(FrameHeader.self, from: Data(#"{"replyTo":null,"ok":false}"#.utf8))
        #expect(reply.isReply && reply.replyTo == nil)
    }

    @Test func errorCodesMapToStatuses() {
        for code in ErrorCode.allCases {
            #expect(ErrorCode(httpStatus: code.httpStatus) == code)
        }
    }
}

@Suite struct EntityIDTests {
    @Test func parsesWhatUUIDParsesAndNothingElse() {
        for _ in 0..<200 {
            let uuid = UUID()
            #expect(EntityID(uuid.uuidString)?.uuid == uuid)
            #expect(EntityID(uuid.uuidString.lowercased())?.uuid == uuid)
        }
        for bad in ["", "nope", "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a0", "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a011",
                    "6f1c1c7e0d2a-4c39-9f43-2d7b7c1e9a01-", "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a0g", "6f1c1c7e-0d2a-4c39-9f43_2d7b7c1e9a01"] {
            #expect(EntityID(bad) == nil, "\(bad)")
            #expect(UUID(uuidString: bad) == nil, "\(bad)")
        }
    }
}
