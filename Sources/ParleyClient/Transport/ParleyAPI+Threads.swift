import Foundation
import ParleyProtocol

/// Threads, pins and mute.
extension ParleyAPI {
    /// A page of history with thread replies too (the SDK keeps every message; screens filter).
    public func messagesIncludingThreads(
        _ conversationId: EntityID, before: Int64? = nil, after: Int64? = nil, limit: Int? = nil
    ) async throws -> MessagesPage {
        try await request(
            "GET", "conversations/\(conversationId)/messages",
            query: [
                "before": before.map(String.init), "after": after.map(String.init), "limit": limit.map(String.init),
                "threads": "include",
            ])
    }

    /// A thread's root and a page of its replies ascending by seq (the newest page without anchors).
    public func thread(
        _ rootId: EntityID, in conversationId: EntityID, before: Int64? = nil, after: Int64? = nil, limit: Int? = nil
    ) async throws -> ThreadPage {
        try await request(
            "GET", "conversations/\(conversationId)/threads/\(rootId)",
            query: ["before": before.map(String.init), "after": after.map(String.init), "limit": limit.map(String.init)])
    }

    /// Pins a message for everyone in the conversation; answers it as pinned.
    public func pin(_ messageId: EntityID, in conversationId: EntityID) async throws -> Message {
        try await request("POST", "conversations/\(conversationId)/pins", body: PinRequest(messageId: messageId))
    }

    /// Unpins a message; answers it as unpinned.
    public func unpin(_ messageId: EntityID, in conversationId: EntityID) async throws -> Message {
        try await request("DELETE", "conversations/\(conversationId)/pins/\(messageId)")
    }

    /// The conversation's pinned messages, newest pin first.
    public func pins(in conversationId: EntityID) async throws -> [Message] {
        let answer: PinsResponse = try await request("GET", "conversations/\(conversationId)/pins")
        return answer.messages
    }

    /// Mutes or unmutes the conversation for the caller on every device (`until`: the mute ends by itself).
    public func setMuted(_ muted: Bool, until: Date? = nil, in conversationId: EntityID) async throws -> ConversationSettings {
        try await request("PUT", "conversations/\(conversationId)/settings", body: ConversationSettings(muted: muted, mutedUntil: until))
    }
}
