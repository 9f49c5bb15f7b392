import Foundation

/// Data of the `typing` command.
public struct TypingCommand: Codable, Sendable, Equatable {
    /// The conversation being typed in.
    public var conversationId: EntityID
    /// True while typing (it lapses 3 s after the last `true`); false when stopped.
    public var isTyping: Bool

    /// A command with these fields.
    public init(conversationId: EntityID, isTyping: Bool) {
        self.conversationId = conversationId
        self.isTyping = isTyping
    }
}

/// Data of the `delivered` command.
public struct DeliveredCommand: Codable, Sendable, Equatable {
    /// The conversation the messages were received in.
    public var conversationId: EntityID
    /// Everything up to this seq has been received; the watermark only moves up.
    public var upToSeq: Int64

    /// A command with these fields.
    public init(conversationId: EntityID, upToSeq: Int64) {
        self.conversationId = conversationId
        self.upToSeq = upToSeq
    }
}

/// Data of the `focus` command: the conversation the user is looking at, or none.
public struct FocusCommand: Codable, Sendable, Equatable {
    /// The conversation in view; nil clears the focus.
    public var conversationId: EntityID?

    /// A command focusing this conversation, or none.
    public init(conversationId: EntityID?) { self.conversationId = conversationId }
}

/// Data of the `auth` command: a renewed access token for the open connection, so it outlives
/// the token it was opened with (access tokens live minutes).
public struct AuthCommand: Codable, Sendable, Equatable {
    /// The new access token (the same user's).
    public var token: String

    /// A command carrying this token.
    public init(token: String) { self.token = token }
}

/// The reply to `auth`: until when the connection is now authorized.
public struct AuthReply: Codable, Sendable, Equatable {
    /// The new token's expiry.
    public var expiresAt: Date

    /// A reply with this expiry.
    public init(expiresAt: Date) { self.expiresAt = expiresAt }
}

/// A command a client sends over the WebSocket; the server answers each with one reply.
public enum ClientCommand: Sendable, Equatable {
    /// `message.send`: send or forward a message.
    case sendMessage(SendMessageRequest)
    /// `typing`: start or stop typing.
    case typing(TypingCommand)
    /// `read`: move the read watermark.
    case read(ReadRequest)
    /// `delivered`: move the delivered watermark.
    case delivered(DeliveredCommand)
    /// `focus`: say which conversation the user is looking at.
    case focus(FocusCommand)
    /// `ping`: carries nothing; answered with an empty reply.
    case ping
    /// `auth`: carries a renewed token for this connection; answered with its expiry.
    case auth(AuthCommand)

    /// The `type` string of the frame.
    public var type: String {
        switch self {
        case .sendMessage: "message.send"
        case .typing: "typing"
        case .read: "read"
        case .delivered: "delivered"
        case .focus: "focus"
        case .ping: "ping"
        case .auth: "auth"
        }
    }
}

/// `{"id", "type", "data"}`: a client command with the id its reply will carry.
public struct ClientFrame: Codable, Sendable, Equatable {
    /// Chosen by the client; echoed as the reply's `replyTo`.
    public var id: String
    /// The command and its data.
    public var command: ClientCommand

    /// A frame carrying this command under this id.
    public init(id: String, command: ClientCommand) {
        self.id = id
        self.command = command
    }

    private enum CodingKeys: String, CodingKey { case id, type, data }

    /// Decodes `data` by `type`; `focus` may omit it (no focus); an unknown type fails to decode.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        let type = try c.decode(String.self, forKey: .type)
        switch type {
        case "message.send": command = .sendMessage(try c.decode(SendMessageRequest.self, forKey: .data))
        case "typing": command = .typing(try c.decode(TypingCommand.self, forKey: .data))
        case "read": command = .read(try c.decode(ReadRequest.self, forKey: .data))
        case "delivered": command = .delivered(try c.decode(DeliveredCommand.self, forKey: .data))
        case "focus": command = .focus(try c.decodeIfPresent(FocusCommand.self, forKey: .data) ?? .init(conversationId: nil))
        case "ping": command = .ping
        case "auth": command = .auth(try c.decode(AuthCommand.self, forKey: .data))
        default:
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: c, debugDescription: "Unknown command type \"\(type.prefix(64))\"")
        }
    }

    /// Writes `{"id", "type", "data"}` (`ping` carries `{}`).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(command.type, forKey: .type)
        switch command {
        case .sendMessage(let data): try c.encode(data, forKey: .data)
        case .typing(let data): try c.encode(data, forKey: .data)
        case .read(let data): try c.encode(data, forKey: .data)
        case .delivered(let data): try c.encode(data, forKey: .data)
        case .focus(let data): try c.encode(data, forKey: .data)
        case .ping: try c.encode(EmptyPayload(), forKey: .data)
        case .auth(let data): try c.encode(data, forKey: .data)
        }
    }
}

