import Foundation
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import Testing

/// What a client may send, checked before any transaction (`ParleyRules/MessageValidation.swift`):
/// every limit at its edge (one under passes, one over is `invalid_request`), trimming, the
/// type rules, metadata, locations, forwards, edits, reactions and conversation names.
@Suite struct ServerMessageValidationTests {
    static let conversation = EntityID(), sender = EntityID()
    static let now = Date(timeIntervalSince1970: 1_760_000_000)

    static func draft(_ request: SendMessageRequest) throws -> MessageDraft {
        try MessageValidation.draft(request, conversationId: conversation, senderId: sender, now: now)
    }

    static func isInvalid(_ body: () throws -> some Any) -> Bool {
        do {
            _ = try body()
            return false
        } catch let error as ChatError {
            return error.code == .invalidRequest
        } catch {
            return false
        }
    }

    // MARK: Sends

    /// The client's id for a message: 1-128 characters, no control characters.
    @Test(arguments: [
        ("c", true), (String(repeating: "x", count: 128), true), (String(repeating: "é", count: 128), true), ("", false),
        (String(repeating: "x", count: 129), false), ("a\nb", false), ("a\u{0}b", false), ("a\u{7}b", false), ("a\tb", false),
        ("a\u{7f}b", false), ("550e8400-e29b-41d4-a716-446655440000", true), ("with space", true),
    ])
    func clientMessageIds(id: String, valid: Bool) {
        let request = SendMessageRequest(clientMessageId: id, text: "hi")
        #expect(Self.isInvalid { try Self.draft(request) } == !valid)
    }

    /// Text is trimmed, must not be empty for a text message, and is counted in characters
    /// (a skin-toned emoji is one) up to 5,000; NUL is refused anywhere in it.
    @Test(arguments: [
        ("hello", "hello"), ("  padded\n\n", "padded"), ("\u{3000}ideographic space\u{3000}", "ideographic space"),
        ("", nil), ("   ", nil), ("\n\t", nil), ("a\u{0}b", nil), ("line one\nline two", "line one\nline two"),
    ] as [(String, String?)])
    func textIsTrimmedAndMustNotBeEmpty(text: String, stored: String?) throws {
        let request = SendMessageRequest(clientMessageId: "c", text: text)
        if let stored {
            #expect(try Self.draft(request).text == stored)
        } else {
            #expect(Self.isInvalid { try Self.draft(request) })
        }
    }

    @Test func theTextLimitCountsCharactersAfterTrimming() throws {
        let limit = Limits.maxTextCharacters
        #expect(try Self.draft(.init(clientMessageId: "c", text: String(repeating: "a", count: limit))).text.count == limit)
        #expect(try Self.draft(.init(clientMessageId: "c", text: "  " + String(repeating: "a", count: limit) + "\n")).text.count == limit)
        #expect(try Self.draft(.init(clientMessageId: "c", text: String(repeating: "👍🏽", count: limit))).text.count == limit)
        #expect(Self.isInvalid { try Self.draft(.init(clientMessageId: "c", text: String(repeating: "a", count: limit + 1))) })
        #expect(Self.isInvalid { try Self.draft(.init(clientMessageId: "c", text: String(repeating: "👍🏽", count: limit + 1))) })
    }

    /// Which types need, allow or refuse an attachment; system messages are the server's only.
    @Test(arguments: [
        (MessageType.text, false, true), (.text, true, false), (.image, true, true), (.image, false, false), (.video, true, true),
        (.video, false, false), (.audio, true, true), (.audio, false, false), (.file, true, true), (.file, false, false),
        (.location, true, false), (.system, false, false), (.system, true, false),
    ])
    func typesAndAttachments(type: MessageType, withAttachment: Bool, valid: Bool) throws {
        let metadata = type == .location ? ["latitude": "1", "longitude": "2"] : nil
        let request = SendMessageRequest(
            clientMessageId: "c", text: type == .text ? "hi" : "", type: type, attachmentId: withAttachment ? EntityID() : nil, metadata: metadata)
        if valid {
            let draft = try Self.draft(request)
            #expect(draft.type == type && (draft.attachmentId != nil) == withAttachment)
        } else {
            #expect(Self.isInvalid { try Self.draft(request) })
        }
    }

    /// A message with no type is a text message; one with an attachment keeps its caption.
    @Test func defaultsAndCaptions() throws {
        let plain = try Self.draft(.init(clientMessageId: "c", text: "hi"))
        #expect(plain.type == .text && plain.attachmentId == nil && plain.metadata == nil && plain.forwardedFromId == nil)
        #expect(plain.conversationId == Self.conversation && plain.senderId == Self.sender && plain.clientMessageId == "c")
        let attachment = EntityID(), reply = EntityID()
        let photo = try Self.draft(.init(clientMessageId: "p", text: " caption ", type: .image, replyToId: reply, attachmentId: attachment))
        #expect(photo.text == "caption" && photo.attachmentId == attachment && photo.replyToId == reply)
    }

