import Foundation
import Hummingbird
import Logging
import ParleyProtocol
import ParleyStorage
import ParleyRules

/// `POST /auth/register`, `POST /auth/login`, `POST /auth/refresh`, `POST /auth/ticket` and the
/// caller's sign-ins (`GET /auth/sessions`, `DELETE /auth/sessions/{id}`).
struct AuthController: Sendable {
    let store: any ParleyStore
    let tokens: TokenService
    let sessions: SignInSessions
    /// Checks the bearer token of a refresh that carries no refresh token.
    let authenticator: Authenticator
    let passwords: PasswordHasher
    let decoyHash: String
    let now: @Sendable () -> Date
    /// The server's clock, for when mailed links expire (tests move it).
    let clock: @Sendable () -> Date
    /// Open registration (`--open-organizations`): any organization admits by name.
    let openOrganizations: Bool
    /// Failed logins per account and per address, registrations per address (nil: none).
    let limits: RateLimiter?
    /// Whether joins by email domain prove the address with a mailed link.
    let provingDomainJoins: Bool
    /// Sends the links (nil: this server sends no mail).
    let mailer: (any Mailer)?
    /// The server as people reach it, for links.
    let publicURL: URL
    /// How long a mailed link works.
    static let verificationLifetime: TimeInterval = 24 * 3600

    func addRoutes(to group: RouterGroup<ParleyRequestContext>, authenticated: RouterGroup<ParleyRequestContext>) {
        group.post("auth/register", use: register)
        group.post("auth/login", use: login)
        group.post("auth/refresh", use: refresh)
        group.post("auth/verify", use: verify)
        authenticated.post("auth/ticket", use: ticket)
        authenticated.get("auth/sessions", use: listSessions)
        authenticated.delete("auth/sessions/:id", use: endSession)
    }

    /// The caller's live sign-ins (devices, browsers, terminals), newest first.
    @Sendable func listSessions(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        return try JSONResponse.make(
            SignInSessionsResponse(sessions: try await sessions.list(userId: identity.userId, current: context.grant?.sessionId)))
    }

    /// Ends one of the caller's sign-ins (a lost phone): its refresh token at once, its access
    /// tokens and WebSockets on every node within seconds.
    @Sendable func endSession(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        guard let id = context.parameters.get("id"), EntityID(id) != nil,
            try await store.signInSession(id: id).map({ $0.userId == identity.userId && $0.endedAt == nil }) == true
        else { throw ChatError.notFound("Session") }
        _ = try await sessions.end(userId: identity.userId, id: id)
        return JSONResponse.noContent()
    }

    /// A one-use ticket for opening the WebSocket (`/ws?ticket=`), so the access token never
    /// goes into a URL (browsers cannot set headers on a WebSocket upgrade).
    @Sendable func ticket(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        guard let grant = context.grant else { throw ChatError.unauthorized }
        let (ticket, expiresAt) = try await tokens.ticket(for: grant)
        return try JSONResponse.make(SocketTicket(ticket: ticket, expiresAt: expiresAt))
    }

    /// Renews a sign-in. With `{refreshToken}`: a new access token and a new refresh token (the
    /// old one stops working; no `Authorization` needed, so an expired access token is no
    /// obstacle). Without: the bearer token is renewed within its session (older clients,
    /// which have no refresh token).
    @Sendable func refresh(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let body = try await request.decodeOptionalJSON(RefreshRequest.self, absent: RefreshRequest(refreshToken: nil))
        if let refreshToken = body.refreshToken {
            return try JSONResponse.make(try await sessions.renew(refreshToken: refreshToken))
        }
        let grant = try await authenticator.grant(for: request, allowingQueryToken: false)
        guard let user = try await store.user(id: grant.identity.userId) else { throw ChatError.unauthorized }
        // The same sign-in session: logging out ends the refreshed token too.
        return try JSONResponse.make(try await sessions.renew(bearer: grant, user: user))
    }

    @Sendable func register(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let body = try await request.decodeJSON(RegisterRequest.self)
        let organization = try Self.organization(body.organization)
        guard !Limits.containsUnsafeCharacters(organization) else {
            throw ChatError.invalid("organization must not contain control characters or bidirectional overrides")
        }
        let email = try Membership.email(body.email)
        let displayName = try ProfileRules.displayName(body.displayName)
        guard Limits.passwordLength.contains(body.password.count) else {
            throw ChatError.invalid(
                "password must be \(Limits.passwordLength.lowerBound)–\(Limits.passwordLength.upperBound) characters")
        }
        let inviteCode = body.inviteCode.map(Limits.trimmed).flatMap { $0.isEmpty ? nil : $0 }
        guard (inviteCode?.count ?? 0) <= 128 else { throw Membership.notAdmitted }
        if let address = RateLimiter.addressKey(context.clientAddress) { try limits?.enforce(.registration, address) }
        let hash = try await passwords.hash(body.password)
        let at = now(), open = openOrganizations, proving = provingDomainJoins
        let user: User
        do {
            user = try await store.register(
                Registration(organization: organization, email: email, displayName: displayName, passwordHash: hash, inviteCode: inviteCode, now: at)
            ) { existing, invite in
                try Membership.admit(email: email, to: existing, invite: invite, open: open, now: at, provingDomainJoins: proving)
            }
        } catch let proof as Membership.ProofNeeded {
            let pending = try await mailLink(
                to: email, joining: proof.organization, as: displayName, organizationName: organization, passwordHash: hash, at: clock(),
                logger: context.logger)
            return try JSONResponse.make(pending, status: .accepted)
        }
        context.logger.info("Registered user", metadata: ["userId": "\(user.id)", "organizationId": "\(user.organizationId)"])
        return try JSONResponse.make(try await sessions.start(for: user, label: request.headers[.userAgent]), status: .created)
    }

