/// The chat's counting and visibility rules as SQL text that both stores compose into their
/// statements (SQLite and PostgreSQL read it alike), so each rule is written once: what counts as
/// unread to a member, as a mention, as an unread thread reply, who has blocked whom, and which
/// messages search may find.
///
/// Each fragment names its rows by the aliases or columns the caller passes, and takes no
/// parameters of its own, so a store keeps its own placeholders and statement caching.
/// `ChatSQLTests` runs each fragment on both stores.
package enum ChatSQL {
    /// A member's unread count from their participant row `p` and its conversation row `c`, in
    /// O(1): the base taken at the member's last read, plus the countable messages since, less
    /// the member's own since, plus the thread replies counted for them apart.
    package static let unreadCount =
        "(p.unread_base + (c.countable - p.countable_at_base) - (p.own_countable - p.own_at_base) + p.thread_unread)"

    /// True when the user `member` blocks the user `sender` (with `not`, when they do not): one
    /// lookup in the blocks' primary key. A blocked sender's messages never count for the blocker.
    package static func blocks(_ member: String, _ sender: String, not: Bool = false) -> String {
        "\(not ? "NOT " : "")EXISTS (SELECT 1 FROM blocks b WHERE b.blocker_id = \(member) AND b.blocked_id = \(sender))"
    }

    /// Messages `m` that search may find: not deleted, not system lines (the caller joins the
    /// viewer's participant rows, which keep the hits to their conversations).
    package static let searchable = "m.deleted_at IS NULL AND m.type <> 'system'"

    /// The count of the conversation's messages unread to a member: someone else's, after the
    /// member's read watermark, not deleted, not a system line, not a thread reply, not from
    /// someone the member blocks. `member`, `conversation` and `readSeq` are SQL for the
    /// member's user id, conversation id and read watermark.
    package static func unreadMessages(member: String, conversation: String, readSeq: String) -> String {
        """
        SELECT COUNT(*) FROM messages m
        WHERE m.conversation_id = \(conversation) AND m.seq > \(readSeq) AND m.sender_id <> \(member)
        AND m.deleted_at IS NULL AND m.type <> 'system' AND m.thread_root_id IS NULL
        AND \(blocks(member, "m.sender_id", not: true))
        """
    }

    /// The count of replies unread to a member in the threads they follow (as
    /// ``unreadMessages(member:conversation:readSeq:)``, for thread replies).
    package static func unreadThreadReplies(member: String, conversation: String, readSeq: String) -> String {
        """
        SELECT COUNT(*) FROM messages m
        JOIN thread_members t ON t.root_id = m.thread_root_id AND t.user_id = \(member)
        WHERE m.conversation_id = \(conversation) AND m.seq > \(readSeq) AND m.sender_id <> \(member)
        AND m.deleted_at IS NULL AND \(blocks(member, "m.sender_id", not: true))
        """
    }

    /// The count of messages mentioning a member after their read watermark, not deleted, not
    /// from someone they block.
    package static func unreadMentions(member: String, conversation: String, readSeq: String) -> String {
        """
        SELECT COUNT(*) FROM mentions x JOIN messages m ON m.id = x.message_id
        WHERE x.conversation_id = \(conversation) AND x.user_id = \(member) AND x.seq > \(readSeq)
        AND m.deleted_at IS NULL AND \(blocks(member, "m.sender_id", not: true))
        """
    }
}
