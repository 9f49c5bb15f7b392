import Foundation
import ParleyProtocol
import Testing

/// Ids as users' apps meet them: pasted from links in either case, compared, used as keys.
@Suite struct ProtocolEntityIDTests {
    /// Any case parses to the same id, which prints lowercase, equals and hashes the same
    /// (an id from an uppercase source finds the conversation stored under the lowercase one).
    @Test(arguments: [
        "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01", "6F1C1C7E-0D2A-4C39-9F43-2D7B7C1E9A01", "6f1C1c7E-0D2a-4c39-9F43-2d7B7c1E9a01",
    ])
    func anyCaseParsesToTheSameLowercaseId(text: String) throws {
        let id = try #require(EntityID(text))
        let reference = try #require(EntityID("6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01"))
        #expect(id == reference)
        #expect(id.hashValue == reference.hashValue)
        #expect(id.description == "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01")
        #expect([reference: "chat"][id] == "chat")
        #expect(id.uuid == UUID(uuidString: text))
    }

    /// Text that is not a bare `8-4-4-4-12` UUID is refused: braces, a URN prefix, no dashes,
    /// dashes moved, one digit too few or many, surrounding space or newline, a letter beyond
    /// `f`, non-ASCII digits and letters, NUL, a `0x` prefix, a dash among the last digits.
    /// (Foundation's `UUID(uuidString:)` on Linux reads the last two as ids.)
    @Test(arguments: [
        "", "{6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01}", "urn:uuid:6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01",
        "6f1c1c7e0d2a4c399f432d7b7c1e9a01", "6f1c1c7e0-d2a-4c39-9f43-2d7b7c1e9a01", "6f1c1c7e-0d2a4-c39-9f43-2d7b7c1e9a01",
        "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a0", "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a011", " 6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01",
        "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01\n", "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a0g", "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a0\u{E9}",
        "６f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01", "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9\u{0}01", "6f1c1c7e_0d2a_4c39_9f43_2d7b7c1e9a01",
        "------------------------------------", "6f1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a-1", "0x1c1c7e-0d2a-4c39-9f43-2d7b7c1e9a01",
    ])
    func nonUUIDTextIsRefused(text: String) {
        #expect(EntityID(text) == nil)
        #expect(!Self.hasStrictShape(text))
    }

