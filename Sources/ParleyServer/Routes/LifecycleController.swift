import Foundation
import Hummingbird
import ParleyProtocol
import ParleyStorage

/// A user's own data: `GET /users/me/export` streams it as a ZIP, and `DELETE
/// /users/me {password}` erases the account (GDPR articles 15, 17 and 20).
struct LifecycleController: Sendable {
    let store: any ParleyStore
    let membership: MembershipService
    let lifecycle: DataLifecycle
    let passwords: PasswordHasher

    func addRoutes(to group: RouterGroup<ParleyRequestContext>) {
        group.get("users/me/export", use: export)
        group.delete("users/me", use: erase)
    }

    /// The caller's profile, conversations, messages and uploads, as `parley-export.zip`.
    @Sendable func export(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        var headers = HTTPFields()
        headers[.contentType] = "application/zip"
        headers[.contentDisposition] = "attachment; filename=\"parley-export.zip\""
        headers[.cacheControl] = "no-store"
        context.logger.notice("Export started", metadata: ["userId": "\(identity.userId)"])
        return Response(status: .ok, headers: headers, body: try await lifecycle.export(identity.userId))
    }

    /// Erases the caller: their messages become tombstones, their uploads go, their profile
    /// becomes "Deleted user", their tokens and devices are revoked. The last admin cannot (409).
    @Sendable func erase(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let identity = try context.requireIdentity()
        let body = try await request.decodeJSON(EraseAccountRequest.self)
        guard let user = try await store.user(id: identity.userId),
            let organization = try await store.organization(id: identity.organizationId),
            let credentials = try await store.credentials(organization: organization.name, email: user.email),
            try await passwords.verify(body.password, hash: credentials.passwordHash)
        else { throw ChatError(.forbidden, "The password is not right") }
        try await membership.erase(identity.userId, organizationId: identity.organizationId, lifecycle: lifecycle)
        context.logger.notice("Erased an account at its own request", metadata: ["userId": "\(identity.userId)"])
        return JSONResponse.noContent()
    }
}
