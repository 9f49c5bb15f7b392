import Foundation
import ParleyProtocol
import ParleyStorage

/// Who may edit, delete or react to a message, and what each does: run inside the store's
/// transaction (see ``StoreTransaction``).
///
/// - Only participants see a message; to anyone else it does not exist.
/// - System messages cannot be changed.
/// - Only the sender edits or deletes; a deleted message cannot be edited or reacted to.
/// - Deleting empties the message but keeps its seq (a tombstone); deleting again changes nothing.
/// - Any participant adds or removes their own reactions.
/// - A change that changes something takes the conversation's next seq as the message's
///   `updatedSeq`; one that changes nothing (same text, a reaction already there) takes none
///   and tells nobody.
public enum MessageRules {
    /// Applies `edit` by `userId` to a message of the conversation.
    public static func change(
        _ edit: MessageEdit, messageId: EntityID, in conversationId: EntityID, by userId: EntityID, now: Date,
        in tx: any StoreTransaction
    ) async throws -> MessageChange {
        let (message, participants) = try await locked(messageId, in: conversationId, for: userId, in: tx)
        let unchanged = MessageChange(message: message, changed: false, participantIds: participants)
        guard message.type != .system else { throw ChatError.invalid("System messages cannot be changed") }
        switch edit {
        case .text(let text):
            guard message.senderId == userId else { throw ChatError(.forbidden, "Only the sender can edit a message") }
            guard message.deletedAt == nil else { throw ChatError.invalid("A deleted message cannot be edited") }
            guard text != message.text else { return unchanged }
            try await tx.setText(text, of: messageId, editedAt: now, updatedSeq: try await tx.takeNextSeq(in: conversationId))
        case .delete:
            guard message.senderId == userId else { throw ChatError(.forbidden, "Only the sender can delete a message") }
            guard message.deletedAt == nil else { return unchanged }
            return try await tombstone(message, by: userId, now: now, participants: participants, in: tx)
        case .reaction(let emoji, let add):
            guard message.deletedAt == nil else { throw ChatError.invalid("A deleted message cannot be reacted to") }
            guard try await tx.setReaction(emoji, by: userId, on: messageId, present: add, at: now) else { return unchanged }
            try await tx.setUpdatedSeq(try await tx.takeNextSeq(in: conversationId), of: messageId)
        }
        guard let updated = try await tx.message(messageId) else { throw ChatError.notFound("Message") }
        return MessageChange(message: updated, changed: true, participantIds: participants)
    }

    /// Deletes any message of the admin's organization (moderation), in a conversation the
    /// admin need not be in: the tombstone says who deleted it. System messages stay; deleting
    /// again changes nothing. To an admin of another organization the message does not exist.
    public static func moderatorDelete(
        _ messageId: EntityID, in conversationId: EntityID, by admin: EntityID, organizationId: EntityID, now: Date,
        in tx: any StoreTransaction
    ) async throws -> MessageChange {
        guard try await tx.lockConversation(conversationId), let header = try await tx.conversationHeader(conversationId),
            header.organizationId == organizationId, let message = try await tx.message(messageId),
            message.conversationId == conversationId
        else { throw ChatError.notFound("Message") }
        let participants = try await tx.participantIds(of: conversationId)
        guard message.type != .system else { throw ChatError.invalid("System messages cannot be changed") }
        guard message.deletedAt == nil else { return MessageChange(message: message, changed: false, participantIds: participants) }
        return try await tombstone(message, by: admin, now: now, participants: participants, in: tx)
    }

    /// Empties a message with the conversation's next seq and answers it as deleted: every
    /// delete (the sender's, an admin's, retention's and erasure's) ends here.
    private static func tombstone(
        _ message: Message, by userId: EntityID?, now: Date, participants: [EntityID], in tx: any StoreTransaction
    ) async throws -> MessageChange {
        try await tx.tombstone(message, deletedAt: now, deletedBy: userId, updatedSeq: try await tx.takeNextSeq(in: message.conversationId))
        guard let updated = try await tx.message(message.id) else { throw ChatError.notFound("Message") }
        return MessageChange(message: updated, changed: true, participantIds: participants)
    }

    /// A message of the conversation as it is, with the participants, once the conversation is
    /// taken: changes and sends of one conversation take their seqs one after the other, and a
    /// change sees the message as it is. To anyone not in the conversation it does not exist.
    static func locked(
        _ messageId: EntityID, in conversationId: EntityID, for userId: EntityID, in tx: any StoreTransaction
    ) async throws -> (message: Message, participants: [EntityID]) {
        guard try await tx.lockConversation(conversationId) else { throw ChatError.notFound("Message") }
        let participants = try await tx.participantIds(of: conversationId)
        guard participants.contains(userId), let message = try await tx.message(messageId), message.conversationId == conversationId
        else { throw ChatError.notFound("Message") }
        return (message, participants)
    }
}

extension MessageRules {
    /// Deletes a message for retention or erasure, as a sender's delete would: a
    /// tombstone that keeps its seq and takes the next as `updatedSeq`, deleted by nobody in
    /// particular. Nil when the message is gone, deleted already, or a system message.
    public static func expire(_ ref: MessageRef, now: Date, in tx: any StoreTransaction) async throws -> MessageChange? {
        guard try await tx.lockConversation(ref.conversationId), let message = try await tx.message(ref.id),
            message.conversationId == ref.conversationId, message.deletedAt == nil, message.type != .system
        else { return nil }
        return try await tombstone(message, by: nil, now: now, participants: try await tx.participantIds(of: ref.conversationId), in: tx)
    }
}
