import Foundation
import Hummingbird
import ParleyProtocol
import ParleyStorage
import ParleyRules

/// The organization's own routes: its settings and invites, members' roles and
/// deactivation. Reading is for every member; changing is for admins (``Membership``).
struct OrganizationController: Sendable {
    let store: any ParleyStore
    let membership: MembershipService
    /// Sign-ins, which an admin can end.
    let sessions: SignInSessions
    /// Where each admin action here is recorded.
    let audit: AuditLog
    /// Erasure's deletions.
    let lifecycle: DataLifecycle

    func addRoutes(to group: RouterGroup<ParleyRequestContext>) {
        group.get("organization", use: show)
        group.patch("organization", use: update)
        group.post("organization/invites", use: createInvite)
        group.get("organization/invites", use: listInvites)
        group.delete("organization/invites/:code", use: deleteInvite)
        group.patch("users/:id", use: setRole)
        group.delete("users/:id", use: deactivate)
        group.post("users/:id/sign-out", use: signOut)
    }

    @Sendable func show(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        guard let organization = try await store.organization(id: identity.organizationId) else { throw ChatError.unauthorized }
        return try JSONResponse.make(OrganizationResponse(organization: organization))
    }

    @Sendable func update(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try await membership.requireAdmin(context)
        var request = request
        let body = try await request.decodeJSON(UpdateOrganizationRequest.self)
        guard body.allowedEmailDomains != nil || body.retention != nil else {
            throw ChatError.invalid("Give allowedEmailDomains, messageRetentionDays or both")
        }
        let domains = try body.allowedEmailDomains.map(Membership.allowedDomains)
        var retention: Int??
        switch body.retention {
        case .days(let days):
            guard (1...36_500).contains(days) else { throw ChatError.invalid("messageRetentionDays is 1–36500, or null for no limit") }
            retention = .some(days)
        case .off: retention = .some(nil)
        case nil: retention = nil
        }
        var organization = try await store.organization(id: identity.organizationId)
        if let domains {
            organization = try await store.setAllowedEmailDomains(domains, organizationId: identity.organizationId)
            try await audit.record(.domainsChanged, by: identity, detail: domains.joined(separator: ","))
        }
        if let retention {
            organization = try await store.setMessageRetention(days: retention, organizationId: identity.organizationId)
            try await audit.record(.retentionChanged, by: identity, detail: retention.map { "\($0) days" } ?? "off")
        }
        guard let organization else { throw ChatError.unauthorized }
        return try JSONResponse.make(OrganizationResponse(organization: organization))
    }

    @Sendable func createInvite(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try await membership.requireAdmin(context)
        var request = request
        let body = try await request.decodeJSON(CreateInviteRequest.self)
        let invite = try Membership.invite(body, organizationId: identity.organizationId, by: identity.userId, now: membership.now())
        try await store.createInvite(invite)
        try await audit.record(.inviteCreated, by: identity, target: invite.code, detail: invite.email)
        return try JSONResponse.make(InviteResponse(invite: invite), status: .created)
    }

    @Sendable func listInvites(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try await membership.requireAdmin(context)
        return try JSONResponse.make(InvitesResponse(invites: try await store.invites(organizationId: identity.organizationId)))
    }

    @Sendable func deleteInvite(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try await membership.requireAdmin(context)
        let code = context.parameters.get("code") ?? ""
        guard try await store.deleteInvite(code: code, organizationId: identity.organizationId) else { throw ChatError.notFound("Invite") }
        try await audit.record(.inviteDeleted, by: identity, target: code)
        return JSONResponse.noContent()
    }

    @Sendable func setRole(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try await membership.requireAdmin(context)
        let userId = try context.parameters.entityID("id", what: "User")
        var request = request
        let body = try await request.decodeJSON(UpdateUserRequest.self)
        guard let user = try await store.setRole(
            body.role, userId: userId, organizationId: identity.organizationId, check: { try Membership.keepsAnAdmin(adminsAfter: $0) })
        else { throw ChatError.notFound("User") }
        try await audit.record(.roleChanged, by: identity, target: userId.description, detail: body.role.rawValue)
        return try JSONResponse.make(UserResponse(user: user))
    }

