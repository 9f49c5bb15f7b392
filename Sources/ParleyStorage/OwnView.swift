import Foundation
import ParleyProtocol

/// A member's own part of a conversation view: what differs from one member to the next.
struct OwnView: Sendable, Equatable {
    /// Unread messages (the contract's count, thread replies of the member's threads included).
    var unread: Int
    /// Unread messages that mention the member.
    var mentions: Int
    /// Whether the member's mute is on now.
    var muted: Bool
    /// When that mute ends, if it does by itself.
    var mutedUntil: Date?
    /// The member's read watermark.
    var readSeq: Int64

    /// Puts this member's part into a view of the conversation.
    func apply(to view: inout Conversation) {
        view.unreadCount = unread
        view.mentionCount = mentions
        view.muted = muted
        view.mutedUntil = mutedUntil
        view.readSeq = readSeq
    }
}
