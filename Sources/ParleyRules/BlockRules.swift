import Foundation
import ParleyProtocol
import ParleyStorage

/// Who may block whom, and what a block changes: run inside the store's transaction.
///
/// - A user blocks another active user of their own organization, never themselves; to anyone
///   else the user does not exist. Blocking twice, or unblocking someone not blocked, changes nothing.
/// - A blocked sender's messages are never unread to the blocker: when a block starts or ends,
///   the blocker's counts are taken again in every conversation the two share, each one taken
///   first like any writer of it.
/// - What else a block does (refused direct sends, no typing, presence or push, `senderBlocked`
///   marks) is read from the blocks themselves; the blocked user is never told.
public enum BlockRules {
    /// Blocks (`blocked` true) or unblocks `user` for `blocker`; the conversations the two
    /// share, whose counts for the blocker were taken again, or nil when it was already so.
    public static func setBlocked(
        _ blocked: Bool, user: EntityID, by blocker: Identity, now: Date, in tx: any StoreTransaction
    ) async throws -> [EntityID]? {
        guard user != blocker.userId else { throw ChatError.invalid("You cannot block yourself") }
        if blocked {
            let organizations = try await tx.organizationsOfActiveUsers([user])
            guard organizations[user] == blocker.organizationId else { throw ChatError.notFound("User") }
        }
        guard try await tx.setBlock(blocker.userId, user, present: blocked, at: now) else { return nil }
        let shared = try await tx.sharedConversationIds(blocker.userId, user)
        for conversationId in shared {
            guard try await tx.lockConversation(conversationId) else { continue }
            try await tx.readMoved(for: blocker.userId, in: conversationId)
        }
        return shared
    }
}
