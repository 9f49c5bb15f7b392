import Foundation
import ParleyProtocol
import Testing

extension ProtocolContractExamplesTests {
    // MARK: HTTP bodies

    /// Request bodies as a client writes them from the route tables.
    @Test func requestBodiesDecode() throws {
        #expect(try decode(RegisterRequest.self, #"{"organization":"Acme","email":"a@acme.test","password":"pw-123456","displayName":"A"}"#)
            == RegisterRequest(organization: "Acme", email: "a@acme.test", password: "pw-123456", displayName: "A"))
        #expect(try decode(RegisterRequest.self, #"{"organization":"Acme","email":"a@acme.test","password":"pw-123456","displayName":"A","inviteCode":"abc_-1"}"#).inviteCode == "abc_-1")
        #expect(try decode(LoginRequest.self, #"{"organization":"acme","email":"A@acme.test","password":"x"}"#)
            == LoginRequest(organization: "acme", email: "A@acme.test", password: "x"))
        #expect(try decode(CreateConversationRequest.self, #"{"type":"direct","participantIds":["0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12"]}"#)
            == CreateConversationRequest(type: .direct, participantIds: [Self.bob]))
        #expect(try decode(CreateConversationRequest.self, #"{"type":"group","participantIds":[],"name":"Ops"}"#).name == "Ops")
        #expect(try decode(RenameConversationRequest.self, #"{"name":"New"}"#) == RenameConversationRequest(name: "New"))
        #expect(try decode(AddParticipantsRequest.self, #"{"userIds":["6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01"]}"#).userIds == [Self.alice])
        #expect(try decode(SendMessageRequest.self, #"{"clientMessageId":"c","text":"hi","type":"text"}"#)
            == SendMessageRequest(clientMessageId: "c", text: "hi", type: .text))
        #expect(try decode(SendMessageRequest.self, #"{"clientMessageId":"c","type":"image","attachmentId":"0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12"}"#)
            == SendMessageRequest(clientMessageId: "c", text: "", type: .image, attachmentId: Self.bob))
        #expect(try decode(EditMessageRequest.self, #"{"text":"fixed"}"#) == EditMessageRequest(text: "fixed"))
        #expect(try decode(ReactionRequest.self, #"{"emoji":"🎉"}"#) == ReactionRequest(emoji: "🎉"))
        #expect(try decode(ReadRequest.self, #"{"upToSeq":5}"#) == ReadRequest(upToSeq: 5))
        #expect(try decode(ReadRequest.self, #"{"messageIds":["99999999-8888-4777-8666-555555555555"]}"#) == ReadRequest(messageIds: [Self.msg]))
        #expect(try decode(RegisterDeviceRequest.self, #"{"platform":"ios","token":"ab12","environment":"production"}"#)
            == RegisterDeviceRequest(token: "ab12", environment: .production))
        #expect(try decode(LogoutRequest.self, #"{}"#) == LogoutRequest())
        #expect(try decode(LogoutRequest.self, #"{"deviceToken":"ff00"}"#) == LogoutRequest(deviceToken: "ff00"))
        #expect(try decode(UpdateOrganizationRequest.self, #"{"allowedEmailDomains":["acme.test","@Corp.Test"]}"#).allowedEmailDomains == ["acme.test", "@Corp.Test"])
        #expect(try decode(CreateInviteRequest.self, #"{}"#) == CreateInviteRequest())
        #expect(try decode(CreateInviteRequest.self, #"{"email":"b@acme.test","maxUses":5,"expiresInHours":24}"#)
            == CreateInviteRequest(email: "b@acme.test", maxUses: 5, expiresInHours: 24))
        #expect(try decode(UpdateUserRequest.self, #"{"role":"member"}"#) == UpdateUserRequest(role: .member))
        #expect(try decode(UploadRequest.self, #"{"name":"a.pdf","contentType":"application/pdf","size":4096}"#)
            == UploadRequest(name: "a.pdf", contentType: "application/pdf", size: 4096))
    }

    /// Answer bodies of the contract's route tables: the core, organizations and large groups.
    @Test func answerBodiesDecode() throws {
        #expect(try decode(AuthResponse.self, #"{"token":"eyJ.x.y","user":\#(Self.userJSON)}"#) == AuthResponse(token: "eyJ.x.y", user: Self.user))
        #expect(try decode(UsersResponse.self, #"{"users":[\#(Self.userJSON)]}"#) == UsersResponse(users: [Self.user]))
        #expect(try decode(ConversationsResponse.self, #"{"conversations":[\#(Self.conversationJSON)]}"#)
            == ConversationsResponse(conversations: [Self.conversation]))
        #expect(try decode(ConversationsResponse.self, #"{"conversations":[],"hasMore":true,"nextBefore":"opaque","syncToken":"t1"}"#)
            == ConversationsResponse(conversations: [], hasMore: true, nextBefore: "opaque", syncToken: "t1"))
        #expect(try decode(ConversationChanges.self, #"{"conversations":[],"removedIds":["aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"],"syncToken":"t2"}"#)
            == ConversationChanges(conversations: [], removedIds: [Self.conv], syncToken: "t2"))
        #expect(try decode(MessagesPage.self, #"{"messages":[\#(Self.messageJSON)],"hasMore":false}"#) == MessagesPage(messages: [Self.message], hasMore: false))
        #expect(try decode(ChangesPage.self, #"{"messages":[\#(Self.messageJSON)],"lastSeq":15,"hasMore":true}"#)
            == ChangesPage(messages: [Self.message], lastSeq: 15, hasMore: true))
        #expect(try decode(ReadResponse.self, #"{"readSeq":9,"unreadCount":2}"#) == ReadResponse(readSeq: 9, unreadCount: 2))
        #expect(try decode(ParticipantsPage.self, #"{"participants":[{"userId":"6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01","readSeq":1,"deliveredSeq":2}],"hasMore":true}"#)
            == ParticipantsPage(participants: [Member(userId: Self.alice, readSeq: 1, deliveredSeq: 2)], hasMore: true))
        #expect(try decode(ReadersPage.self, #"{"userIds":["0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12"],"hasMore":false}"#)
            == ReadersPage(userIds: [Self.bob], hasMore: false))
        #expect(try decode(OrganizationResponse.self, #"{"organization":{"id":"11111111-2222-4333-8444-555555555555","name":"Acme","allowedEmailDomains":["acme.test"],"createdAt":"2026-11-22T10:15:30.123Z"}}"#)
            == OrganizationResponse(organization: Organization(id: Self.org, name: "Acme", allowedEmailDomains: ["acme.test"], createdAt: Self.date)))
        let inviteJSON = #"{"code":"Zm9vYmFy","organizationId":"11111111-2222-4333-8444-555555555555","maxUses":1,"uses":0,"expiresAt":"2026-11-29T10:15:30.123Z","createdBy":"6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01"}"#
        let invite = Invite(code: "Zm9vYmFy", organizationId: Self.org, email: nil, maxUses: 1, uses: 0,
                            expiresAt: Date(millisecondsSince1970: 1_795_342_530_123 + 7 * 86_400_000), createdBy: Self.alice)
        #expect(try decode(InviteResponse.self, #"{"invite":\#(inviteJSON)}"#) == InviteResponse(invite: invite))
        #expect(try decode(InvitesResponse.self, #"{"invites":[\#(inviteJSON)]}"#) == InvitesResponse(invites: [invite]))
        #expect(try decode(UserResponse.self, #"{"user":\#(Self.userJSON)}"#) == UserResponse(user: Self.user))
        #expect(try decode(SearchResponse.self, #"{"results":[{"conversationId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee","seq":12,"message":\#(Self.messageJSON),"snippet":"[look]"}],"nextOffset":20}"#)
            == SearchResponse(results: [SearchResult(conversationId: Self.conv, seq: 12, message: Self.message, snippet: "[look]")], nextOffset: 20))
        #expect(try decode(UploadStatus.self, #"{"uploadId":"0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12","received":0,"size":10}"#)
            == UploadStatus(uploadId: Self.bob, received: 0, size: 10))
        #expect(try decode(ErrorBody.self, #"{"error":{"code":"unavailable","message":"try later","retryAfter":5}}"#)
            == ErrorBody(error: ErrorInfo(code: .unavailable, message: "try later", retryAfter: 5)))
    }

    // MARK: Forward compatibility and clear failures

    /// Unknown keys, at the top and inside every nested object (not inside `metadata` or
    /// `reactions`, whose keys are data), are ignored: a newer server's extra fields do not
    /// break an older client. Seeded over random messages and conversations. (The padding goes
    /// through JSONSerialization, which drops a string's leading U+FEFF when it parses; the
    /// padded frame is compared with the same frame passed through it unpadded.)
    @Test func unknownKeysEverywhereAreIgnored() throws {
        var rng = ProtocolRandom(seed: 0xF0_4C0)
        let encoder = WireCoding.makeEncoder()
        func check<T: Codable & Equatable>(_ value: T, round: Int, rng: inout ProtocolRandom) throws {
            let encoded = try encoder.encode(value)
            let object = try JSONSerialization.jsonObject(with: encoded)
            let padded = try JSONSerialization.data(withJSONObject: Self.addingUnknownKeys(to: object, rng: &rng, parentKey: nil))
            let plain = try Self.decoder.decode(T.self, from: JSONSerialization.data(withJSONObject: object))
            #expect(try Self.decoder.decode(T.self, from: padded) == plain, "round \(round): \(String(decoding: padded, as: UTF8.self))")
            if !String(decoding: encoded, as: UTF8.self).unicodeScalars.contains("\u{FEFF}") {
                #expect(plain == value, "round \(round)")
            }
        }
        for round in 0..<80 {
            try check(ServerEvent.conversationUpdated(ConversationEvent(conversation: ProtocolSamples.conversation(&rng))), round: round, rng: &rng)
            try check(ProtocolSamples.message(&rng), round: round, rng: &rng)
            try check(ChangesPage(messages: [ProtocolSamples.message(&rng)], lastSeq: 1, hasMore: true), round: round, rng: &rng)
        }
    }

    static func addingUnknownKeys(to value: Any, rng: inout ProtocolRandom, parentKey: String?) -> Any {
        if let array = value as? [Any] {
            return array.map { addingUnknownKeys(to: $0, rng: &rng, parentKey: parentKey) }
        }
        guard var object = value as? [String: Any] else { return value }
        if parentKey == "metadata" || parentKey == "reactions" { return object }
        for key in Array(object.keys) {
            object[key] = addingUnknownKeys(to: object[key]!, rng: &rng, parentKey: key)
        }
        let extras: [Any] = [NSNull(), 42, "future", ["nested": ["deep": true]], [1, "two", NSNull()] as [Any], 1.5, false]
        for index in 0..<Int.random(in: 1...3, using: &rng) {
            object["futureField\(index)"] = extras.randomElement(using: &rng)!
        }
        return object
    }

    /// Removing each key of a full object in turn: required keys fail with `keyNotFound`
    /// naming that key (the server's 400 says which key is missing), the others decode with
    /// their documented default. A key that silently became optional, or a lenient one that
    /// became required (and broke older peers), shows here.
    @Test func missingRequiredKeysAreNamed() throws {
        try Self.checkRequiredKeys(Self.message, expected: ["id", "conversationId", "seq", "senderId", "clientMessageId", "type", "createdAt"])
        try Self.checkRequiredKeys(Self.conversation, expected: ["id", "type", "createdAt", "lastActivityAt", "lastSeq", "unreadCount", "readSeq"])
        try Self.checkRequiredKeys(Self.user, expected: ["id", "organizationId", "email", "displayName", "isOnline"])
        try Self.checkRequiredKeys(
            Attachment(id: Self.bob, name: "n", contentType: "c", size: 1, url: "/u", width: 1, height: 2, durationMs: 3),
            expected: ["id", "name", "contentType", "size", "url"])
        try Self.checkRequiredKeys(
            SendMessageRequest(conversationId: Self.conv, clientMessageId: "c", text: "t", type: .text, replyToId: Self.msg,
                               attachmentId: Self.bob, metadata: ["k": "v"], forwardOf: Self.alice),
            expected: ["clientMessageId"])
        try Self.checkRequiredKeys(ReadRequest(conversationId: Self.conv, upToSeq: 1, messageIds: [Self.msg]), expected: [])
        try Self.checkRequiredKeys(TypingEvent(conversationId: Self.conv, userId: Self.alice, isTyping: true), expected: ["conversationId", "userId", "isTyping"])
        try Self.checkRequiredKeys(ReceiptEvent(conversationId: Self.conv, userId: Self.alice, readSeq: 1, deliveredSeq: 2),
                                   expected: ["conversationId", "userId", "readSeq", "deliveredSeq"])
        try Self.checkRequiredKeys(PresenceEvent(userId: Self.alice, isOnline: false, lastSeenAt: Self.date, conversationId: Self.conv),
                                   expected: ["userId", "isOnline"])
        try Self.checkRequiredKeys(HelloEvent(user: Self.user, sessionId: "s", heartbeatSeconds: 30), expected: ["user", "sessionId", "heartbeatSeconds"])
        try Self.checkRequiredKeys(ErrorInfo(code: .conflict, message: "m", retryAfter: 1), expected: ["code", "message"])
        try Self.checkRequiredKeys(ConversationsResponse(conversations: [], hasMore: true, nextBefore: "b", syncToken: "s"), expected: ["conversations"])
        try Self.checkRequiredKeys(ConversationChanges(conversations: [], removedIds: [], syncToken: "s"), expected: ["conversations", "removedIds", "syncToken"])
        try Self.checkRequiredKeys(ConversationActivityEvent(conversationId: Self.conv, lastSeq: 1, lastActivityAt: Self.date, lastMessage: Self.message),
                                   expected: ["conversationId", "lastSeq", "lastActivityAt", "lastMessage"])
        try Self.checkRequiredKeys(RegisterRequest(organization: "o", email: "e", password: "p", displayName: "d", inviteCode: "i"),
                                   expected: ["organization", "email", "password", "displayName"])
        try Self.checkRequiredKeys(Invite(code: "c", organizationId: Self.org, email: "e", maxUses: 1, uses: 0, expiresAt: Self.date, createdBy: Self.alice),
                                   expected: ["code", "organizationId", "maxUses", "uses", "expiresAt", "createdBy"])
    }

    static func checkRequiredKeys<T: Codable>(_ value: T, expected: Set<String>, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let full = try #require(JSONSerialization.jsonObject(with: WireCoding.makeEncoder().encode(value)) as? [String: Any])
        var required = Set<String>()
        for key in full.keys {
            var object = full
            object.removeValue(forKey: key)
            do {
                _ = try decoder.decode(T.self, from: JSONSerialization.data(withJSONObject: object))
            } catch DecodingError.keyNotFound(let missing, _) {
                #expect(missing.stringValue == key, "removing \(key) of \(T.self) named \(missing.stringValue)", sourceLocation: sourceLocation)
                required.insert(key)
            } catch {
                Issue.record("removing \(key) of \(T.self): \(error)", sourceLocation: sourceLocation)
            }
        }
        #expect(required == expected, "\(T.self)", sourceLocation: sourceLocation)
        #expect(expected.isSubset(of: Set(full.keys)), "the full \(T.self) carries every required key", sourceLocation: sourceLocation)
    }

    /// Wrong values fail to decode instead of becoming something else: a seq as a string, an id
    /// that is not a UUID, a type the contract does not list, a date in another format, a
    /// negative-looking role.
    @Test(arguments: [
        ("seq", #""12""#), ("seq", "12.5"), ("id", #""not-a-uuid""#), ("id", "7"), ("senderId", #""""#),
        ("type", #""sticker""#), ("type", #""TEXT""#), ("createdAt", #""22/11/2026""#), ("createdAt", "1795342530123"),
        ("reactions", #"{"👍":["x"]}"#), ("metadata", #"{"k":1}"#), ("text", "null"), ("clientMessageId", "null"),
    ])
    func wrongValuesAreRefused(key: String, value: String) throws {
        var object = try #require(JSONSerialization.jsonObject(with: Data(Self.messageJSON.utf8)) as? [String: Any])
        object[key] = try JSONSerialization.jsonObject(with: Data(value.utf8), options: .fragmentsAllowed)
        let data = try JSONSerialization.data(withJSONObject: object)
        if key == "text" {
            // A null optional-with-default is read as absent: an empty text, not a failure.
            #expect(try Self.decoder.decode(Message.self, from: data).text == "")
            return
        }
        #expect(throws: DecodingError.self, "\(key) = \(value)") { try Self.decoder.decode(Message.self, from: data) }
    }

    /// An unknown command type fails naming the type (the gateway replies `invalid_request` to
    /// that frame's id); a frame without `id` or with a numeric one fails too.
    @Test func badCommandFramesFailClearly() throws {
        do {
            _ = try decode(ClientFrame.self, #"{"id":"c1","type":"message.unsend","data":{}}"#)
            Issue.record("an unknown command decoded")
        } catch DecodingError.dataCorrupted(let context) {
            #expect(context.debugDescription.contains("message.unsend"))
            #expect(context.codingPath.map(\.stringValue) == ["type"])
        }
        #expect(throws: DecodingError.self) { try decode(ClientFrame.self, #"{"type":"ping","data":{}}"#) }
        #expect(throws: DecodingError.self) { try decode(ClientFrame.self, #"{"id":7,"type":"ping","data":{}}"#) }
        #expect(throws: DecodingError.self) { try decode(ClientFrame.self, #"{"id":"c1","data":{}}"#) }
        #expect(throws: DecodingError.self) { try decode(ClientFrame.self, #"{"id":"c1","type":"typing","data":{"conversationId":"aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"}}"#) }
        #expect(throws: DecodingError.self) { try decode(ClientFrame.self, #"{"id":"c1","type":"read"}"#) }
        // A very long unknown type is not echoed whole into the error.
        let long = String(repeating: "x", count: 10_000)
        do {
            _ = try decode(ClientFrame.self, #"{"id":"c1","type":"\#(long)"}"#)
            Issue.record("an unknown command decoded")
        } catch DecodingError.dataCorrupted(let context) {
            #expect(context.debugDescription.count < 200)
        }
    }

    /// An unknown event type is reported with its type, so a reader can skip frames a newer
    /// server sends instead of dropping the connection.
    @Test func unknownEventTypesAreReportedByName() throws {
        do {
            _ = try decode(ServerEvent.self, #"{"type":"call.ringing","data":{"x":1}}"#)
            Issue.record("an unknown event decoded")
        } catch let error as ServerEvent.UnknownType {
            #expect(error.type == "call.ringing")
        }
        #expect(throws: DecodingError.self) { try decode(ServerEvent.self, #"{"data":{}}"#) }
        #expect(throws: DecodingError.self) { try decode(ServerEvent.self, #"{"type":"typing","data":{}}"#) }
    }

    // MARK: What we write

    /// Optional fields are left out when absent, never `null`: for every body with optionals,
    /// the only `null` we ever write is an anonymous reply's `replyTo`.
    @Test func absentOptionalsAreNeverNull() throws {
        let encoder = WireCoding.makeEncoder()
        let plain = Message(id: Self.msg, conversationId: Self.conv, seq: 1, updatedSeq: 1, senderId: Self.alice,
                            clientMessageId: "c", type: .text, text: "t", createdAt: Self.date)
        let values: [any Encodable] = [
            plain,
            User(id: Self.alice, organizationId: Self.org, email: "e", displayName: "d"),
            Attachment(id: Self.bob, name: "n", contentType: "c", size: 1, url: "/u"),
            Conversation(id: Self.conv, type: .direct, participantIds: [], createdAt: Self.date, lastActivityAt: Self.date,
                         lastSeq: 0, unreadCount: 0, readSeq: 0, members: []),
            SendMessageRequest(clientMessageId: "c", text: ""),
            ReadRequest(),
            PresenceEvent(userId: Self.alice, isOnline: true),
            ErrorInfo(code: .internal, message: "m"),
            ConversationsResponse(conversations: []),
            SearchResponse(results: []),
            CreateInviteRequest(),
            LogoutRequest(),
            RegisterRequest(organization: "o", email: "e", password: "p", displayName: "d"),
            CreateConversationRequest(type: .group, participantIds: []),
            Invite(code: "c", organizationId: Self.org, email: nil, maxUses: 1, uses: 0, expiresAt: Self.date, createdBy: Self.alice),
            FocusCommand(conversationId: nil),
            ClientFrame(id: "f", command: .focus(FocusCommand(conversationId: nil))),
            ReplyFrame(replyTo: "r", data: plain),
        ]
        for value in values {
            let text = String(decoding: try encoder.encode(value), as: UTF8.self)
            #expect(!text.contains("null"), "\(type(of: value)): \(text)")
        }
        let send = try #require(JSONSerialization.jsonObject(with: encoder.encode(SendMessageRequest(clientMessageId: "c", text: ""))) as? [String: Any])
        #expect(Set(send.keys) == ["clientMessageId", "text"])
        #expect(String(decoding: try encoder.encode(ClientFrame(id: "f", command: .ping)), as: UTF8.self).contains(#""data":{}"#))
    }

    /// URLs are written with plain slashes (`/api/v1/attachments/…`, not `\/api\/v1…`).
    @Test func slashesAreNotEscaped() throws {
        let text = String(decoding: try WireCoding.makeEncoder().encode(Self.message), as: UTF8.self)
        #expect(text.contains(#""url":"/api/v1/attachments/0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12""#))
        #expect(!text.contains(#"\/"#))
    }
}
