import Foundation
import ParleyProtocol
import ParleyStorage

/// The chat operations a store carries out, each one rule of `ParleyRules` run in one
/// transaction of the store (sends and receipts through its group commit).
extension ParleyStore {
    /// Stores a message with the next seq, or returns the original for a repeated clientMessageId.
    public func send(_ draft: MessageDraft) async throws -> SendResult {
        try await enqueueSend(draft).result()
    }

    /// Queues a send now without waiting for it: sends queued one after another into one
    /// conversation take their seqs in that order (a connection pipelines its sends this way).
    /// `onCommit` runs right after the commit, before the result is answered, in commit order
    /// among the sends of a conversation (fan-out goes there, so events leave in seq order).
    public func enqueueSend(_ draft: MessageDraft, onCommit: @escaping @Sendable (SendResult) -> Void = { _ in }) -> PendingSend {
        let pending = enqueueWrite(in: draft.conversationId, sending: draft, onCommit: onCommit) { tx in
            try await SendRules.send(draft, in: tx)
        }
        return PendingSend(trace: pending.trace) {
            do {
                return try await pending.result()
            } catch is SendRaceLost {
                return try await reading { tx in try await SendRules.original(of: draft, in: tx) }
            }
        }
    }

    /// Raises the user's read watermark to `upToSeq` (clamped to the counter) or to the highest
    /// seq among `messageIds`; never lowers it; raises delivered to at least the new read.
    public func markRead(conversationId: EntityID, userId: EntityID, upToSeq: Int64?, messageIds: [EntityID]?) async throws -> WatermarkChange {
        try await enqueueWrite(in: conversationId) { tx in
            try await ReceiptRules.markRead(conversationId: conversationId, userId: userId, upToSeq: upToSeq, messageIds: messageIds, in: tx)
        }.result()
    }

    /// Raises the user's delivered watermark to `upToSeq` (clamped); never lowers it.
    public func markDelivered(conversationId: EntityID, userId: EntityID, upToSeq: Int64) async throws -> WatermarkChange {
        try await enqueueWrite(in: conversationId) { tx in
            try await ReceiptRules.markDelivered(conversationId: conversationId, userId: userId, upToSeq: upToSeq, in: tx)
        }.result()
    }

    /// Applies an edit, delete or reaction; the change takes the next seq as `updatedSeq`.
    public func change(_ edit: MessageEdit, messageId: EntityID, in conversationId: EntityID, by userId: EntityID, now: Date) async throws -> MessageChange {
        try await writing { tx in
            try await MessageRules.change(edit, messageId: messageId, in: conversationId, by: userId, now: now, in: tx)
        }
    }

    /// Creates a conversation; a direct one between the same pair returns the existing one.
    public func createConversation(_ new: NewConversation) async throws -> ConversationChange {
        try await writing { tx in try await ConversationRules.create(new, in: tx) }
    }

    /// Changes the user's own display name or picture (see ``ProfileRules``).
    public func updateProfile(of userId: EntityID, _ change: UpdateProfileRequest) async throws {
        try await writing { tx in try await ProfileRules.update(userId, change, in: tx) }
    }

    /// Renames a group; writes a system message.
    public func rename(conversationId: EntityID, by userId: EntityID, to name: String, now: Date) async throws -> ConversationChange {
        try await writing { tx in try await ConversationRules.rename(conversationId, by: userId, to: name, now: now, in: tx) }
    }

    /// Adds users of the same organization to a group; writes a system message if anyone was new.
    public func addParticipants(conversationId: EntityID, by userId: EntityID, userIds: [EntityID], now: Date) async throws -> ConversationChange {
        try await writing { tx in try await ConversationRules.add(userIds, to: conversationId, by: userId, now: now, in: tx) }
    }

    /// Removes a participant from a group (or the caller leaves); writes a system message.
    public func removeParticipant(conversationId: EntityID, by userId: EntityID, userId removed: EntityID, now: Date) async throws -> ConversationChange {
        try await writing { tx in try await ConversationRules.remove(removed, from: conversationId, by: userId, now: now, in: tx) }
    }

    /// A page of messages oldest first (see the contract for `before`/`after`), for a
    /// participant (see ``ReadRules``).
    public func messages(
        conversationId: EntityID, viewer: EntityID, before: Int64?, after: Int64?, limit: Int, includingThreads: Bool = false
    ) async throws -> MessagesPage {
        try await reading { tx in
            try await ReadRules.history(
                of: conversationId, for: viewer, before: before, after: after, limit: limit, includingThreads: includingThreads, in: tx)
        }
    }

