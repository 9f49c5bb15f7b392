import Foundation
import ParleyProtocol
import ParleyStorage

/// Who may send what into a conversation, and what a retry returns: the rules of a send,
/// run inside the store's transaction (see ``StoreTransaction``).
///
/// - Only a participant sends; to anyone else the conversation does not exist.
/// - `(senderId, clientMessageId)` is unique: a repeated pair returns the original and writes
///   nothing; the same pair in another conversation is a `conflict`.
/// - A reply names a message of the same conversation.
/// - A forward copies a message the sender can read (not deleted, not a system message): its
///   type, text, metadata and attachment.
/// - An attachment is one the sender uploaded, of the message's kind (an image for `.image`...).
/// - A new message takes the conversation's next seq.
/// - In a direct conversation whose other member blocks the sender, nothing is sent (403).
/// - A thread reply names a root of the same conversation that is not deleted, not a
///   system message and not itself in a thread; the root's sender, the replier and whoever the
///   reply mentions become the thread's members, and the root takes the next seq for its new
///   count. Everyone a message mentions is a participant.
///
/// The store runs a send with its conversation taken (``StoreTransaction/lockConversation(_:)``),
/// so an earlier send's retry is visible here. Every refusal is thrown before anything is written.
public enum SendRules {
    /// Stores the draft, or returns the original of a retry.
    public static func send(_ draft: MessageDraft, in tx: any StoreTransaction) async throws -> SendResult {
        let needsChecks = draft.replyToId != nil || draft.forwardedFromId != nil || draft.attachmentId != nil
            || draft.threadRootId != nil || !draft.mentions.isEmpty
        // A plain message: checked and stored in one step. Otherwise checked first.
        let probe = try await tx.insertMessageUnlessSent(draft, checkOnly: needsChecks)
        guard probe.participantIds.contains(draft.senderId) else { throw ChatError.notFound("Conversation") }
        if let existingId = probe.existingId {
            guard let existing = try await tx.message(existingId) else {
                throw ChatError(.internal, "A clientMessageId without its message")
            }
            return try retried(draft, existing: existing, participantIds: probe.participantIds)
        }
        // A direct conversation's other member blocks the sender; a retry of a message
        // sent before the block got its original above.
        guard !probe.blocked else { throw Self.blockedSend }
        if let message = probe.message {
            return SendResult(message: message, created: true, participantIds: probe.participantIds)
        }
        let draft = try await checked(draft, in: tx)
        let participants = Set(probe.participantIds)
        guard draft.mentions.allSatisfy(participants.contains) else {
            throw ChatError.invalid("mentions must name participants of the conversation")
        }
        guard let rootId = draft.threadRootId else {
            return SendResult(message: try await tx.insertMessage(draft), created: true, participantIds: probe.participantIds)
        }
        let root = try await threadRoot(rootId, of: draft, in: tx)
        // Members first: a newcomer's count takes in the replies before this one, and this one
        // then counts for every member but its sender.
        var members = [root.senderId, draft.senderId]
        members += draft.mentions.filter { !members.contains($0) }
        try await tx.joinThread(rootId, in: draft.conversationId, users: members)
        let reply = try await tx.insertMessage(draft)
        let summary = ThreadSummary(
            replyCount: (root.thread?.replyCount ?? 0) + 1, lastReplyAt: reply.createdAt, lastReplySeq: reply.seq)
        let rootSeq = try await tx.takeNextSeq(in: draft.conversationId)
        try await tx.setThreadSummary(summary, of: rootId, updatedSeq: rootSeq)
        // The root as written: read once above (a second read of the whole message was a
        // tenth of the writer's time in `bench fanout --variant thread`).
        var updatedRoot = root
        updatedRoot.thread = summary
        updatedRoot.updatedSeq = rootSeq
        var result = SendResult(message: reply, created: true, participantIds: probe.participantIds)
        result.rootUpdate = updatedRoot
        return result
    }

    /// What a blocked sender is told: the same words whoever blocks them (blocks are not shown).
    static let blockedSend = ChatError(.forbidden, "You cannot send messages in this conversation")

    /// The root a reply names: a message of the same conversation, not deleted, not a system
    /// message, not itself a reply in a thread.
    private static func threadRoot(_ rootId: EntityID, of draft: MessageDraft, in tx: any StoreTransaction) async throws -> Message {
        guard let root = try await tx.message(rootId), root.conversationId == draft.conversationId else {
            throw ChatError.invalid("threadRootId is not a message of this conversation")
        }
        guard root.threadRootId == nil else { throw ChatError.invalid("threadRootId names a reply in a thread, not a root") }
        guard root.deletedAt == nil, root.type != .system else {
            throw ChatError.invalid("A deleted or system message cannot start a thread")
        }
        return root
    }

    /// The answer to a send whose pair a store found committed by a racing send (see
    /// ``SendRaceLost``), read after the race.
    public static func original(of draft: MessageDraft, in tx: any StoreTransaction) async throws -> SendResult {
        guard let existingId = try await tx.messageId(sentBy: draft.senderId, clientMessageId: draft.clientMessageId),
            let existing = try await tx.message(existingId)
        else { throw ChatError(.internal, "A clientMessageId conflict without its message") }
        return try retried(draft, existing: existing, participantIds: try await tx.participantIds(of: existing.conversationId))
    }

    /// A retry gets the original, unless the pair was used in another conversation.
    private static func retried(_ draft: MessageDraft, existing: Message, participantIds: [EntityID]) throws -> SendResult {
        guard existing.conversationId == draft.conversationId else {
            throw ChatError(.conflict, "clientMessageId was already used in another conversation")
        }
        return SendResult(message: existing, created: false, participantIds: participantIds)
    }

    /// Checks a reply's target, and fills a forward from its source or checks an attachment.
    static func checked(_ draft: MessageDraft, in tx: any StoreTransaction) async throws -> MessageDraft {
        var draft = draft
        if let replyToId = draft.replyToId {
            guard try await tx.conversationId(ofMessage: replyToId) == draft.conversationId else {
                throw ChatError.invalid("replyToId is not a message of this conversation")
            }
        }
        if let sourceId = draft.forwardedFromId {
            guard let source = try await tx.message(sourceId),
                try await tx.isParticipant(draft.senderId, of: source.conversationId)
            else { throw ChatError.notFound("Message") }
            guard source.deletedAt == nil, source.type != .system else {
                throw ChatError.invalid("Deleted and system messages cannot be forwarded")
            }
            draft.type = source.type
            draft.text = source.text
            draft.metadata = source.metadata
            draft.attachmentId = source.attachment?.id
        } else if let attachmentId = draft.attachmentId {
            try await requireAttachment(attachmentId, from: draft.senderId, for: draft.type, in: tx)
        }
        return draft
    }

    /// An attachment goes into a message only from its uploader, and of the message's kind.
    static func requireAttachment(_ id: EntityID, from sender: EntityID, for type: MessageType, in tx: any StoreTransaction) async throws {
        guard let attachment = try await tx.attachment(id), attachment.uploaderId == sender else {
            throw ChatError.invalid("attachmentId does not name an attachment you uploaded")
        }
        let family = attachment.contentType.split(separator: "/").first.map(String.init) ?? ""
        let fits = switch type {
        case .image: family == "image"
        case .video: family == "video"
        case .audio: family == "audio"
        default: true
        }
        guard fits else {
            throw ChatError.invalid("a \(type.rawValue) message needs a \(type.rawValue) attachment, not \(attachment.contentType)")
        }
    }
}
