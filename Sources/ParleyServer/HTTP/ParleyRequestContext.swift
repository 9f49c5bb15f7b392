import Hummingbird
import NIOCore
import HummingbirdWebSocket
import ParleyProtocol

/// The request context of every route: Hummingbird's core storage, the WebSocket handler
/// reference for upgrades, and who the caller is once authenticated.
public struct ParleyRequestContext: RequestContext, WebSocketRequestContext {
    /// Hummingbird's per-request storage.
    public var coreContext: CoreRequestContextStorage
    /// The handler reference a WebSocket upgrade sets.
    public let webSocket: WebSocketHandlerReference<Self>
    /// Set by ``AuthMiddleware`` on authenticated routes.
    public var identity: Identity?
    /// The client's IP address (per-address rate limits): the peer's, or the one a trusted
    /// proxy forwarded (``ClientAddressMiddleware``).
    public internal(set) var clientAddress: String?
    /// The connection's channel (a WebSocket's heartbeat reads its liveness from it).
    let channel: any Channel

    /// A context for a new request: no identity yet, the peer's address as the client's.
    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        clientAddress = source.channel.remoteAddress?.ipAddress
        channel = source.channel
    }

    /// The caller, or `unauthorized`.
    func requireIdentity() throws -> Identity {
        guard let identity else { throw APIError.unauthorized }
        return identity
    }
}

/// Reads the bearer token (header, or `?token=` for WebSocket clients that cannot set headers),
/// verifies it, and checks the user still exists.
struct Authenticator: Sendable {
    let tokens: TokenService
    let accounts: AccountStates

    func identity(for request: Request) async throws -> Identity {
        var token: String?
        if let header = request.headers[.authorization] {
            let parts = header.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" { token = String(parts[1]) }
        } else {
            token = request.uri.queryParameters.get("token")
        }
        guard let token, !token.isEmpty else { throw APIError.unauthorized }
        let identity = try await tokens.verify(token)
        // From memory after the first request: a deactivated user is refused at once.
        guard let state = try await accounts.state(of: identity.userId), state.isActive,
            state.organizationId == identity.organizationId
        else { throw APIError.unauthorized }
        return identity
    }
}

/// Requires a valid token on every route behind it.
struct AuthMiddleware: RouterMiddleware {
    typealias Context = ParleyRequestContext
    let authenticator: Authenticator

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.identity = try await authenticator.identity(for: request)
        return try await next(request, context)
    }
}

extension Parameters {
    /// A path id; malformed ids are simply "not found".
    func entityID(_ name: String, what: String) throws -> EntityID {
        guard let text = get(name), let id = EntityID(text) else { throw APIError.notFound(what) }
        return id
    }
}

extension Request {
    /// An optional integer query parameter; present but not an integer is `invalid_request`.
    func integerQuery(_ name: String) throws -> Int64? {
        guard let text = uri.queryParameters.get(name) else { return nil }
        guard let value = Int64(text) else { throw APIError.invalid("\(name) must be an integer") }
        return value
    }

    /// An optional id query parameter (a paging cursor); present but not an id is `invalid_request`.
    func entityIDQuery(_ name: String) throws -> EntityID? {
        guard let text = uri.queryParameters.get(name) else { return nil }
        guard let id = EntityID(String(text)) else { throw APIError.invalid("\(name) must be a user id") }
        return id
    }

    /// The `limit` query parameter: below 1 is `invalid_request`, above `max` is clamped.
    func pageLimit(default defaultValue: Int, max: Int) throws -> Int {
        guard let value = try integerQuery("limit") else { return defaultValue }
        guard value >= 1 else { throw APIError.invalid("limit must be at least 1") }
        return Int(Swift.min(value, Int64(max)))
    }
}
