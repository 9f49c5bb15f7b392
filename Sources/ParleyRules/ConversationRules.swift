import Foundation
import ParleyProtocol
import ParleyStorage

/// Who may create and change a conversation, and what each change writes: run inside the
/// store's transaction (see ``StoreTransaction``).
///
/// - Everyone in a conversation is of its organization: unknown, deactivated and other
///   organizations' users are alike "not found".
/// - A direct conversation has exactly one other participant, and there is one per pair
///   (creating it again opens the existing one).
/// - Only a group changes (name, participants), and only by one of its participants; to anyone
///   else it does not exist. A group has at most ``Limits/maxGroupParticipants`` participants.
/// - Every change that changes something writes a system message (with the next seq), which
///   everyone concerned is told of, the removed participant included; a change that changes
///   nothing writes nothing and tells nobody.
public enum ConversationRules {
    /// Creates a conversation, or opens the pair's existing direct one.
    public static func create(_ new: NewConversation, in tx: any StoreTransaction) async throws -> ConversationChange {
        let others = Set(new.participantIds).subtracting([new.creatorId])
        if new.type == .direct {
            guard others.count == 1, new.participantIds.count == 1 else {
                throw ChatError.invalid("A direct conversation has exactly one other participant")
            }
        } else {
            guard others.count + 1 <= Limits.maxGroupParticipants else {
                throw ChatError.invalid("A group has at most \(Limits.maxGroupParticipants) participants")
            }
        }
        try await requireSameOrganization(others, new.organizationId, in: tx)
        if new.type == .direct, let other = others.first, try await tx.blocks(other, new.creatorId) {
            // The same words as a blocked send; the blocker may still open it.
            throw ChatError(.forbidden, "You cannot start a conversation with this user")
        }
        let (id, created) = try await tx.insertConversation(new, members: [new.creatorId] + others.sorted())
        let conversation = try await view(id, for: new.creatorId, in: tx)
        return ConversationChange(conversation: conversation, created: created, audience: created ? conversation.participantIds : [])
    }

    /// Renames a group; the same name changes nothing.
    public static func rename(_ conversationId: EntityID, by userId: EntityID, to name: String, now: Date, in tx: any StoreTransaction) async throws -> ConversationChange {
        let header = try await changeableGroup(conversationId, by: userId, in: tx)
        guard header.name != name else { return try await unchanged(conversationId, for: userId, in: tx) }
        try await tx.setName(name, of: conversationId)
        return try await changed(
            conversationId, by: userId, text: "renamed the conversation to \"\(name)\"",
            metadata: ["action": "renamed", "name": name], now: now, in: tx)
    }

    /// Adds users of the group's organization; those already in it change nothing.
    public static func add(_ userIds: [EntityID], to conversationId: EntityID, by userId: EntityID, now: Date, in tx: any StoreTransaction) async throws -> ConversationChange {
        let header = try await changeableGroup(conversationId, by: userId, in: tx)
        try await requireSameOrganization(Set(userIds), header.organizationId, in: tx)
        let existing = Set(try await tx.participantIds(of: conversationId))
        let added = Set(userIds).subtracting(existing).sorted()
        guard !added.isEmpty else { return try await unchanged(conversationId, for: userId, in: tx) }
        guard existing.count + added.count <= Limits.maxGroupParticipants else {
            throw ChatError.invalid("A group has at most \(Limits.maxGroupParticipants) participants")
        }
        try await tx.addParticipants(added, to: conversationId, joinedAt: now)
        return try await changed(
            conversationId, by: userId, text: "added \(added.count) participant\(added.count == 1 ? "" : "s")",
            metadata: ["action": "participants.added", "userIds": added.map(\.description).joined(separator: ",")], now: now, in: tx)
    }

    /// Removes a participant (or the caller leaves). An admin moderating (`moderating` is their
    /// organization) removes anyone from a group of it without being in it.
    public static func remove(
        _ removed: EntityID, from conversationId: EntityID, by userId: EntityID, moderating: EntityID? = nil, now: Date,
        in tx: any StoreTransaction
    ) async throws -> ConversationChange {
        _ = try await changeableGroup(conversationId, by: userId, moderating: moderating, in: tx)
        guard try await tx.isParticipant(removed, of: conversationId) else { throw ChatError.notFound("Participant") }
        // The system message is written first, so the removed user's last seq covers it.
        let leaving = removed == userId
        let system = try await tx.insertMessage(systemDraft(
            conversationId, by: userId, text: leaving ? "left the conversation" : "removed a participant",
            metadata: ["action": leaving ? "participant.left" : "participant.removed", "userId": removed.description], now: now))
        try await tx.removeParticipant(removed, from: conversationId)
        let conversation = try await view(conversationId, for: userId, in: tx)
        return ConversationChange(
            conversation: conversation, created: false, systemMessage: system, audience: conversation.participantIds + [removed])
    }

    /// A system message's draft: its own new clientMessageId, the actor as sender.
    static func systemDraft(_ conversationId: EntityID, by userId: EntityID, text: String, metadata: [String: String], now: Date) -> MessageDraft {
        MessageDraft(
            conversationId: conversationId, senderId: userId, clientMessageId: "system:\(EntityID())",
            type: .system, text: text, metadata: metadata, now: now)
    }

    /// Takes the conversation, then checks the caller is in it (or moderates its organization)
    /// and that it is a group.
    private static func changeableGroup(
        _ conversationId: EntityID, by userId: EntityID, moderating: EntityID? = nil, in tx: any StoreTransaction
    ) async throws -> ConversationHeader {
        guard try await tx.lockConversation(conversationId), let header = try await tx.conversationHeader(conversationId) else {
            throw ChatError.notFound("Conversation")
        }
        // Checked once it is taken: a membership change committed meanwhile is seen.
        if header.organizationId != moderating {
            guard try await tx.isParticipant(userId, of: conversationId) else { throw ChatError.notFound("Conversation") }
        }
        guard header.type == .group else { throw ChatError.invalid("A direct conversation cannot be changed") }
        return header
    }

    private static func requireSameOrganization(_ userIds: Set<EntityID>, _ organizationId: EntityID, in tx: any StoreTransaction) async throws {
        guard !userIds.isEmpty else { return }
        let organizations = try await tx.organizationsOfActiveUsers(userIds)
        for userId in userIds.sorted() where organizations[userId] != organizationId {
            throw ChatError.notFound("User \(userId)")
        }
    }

    private static func view(_ conversationId: EntityID, for viewer: EntityID, in tx: any StoreTransaction) async throws -> Conversation {
        guard let conversation = try await tx.view(of: conversationId, for: viewer) else { throw ChatError.notFound("Conversation") }
        return conversation
    }

    private static func unchanged(_ conversationId: EntityID, for viewer: EntityID, in tx: any StoreTransaction) async throws -> ConversationChange {
        ConversationChange(conversation: try await view(conversationId, for: viewer, in: tx), created: false, audience: [])
    }

    private static func changed(
        _ conversationId: EntityID, by userId: EntityID, text: String, metadata: [String: String], now: Date, in tx: any StoreTransaction
    ) async throws -> ConversationChange {
        let system = try await tx.insertMessage(systemDraft(conversationId, by: userId, text: text, metadata: metadata, now: now))
        let conversation = try await view(conversationId, for: userId, in: tx)
        return ConversationChange(conversation: conversation, created: false, systemMessage: system, audience: conversation.participantIds)
    }
}
