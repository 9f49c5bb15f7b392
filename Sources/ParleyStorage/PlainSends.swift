import Foundation
import ParleyProtocol

/// A send in a batch, by sender and clientMessageId.
package struct PlainSendKey: Hashable, Sendable {
    package let senderId: EntityID
    package let clientMessageId: String

    package init(_ draft: MessageDraft) {
        senderId = draft.senderId
        clientMessageId = draft.clientMessageId
    }
}

/// Which writes of a group commit are plain sends a store may write together (see
/// ``ParleyStore/enqueueWrite(in:sending:onCommit:_:)``).
package enum PlainSends {
    /// Whether a draft can be written with others: nothing to check beyond membership and
    /// retries (no reply, forward or attachment), and not a system message.
    package static func isPlain(_ draft: MessageDraft) -> Bool {
        draft.replyToId == nil && draft.forwardedFromId == nil && draft.attachmentId == nil && draft.type != .system
            && draft.threadRootId == nil && draft.mentions.isEmpty
    }

    /// The drafts of a batch that may be stored together, in queue order: those of the
    /// conversations whose every write in the batch is a plain send (so no other write of a
    /// conversation runs between its sends and takes a seq out of turn), without a sender's
    /// clientMessageId twice in the batch (a retry queued behind its original goes the usual way).
    package static func drafts(of jobs: [QueuedWrite], in order: [Int]) -> [MessageDraft] {
        var mixed = Set<EntityID>()
        var keys: [PlainSendKey: Int] = [:]
        for job in jobs {
            guard let draft = job.sending, isPlain(draft) else {
                mixed.insert(job.conversationId)
                continue
            }
            keys[PlainSendKey(draft), default: 0] += 1
        }
        for job in jobs {
            if let draft = job.sending, keys[PlainSendKey(draft), default: 0] > 1 { mixed.insert(job.conversationId) }
        }
        return order.compactMap { index in
            guard let draft = jobs[index].sending, !mixed.contains(jobs[index].conversationId) else { return nil }
            return draft
        }
    }
}
