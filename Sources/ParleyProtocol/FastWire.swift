import Foundation

/// Hand-written JSON for the frames every message produces: its `message.created` /
/// `message.updated` event, the `message.send` reply, and the `conversation.updated` views
/// that follow it.
///
/// Foundation's `JSONEncoder` builds a tree of boxed values per frame and was a tenth of the
/// server's CPU under load; these frames are written straight into bytes instead. The output
/// is the bytes `WireCoding.makeEncoder()` with `.sortedKeys` writes for the same value (keys
/// in sorted order, same escaping, same dates), which the protocol tests check byte for byte.
/// (Without `.sortedKeys` Foundation's key order is not fixed at all, so sorted is as good an
/// order as any for clients, and a stable one.)
public enum FastWire {
    /// The frame of a message event (`message.created`, `message.updated`) or of a
    /// `conversation.updated`: `{"data":{…},"type":"…"}`; nil for other events.
    public static func event(_ event: ServerEvent) -> [UInt8]? {
        var out = [UInt8]()
        switch event {
        case .messageCreated(let data), .messageUpdated(let data):
            out.reserveCapacity(512 + data.message.text.utf8.count)
            out.append(literal: #"{"data":{"message":"#)
            out.appendJSON(data.message)
        case .conversationUpdated(let data):
            let conversation = data.conversation
            out.reserveCapacity(640 + conversation.members.count * 100 + (conversation.lastMessage?.text.utf8.count ?? 0))
            out.append(literal: #"{"data":{"conversation":"#)
            out.appendJSON(conversation)
        default:
            return nil
        }
        out.append(literal: #"},"type":"#)
        out.appendJSONString(event.type)
        out.append(literal: "}")
        return out
    }

    /// `{"data":{…message…},"ok":true,"replyTo":…}`, the answer to `message.send`.
    public static func messageReply(replyTo: String?, _ message: Message) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(512 + message.text.utf8.count)
        out.append(literal: #"{"data":"#)
        out.appendJSON(message)
        out.append(literal: #","ok":true,"replyTo":"#)
        if let replyTo { out.appendJSONString(replyTo) } else { out.append(literal: "null") }
        out.append(literal: "}")
        return out
    }
}

extension [UInt8] {
    mutating func append(literal: StaticString) {
        append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    /// A key with its quotes and colon, after a comma unless it is the object's first.
    mutating func appendKey(_ key: StaticString) {
        if last != UInt8(ascii: "{") { append(UInt8(ascii: ",")) }
        append(UInt8(ascii: "\""))
        append(literal: key)
        append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    }

    /// A dictionary's key (any text), with the same comma rule.
    mutating func appendJSONKey(_ key: String) {
        if last != UInt8(ascii: "{") { append(UInt8(ascii: ",")) }
        appendJSONString(key)
        append(UInt8(ascii: ":"))
    }

    mutating func appendJSON(_ id: EntityID) {
        append(UInt8(ascii: "\""))
        id.appendDescription(to: &self)
        append(UInt8(ascii: "\""))
    }

    mutating func appendJSON(_ number: some BinaryInteger) {
        append(contentsOf: String(number).utf8)
    }

    mutating func appendJSON(_ date: Date) {
        appendJSONString(WireCoding.formatTimestamp(date))
    }

    /// A string with the escapes Foundation's encoder uses (`"`, `\`, the short forms of
    /// backspace, form feed, newline, return and tab, `\u00XX` for other control characters;
    /// `/` and everything above U+001F as it is, in UTF-8).
    mutating func appendJSONString(_ text: String) {
        append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            var runStart = 0
            for (index, byte) in bytes.enumerated() where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                runStart = index + 1
                switch byte {
                case UInt8(ascii: "\""): append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
                case UInt8(ascii: "\\"): append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
                case 0x08: append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
                case 0x0C: append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
                case UInt8(ascii: "\n"): append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case UInt8(ascii: "\r"): append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                case UInt8(ascii: "\t"): append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
                default:
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    append(contentsOf: [
                        UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                        hex[Int(byte >> 4)], hex[Int(byte & 0x0F)],
                    ])
                }
            }
            append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        }
        append(UInt8(ascii: "\""))
    }

    /// A message, keys in sorted order; optional fields left out when nil.
    mutating func appendJSON(_ message: Message) {
        append(UInt8(ascii: "{"))
        if let attachment = message.attachment {
            appendKey("attachment")
            appendJSON(attachment)
        }
        appendKey("clientMessageId")
        appendJSONString(message.clientMessageId)
        appendKey("conversationId")
        appendJSON(message.conversationId)
        appendKey("createdAt")
        appendJSON(message.createdAt)
        if let deletedAt = message.deletedAt {
            appendKey("deletedAt")
            appendJSON(deletedAt)
        }
        if let deletedBy = message.deletedBy {
            appendKey("deletedBy")
            appendJSON(deletedBy)
        }
        if let editedAt = message.editedAt {
            appendKey("editedAt")
            appendJSON(editedAt)
        }
        if let forwardedFromId = message.forwardedFromId {
            appendKey("forwardedFromId")
            appendJSON(forwardedFromId)
        }
        appendKey("id")
        appendJSON(message.id)
        if let mentions = message.mentions {
            appendKey("mentions")
            append(UInt8(ascii: "["))
            for (position, userId) in mentions.enumerated() {
                if position > 0 { append(UInt8(ascii: ",")) }
                appendJSON(userId)
            }
            append(UInt8(ascii: "]"))
        }
        if let metadata = message.metadata {
            appendKey("metadata")
            append(UInt8(ascii: "{"))
            // Foundation's `.sortedKeys` orders keys by their UTF-8 bytes; Swift's `<` on
            // strings compares canonical equivalents, which differs for decomposed text.
            for key in metadata.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                appendJSONKey(key)
                appendJSONString(metadata[key]!)
            }
            append(UInt8(ascii: "}"))
        }
        if let pinnedAt = message.pinnedAt {
            appendKey("pinnedAt")
            appendJSON(pinnedAt)
        }
        if let pinnedBy = message.pinnedBy {
            appendKey("pinnedBy")
            appendJSON(pinnedBy)
        }
        if let preview = message.preview {
            appendKey("preview")
            appendJSON(preview)
        }
        appendKey("reactions")
        append(UInt8(ascii: "{"))
        for emoji in message.reactions.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            appendJSONKey(emoji)
            append(UInt8(ascii: "["))
            for (position, userId) in message.reactions[emoji]!.enumerated() {
                if position > 0 { append(UInt8(ascii: ",")) }
                appendJSON(userId)
            }
            append(UInt8(ascii: "]"))
        }
        append(UInt8(ascii: "}"))
        if let replyToId = message.replyToId {
            appendKey("replyToId")
            appendJSON(replyToId)
        }
        if let senderBlocked = message.senderBlocked {
            appendKey("senderBlocked")
            append(literal: senderBlocked ? "true" : "false")
        }
        appendKey("senderId")
        appendJSON(message.senderId)
        appendKey("seq")
        appendJSON(message.seq)
        appendKey("text")
        appendJSONString(message.text)
        if let thread = message.thread {
            appendKey("thread")
            append(literal: #"{"lastReplyAt":"#)
            appendJSON(thread.lastReplyAt)
            append(literal: #","lastReplySeq":"#)
            appendJSON(thread.lastReplySeq)
            append(literal: #","replyCount":"#)
            appendJSON(thread.replyCount)
            append(UInt8(ascii: "}"))
        }
        if let threadRootId = message.threadRootId {
            appendKey("threadRootId")
            appendJSON(threadRootId)
        }
        appendKey("type")
        appendJSONString(message.type.rawValue)
        appendKey("updatedSeq")
        appendJSON(message.updatedSeq)
        append(UInt8(ascii: "}"))
    }

    /// A conversation as one viewer sees it, keys in sorted order.
    mutating func appendJSON(_ conversation: Conversation) {
        append(UInt8(ascii: "{"))
        appendKey("createdAt")
        appendJSON(conversation.createdAt)
        appendKey("id")
        appendJSON(conversation.id)
        appendKey("lastActivityAt")
        appendJSON(conversation.lastActivityAt)
        if let lastMessage = conversation.lastMessage {
            appendKey("lastMessage")
            appendJSON(lastMessage)
        }
        appendKey("lastSeq")
        appendJSON(conversation.lastSeq)
        appendKey("memberCount")
        appendJSON(conversation.memberCount)
        let lists = conversation.listsAllMembers
        if lists {
            appendKey("members")
            append(UInt8(ascii: "["))
            for (index, member) in conversation.members.enumerated() {
                if index > 0 { append(UInt8(ascii: ",")) }
                append(literal: #"{"deliveredSeq":"#)
                appendJSON(member.deliveredSeq)
                append(literal: #","readSeq":"#)
                appendJSON(member.readSeq)
                append(literal: #","userId":"#)
                appendJSON(member.userId)
                append(UInt8(ascii: "}"))
            }
            append(UInt8(ascii: "]"))
        }
        appendKey("mentionCount")
        appendJSON(conversation.mentionCount)
        appendKey("muted")
        append(literal: conversation.muted ? "true" : "false")
        if let mutedUntil = conversation.mutedUntil {
            appendKey("mutedUntil")
            appendJSON(mutedUntil)
        }
        if let name = conversation.name {
            appendKey("name")
            appendJSONString(name)
        }
        if lists {
            appendKey("participantIds")
            append(UInt8(ascii: "["))
            for (index, userId) in conversation.participantIds.enumerated() {
                if index > 0 { append(UInt8(ascii: ",")) }
                appendJSON(userId)
            }
            append(UInt8(ascii: "]"))
        }
        appendKey("readSeq")
        appendJSON(conversation.readSeq)
        appendKey("type")
        appendJSONString(conversation.type.rawValue)
        appendKey("unreadCount")
        appendJSON(conversation.unreadCount)
        append(UInt8(ascii: "}"))
    }

    /// A link preview, keys in sorted order.
    mutating func appendJSON(_ preview: LinkPreview) {
        append(UInt8(ascii: "{"))
        if let description = preview.description {
            appendKey("description")
            appendJSONString(description)
        }
        if let imageUrl = preview.imageUrl {
            appendKey("imageUrl")
            appendJSONString(imageUrl)
        }
        if let siteName = preview.siteName {
            appendKey("siteName")
            appendJSONString(siteName)
        }
        if let title = preview.title {
            appendKey("title")
            appendJSONString(title)
        }
        appendKey("url")
        appendJSONString(preview.url)
        append(UInt8(ascii: "}"))
    }

    /// An attachment, keys in sorted order.
    mutating func appendJSON(_ attachment: Attachment) {
        append(UInt8(ascii: "{"))
        appendKey("contentType")
        appendJSONString(attachment.contentType)
        if let durationMs = attachment.durationMs {
            appendKey("durationMs")
            appendJSON(durationMs)
        }
        if let height = attachment.height {
            appendKey("height")
            appendJSON(height)
        }
        appendKey("id")
        appendJSON(attachment.id)
        appendKey("name")
        appendJSONString(attachment.name)
        appendKey("size")
        appendJSON(attachment.size)
        appendKey("url")
        appendJSONString(attachment.url)
        if let width = attachment.width {
            appendKey("width")
            appendJSON(width)
        }
        append(UInt8(ascii: "}"))
    }
}