    /// Seeded: random one- to three-character edits of a valid id (case flips, other
    /// characters, removals, insertions) parse exactly when they still have the strict
    /// `8-4-4-4-12` shape, to the value Foundation reads. (Foundation's `UUID(uuidString:)`
    /// itself is laxer on Linux: it reads "2bcc E9ad-df7b-…" with a space and 31 digits.)
    @Test func randomEditsParseExactlyWhenUUIDDoes() {
        var rng = ProtocolRandom(seed: 0x1D)
        let alphabet = Array("0123456789abcdefABCDEFgGxX-_ {}\u{0}".unicodeScalars) + ["\u{E9}", "\u{FF10}", "\u{1F44D}"]
        var accepted = 0
        for _ in 0..<2_000 {
            var scalars = Array(ProtocolSamples.id(&rng).description.unicodeScalars)
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let position = Int.random(in: 0..<scalars.count, using: &rng)
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: scalars[position] = alphabet.randomElement(using: &rng)!
                case 1: scalars.remove(at: position)
                case 2: scalars.insert(alphabet.randomElement(using: &rng)!, at: position)
                default:
                    let text = String(scalars[position])
                    scalars[position] = (text.uppercased() == text ? text.lowercased() : text.uppercased()).unicodeScalars.first!
                }
                if scalars.isEmpty { scalars = ["0"] }
            }
            var text = ""
            text.unicodeScalars.append(contentsOf: scalars)
            let ours = EntityID(text)
            let expected = Self.hasStrictShape(text) ? UUID(uuidString: text) : nil
            #expect(ours?.uuid == expected, "\(ProtocolSamples.visible(text.utf8))")
            if ours != nil { accepted += 1 }
        }
        #expect(accepted > 100, "the edits include many that stay valid (case flips, same-class digits)")
    }

    /// The contract's shape, checked the slow obvious way.
    static func hasStrictShape(_ text: String) -> Bool {
        let scalars = Array(text.unicodeScalars)
        guard scalars.count == 36 else { return false }
        return scalars.enumerated().allSatisfy { index, scalar in
            [8, 13, 18, 23].contains(index) ? scalar == "-" : "0123456789abcdefABCDEF".unicodeScalars.contains(scalar)
        }
    }

    /// Seeded: every id prints as Foundation's uuidString lowercased, parses back to itself,
    /// and `appendDescription` writes the same 36 bytes after whatever the buffer held.
    @Test func printingMatchesFoundationAndAppendsInPlace() {
        var rng = ProtocolRandom(seed: 0x1E)
        var buffer: [UInt8] = Array("prefix:".utf8)
        var expected = buffer
        for _ in 0..<2_000 {
            let id = ProtocolSamples.id(&rng)
            #expect(id.description == id.uuid.uuidString.lowercased())
            #expect(EntityID(id.description) == id)
            id.appendDescription(to: &buffer)
            buffer.append(UInt8(ascii: ","))
            expected.append(contentsOf: id.description.utf8)
            expected.append(UInt8(ascii: ","))
        }
        #expect(buffer == expected)
    }

    /// Ids order like their lowercase text (lists sorted by id page the same on every device),
    /// and the order is total: exactly one of <, ==, > for any pair.
    @Test func orderIsTheTextsAndTotal() {
        var rng = ProtocolRandom(seed: 0x1F)
        var ids = (0..<400).map { _ in ProtocolSamples.id(&rng) }
        ids += [EntityID("00000000-0000-0000-0000-000000000000")!, EntityID("ffffffff-ffff-ffff-ffff-ffffffffffff")!, ids[0]]
        #expect(ids.sorted().map(\.description) == ids.map(\.description).sorted())
        for _ in 0..<2_000 {
            let a = ids.randomElement(using: &rng)!, b = ids.randomElement(using: &rng)!
            let relations = [a < b, a == b, b < a].filter { $0 }.count
            #expect(relations == 1)
            #expect((a < b) == (a.description < b.description))
        }
    }

    /// Codable: written lowercase as a JSON string; read in any case; a bad id fails naming it
    /// (cut to 64 characters, so a huge bogus value is not echoed back whole).
    @Test func codableIsTheLowercaseString() throws {
        let id = EntityID("0B5E2C1A-77A4-4F63-8C1E-5F7D8E9A0B12")!
        #expect(String(decoding: try WireCoding.makeEncoder().encode([id]), as: UTF8.self) == #"["0b5e2c1a-77a4-4f63-8c1e-5f7d8e9a0b12"]"#)
        #expect(try WireCoding.makeDecoder().decode([EntityID].self, from: Data(#"["0B5E2C1A-77A4-4F63-8C1E-5F7D8E9A0B12"]"#.utf8)) == [id])
        let bogus = "not-an-id-" + String(repeating: "z", count: 500)
        do {
            _ = try WireCoding.makeDecoder().decode([EntityID].self, from: Data("[\"\(bogus)\"]".utf8))
            Issue.record("a bogus id decoded")
        } catch DecodingError.dataCorrupted(let context) {
            #expect(context.debugDescription.contains("not-an-id-zzz"))
            #expect(context.debugDescription.count < 120)
        }
        #expect(throws: DecodingError.self) { try WireCoding.makeDecoder().decode([EntityID].self, from: Data("[42]".utf8)) }
        #expect(EntityID() != EntityID(), "fresh ids are random")
    }

    /// New ids are version 4 UUIDs: unique, the version and variant bits set, and every one of
    /// the 122 other bits random (set in about half of 20,000 ids; a zeroed or constant byte,
    /// or a counter, would put some bit near 0 % or 100 %).
    @Test func newIdsAreRandomVersionFourUUIDs() {
        let count = 20_000
        var seen = Set<EntityID>()
        var ones = [Int](repeating: 0, count: 128)
        for _ in 0..<count {
            let id = EntityID()
            seen.insert(id)
            let text = id.description
            #expect(text == text.lowercased())
            withUnsafeBytes(of: id.uuid.uuid) { bytes in
                for bit in 0..<128 where bytes[bit / 8] & (0x80 >> (bit % 8)) != 0 { ones[bit] += 1 }
            }
        }
        #expect(seen.count == count)
        // Version (bits 48-51) 0100, variant (bits 64-65) 10.
        #expect([48, 49, 50, 51, 64, 65].map { ones[$0] } == [0, count, 0, 0, count, 0])
        let random = (0..<128).filter { !(48...51).contains($0) && !(64...65).contains($0) }
        #expect(random.count == 122)
        for bit in random {
            // Binomial(20,000, 0.5): the standard deviation is about 71; 6 deviations is 425.
            #expect(abs(ones[bit] - count / 2) < 425, "bit \(bit) set in \(ones[bit]) of \(count)")
        }
        #expect(EntityID(EntityID().description) != nil)
    }

    /// Message ids are version 7 UUIDs: the first 48 bits are the time in milliseconds, so ids
    /// made later sort later (as the stores' text index sorts them), and the rest is random.
    @Test func timeOrderedIdsSortByTimeAndKeepTheirRandomBits() {
        let start = Date(millisecondsSince1970: 1_760_000_000_123)
        let ids = (0..<2_000).map { EntityID.timeOrdered(at: Date(millisecondsSince1970: 1_760_000_000_123 + Int64($0))) }
        #expect(ids.map(\.description) == ids.map(\.description).sorted())
        #expect(Set(ids).count == ids.count)
        let first = ids[0].uuid.uuid
        let milliseconds = [first.0, first.1, first.2, first.3, first.4, first.5].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(milliseconds == 1_760_000_000_123)
        for id in ids {
            let bytes = id.uuid.uuid
            #expect(bytes.6 >> 4 == 7)
            #expect(bytes.8 >> 6 == 0b10)
            #expect(EntityID(id.description) == id)
        }
        // Made in the same millisecond, two ids differ in their random part.
        let same = (0..<1_000).map { _ in EntityID.timeOrdered(at: start) }
        #expect(Set(same).count == same.count)
        #expect(Set(same.map { $0.description.prefix(13) }).count == 1)
    }
}

