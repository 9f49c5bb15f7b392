import Hummingbird
import ParleyProtocol

/// `GET /users/me` and `GET /users?q=` (the caller's organization only).
struct UserController: Sendable {
    let store: any ParleyStore
    let fanOut: FanOut

    func addRoutes(to group: RouterGroup<ParleyRequestContext>) {
        group.get("users/me", use: me)
        group.get("users", use: list)
    }

    @Sendable func me(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        guard let user = try await store.user(id: identity.userId) else { throw APIError.unauthorized }
        return try JSONResponse.make(live(user))
    }

    @Sendable func list(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let query = request.uri.queryParameters.get("q").map(Limits.trimmed)
        guard (query?.count ?? 0) <= 100 else { throw APIError.invalid("q is at most 100 characters") }
        let limit = try request.pageLimit(default: 100, max: 500)
        let users = try await store.users(organizationId: identity.organizationId, matching: query, limit: limit)
        return try JSONResponse.make(UsersResponse(users: users.map(live)))
    }

    /// The user with `isOnline` from this node's live connections.
    private func live(_ user: User) -> User {
        var user = user
        user.isOnline = fanOut.isOnline(user.id)
        if user.isOnline { user.lastSeenAt = nil }
        return user
    }
}
