import Foundation
import ParleyProtocol

/// Pages for large groups, whose conversations leave out their member lists.
extension ParleyAPI {
    /// A page of a conversation's members by user id: `after` is the previous page's last id.
    public func participants(of conversationId: EntityID, after: EntityID? = nil, limit: Int? = nil) async throws -> ParticipantsPage {
        try await request(
            "GET", "conversations/\(conversationId)/participants",
            query: ["after": after?.description, "limit": limit.map(String.init)])
    }

    /// Every member of a conversation, page by page.
    public func allParticipants(of conversationId: EntityID) async throws -> [Member] {
        var members: [Member] = []
        var after: EntityID?
        repeat {
            let page = try await participants(of: conversationId, after: after)
            members += page.participants
            after = page.hasMore ? page.participants.last?.userId : nil
        } while after != nil
        return members
    }

    /// A page of who has read a message (a large group sends counts, not each receipt):
    /// `after` is the previous page's last id.
    public func readers(of messageId: EntityID, in conversationId: EntityID, after: EntityID? = nil, limit: Int? = nil) async throws -> ReadersPage {
        try await request(
            "GET", "conversations/\(conversationId)/messages/\(messageId)/reads",
            query: ["after": after?.description, "limit": limit.map(String.init)])
    }
}
