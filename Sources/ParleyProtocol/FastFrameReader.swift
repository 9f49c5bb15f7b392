/// Reads the frame that arrives once per message sent, `message.send`, straight from its
/// bytes, in the plain shape clients write.
///
/// Foundation's `JSONDecoder` builds a tree of boxed values per frame and was about 4 % of the
/// server's CPU at saturation (`bench durable`). This reader accepts only a strict subset:
/// one object with the keys `id`, `type` (`"message.send"`) and `data`, each once, `data`
/// an object whose keys are among `conversationId`, `clientMessageId`, `text`, `type`,
/// `replyToId`, `attachmentId`, `forwardOf` and `threadRootId`, each once, every value a string. Anything else
/// (another command, `metadata`, an unknown or repeated key, `null`, a number, a lone
/// surrogate, a raw control character, an id that is not a UUID) gives nil, and the caller
/// decodes the frame with Foundation, which accepts or refuses it with its usual error. So a
/// frame read here is the frame Foundation reads (the protocol tests check this on seeded
/// mutations of real frames).
public enum FastFrameReader {
    /// The `message.send` frame `text` holds, or nil when it is not in the plain shape.
    public static func sendFrame(_ text: String) -> ClientFrame? {
        var text = text
        return text.withUTF8 { bytes in
            var reader = JSONSubsetReader(bytes)
            return reader.sendFrame()
        }
    }
}

/// A cursor over the frame's bytes (valid UTF-8: they come from a `String`).
private struct JSONSubsetReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    mutating func sendFrame() -> ClientFrame? {
        var id: String?, type: String?, request: SendMessageRequest?
        let complete = object { reader, key in
            switch key {
            case "id" where id == nil:
                id = reader.string()
                return id != nil
            case "type" where type == nil:
                type = reader.string()
                return type != nil
            case "data" where request == nil:
                request = reader.sendRequest()
                return request != nil
            default:
                return false
            }
        }
        skipSpace()
        guard complete, index == bytes.count, let id, type == "message.send", let request else { return nil }
        return ClientFrame(id: id, command: .sendMessage(request))
    }

    /// The keys of a plain send's `data`.
    private static let sendKeys: Set<String> = [
        "conversationId", "clientMessageId", "text", "type", "replyToId", "attachmentId", "forwardOf", "threadRootId",
    ]

    private mutating func sendRequest() -> SendMessageRequest? {
        var fields: [String: String] = [:]
        let complete = object { reader, key in
            guard Self.sendKeys.contains(key), fields[key] == nil, let value = reader.string() else { return false }
            fields[key] = value
            return true
        }
        guard complete, let clientMessageId = fields["clientMessageId"] else { return nil }
        func entity(_ key: String) -> EntityID?? {
            guard let text = fields[key] else { return .some(nil) }
            return EntityID(text).map { .some($0) }
        }
        guard let conversationId = entity("conversationId"), let replyToId = entity("replyToId"),
            let attachmentId = entity("attachmentId"), let forwardOf = entity("forwardOf"),
            let threadRootId = entity("threadRootId")
        else { return nil }
        var type: MessageType?
        if let raw = fields["type"] {
            guard let known = MessageType(rawValue: raw) else { return nil }
            type = known
        }
        return SendMessageRequest(
            conversationId: conversationId, clientMessageId: clientMessageId, text: fields["text"] ?? "", type: type,
            replyToId: replyToId, attachmentId: attachmentId, forwardOf: forwardOf, threadRootId: threadRootId)
    }

    /// Reads `{ "key": value, ... }`, handing each key to `member`, which reads the value and
    /// says whether it was acceptable; false as soon as anything is not.
    private mutating func object(_ member: (inout JSONSubsetReader, String) -> Bool) -> Bool {
        skipSpace()
        guard take(UInt8(ascii: "{")) else { return false }
        while true {
            skipSpace()
            guard let key = string() else { return false }
            skipSpace()
            guard take(UInt8(ascii: ":")) else { return false }
            skipSpace()
            guard member(&self, key) else { return false }
            skipSpace()
            if take(UInt8(ascii: ",")) { continue }
            return take(UInt8(ascii: "}"))
        }
    }

    /// A string value; nil for anything this reader leaves to Foundation.
    private mutating func string() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        // The plain case: no escapes, copied in one go.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                defer { index += 1 }
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { return nil }
            index += 1
        }
        guard index < bytes.count else { return nil }
        var out = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { return nil }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    guard let scalar = unicodeEscape() else { return nil }
                    out.append(contentsOf: String(Character(scalar)).utf8)
                default: return nil
                }
            default:
                if byte < 0x20 { return nil }
                out.append(byte)
            }
        }
        return nil
    }

    /// The scalar of `\uXXXX` (its `\u` read), a surrogate pair taken whole; nil for a lone
    /// surrogate.
    private mutating func unicodeEscape() -> Unicode.Scalar? {
        guard let first = hex4() else { return nil }
        switch first {
        case 0xD800...0xDBFF:
            guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")), let second = hex4(), (0xDC00...0xDFFF).contains(second) else { return nil }
            return Unicode.Scalar(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
        case 0xDC00...0xDFFF:
            return nil
        default:
            return Unicode.Scalar(first)
        }
    }

    private mutating func hex4() -> UInt32? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = hexDigitValue(bytes[index]) else { return nil }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }
}
