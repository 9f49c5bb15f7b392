import Foundation
import ParleyProtocol

/// Managing a group from the screens: rename it, add and remove people, leave it. Each is one
/// REST call, the list follows (the client syncs), and a refusal returns false with ``error``
/// in words (the server's rules apply: a direct chat has no members to change, and so on).
extension ChatSession {
    /// Renames a group the user is in.
    @discardableResult
    public func renameGroup(_ conversationId: EntityID, to name: String) async -> Bool {
        await changeGroup { try await $0.rename(conversationId, to: name) }
    }

    /// Adds people of the organization to a group.
    @discardableResult
    public func addMembers(_ userIds: [EntityID], to conversationId: EntityID) async -> Bool {
        await changeGroup { try await $0.addParticipants(conversationId, userIds: userIds) }
    }

    /// Takes someone out of a group.
    @discardableResult
    public func removeMember(_ userId: EntityID, from conversationId: EntityID) async -> Bool {
        await changeGroup { try await $0.removeParticipant(conversationId, userId: userId) }
    }

    /// Leaves a group: it goes from the list, and from the screen if it was open.
    @discardableResult
    public func leaveGroup(_ conversationId: EntityID) async -> Bool {
        guard let me = user?.id else { return false }
        let left = await changeGroup { try await $0.removeParticipant(conversationId, userId: me) }
        if left, selection == conversationId { selection = nil }
        return left
    }

    private func changeGroup(_ change: (ParleyAPI) async throws -> Conversation) async -> Bool {
        guard let api = restAPI() else { return false }
        do {
            _ = try await change(api)
            if let client { await client.synchronize() }
            error = nil
            return true
        } catch {
            self.error = Self.describe(error)
            return false
        }
    }
}