    /// Metadata: at most 32 entries, keys 1-64 characters, values up to 1,024, no NUL; an
    /// empty dictionary is none.
    @Test func metadataLimits() throws {
        func request(_ metadata: [String: String]) -> SendMessageRequest {
            SendMessageRequest(clientMessageId: "c", text: "hi", metadata: metadata)
        }
        let full = Dictionary(uniqueKeysWithValues: (0..<32).map { ("k\($0)", "v") })
        #expect(try Self.draft(request(full)).metadata == full)
        var over = full
        over["k32"] = "v"
        #expect(Self.isInvalid { try Self.draft(request(over)) })
        #expect(try Self.draft(request([:])).metadata == nil)
        #expect(try Self.draft(request([String(repeating: "k", count: 64): String(repeating: "v", count: 1024)])).metadata?.count == 1)
        for bad in [["": "v"], [String(repeating: "k", count: 65): "v"], ["k": String(repeating: "v", count: 1025)], ["k\u{0}": "v"], ["k": "v\u{0}"]] {
            #expect(Self.isInvalid { try Self.draft(request(bad)) }, "\(bad.keys.first!.prefix(8))")
        }
    }

    /// A location needs numeric coordinates within the globe, edges included.
    @Test(arguments: [
        ("0", "0", true), ("90", "180", true), ("-90", "-180", true), ("48.8566", "2.3522", true), ("1e1", "2", true),
        ("90.0001", "0", false), ("0", "-180.5", false), ("north", "0", false), ("nan", "0", false), ("0", "inf", false),
        (" 45", "0", false), ("", "0", false), (nil, "0", false), ("0", nil, false),
    ] as [(String?, String?, Bool)])
    func locationCoordinates(latitude: String?, longitude: String?, valid: Bool) {
        var metadata: [String: String] = ["label": "here"]
        metadata["latitude"] = latitude
        metadata["longitude"] = longitude
        let request = SendMessageRequest(clientMessageId: "c", text: "", type: .location, metadata: metadata)
        #expect(Self.isInvalid { try Self.draft(request) } == !valid)
    }

    /// A forward gives only the source (and perhaps a reply): no type, text, attachment or
    /// metadata of its own; whitespace-only text counts as none.
    @Test func forwardsCarryNoContentOfTheirOwn() throws {
        let source = EntityID(), reply = EntityID()
        let forward = try Self.draft(.init(clientMessageId: "f", text: "  ", replyToId: reply, forwardOf: source))
        #expect(forward.forwardedFromId == source && forward.replyToId == reply && forward.type == .text && forward.text.isEmpty)
        #expect(forward.attachmentId == nil && forward.metadata == nil)
        let refused: [SendMessageRequest] = [
            .init(clientMessageId: "f", text: "my comment", forwardOf: source),
            .init(clientMessageId: "f", text: "", type: .text, forwardOf: source),
            .init(clientMessageId: "f", text: "", type: .image, attachmentId: EntityID(), forwardOf: source),
            .init(clientMessageId: "f", text: "", attachmentId: EntityID(), forwardOf: source),
            .init(clientMessageId: "f", text: "", metadata: ["k": "v"], forwardOf: source),
            .init(clientMessageId: "", text: "", forwardOf: source),
        ]
        for (n, request) in refused.enumerated() {
            #expect(Self.isInvalid { try Self.draft(request) }, "case \(n)")
        }
    }

    // MARK: Edits, reactions, names

    @Test(arguments: [
        ("new", "new"), ("  new  ", "new"), ("", nil), (" \n ", nil), ("a\u{0}", nil),
        (String(repeating: "e", count: 5000), String(repeating: "e", count: 5000)), (String(repeating: "e", count: 5001), nil),
    ] as [(String, String?)])
    func editedText(text: String, stored: String?) throws {
        if let stored {
            #expect(try MessageValidation.editedText(text) == stored)
        } else {
            #expect(Self.isInvalid { try MessageValidation.editedText(text) })
        }
    }

    /// A reaction is one emoji (however many code points it takes) or a short token:
    /// 1-8 characters, at most 64 bytes, no whitespace or control characters. (ZWJ emoji such
    /// as 👩‍💻 and 🏳️‍🌈 pass: U+200D is a format character, which
    /// `CharacterSet.controlCharacters` includes, so that set alone would refuse them.)
    @Test(arguments: [
        ("👍", true), ("👍🏽", true), ("👨‍👩‍👧‍👦", true), ("🇫🇷", true), ("+1", true), ("12345678", true), ("❤️", true),
        ("", false), ("123456789", false), (" ", false), ("👍 ", false), ("a b", false), ("\n", false), ("a\u{7}", false),
        ("\u{0}", false), (String(repeating: "👨‍👩‍👧‍👦", count: 3), false), ("\u{00a0}", false),
        // Sequences joined by U+200D or tagged (format characters) are single emoji.
        ("👩‍💻", true), ("🏳️‍🌈", true), ("❤️‍🔥", true), ("🏴\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}", true),
        // Other format characters stay out: an invisible reaction, or one that reverses text.
        ("\u{200D}", false), ("\u{200B}", false), ("a\u{202E}b", false), ("\u{FEFF}", false),
    ])
    func reactions(emoji: String, valid: Bool) throws {
        if valid {
            #expect(try MessageValidation.emoji(emoji) == emoji, "not trimmed or changed")
        } else {
            #expect(Self.isInvalid { try MessageValidation.emoji(emoji) })
        }
    }

    @Test(arguments: [
        ("Team", "Team"), ("  Team  ", "Team"), ("", nil), ("   ", nil), ("a\u{0}b", nil),
        (String(repeating: "n", count: 200), String(repeating: "n", count: 200)), (String(repeating: "n", count: 201), nil),
    ] as [(String, String?)])
    func conversationNames(name: String, stored: String?) throws {
        if let stored {
            #expect(try MessageValidation.conversationName(name) == stored)
        } else {
            #expect(Self.isInvalid { try MessageValidation.conversationName(name) })
        }
    }
}
