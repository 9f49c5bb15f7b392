import Foundation
import ParleyProtocol

/// A member's own part of a conversation view: what differs from one member to the next.
package struct OwnView: Sendable, Equatable {
    /// Unread messages (the contract's count, thread replies of the member's threads included).
    package var unread: Int
    /// Unread messages that mention the member.
    package var mentions: Int
    /// Whether the member's mute is on now.
    package var muted: Bool
    /// When that mute ends, if it does by itself.
    package var mutedUntil: Date?
    /// The member's read watermark.
    package var readSeq: Int64

    package init(unread: Int, mentions: Int, muted: Bool, mutedUntil: Date?, readSeq: Int64) {
        self.unread = unread
        self.mentions = mentions
        self.muted = muted
        self.mutedUntil = mutedUntil
        self.readSeq = readSeq
    }

    /// Puts this member's part into a view of the conversation.
    package func apply(to view: inout Conversation) {
        view.unreadCount = unread
        view.mentionCount = mentions
        view.muted = muted
        view.mutedUntil = mutedUntil
        view.readSeq = readSeq
    }
}
