import Hummingbird
import ParleyProtocol

/// Messages: send, history pages, and the `/changes` catch-up feed.
struct MessageController: Sendable {
    let store: any ParleyStore
    let chat: ChatService

    func addRoutes(to group: RouterGroup<ParleyRequestContext>) {
        group.post("conversations/:id/messages", use: send)
        group.get("conversations/:id/messages", use: history)
        group.get("conversations/:id/changes", use: changes)
    }

    @Sendable func send(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let body = try await request.decodeJSON(SendMessageRequest.self)
        if let inBody = body.conversationId, inBody != id {
            throw APIError.invalid("conversationId in the body does not match the path")
        }
        let result = try await chat.send(body, in: id, by: identity)
        return try JSONResponse.make(result.message, status: result.created ? .created : .ok)
    }

    @Sendable func history(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let limit = try request.pageLimit(default: Limits.messagesPageDefault, max: Limits.messagesPageMax)
        let page = try await store.messages(
            conversationId: id, viewer: identity.userId,
            before: try request.integerQuery("before"), after: try request.integerQuery("after"), limit: limit)
        return try JSONResponse.make(page)
    }

    @Sendable func changes(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let since = try request.integerQuery("since") ?? 0
        guard since >= 0 else { throw APIError.invalid("since must not be negative") }
        let limit = try request.pageLimit(default: Limits.changesPageDefault, max: Limits.changesPageMax)
        return try JSONResponse.make(try await store.changes(conversationId: id, viewer: identity.userId, since: since, limit: limit))
    }
}
