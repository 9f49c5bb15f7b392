import Foundation
import Hummingbird
import HummingbirdCore
import NIOCore
import ParleyProtocol
import ParleyStorage
import ParleyRules

/// The request context of every route: Hummingbird's core storage and who the caller is
/// once authenticated. (WebSocket upgrades never reach the router: ``ParleyHTTPChannel``.)
public struct ParleyRequestContext: RequestContext {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    /// Set by ``AuthMiddleware`` on authenticated routes.
    public var identity: Identity? { grant?.identity }
    /// The verified token of an authenticated route: who, which key, until when.
    public var grant: TokenGrant?
    /// The client's IP address (per-address rate limits): the peer's, or the one a trusted
    /// proxy forwarded (``ClientAddressMiddleware``).
    public internal(set) var clientAddress: String?

    /// A context for a new request: no identity yet, the peer's address as the client's.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        clientAddress = source.channel.remoteAddress?.ipAddress
    }

    /// The caller, or `unauthorized`.
    func requireIdentity() throws -> Identity {
        guard let identity else { throw ChatError.unauthorized }
        return identity
    }
}

/// Reads the bearer token (the `Authorization` header; `?token=` only where a WebSocket client
/// cannot set headers), verifies it, and checks the user still exists and is active.
struct Authenticator: Sendable {
    let tokens: TokenService
    let accounts: AccountStates
    /// Sessions ended by logout.
    let revocations: SessionRevocations

    /// The caller of an HTTP route: the `Authorization: Bearer` header only (a token in a URL
    /// ends up in proxies' and servers' logs).
    func identity(for request: Request) async throws -> Identity {
        try await grant(for: request, allowingQueryToken: false).identity
    }

    /// The caller and what their token allows: the header, or for a WebSocket upgrade
    /// (`allowingQueryToken`) a one-use `?ticket=` (``TokenService/ticket(for:now:)``) or
    /// `?token=`, since browsers' WebSocket API cannot set headers.
    /// The upgrade's first check leaves a ticket unused (`consumingTicket` false); the socket,
    /// once open, uses it up.
    func grant(for request: Request, allowingQueryToken: Bool, consumingTicket: Bool = true) async throws -> TokenGrant {
        try await grant(
            authorization: request.headers[.authorization], uri: request.uri,
            allowingQueryToken: allowingQueryToken, consumingTicket: consumingTicket)
    }

    /// The same check from a request's parts (a WebSocket upgrade's head, read below the router).
    func grant(authorization: String?, uri: URI, allowingQueryToken: Bool, consumingTicket: Bool = true) async throws -> TokenGrant {
        var token: String?
        if let header = authorization {
            let parts = header.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" { token = String(parts[1]) }
        } else if allowingQueryToken {
            if let ticket = uri.queryParameters.get("ticket") {
                return try await checked(try await tokens.redeem(ticket: String(ticket), consuming: consumingTicket))
            }
            token = uri.queryParameters.get("token")
        }
        guard let token, !token.isEmpty else { throw ChatError.unauthorized }
        return try await checked(try await tokens.grant(for: token))
    }

    /// What an access token given directly allows (a WebSocket's `auth` command renewing it).
    func grant(forToken token: String) async throws -> TokenGrant {
        try await checked(try await tokens.grant(for: token))
    }

    /// `grant` if its user exists, is active and is of its organization.
    private func checked(_ grant: TokenGrant) async throws -> TokenGrant {
        if let session = grant.sessionId, revocations.isRevoked(session) { throw ChatError.unauthorized }
        // From memory after the first request: a deactivated user is refused at once.
        guard let state = try await accounts.state(of: grant.identity.userId), state.isActive,
            state.organizationId == grant.identity.organizationId
        else { throw ChatError.unauthorized }
        return grant
    }

    /// Why an open session must end now, or nil while its token would still be accepted: the
    /// token expired, its signing key was retired, or the account was deactivated. Memory only
    /// (no database, no signature): checked before every command of a WebSocket and by the sweep.
    func endOfSession(_ grant: TokenGrant, now: Date) -> String? {
        if accounts.isKnownInactive(grant.identity.userId) { return "account deactivated" }
        if now >= grant.expiresAt { return "token expired" }
        if let session = grant.sessionId, revocations.isRevoked(session) { return "signed out" }
        if !tokens.isLive(keyId: grant.keyId) { return "signed out: signing key retired" }
        return nil
    }
}

/// Requires a valid token on every route behind it.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = ParleyRequestContext
    let authenticator: Authenticator

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.grant = try await authenticator.grant(for: request, allowingQueryToken: false)
        return try await next(request, context)
    }
}

extension Parameters {
    /// A path id; malformed ids are simply "not found".
    func entityID(_ name: String, what: String) throws -> EntityID {
        guard let text = get(name), let id = EntityID(text) else { throw ChatError.notFound(what) }
        return id
    }
}

extension Request {
    /// An optional integer query parameter; present but not an integer is `invalid_request`.
    func integerQuery(_ name: String) throws -> Int64? {
        guard let text = uri.queryParameters.get(name) else { return nil }
        guard let value = Int64(text) else { throw ChatError.invalid("\(name) must be an integer") }
        return value
    }

    /// An optional id query parameter (a paging cursor); present but not an id is `invalid_request`.
    func entityIDQuery(_ name: String) throws -> EntityID? {
        guard let text = uri.queryParameters.get(name) else { return nil }
        guard let id = EntityID(String(text)) else { throw ChatError.invalid("\(name) must be a user id") }
        return id
    }

    /// The `limit` query parameter: below 1 is `invalid_request`, above `max` is clamped.
    func pageLimit(default defaultValue: Int, max: Int) throws -> Int {
        guard let value = try integerQuery("limit") else { return defaultValue }
        guard value >= 1 else { throw ChatError.invalid("limit must be at least 1") }
        return Int(Swift.min(value, Int64(max)))
    }
}
