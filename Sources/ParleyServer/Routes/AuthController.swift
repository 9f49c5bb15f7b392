import Foundation
import Hummingbird
import ParleyProtocol

/// `POST /auth/register`, `POST /auth/login` and `POST /auth/refresh`.
struct AuthController: Sendable {
    let store: any ParleyStore
    let tokens: TokenService
    let passwords: PasswordHasher
    let decoyHash: String
    let now: @Sendable () -> Date
    /// v1's open registration (`--open-organizations`): any organization admits by name.
    let openOrganizations: Bool
    /// Failed logins per account and per address, registrations per address (nil: none).
    let limits: RateLimiter?

    func addRoutes(to group: RouterGroup<ParleyRequestContext>, authenticated: RouterGroup<ParleyRequestContext>) {
        group.post("auth/register", use: register)
        group.post("auth/login", use: login)
        authenticated.post("auth/refresh", use: refresh)
        authenticated.post("auth/ticket", use: ticket)
    }

    /// A one-use ticket for opening the WebSocket (`/ws?ticket=`), so the access token never
    /// goes into a URL (browsers cannot set headers on a WebSocket upgrade).
    @Sendable func ticket(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        guard let grant = context.grant else { throw APIError.unauthorized }
        let (ticket, expiresAt) = try await tokens.ticket(for: grant)
        return try JSONResponse.make(SocketTicket(ticket: ticket, expiresAt: expiresAt))
    }

    /// A fresh token for a valid one (an active user's): clients renew before expiry.
    @Sendable func refresh(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        guard let user = try await store.user(id: identity.userId) else { throw APIError.unauthorized }
        // The same sign-in session: logging out ends the refreshed token too.
        let token = try await tokens.issue(for: user, now: now(), sessionId: context.grant?.sessionId)
        return try JSONResponse.make(AuthResponse(token: token, user: user))
    }

    @Sendable func register(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let body = try await request.decodeJSON(RegisterRequest.self)
        let organization = try Self.organization(body.organization)
        guard !Limits.containsUnsafeCharacters(organization) else {
            throw APIError.invalid("organization must not contain control characters or bidirectional overrides")
        }
        let email = try Self.email(body.email)
        let displayName = Limits.trimmed(body.displayName)
        guard !displayName.isEmpty, displayName.count <= Limits.maxDisplayNameCharacters, !Limits.containsNul(displayName) else {
            throw APIError.invalid("displayName must be 1–\(Limits.maxDisplayNameCharacters) characters")
        }
        // Shown to everyone in the organization, in browsers, terminals and notifications.
        guard !Limits.containsUnsafeCharacters(displayName) else {
            throw APIError.invalid("displayName must not contain control characters or bidirectional overrides")
        }
        guard Limits.passwordLength.contains(body.password.count) else {
            throw APIError.invalid(
                "password must be \(Limits.passwordLength.lowerBound)–\(Limits.passwordLength.upperBound) characters")
        }
        let inviteCode = body.inviteCode.map(Limits.trimmed).flatMap { $0.isEmpty ? nil : $0 }
        guard (inviteCode?.count ?? 0) <= 128 else { throw Membership.notAdmitted }
        if let address = RateLimiter.addressKey(context.clientAddress) { try limits?.enforce(.registration, address) }
        let hash = try await passwords.hash(body.password)
        let at = now(), open = openOrganizations
        let user = try await store.register(
            Registration(organization: organization, email: email, displayName: displayName, passwordHash: hash, inviteCode: inviteCode, now: at)
        ) { existing, invite in
            try Membership.admit(email: email, to: existing, invite: invite, open: open, now: at)
        }
        context.logger.info("Registered user", metadata: ["userId": "\(user.id)", "organizationId": "\(user.organizationId)"])
        return try JSONResponse.make(AuthResponse(token: try await tokens.issue(for: user, now: now()), user: user), status: .created)
    }

    @Sendable func login(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let body = try await request.decodeJSON(LoginRequest.self)
        let failure = APIError(.unauthorized, "Invalid organization, email or password")
        // Throttled by failures: a right password after too many wrong ones waits too, so
        // guessing cannot go on; each failure counts for the account as tried from this
        // address, and for the address. Keyed by the pair, someone who knows an address cannot
        // lock its owner out from everywhere else by failing on purpose.
        let address = RateLimiter.addressKey(context.clientAddress)
        let account = (address ?? "local") + " " + Limits.trimmed(body.organization).lowercased() + "/"
            + Limits.trimmed(body.email).lowercased()
        if let limits {
            let wait = [
                limits.check(.loginAccount, account), limits.loginBackoff(account), address.flatMap { limits.check(.loginAddress, $0) },
            ].compactMap { $0 }.max()
            if let wait {
                limits.counted(.loginAccount)
                throw APIError.rateLimited(retryAfter: wait)
            }
        }
        let failed: @Sendable () -> APIError = { [limits] in
            _ = limits?.take(.loginAccount, account)
            limits?.loginFailed(account)
            if let address { _ = limits?.take(.loginAddress, address) }
            return failure
        }
        guard let organization = try? Self.organization(body.organization), let email = try? Self.email(body.email),
            let found = try await store.credentials(organization: organization, email: email)
        else {
            // Same work as a real check, so timing does not tell which emails exist.
            _ = try await passwords.verify(body.password, hash: decoyHash)
            throw failed()
        }
        guard try await passwords.verify(body.password, hash: found.passwordHash) else { throw failed() }
        limits?.loginSucceeded(account)
        return try JSONResponse.make(AuthResponse(token: try await tokens.issue(for: found.user, now: now()), user: found.user))
    }

    static func organization(_ text: String) throws -> String {
        let name = Limits.trimmed(text)
        guard !name.isEmpty, name.count <= Limits.maxOrganizationCharacters, !Limits.containsNul(name) else {
            throw APIError.invalid("organization must be 1–\(Limits.maxOrganizationCharacters) characters")
        }
        return name
    }

    /// An email trimmed and lowercased: unique per organization in that form.
    static func email(_ text: String) throws -> String {
        let email = Limits.trimmed(text).lowercased()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard email.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[1].contains("."),
            !parts[1].hasPrefix("."), !parts[1].hasSuffix("."),
            !email.contains(where: { $0.isWhitespace || $0.isNewline }), !Limits.containsUnsafeCharacters(email)
        else { throw APIError.invalid("email is not a valid address") }
        return email
    }
}
