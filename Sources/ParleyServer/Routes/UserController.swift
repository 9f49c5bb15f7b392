import Hummingbird
import ParleyProtocol
import ParleyRules
import ParleyStorage

/// `GET /users/me`, `PATCH /users/me` (one's own name and picture), `GET /users?q=` (the
/// caller's organization only), and the caller's blocks: `POST`/`DELETE /users/{id}/block`,
/// `GET /users/blocked`.
struct UserController: Sendable {
    let store: any ParleyStore
    let fanOut: FanOut
    let chat: ChatService

    func addRoutes(to group: RouterGroup<ParleyRequestContext>) {
        group.get("users/me", use: me)
        group.patch("users/me", use: updateProfile)
        group.get("users", use: list)
        group.get("users/blocked", use: blocked)
        group.post("users/:id/block", use: block)
        group.delete("users/:id/block", use: unblock)
    }

    @Sendable func me(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        guard let user = try await store.user(id: identity.userId) else { throw ChatError.unauthorized }
        return try JSONResponse.make(live(user, hidden: []))
    }

    /// `PATCH /users/me`: the caller's name or picture (``ProfileRules``). The organization
    /// learns it through `user.updated`, the caller's other devices too; those who block the
    /// caller get it without presence.
    @Sendable func updateProfile(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        var request = request
        let change = try await request.decodeJSON(UpdateProfileRequest.self)
        try await store.updateProfile(of: identity.userId, change)
        guard let user = try await store.user(id: identity.userId) else { throw ChatError.unauthorized }
        let blockers = await chat.blocks.blockers(of: identity.userId)
        fanOut.deliver(.userUpdated(UserEvent(user: live(user, hidden: []))), toOrganization: identity.organizationId, excluding: blockers)
        fanOut.deliver(.userUpdated(UserEvent(user: live(user, hidden: [user.id]))), to: blockers)
        return try JSONResponse.make(UserResponse(user: live(user, hidden: [])))
    }

    @Sendable func list(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let query = request.uri.queryParameters.get("q").map(Limits.trimmed)
        guard (query?.count ?? 0) <= 100 else { throw ChatError.invalid("q is at most 100 characters") }
        let limit = try request.pageLimit(default: 100, max: 500)
        let users = try await store.users(organizationId: identity.organizationId, matching: query, limit: limit)
        let hidden = await chat.blocks.blocked(by: identity.userId)
        return try JSONResponse.make(UsersResponse(users: users.map { live($0, hidden: hidden) }))
    }

    /// `GET /users/blocked`: the users the caller blocks, by name, without their presence.
    @Sendable func blocked(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let users = try await store.blockedUsers(by: identity.userId)
        return try JSONResponse.make(UsersResponse(users: users.map { live($0, hidden: Set(users.map(\.id))) }))
    }

    /// `POST /users/{id}/block`: 204, also when the user was blocked already.
    @Sendable func block(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        try await chat.setBlocked(true, user: try context.parameters.entityID("id", what: "User"), by: identity)
        return JSONResponse.noContent()
    }

    /// `DELETE /users/{id}/block`: 204, also when the user was not blocked.
    @Sendable func unblock(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        try await chat.setBlocked(false, user: try context.parameters.entityID("id", what: "User"), by: identity)
        return JSONResponse.noContent()
    }

    /// The user with `isOnline` from the live connections; a user the caller blocks (`hidden`)
    /// shows no presence at all.
    private func live(_ user: User, hidden: Set<EntityID>) -> User {
        var user = user
        guard !hidden.contains(user.id) else {
            user.isOnline = false
            user.lastSeenAt = nil
            return user
        }
        user.isOnline = fanOut.isOnline(user.id)
        if user.isOnline { user.lastSeenAt = nil }
        return user
    }
}