/// `{"replyTo", "ok", "data" | "error"}`: the server's answer to one command.
public struct ReplyFrame<Payload: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
    /// The command's id; null when the frame had no usable id.
    public var replyTo: String?
    /// The data of a positive reply, or the error.
    public var result: Result<Payload, ErrorInfo>

    /// A positive reply.
    public init(replyTo: String?, data: Payload) {
        self.replyTo = replyTo
        self.result = .success(data)
    }

    /// An error reply.
    public init(replyTo: String?, error: ErrorInfo) {
        self.replyTo = replyTo
        self.result = .failure(error)
    }

    private enum CodingKeys: String, CodingKey { case replyTo, ok, data, error }

    /// Reads `data` when `ok` is true, else `error`.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        replyTo = try c.decodeIfPresent(String.self, forKey: .replyTo)
        if try c.decode(Bool.self, forKey: .ok) {
            result = .success(try c.decode(Payload.self, forKey: .data))
        } else {
            result = .failure(try c.decode(ErrorInfo.self, forKey: .error))
        }
    }

    /// Writes `replyTo` (null when nil), `ok`, and `data` or `error`.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        // `replyTo` is written even when nil: the contract shows `"replyTo": null`.
        try c.encode(replyTo, forKey: .replyTo)
        switch result {
        case .success(let data):
            try c.encode(true, forKey: .ok)
            try c.encode(data, forKey: .data)
        case .failure(let error):
            try c.encode(false, forKey: .ok)
            try c.encode(error, forKey: .error)
        }
    }
}

/// The first keys of any frame, read before the rest to route it.
public struct FrameHeader: Decodable, Sendable {
    /// A client command's id (only when it is a string).
    public var id: String?
    /// The frame's `type` (commands and events).
    public var type: String?
    /// Present (possibly null) on replies.
    public var replyTo: String?
    /// Present on replies: whether the command succeeded.
    public var ok: Bool?
    /// Whether the frame is a reply (it has an `ok` key).
    public var isReply: Bool { ok != nil }

    private enum CodingKeys: String, CodingKey { case id, type, replyTo, ok }

    /// Reads each key leniently: a missing key, or one of another type, is nil.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try? c.decodeIfPresent(String.self, forKey: .id)
        type = try? c.decodeIfPresent(String.self, forKey: .type)
        replyTo = try? c.decodeIfPresent(String.self, forKey: .replyTo)
        ok = try? c.decodeIfPresent(Bool.self, forKey: .ok)
    }
}

extension FrameHeader {
    /// The top-level `"id"` string of a JSON object, found without parsing the rest: a frame too
    /// deep or too broken for the decoder still gets its reply addressed to its id. Nil when the
    /// text is not an object, has no such key at the top level, or the id is not a plain string
    /// (escapes are not read here).
    public static func scanId(_ data: Data) -> String? {
        let bytes = [UInt8](data)
        var index = 0
        var depth = 0
        var expectingKey = false
        func skipSpace() { while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 } }
        /// Reads a string starting at `index` (a quote); returns its raw bytes, and whether it had escapes.
        func readString() -> (bytes: ArraySlice<UInt8>, escaped: Bool)? {
            guard index < bytes.count, bytes[index] == 0x22 else { return nil }
            let start = index + 1
            var escaped = false
            index += 1
            while index < bytes.count {
                switch bytes[index] {
                case 0x5C:
                    escaped = true
                    index += 2
                case 0x22:
                    defer { index += 1 }
                    return (bytes[start..<index], escaped)
                default: index += 1
                }
            }
            return nil
        }
        skipSpace()
        guard index < bytes.count, bytes[index] == 0x7B else { return nil }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case 0x7B, 0x5B:
                depth += 1
                expectingKey = byte == 0x7B && depth == 1
                index += 1
            case 0x7D, 0x5D:
                depth -= 1
                index += 1
                if depth <= 0 { return nil }
            case 0x2C:
                expectingKey = depth == 1
                index += 1
            case 0x22:
                guard let (key, _) = readString() else { return nil }
                if expectingKey, depth == 1, key.elementsEqual("id".utf8) {
                    skipSpace()
                    guard index < bytes.count, bytes[index] == 0x3A else { return nil }
                    index += 1
                    skipSpace()
                    guard let (value, escaped) = readString(), !escaped else { return nil }
                    return String(decoding: value, as: UTF8.self)
                }
                expectingKey = false
            default:
                index += 1
            }
        }
        return nil
    }
}
