import Foundation
import GRDB
import ParleyProtocol

extension LocalDatabase {
    /// What became of a live change applied to a conversation's list row.
    public enum ListRowOutcome: Sendable, Equatable {
        /// The row is current up to the change (applied, or already known).
        case applied
        /// The change lies beyond the row's next seq, or the conversation is not kept here:
        /// the row cannot be brought up to it exactly; read the conversation again.
        case stale
    }

    /// Moves a conversation's list row along one live change (a `message.created` or
    /// `message.updated` whose change seq is the row's next), as the server would: `lastSeq`,
    /// the last message and activity, and the viewer's unread and mention counts (another
    /// sender's countable message above `readSeq` adds one, and one to the mentions when it
    /// mentions the viewer; deleting it takes them back). A change the row already has is
    /// ignored, so an event delivered twice counts once; so is, for the count, a change a read
    /// answer ahead of the row already counted.
    ///
    /// A message of a sender the viewer blocks (`senderBlocked`) counts for nothing.
    ///
    /// A thread reply moves only `lastSeq`: it is not the conversation's activity, and it counts
    /// only for the thread's members, whom the server sends their exact view
    /// (`conversation.updated`); counting it here counted it for everyone.
    public func applyToListRow(_ message: Message, changeSeq: Int64, viewer: EntityID) async throws -> ListRowOutcome {
        try await writer.write { db in
            guard var conversation = try Self.storedConversation(db, message.conversationId),
                var state = try Self.readState(db, message.conversationId.description)
            else { return .stale }
            if changeSeq <= conversation.lastSeq { return .applied }
            guard changeSeq == conversation.lastSeq + 1 else { return .stale }
            // A change a read answer ahead of the row already counted does not count again.
            let inThread = message.threadRootId != nil
            // A sender the viewer blocks counts for nothing, as on the server.
            let counts = !inThread && message.type != .system && message.senderId != viewer && message.seq > conversation.readSeq
                && changeSeq > state.countedSeq && message.senderBlocked != true
            let mentionsViewer = counts && message.mentions?.contains(viewer) == true
            conversation.lastSeq = changeSeq
            state.lastSeq = changeSeq
            try Self.remember(message, changeSeq: changeSeq, viewer: viewer, in: &state, db)
            if changeSeq == message.seq {
                // New.
                if !inThread {
                    conversation.lastMessage = message
                    conversation.lastActivityAt = max(conversation.lastActivityAt, message.createdAt)
                }
                if counts && message.deletedAt == nil {
                    conversation.unreadCount += 1
                    if mentionsViewer { conversation.mentionCount += 1 }
                }
            } else {
                // A change of an earlier message: only a delete moves the count (a deleted
                // message changes no more, so a change that shows it deleted is the delete).
                if conversation.lastMessage?.id == message.id { conversation.lastMessage = message }
                if counts && message.deletedAt != nil {
                    conversation.unreadCount = max(0, conversation.unreadCount - 1)
                    if mentionsViewer { conversation.mentionCount = max(0, conversation.mentionCount - 1) }
                }
            }
            try Self.write(db, conversation, state)
            return .applied
        }
    }

    /// Applies a large group's `conversation.activity`: the newest message and seq when they are
    /// the row's next; anything further means events were missed (`stale`).
    public func apply(activity: ConversationActivityEvent, viewer: EntityID) async throws -> ListRowOutcome {
        guard let stored = try await conversation(activity.conversationId) else { return .stale }
        if activity.lastSeq <= stored.lastSeq { return .applied }
        return try await applyToListRow(activity.lastMessage, changeSeq: activity.lastSeq, viewer: viewer)
    }
}
