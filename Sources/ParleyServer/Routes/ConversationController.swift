import Hummingbird
import ParleyProtocol
import ParleyStorage

/// Conversations: create or open, list, show, rename, and change participants.
struct ConversationController: Sendable {
    let store: any ParleyStore
    let chat: ChatService
    /// See ``ServerConfiguration/listSyncOverlap``.
    var syncOverlapMilliseconds: Int64 = 10_000

    func addRoutes(to group: RouterGroup<ParleyRequestContext>) {
        group.post("conversations", use: create)
        group.get("conversations", use: list)
        group.get("conversations/:id", use: show)
        group.patch("conversations/:id", use: rename)
        group.post("conversations/:id/participants", use: addParticipants)
        group.delete("conversations/:id/participants/:userId", use: removeParticipant)
        group.get("conversations/:id/participants", use: participants)
    }

    /// `GET /conversations/{id}/participants?after=USERID&limit=`: members by user id.
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

    /// `GET /conversations`: the plain list (paged at 200, `hasMore`); with `limit`/`before` a page
    /// and a sync token; with `changedSince` only what changed since that token.
    @Sendable func list(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let query = request.uri.queryParameters
        if let token = query.get("changedSince") {
            guard let since = Self.parseSyncToken(String(token)) else {
                throw ChatError.invalid("changedSince is not a sync token this server gave")
            }
            let now = try await store.clockMilliseconds()
            let changes = try await store.conversationChanges(viewer: identity.userId, since: since - syncOverlapMilliseconds)
            return try JSONResponse.make(ConversationChanges(
                conversations: await chat.wire(changes.changed, for: identity.userId), removedIds: changes.removedIds,
                syncToken: Self.syncToken(now)))
        }
        let paged = query.get("limit") != nil || query.get("before") != nil
        var before: ListCursor?
        if let text = query.get("before") {
            guard let cursor = ListCursor(String(text)) else { throw ChatError.invalid("before is not a cursor this server gave") }
            before = cursor
        }
        let limit = paged ? try request.pageLimit(default: 50, max: 200) : 200
        // Read before the page, so a change made while it is read is still after the token.
        let now = try await store.clockMilliseconds()
        let result = try await store.conversations(viewer: identity.userId, limit: limit, before: before)
        let page = await chat.wire(result.page, for: identity.userId)
        guard paged else {
            return try JSONResponse.make(ConversationsResponse(conversations: page, hasMore: result.next != nil))
        }
        return try JSONResponse.make(ConversationsResponse(
            conversations: page, hasMore: result.next != nil, nextBefore: result.next?.wire, syncToken: Self.syncToken(now)))
    }

    static func syncToken(_ milliseconds: Int64) -> String { "s1.\(milliseconds)" }

    static func parseSyncToken(_ token: String) -> Int64? {
        guard token.hasPrefix("s1."), let value = Int64(token.dropFirst(3)), value >= 0 else { return nil }
        return value
    }

    @Sendable func show(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Conversation")
        guard let conversation = try await store.conversation(id: id, viewer: identity.userId) else {
            throw ChatError.notFound("Conversation")
        }
        return try JSONResponse.make(await chat.wire([conversation], for: identity.userId)[0])
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
        // An admin removing someone else moderates: in any group of the organization, on record.
        var moderating = false
        if userId != identity.userId { moderating = try await store.user(id: identity.userId)?.role == .admin }
        let change = try await chat.removeParticipant(id, userId: userId, by: identity, moderating: moderating)
        if moderating, change.systemMessage != nil {
            try await chat.audit.record(.participantRemoved, by: identity, target: userId.description, detail: "conversation \(id)")
        }
        return try JSONResponse.make(chat.wire(change.conversation))
    }
}