/// The shapes of conversations and messages as the list and the chat screen read them.
@Suite struct ProtocolModelsTests {
    static let date = Date(millisecondsSince1970: 1_795_342_530_123)

    static func conversation(members count: Int, memberCount: Int? = nil) -> Conversation {
        let members = (0..<count).map { index in
            let userId = EntityID(UUID(uuid: (0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, UInt8(index))))
            return Member(userId: userId, readSeq: Int64(index), deliveredSeq: Int64(index + 1))
        }
        return Conversation(
            id: EntityID("aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee")!, type: .group, name: "G", participantIds: members.map(\.userId),
            createdAt: date, lastActivityAt: date, lastSeq: 10, unreadCount: 1, readSeq: 9, members: members, memberCount: memberCount)
    }

    /// `memberCount` defaults to the participants given; `listingMembers(upTo:)` drops both
    /// lists only above the limit, keeping the count and every other field.
    @Test(arguments: [(3, 3, false), (3, 2, true), (3, 0, true), (0, 0, false), (101, 100, true), (100, 100, false)])
    func largeGroupsLeaveOutTheirLists(members: Int, limit: Int, trimmed: Bool) {
        let conversation = Self.conversation(members: members)
        #expect(conversation.memberCount == members)
        #expect(conversation.listsAllMembers)
        let listed = conversation.listingMembers(upTo: limit)
        #expect(listed.memberCount == members)
        #expect(listed.participantIds.isEmpty == (trimmed || members == 0))
        #expect(listed.members.count == (trimmed ? 0 : members))
        #expect(listed.listsAllMembers == !trimmed)
        var restored = listed
        restored.participantIds = conversation.participantIds
        restored.members = conversation.members
        #expect(restored == conversation, "nothing but the lists changes")
    }

    /// A view whose lists are incomplete (fewer ids than `memberCount`) is written without
    /// them, never as a partial list a client would take for the whole membership.
    @Test func partialListsAreNeverWritten() throws {
        let partial = Self.conversation(members: 3, memberCount: 40)
        #expect(!partial.listsAllMembers)
        let object = try #require(JSONSerialization.jsonObject(with: WireCoding.makeEncoder().encode(partial)) as? [String: Any])
        #expect(object["participantIds"] == nil)
        #expect(object["members"] == nil)
        #expect(object["memberCount"] as? Int == 40)
        let decoded = try WireCoding.makeDecoder().decode(Conversation.self, from: WireCoding.makeEncoder().encode(partial))
        #expect(decoded.participantIds.isEmpty && decoded.members.isEmpty && decoded.memberCount == 40)
    }

    /// Seeded: any conversation view round-trips through the Codable coders (complete lists,
    /// or the large-group shape), with nasty names and last messages.
    @Test func randomConversationsRoundTrip() throws {
        var rng = ProtocolRandom(seed: 0xC0FE)
        let encoder = WireCoding.makeEncoder(), decoder = WireCoding.makeDecoder()
        for round in 0..<300 {
            let conversation = ProtocolSamples.conversation(&rng)
            #expect(try decoder.decode(Conversation.self, from: encoder.encode(conversation)) == conversation, "round \(round)")
            let response = ConversationsResponse(conversations: [conversation], hasMore: rng.chance(50), nextBefore: rng.chance(50) ? "b" : nil, syncToken: "t")
            #expect(try decoder.decode(ConversationsResponse.self, from: encoder.encode(response)) == response)
        }
    }

    /// The type strings are the contract's; which types carry an attachment decides which
    /// messages the server asks an `attachmentId` of and the apps show as files.
    @Test(arguments: [
        (MessageType.text, "text", false), (.image, "image", true), (.video, "video", true), (.audio, "audio", true),
        (.file, "file", true), (.location, "location", false), (.system, "system", false),
    ])
    func messageTypesAreTheContracts(type: MessageType, raw: String, carries: Bool) {
        #expect(type.rawValue == raw)
        #expect(type.carriesAttachment == carries)
        #expect(MessageType(rawValue: raw) == type)
    }

