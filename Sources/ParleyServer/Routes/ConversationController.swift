import Hummingbird
import ParleyProtocol

/// Conversations: create or open, list, show, rename, and change participants.
struct ConversationController: Sendable {
    let store: any ParleyStore
    let chat: ChatService

    func addRoutes(to group: RouterGroup<ParleyRequestContext>) {
        group.post("conversations", use: create)
        group.get("conversations", use: list)
        group.get("conversations/:id", use: show)
        group.patch("conversations/:id", use: rename)
        group.post("conversations/:id/participants", use: addParticipants)
        group.delete("conversations/:id/participants/:userId", use: removeParticipant)
        group.get("conversations/:id/participants", use: participants)
    }

    /// `GET /conversations/{id}/participants?after=USERID&limit=` (v1.2): members by user id.
    @Sendable func participants(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let limit = try request.pageLimit(default: Limits.participantsPageDefault, max: Limits.participantsPageMax)
        return try JSONResponse.make(try await store.participants(
            conversationId: id, viewer: identity.userId, after: try request.entityIDQuery("after"), limit: limit))
    }

    @Sendable func create(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let identity = try context.requireIdentity()
        let body = try await request.decodeJSON(CreateConversationRequest.self)
        let change = try await chat.createConversation(body, by: identity)
        return try JSONResponse.make(chat.wire(change.conversation), status: change.created ? .created : .ok)
    }

    @Sendable func list(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        return try JSONResponse.make(ConversationsResponse(
            conversations: try await store.conversations(viewer: identity.userId).map(chat.wire)))
    }

    @Sendable func show(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        guard let conversation = try await store.conversation(id: id, viewer: identity.userId) else {
            throw APIError.notFound("Conversation")
        }
        return try JSONResponse.make(chat.wire(conversation))
    }

    @Sendable func rename(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let body = try await request.decodeJSON(RenameConversationRequest.self)
        return try JSONResponse.make(chat.wire(try await chat.rename(id, to: body.name, by: identity).conversation))
    }

    @Sendable func addParticipants(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let body = try await request.decodeJSON(AddParticipantsRequest.self)
        return try JSONResponse.make(chat.wire(try await chat.addParticipants(id, userIds: body.userIds, by: identity).conversation))
    }

    @Sendable func removeParticipant(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let userId = try context.parameters.entityID("userId", what: "Participant")
        return try JSONResponse.make(chat.wire(try await chat.removeParticipant(id, userId: userId, by: identity).conversation))
    }
}