    /// A join by email domain, held until its address is proven: the link goes to the address,
    /// and only the person reading that mailbox can finish.
    private func mailLink(
        to email: String, joining organization: Organization, as displayName: String, organizationName: String, passwordHash: String,
        at: Date, logger: Logger
    ) async throws -> VerificationPending {
        guard let mailer else {
            throw ChatError(
                .forbidden,
                "Joining \(Limits.neutralized(organization.name)) by your email's domain needs your address confirmed, and this server sends no email: ask an admin for an invite")
        }
        let (token, hash) = Self.newLinkToken()
        let expiresAt = at.addingTimeInterval(Self.verificationLifetime)
        try await store.savePendingRegistration(
            PendingRegistration(
                tokenHash: hash, organizationId: organization.id, organizationName: organizationName, email: email,
                displayName: displayName, passwordHash: passwordHash, createdAt: at, expiresAt: expiresAt))
        let link = publicURL.absoluteString.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + "/#verify=" + token
        let name = Limits.neutralized(organization.name)
        let body = """
            Hello \(Limits.neutralized(displayName)),

            Someone, probably you, asked to join \(name) on Parley with this address. To confirm it, open this link within 24 hours:

            \(link)

            Or, in a terminal: parley verify \(token)

            If it was not you, ignore this email: nothing happens without the link.
            """
        do {
            try await mailer.send(MailMessage(to: email, subject: "Confirm your address to join \(name) on Parley", body: body))
        } catch {
            // Nothing is kept of a registration whose link could not go out.
            _ = try? await store.takePendingRegistration(tokenHash: hash, now: at)
            logger.warning("Could not send a verification email", metadata: ["error": "\(error)"])
            throw ChatError(.unavailable, "The email to confirm your address could not be sent; try again in a minute", retryAfter: 60)
        }
        logger.info("Sent a link to confirm a domain join", metadata: ["organizationId": "\(organization.id)"])
        return VerificationPending(email: email, expiresAt: expiresAt)
    }

    /// Finishes a join by email domain from its mailed link: the registration it held, if the
    /// link is current and the domain still admits, answered as a registration (201).
    @Sendable func verify(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let body = try await request.decodeJSON(VerifyEmailRequest.self)
        let expired = ChatError(.notFound, "This link has expired or was used already; register again for a new one")
        guard (20...100).contains(body.token.utf8.count) else { throw expired }
        let at = now(), open = openOrganizations
        guard let pending = try await store.takePendingRegistration(tokenHash: SignInSessions.hash(body.token), now: clock()) else {
            throw expired
        }
        let user = try await store.register(
            Registration(
                organization: pending.organizationName, email: pending.email, displayName: pending.displayName,
                passwordHash: pending.passwordHash, now: at)
        ) { existing, _ in
            // The same organization, and its domain still admits (an admin may have changed it).
            guard existing?.id == pending.organizationId else { throw Membership.notAdmitted }
            return try Membership.admit(
                email: pending.email, to: existing, invite: nil, open: open, now: at, provingDomainJoins: true, addressProven: true)
        }
        context.logger.info("Registered user", metadata: ["userId": "\(user.id)", "organizationId": "\(user.organizationId)"])
        return try JSONResponse.make(try await sessions.start(for: user, label: request.headers[.userAgent]), status: .created)
    }

    /// A link token (32 random bytes, base64url) and the hash the store keeps.
    static func newLinkToken() -> (token: String, hash: String) {
        let token = RandomCode.make()
        return (token, SignInSessions.hash(token))
    }

    @Sendable func login(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let body = try await request.decodeJSON(LoginRequest.self)
        let failure = ChatError(.unauthorized, "Invalid organization, email or password")
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
                throw ChatError.rateLimited(retryAfter: wait)
            }
        }
        let failed: @Sendable () -> ChatError = { [limits] in
            _ = limits?.take(.loginAccount, account)
            limits?.loginFailed(account)
            if let address { _ = limits?.take(.loginAddress, address) }
            return failure
        }
        guard let organization = try? Self.organization(body.organization), let email = try? Membership.email(body.email),
            let found = try await store.credentials(organization: organization, email: email)
        else {
            // Same work as a real check, so timing does not tell which emails exist.
            _ = try await passwords.verify(body.password, hash: decoyHash)
            throw failed()
        }
        guard try await passwords.verify(body.password, hash: found.passwordHash) else { throw failed() }
        limits?.loginSucceeded(account)
        return try JSONResponse.make(try await sessions.start(for: found.user, label: request.headers[.userAgent]))
    }

    static func organization(_ text: String) throws -> String {
        let name = Limits.trimmed(text)
        guard !name.isEmpty, name.count <= Limits.maxOrganizationCharacters, !Limits.containsNul(name) else {
            throw ChatError.invalid("organization must be 1–\(Limits.maxOrganizationCharacters) characters")
        }
        return name
    }
}
