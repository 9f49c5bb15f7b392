import Foundation
import ParleyProtocol
import ParleyStorage

/// The contract's rules for what a client may send, checked before anything is stored.
package enum MessageValidation {
    /// A draft from a send request, or `invalid_request` naming the broken rule.
    package static func draft(
        _ request: SendMessageRequest, conversationId: EntityID, senderId: EntityID, now: Date
    ) throws -> MessageDraft {
        let clientMessageId = request.clientMessageId
        guard !clientMessageId.isEmpty, clientMessageId.count <= Limits.maxClientMessageIdLength,
            !clientMessageId.unicodeScalars.contains(where: { CharacterSet.controlCharacters.contains($0) })
        else {
            throw ChatError.invalid(
                "clientMessageId must be 1–\(Limits.maxClientMessageIdLength) characters without control characters")
        }
        let mentions = try validMentions(request.mentions)
        if let source = request.forwardOf {
            // A forward copies its content from the source message; it may only add a reply.
            guard request.type == nil, Limits.trimmed(request.text).isEmpty, request.attachmentId == nil, request.metadata == nil else {
                throw ChatError.invalid("A forward carries no content of its own: give forwardOf and clientMessageId only")
            }
            return MessageDraft(
                conversationId: conversationId, senderId: senderId, clientMessageId: clientMessageId, type: .text, text: "",
                replyToId: request.replyToId, forwardedFromId: source, threadRootId: request.threadRootId, mentions: mentions,
                now: now)
        }
        let type = request.type ?? .text
        guard type != .system else { throw ChatError.invalid("system messages are written by the server only") }
        let text = Limits.trimmed(request.text)
        if type == .text, text.isEmpty { throw ChatError.invalid("text must not be empty") }
        guard !Limits.containsNul(text) else { throw ChatError.invalid("text must not contain NUL characters") }
        guard text.count <= Limits.maxTextCharacters else {
            throw ChatError.invalid("text is longer than \(Limits.maxTextCharacters) characters")
        }
        if type.carriesAttachment {
            guard request.attachmentId != nil else { throw ChatError.invalid("a \(type.rawValue) message needs an attachmentId") }
        } else if request.attachmentId != nil {
            throw ChatError.invalid("a \(type.rawValue) message cannot carry an attachment")
        }
        let metadata = try validMetadata(request.metadata)
        if type == .location { try requireCoordinates(metadata) }
        return MessageDraft(
            conversationId: conversationId, senderId: senderId, clientMessageId: clientMessageId,
            type: type, text: text, replyToId: request.replyToId, attachmentId: request.attachmentId,
            metadata: metadata, threadRootId: request.threadRootId, mentions: mentions, now: now)
    }

    /// At most 50 mentions, repeats dropped (the first kept, in order).
    private static func validMentions(_ mentions: [EntityID]?) throws -> [EntityID] {
        guard let mentions else { return [] }
        var seen = Set<EntityID>()
        let unique = mentions.filter { seen.insert($0).inserted }
        guard unique.count <= Limits.maxMentions else { throw ChatError.invalid("mentions name at most \(Limits.maxMentions) users") }
        return unique
    }

    private static func validMetadata(_ metadata: [String: String]?) throws -> [String: String]? {
        guard let metadata, !metadata.isEmpty else { return nil }
        guard metadata.count <= Limits.maxMetadataEntries else {
            throw ChatError.invalid("metadata has more than \(Limits.maxMetadataEntries) entries")
        }
        for (key, value) in metadata {
            guard (1...64).contains(key.count), value.count <= 1024, !Limits.containsNul(key + value) else {
                throw ChatError.invalid("metadata keys are 1–64 characters and values at most 1024")
            }
        }
        return metadata
    }

    private static func requireCoordinates(_ metadata: [String: String]?) throws {
        guard let latitude = metadata?["latitude"].flatMap(Double.init), (-90...90).contains(latitude),
            let longitude = metadata?["longitude"].flatMap(Double.init), (-180...180).contains(longitude)
        else {
            throw ChatError.invalid("a location message needs metadata latitude (-90…90) and longitude (-180…180)")
        }
    }

    /// Edited text: trimmed, 1–5000 characters.
    package static func editedText(_ text: String) throws -> String {
        let trimmed = Limits.trimmed(text)
        guard !trimmed.isEmpty, trimmed.count <= Limits.maxTextCharacters, !Limits.containsNul(trimmed) else {
            throw ChatError.invalid("text must be 1–\(Limits.maxTextCharacters) characters")
        }
        return trimmed
    }

    /// A reaction: one emoji or a short token, no whitespace or control characters. The
    /// joiner and tag characters that emoji sequences are made of (👩‍💻, 🏳️‍🌈, 🏴󠁧󠁢󠁳󠁣󠁴󠁿) are format
    /// characters, which `controlCharacters` includes: they are allowed.
    package static func emoji(_ text: String) throws -> String {
        func emojiPart(_ scalar: Unicode.Scalar) -> Bool { scalar.value == 0x200D || (0xE0020...0xE007F).contains(scalar.value) }
        guard (1...8).contains(text.count), text.utf8.count <= 64, !text.unicodeScalars.allSatisfy(emojiPart),
            !text.unicodeScalars.contains(where: {
                CharacterSet.whitespacesAndNewlines.contains($0) || (CharacterSet.controlCharacters.contains($0) && !emojiPart($0))
            })
        else { throw ChatError.invalid("emoji must be 1–8 characters without spaces") }
        return text
    }

    /// A conversation name trimmed, 1–200 characters.
    package static func conversationName(_ name: String) throws -> String {
        try shownName(name, field: "name", max: Limits.maxConversationNameCharacters)
    }

    /// A name everyone sees (in browsers, terminals and notifications), trimmed: 1–`max`
    /// characters, no control characters, no bidirectional overrides.
    package static func shownName(_ name: String, field: String, max: Int) throws -> String {
        let trimmed = Limits.trimmed(name)
        guard !trimmed.isEmpty, trimmed.count <= max, !Limits.containsNul(trimmed) else {
            throw ChatError.invalid("\(field) must be 1–\(max) characters")
        }
        guard !Limits.containsUnsafeCharacters(trimmed) else {
            throw ChatError.invalid("\(field) must not contain control characters or bidirectional overrides")
        }
        return trimmed
    }
}