    /// A thread's root and a page of its replies, for a participant (see ``ThreadRules``).
    public func thread(
        rootId: EntityID, conversationId: EntityID, viewer: EntityID, before: Int64?, after: Int64?, limit: Int
    ) async throws -> ThreadPage {
        try await reading { tx in
            try await ThreadRules.page(of: rootId, in: conversationId, for: viewer, before: before, after: after, limit: limit, in: tx)
        }
    }

    /// Pins or unpins a message (see ``PinRules``); a change takes the next seq as `updatedSeq`.
    public func setPinned(_ pin: Bool, messageId: EntityID, in conversationId: EntityID, by userId: EntityID, now: Date) async throws -> MessageChange {
        try await writing { tx in
            try await PinRules.setPinned(pin, messageId: messageId, in: conversationId, by: userId, now: now, in: tx)
        }
    }

    /// The conversation's pinned messages, newest pin first, for a participant.
    public func pins(conversationId: EntityID, viewer: EntityID) async throws -> [Message] {
        try await reading { tx in try await PinRules.pins(in: conversationId, for: viewer, in: tx) }
    }

    /// Sets the caller's mute of a conversation.
    public func mute(_ settings: ConversationSettings, conversationId: EntityID, by userId: EntityID, now: Date) async throws -> ConversationSettings {
        try await writing { tx in try await PinRules.mute(settings, in: conversationId, by: userId, now: now, in: tx) }
    }

    /// Writes a link preview on a message still as it was sent (see ``PreviewRules``).
    public func attachPreview(_ preview: LinkPreview, to messageId: EntityID, in conversationId: EntityID) async throws -> MessageChange? {
        try await writing { tx in try await PreviewRules.attach(preview, to: messageId, in: conversationId, in: tx) }
    }

    /// Who a stored message notifies by push (see ``NotifyRules``).
    public func pushRecipients(of message: Message, among participants: [EntityID], now: Date) async throws -> [EntityID] {
        try await reading { tx in try await NotifyRules.recipients(of: message, among: participants, now: now, in: tx) }
    }

    /// The catch-up feed: messages changed after `since`, ascending by updatedSeq, for a participant.
    public func changes(conversationId: EntityID, viewer: EntityID, since: Int64, limit: Int) async throws -> ChangesPage {
        try await reading { tx in try await ReadRules.changes(of: conversationId, for: viewer, since: since, limit: limit, in: tx) }
    }

    /// A page of a conversation's members with their watermarks, by user id after `after`,
    /// for a participant.
    public func participants(conversationId: EntityID, viewer: EntityID, after: EntityID?, limit: Int) async throws -> ParticipantsPage {
        try await reading { tx in try await ReadRules.members(of: conversationId, for: viewer, after: after, limit: limit, in: tx) }
    }

    /// The members who have read a message (their `readSeq` is at or past its seq), by user id
    /// after `after`, for a participant.
    public func readers(conversationId: EntityID, messageId: EntityID, viewer: EntityID, after: EntityID?, limit: Int) async throws -> ReadersPage {
        try await reading { tx in
            try await ReadRules.readers(of: messageId, in: conversationId, for: viewer, after: after, limit: limit, in: tx)
        }
    }

    /// An attachment the viewer may download (see ``AttachmentRules``); nil otherwise, as if
    /// it did not exist.
    public func attachment(id: EntityID, viewer: EntityID) async throws -> StoredAttachment? {
        try await reading { tx in try await AttachmentRules.visible(id, to: viewer, in: tx) }
    }

    /// Queues a write in a conversation with nothing to run at commit.
    func enqueueWrite<T: Sendable>(
        in conversationId: EntityID, _ body: @escaping @Sendable (any StoreTransaction) async throws -> T
    ) -> PendingWrite<T> {
        enqueueWrite(in: conversationId, sending: nil, onCommit: { _ in }, body)
    }

    /// Queues a write that sends nothing (see ``enqueueWrite(in:sending:onCommit:_:)``).
    public func enqueueWrite<T: Sendable>(
        in conversationId: EntityID, onCommit: @escaping @Sendable (T) -> Void,
        _ body: @escaping @Sendable (any StoreTransaction) async throws -> T
    ) -> PendingWrite<T> {
        enqueueWrite(in: conversationId, sending: nil, onCommit: onCommit, body)
    }
}
