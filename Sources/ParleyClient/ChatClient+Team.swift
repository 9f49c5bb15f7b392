import Foundation
import ParleyProtocol

/// Threads (cached like conversation pages), pins and mute.
extension ChatClient {
    /// A thread's replies from the cache at once; then the newest page from the server fills
    /// the cache (the root's new count too) and ``ChatChange/messages(_:)`` tells the screens.
    /// Replies are sent with ``send(text:in:replyTo:threadRootId:mentions:)`` through the outbox,
    /// offline too.
    public func openThread(_ rootId: EntityID, in conversationId: EntityID, limit: Int = 50) async throws -> [LocalMessage] {
        let cached = try await database.messages(in: conversationId, viewer: userId, limit: limit, thread: rootId)
        Task { await self.refreshThread(rootId, in: conversationId, limit: limit) }
        return cached
    }

    /// The cached replies of a thread, oldest first (the temporary ones last).
    public func threadMessages(_ rootId: EntityID, in conversationId: EntityID, limit: Int = 200) async throws -> [LocalMessage] {
        try await database.messages(in: conversationId, viewer: userId, limit: limit, thread: rootId)
    }

    /// Reads a thread's newest page into the cache; false when the server could not answer.
    @discardableResult
    public func refreshThread(_ rootId: EntityID, in conversationId: EntityID, limit: Int = 50) async -> Bool {
        do {
            let page = try await transport.thread(rootId, in: conversationId, before: nil, limit: min(limit, Limits.messagesPageMax))
            try await database.apply([page.root] + page.messages)
            notify(.messages(conversationId))
            return true
        } catch {
            return false
        }
    }

    /// The conversation's pinned messages in the cache, newest pin first.
    public func pinnedMessages(in conversationId: EntityID) async throws -> [LocalMessage] {
        try await database.pinnedMessages(in: conversationId, viewer: userId)
    }

    /// Pins (`pinned`) or unpins a message for everyone in the conversation; the cache has the
    /// change when this returns. Online only (a pin is not queued).
    public func setPinned(_ pinned: Bool, _ message: LocalMessage) async throws {
        guard let serverId = message.serverId else {
            throw ClientError(kind: .server, code: .invalidRequest, message: "A message still on its way cannot be pinned")
        }
        let changed = try await transport.setPinned(pinned, serverId, in: message.conversationId)
        try await database.apply([changed])
        notify(.messages(message.conversationId))
    }

    /// Mutes (`until` nil: until turned off) or unmutes a conversation on every device of the
    /// user; the list row has it when this returns.
    public func setMuted(_ muted: Bool, until: Date? = nil, in conversationId: EntityID) async throws {
        _ = try await transport.setMuted(muted, until: until, in: conversationId)
        _ = try await database.store(conversation: try await transport.conversation(conversationId))
        notify(.conversations)
    }
}
