import Foundation
import Hummingbird
import ParleyProtocol
import ParleyStorage

/// Messages: send, history pages, and the `/changes` catch-up feed.
struct MessageController: Sendable {
    let store: any ParleyStore
    let chat: ChatService

    func addRoutes(to group: RouterGroup<ParleyRequestContext>) {
        group.post("conversations/:id/messages", use: send)
        group.get("conversations/:id/messages", use: history)
        group.get("conversations/:id/changes", use: changes)
        group.patch("conversations/:id/messages/:messageId", use: edit)
        group.delete("conversations/:id/messages/:messageId", use: delete)
        group.post("conversations/:id/messages/:messageId/reactions", use: react)
        group.delete("conversations/:id/messages/:messageId/reactions/:emoji", use: unreact)
        group.get("search", use: search)
        group.get("conversations/:id/messages/:messageId/reads", use: readers)
        group.get("conversations/:id/threads/:rootId", use: thread)
        group.get("conversations/:id/pins", use: pins)
        group.post("conversations/:id/pins", use: pin)
        group.delete("conversations/:id/pins/:messageId", use: unpin)
        group.put("conversations/:id/settings", use: settings)
    }

    /// `GET /conversations/{id}/threads/{rootId}?before=&after=&limit=`.
    @Sendable func thread(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let rootId = try context.parameters.entityID("rootId", what: "Thread")
        let limit = try request.pageLimit(default: Limits.messagesPageDefault, max: Limits.messagesPageMax)
        var page = try await store.thread(
            rootId: rootId, conversationId: id, viewer: identity.userId,
            before: try request.integerQuery("before"), after: try request.integerQuery("after"), limit: limit)
        page.root = await chat.blocks.marked(page.root, for: identity.userId)
        page.messages = await chat.blocks.marked(page.messages, for: identity.userId)
        return try JSONResponse.make(page)
    }

    /// `GET /conversations/{id}/pins`: newest pin first.
    @Sendable func pins(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let pins = try await store.pins(conversationId: id, viewer: identity.userId)
        return try JSONResponse.make(PinsResponse(messages: await chat.blocks.marked(pins, for: identity.userId)))
    }

    /// `POST /conversations/{id}/pins {messageId}`: the message as pinned.
    @Sendable func pin(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let body = try await request.decodeJSON(PinRequest.self)
        return try JSONResponse.make(try await chat.setPinned(true, messageId: body.messageId, in: id, by: identity))
    }

    /// `DELETE /conversations/{id}/pins/{messageId}`: the message unpinned.
    @Sendable func unpin(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let messageId = try context.parameters.entityID("messageId", what: "Message")
        return try JSONResponse.make(try await chat.setPinned(false, messageId: messageId, in: id, by: identity))
    }

    /// `PUT /conversations/{id}/settings {muted, mutedUntil?}`: the caller's own settings.
    @Sendable func settings(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let body = try await request.decodeJSON(ConversationSettings.self)
        return try JSONResponse.make(try await chat.mute(body, in: id, by: identity))
    }

    @Sendable func edit(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let body = try await request.decodeJSON(EditMessageRequest.self)
        return try await change(.text(body.text), context)
    }

    /// The sender's delete, or an admin's of anyone's message of the organization.
    @Sendable func delete(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let messageId = try context.parameters.entityID("messageId", what: "Message")
        return try JSONResponse.make(try await chat.delete(messageId, in: id, by: identity))
    }

    @Sendable func react(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let body = try await request.decodeJSON(ReactionRequest.self)
        return try await change(.reaction(body.emoji, add: true), context)
    }

    @Sendable func unreact(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        guard let raw = context.parameters.get("emoji"), let emoji = raw.removingPercentEncoding else {
            throw ChatError.invalid("emoji is not valid percent-encoding")
        }
        return try await change(.reaction(emoji, add: false), context)
    }

    private func change(_ edit: MessageEdit, _ context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let messageId = try context.parameters.entityID("messageId", what: "Message")
        return try JSONResponse.make(try await chat.change(edit, messageId: messageId, in: id, by: identity))
    }

    /// `GET /search?q=&conversationId=&limit=&offset=` over the caller's conversations.
    @Sendable func search(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let query = Limits.trimmed(request.uri.queryParameters.get("q") ?? "")
        guard !query.isEmpty, query.count <= 200, !Limits.containsNul(query) else {
            throw ChatError.invalid("q must be 1–200 characters")
        }
        var conversationId: EntityID?
        if let text = request.uri.queryParameters.get("conversationId") {
            guard let id = EntityID(text) else { throw ChatError.invalid("conversationId is not an id") }
            conversationId = id
        }
        let limit = try request.pageLimit(default: 20, max: 100)
        let offset = try request.integerQuery("offset") ?? 0
        guard (0...10_000).contains(offset) else { throw ChatError.invalid("offset must be 0–10000") }
        var found = try await store.search(query, viewer: identity.userId, conversationId: conversationId, limit: limit, offset: Int(offset))
        let blocked = await chat.blocks.blocked(by: identity.userId)
        for index in found.results.indices {
            found.results[index].message = BlockDirectory.marked([found.results[index].message], blocked: blocked)[0]
        }
        return try JSONResponse.make(found)
    }

    @Sendable func send(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let body = try await request.decodeJSON(SendMessageRequest.self)
        if let inBody = body.conversationId, inBody != id {
            throw ChatError.invalid("conversationId in the body does not match the path")
        }
        let result = try await chat.send(body, in: id, by: identity)
        return try JSONResponse.make(result.message, status: result.created ? .created : .ok)
    }

    @Sendable func history(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let limit = try request.pageLimit(default: Limits.messagesPageDefault, max: Limits.messagesPageMax)
        let threads = request.uri.queryParameters.get("threads")
        guard threads == nil || threads == "include" || threads == "exclude" else {
            throw ChatError.invalid("threads is include or exclude")
        }
        var page = try await store.messages(
            conversationId: id, viewer: identity.userId,
            before: try request.integerQuery("before"), after: try request.integerQuery("after"), limit: limit,
            includingThreads: threads == "include")
        page.messages = await chat.blocks.marked(page.messages, for: identity.userId)
        return try JSONResponse.make(page)
    }

    /// `GET /conversations/{id}/messages/{messageId}/reads?after=USERID&limit=`: who has
    /// read a message, by user id.
    @Sendable func readers(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let messageId = try context.parameters.entityID("messageId", what: "Message")
        let limit = try request.pageLimit(default: Limits.participantsPageDefault, max: Limits.participantsPageMax)
        return try JSONResponse.make(try await store.readers(
            conversationId: id, messageId: messageId, viewer: identity.userId, after: try request.entityIDQuery("after"), limit: limit))
    }

    @Sendable func changes(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        let since = try request.integerQuery("since") ?? 0
        guard since >= 0 else { throw ChatError.invalid("since must not be negative") }
        let limit = try request.pageLimit(default: Limits.changesPageDefault, max: Limits.changesPageMax)
        var page = try await store.changes(conversationId: id, viewer: identity.userId, since: since, limit: limit)
        page.messages = await chat.blocks.marked(page.messages, for: identity.userId)
        return try JSONResponse.make(page)
    }
}