    /// A sent file's message type follows its MIME type, whatever its case; anything that is
    /// not a picture, a video or a sound is a file.
    @Test(arguments: [
        ("image/heic", MessageType.image), ("IMAGE/JPEG", .image), ("video/quicktime", .video), ("video/mp4", .video),
        ("audio/m4a", .audio), ("application/pdf", .file), ("application/octet-stream", .file), ("", .file), ("imagery/x", .file),
    ])
    func aFilesTypeFollowsItsMIMEType(contentType: String, type: MessageType) {
        #expect(MessageType.forAttachment(contentType: contentType) == type)
    }

    @Test func enumStringsAreTheContracts() {
        #expect(MessageType.allCases.count == 7)
        #expect(ConversationType.allCases.map(\.rawValue) == ["direct", "group"])
        #expect(UserRole.admin.rawValue == "admin" && UserRole.member.rawValue == "member")
        #expect(PushEnvironment.sandbox.rawValue == "sandbox" && PushEnvironment.production.rawValue == "production")
        #expect(UserRole(rawValue: "owner") == nil)
        #expect(MessageType(rawValue: "Text") == nil)
    }

    /// Every command and event carries the type string of the contract's tables.
    @Test func frameTypeStringsAreTheContracts() {
        let id = EntityID("aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee")!
        let message = Message(id: id, conversationId: id, seq: 1, updatedSeq: 1, senderId: id, clientMessageId: "c", type: .text, text: "t", createdAt: Self.date)
        let commands: [(ClientCommand, String)] = [
            (.sendMessage(SendMessageRequest(clientMessageId: "c", text: "t")), "message.send"),
            (.typing(TypingCommand(conversationId: id, isTyping: true)), "typing"), (.read(ReadRequest(upToSeq: 1)), "read"),
            (.delivered(DeliveredCommand(conversationId: id, upToSeq: 1)), "delivered"),
            (.focus(FocusCommand(conversationId: nil)), "focus"), (.ping, "ping"),
        ]
        for (command, type) in commands { #expect(command.type == type) }
        let events: [(ServerEvent, String)] = [
            (.hello(HelloEvent(user: User(id: id, organizationId: id, email: "e", displayName: "d"), sessionId: "s", heartbeatSeconds: 30)), "hello"),
            (.messageCreated(MessageEvent(message: message)), "message.created"), (.messageUpdated(MessageEvent(message: message)), "message.updated"),
            (.conversationUpdated(ConversationEvent(conversation: Self.conversation(members: 1))), "conversation.updated"),
            (.typing(TypingEvent(conversationId: id, userId: id, isTyping: false)), "typing"),
            (.receipt(ReceiptEvent(conversationId: id, userId: id, readSeq: 0, deliveredSeq: 0)), "receipt"),
            (.presence(PresenceEvent(userId: id, isOnline: true)), "presence"),
            (.receiptSummary(ReceiptSummaryEvent(conversationId: id, seq: 1, readCount: 0, deliveredCount: 0)), "receipt.summary"),
            (.typingSummary(TypingSummaryEvent(conversationId: id, count: 4)), "typing.summary"),
            (.conversationActivity(ConversationActivityEvent(conversationId: id, lastSeq: 1, lastActivityAt: Self.date, lastMessage: message)), "conversation.activity"),
        ]
        for (event, type) in events {
            #expect(event.type == type)
            let object = try? JSONSerialization.jsonObject(with: WireCoding.makeEncoder().encode(event)) as? [String: Any]
            #expect(object?["type"] as? String == type)
            #expect(Set(object?.keys.map { $0 } ?? []) == ["type", "data"])
        }
    }

    /// Seeded: random messages round-trip through the Codable coders, in pages and changes.
    @Test func randomMessagesRoundTripInPages() throws {
        var rng = ProtocolRandom(seed: 0x3E55)
        let encoder = WireCoding.makeEncoder(), decoder = WireCoding.makeDecoder()
        for round in 0..<100 {
            let messages = (0..<Int.random(in: 0...5, using: &rng)).map { _ in ProtocolSamples.message(&rng) }
            let page = MessagesPage(messages: messages, hasMore: rng.chance(50))
            #expect(try decoder.decode(MessagesPage.self, from: encoder.encode(page)) == page, "round \(round)")
            let changes = ChangesPage(messages: messages, lastSeq: ProtocolSamples.int64(&rng), hasMore: rng.chance(50))
            #expect(try decoder.decode(ChangesPage.self, from: encoder.encode(changes)) == changes, "round \(round)")
        }
    }
}