    /// Ends every sign-in of a member (admins; a stolen laptop): their refresh tokens at once,
    /// access tokens and WebSockets on every node within seconds. The account stays active:
    /// they sign in again with their password.
    @Sendable func signOut(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try await membership.requireAdmin(context)
        let userId = try context.parameters.entityID("id", what: "User")
        guard let state = try await store.userState(id: userId), state.organizationId == identity.organizationId else {
            throw ChatError.notFound("User")
        }
        let ended = try await sessions.end(userId: userId, id: nil)
        try await audit.record(.userSignedOut, by: identity, target: userId.description, detail: "\(ended.count) sessions")
        context.logger.notice(
            "Signed a user out everywhere", metadata: ["userId": "\(userId)", "by": "\(identity.userId)", "sessions": "\(ended.count)"])
        return JSONResponse.noContent()
    }

    /// Deactivates a member, or with `?erase=true` erases them: their messages become
    /// tombstones, their uploads go, their profile becomes "Deleted user".
    @Sendable func deactivate(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try await membership.requireAdmin(context)
        let userId = try context.parameters.entityID("id", what: "User")
        switch request.uri.queryParameters.get("erase") {
        case nil, "false": break
        case "true":
            try await membership.erase(userId, organizationId: identity.organizationId, lifecycle: lifecycle)
            try await audit.record(.userErased, by: identity, target: userId.description)
            context.logger.notice("Erased user", metadata: ["userId": "\(userId)", "by": "\(identity.userId)"])
            return JSONResponse.noContent()
        default: throw ChatError.invalid("erase is true or false")
        }
        try await membership.deactivate(userId, by: identity)
        try await audit.record(.userDeactivated, by: identity, target: userId.description)
        context.logger.notice("Deactivated user", metadata: ["userId": "\(userId)", "by": "\(identity.userId)"])
        return JSONResponse.noContent()
    }
}

/// Deactivation's effects everywhere, and the admin check, in one place for the routes.
public struct MembershipService: Sendable {
    let store: any ParleyStore
    let accounts: AccountStates
    let fanOut: FanOut
    let now: @Sendable () -> Date
    /// Open registration (demos and tests): any organization admits by name.
    let openOrganizations: Bool

    /// The caller, if they are an admin of their organization; 403 otherwise.
    func requireAdmin(_ context: ParleyRequestContext) async throws -> Identity {
        let identity = try context.requireIdentity()
        try Membership.requireAdmin(try await store.user(id: identity.userId))
        return identity
    }

    /// Deactivates a user of the admin's organization: their tokens answer 401 from now on
    /// (here at once, on other nodes as soon as the cluster record arrives), their WebSockets
    /// close with 4001 on every node, their devices are gone; their messages stay.
    func deactivate(_ userId: EntityID, by admin: Identity) async throws {
        guard try await store.deactivate(
            userId: userId, organizationId: admin.organizationId, now: now(), check: { try Membership.keepsAnAdmin(adminsAfter: $0) })
        else { throw ChatError.notFound("User") }
        closeEverywhere(userId, organizationId: admin.organizationId, reason: "account deactivated")
    }

    /// A closed account's tokens are refused here at once and on other nodes when the cluster
    /// record arrives; its WebSockets close with 4001 on every node.
    private func closeEverywhere(_ userId: EntityID, organizationId: EntityID, reason: String) {
        accounts.deactivated(userId, organizationId: organizationId)
        fanOut.closeConnections(of: userId, code: Self.deactivatedCloseCode, reason: reason)
        fanOut.relay?.userDeactivated(userId, organizationId: organizationId)
    }

    /// Erases a user of the organization: the profile first (their tokens are refused
    /// from then on, everywhere, as for a deactivation), then their words and files.
    func erase(_ userId: EntityID, organizationId: EntityID, lifecycle: DataLifecycle) async throws {
        guard try await store.eraseProfile(
            userId: userId, organizationId: organizationId, now: now(), check: { try Membership.keepsAnAdmin(adminsAfter: $0) })
        else { throw ChatError.notFound("User") }
        closeEverywhere(userId, organizationId: organizationId, reason: "account erased")
        try await lifecycle.eraseContent(of: userId, now: now())
    }

    /// The WebSocket close code for a deactivated account.
    public static let deactivatedCloseCode = 4001
}
