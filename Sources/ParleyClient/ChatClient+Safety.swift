import Foundation
import ParleyProtocol

/// Trust and safety for an app's screens: block, report, take one's data out.
extension ChatClient {
    /// Blocks a user of the organization: they can no longer message the user directly, and
    /// their typing, presence and notifications stop; in groups their messages still arrive,
    /// marked ``LocalMessage/senderBlocked`` (screens fold them away, see
    /// ``ChatPresentation/body(of:)``) and never counted as unread. The messages of theirs
    /// already cached are marked at once; the server sends the new counts.
    public func block(_ user: EntityID) async throws {
        try await transport.setBlocked(true, user: user)
        try await markSender(user, blocked: true)
    }

    /// Ends a block: the user's messages show normally again.
    public func unblock(_ user: EntityID) async throws {
        try await transport.setBlocked(false, user: user)
        try await markSender(user, blocked: false)
    }

    /// Reports a message, a person or both to the organization's admins, with the user's
    /// words (1–1000 characters); the report's id.
    @discardableResult
    public func report(message: LocalMessage? = nil, user: EntityID? = nil, reason: String) async throws -> EntityID {
        try await transport.report(messageId: message?.serverId, userId: user, reason: reason)
    }

    /// Downloads the user's data (profile, conversations, the messages they sent, their
    /// uploads) as a ZIP file at `file`, telling `progress` the bytes written so far.
    @discardableResult
    public func exportData(to file: URL, progress: @escaping @Sendable (Int64) -> Void = { _ in }) async throws -> Int64 {
        try await transport.exportData(to: file, progress: progress)
    }

    private func markSender(_ user: EntityID, blocked: Bool) async throws {
        let conversations = try await database.markMessages(of: user, senderBlocked: blocked)
        for conversationId in conversations { notify(.messages(conversationId)) }
        notify(.conversations)
    }
}
