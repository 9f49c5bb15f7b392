import Foundation
import ParleyProtocol
import ParleyStorage

/// Pinning messages and muting a conversation, run inside the store's transaction.
///
/// - Any participant pins or unpins a message of the conversation; to anyone else it does not exist.
/// - A deleted or system message cannot be pinned; a conversation has at most 50 pins (409 past that).
/// - A pin or unpin that changes something takes the next seq as the message's `updatedSeq`;
///   pinning a pinned message or unpinning one that is not changes nothing and takes none.
/// - A mute is the caller's own: a participant sets it; a `mutedUntil` must lie ahead.
public enum PinRules {
    /// Pins (`pin`) or unpins a message.
    public static func setPinned(
        _ pin: Bool, messageId: EntityID, in conversationId: EntityID, by userId: EntityID, now: Date, in tx: any StoreTransaction
    ) async throws -> MessageChange {
        let (message, participants) = try await MessageRules.locked(messageId, in: conversationId, for: userId, in: tx)
        let unchanged = MessageChange(message: message, changed: false, participantIds: participants)
        if pin {
            guard message.pinnedAt == nil else { return unchanged }
            guard message.deletedAt == nil, message.type != .system else {
                throw ChatError.invalid("A deleted or system message cannot be pinned")
            }
            guard try await tx.pinCount(in: conversationId) < Limits.maxPins else {
                throw ChatError(.conflict, "A conversation has at most \(Limits.maxPins) pinned messages: unpin one first")
            }
            try await tx.setPin(of: messageId, at: now, by: userId, updatedSeq: try await tx.takeNextSeq(in: conversationId))
        } else {
            guard message.pinnedAt != nil else { return unchanged }
            try await tx.setPin(of: messageId, at: nil, by: nil, updatedSeq: try await tx.takeNextSeq(in: conversationId))
        }
        guard let updated = try await tx.message(messageId) else { throw ChatError.notFound("Message") }
        return MessageChange(message: updated, changed: true, participantIds: participants)
    }

    /// The conversation's pinned messages, newest pin first, for a participant.
    public static func pins(in conversationId: EntityID, for viewer: EntityID, in tx: any StoreTransaction) async throws -> [Message] {
        try await ReadRules.requireParticipant(viewer, of: conversationId, in: tx)
        return try await tx.pinnedMessages(in: conversationId)
    }

    /// Sets the caller's mute; answers the settings as stored.
    public static func mute(
        _ settings: ConversationSettings, in conversationId: EntityID, by userId: EntityID, now: Date, in tx: any StoreTransaction
    ) async throws -> ConversationSettings {
        try await ReadRules.requireParticipant(userId, of: conversationId, in: tx)
        var settings = settings
        if !settings.muted { settings.mutedUntil = nil }
        if let until = settings.mutedUntil, until <= now { throw ChatError.invalid("mutedUntil must lie in the future") }
        settings.mutedUntil = settings.mutedUntil?.wholeMilliseconds
        try await tx.setMute(settings, of: userId, in: conversationId)
        return settings
    }
}

/// A link preview read after a message was stored.
///
/// - Only a message still as it was sent gets one: not deleted, and with the URL still the first
///   of its text (an edit may have removed it), compared as the worker read it (scheme and host
///   lowercased, other characters percent-encoded), not as typed; otherwise nothing is written.
/// - Setting it takes the next seq as the message's `updatedSeq`.
public enum PreviewRules {
    /// Writes `preview` on the message; nil when it no longer applies.
    public static func attach(
        _ preview: LinkPreview, to messageId: EntityID, in conversationId: EntityID, in tx: any StoreTransaction
    ) async throws -> MessageChange? {
        guard try await tx.lockConversation(conversationId), let message = try await tx.message(messageId),
            message.conversationId == conversationId, message.deletedAt == nil, PreviewURL.first(in: message.text)?.absoluteString == preview.url,
            message.preview != preview
        else { return nil }
        try await tx.setPreview(preview, of: messageId, updatedSeq: try await tx.takeNextSeq(in: conversationId))
        guard let updated = try await tx.message(messageId) else { return nil }
        return MessageChange(message: updated, changed: true, participantIds: try await tx.participantIds(of: conversationId))
    }
}
