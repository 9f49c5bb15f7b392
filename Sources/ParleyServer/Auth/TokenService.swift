import Foundation
import JWTKit
import Synchronization
import ParleyProtocol
import ParleyStorage
import ParleyRules

/// What a verified token says beyond who it stands for: which key signed it and until when it
/// is valid. A WebSocket keeps it for as long as it is open, so the session ends when the
/// token would no longer be accepted (expiry, a retired key).
public struct TokenGrant: Sendable, Equatable {
    /// Who the token stands for.
    public var identity: Identity
    /// The id of the signing key that verified it.
    public var keyId: String
    /// When it stops being valid.
    public var expiresAt: Date
    /// The sign-in session it belongs to (every token of one login and its refreshes), which
    /// logout ends; nil for tokens issued before sessions had ids.
    public var sessionId: String?
}

/// The claims of a Parley access token.
struct AccessClaims: JWTPayload {
    var sub: SubjectClaim
    var org: String
    var iat: IssuedAtClaim
    var exp: ExpirationClaim
    /// The sign-in session (see ``TokenGrant/sessionId``).
    var sid: String?
    /// Set only on other kinds of token (a socket ticket): an access token has none.
    var use: String?

    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
        guard use == nil else { throw JWTError.claimVerificationFailure(failedClaim: nil, reason: "not an access token") }
    }
}

/// The claims of a socket ticket: one WebSocket upgrade, within ``TokenService/ticketLifetime``,
/// for the session of the access token it was asked with (`sexp`: that token's expiry).
struct TicketClaims: JWTPayload {
    var sub: SubjectClaim
    var org: String
    var exp: ExpirationClaim
    var jti: IDClaim
    var use: String
    var sexp: Double
    var sid: String?

    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
        guard use == TokenService.ticketUse else { throw JWTError.claimVerificationFailure(failedClaim: nil, reason: "not a ticket") }
    }
}

/// Signs and verifies HS256 access tokens with the service's signing keys.
///
/// The newest live key signs (its id goes into the token header as `kid`); every live key
/// verifies, so a rotated key keeps its tokens valid until it is retired. Keys come from the
/// store, shared by every node: a token naming a key this node has not seen yet makes it
/// read the keys again (at most once a second), and the keys are read again every
/// ``refreshInterval`` in the background, so a rotation or a retirement reaches every node
/// within that time. A token without `kid` (issued before keys had ids) is checked against
/// the oldest live key, the one the data directory's old secret was imported as.
public final class TokenService: Sendable {
    /// How long a token is valid.
    public let lifetime: Duration
    /// How often the keys are read again from the store: a key retired on any node (or by
    /// `parley keys retire` on the database) stops verifying tokens, and ends the WebSockets
    /// opened with them, on every node within about this time.
    public static let refreshInterval: Duration = .seconds(5)
    private static let missReloadInterval: Duration = .seconds(1)

    private struct Ring {
        var collection: JWTKeyCollection
        var signingKid: String
        /// The live keys' ids, and the one that checks tokens without a `kid` (the oldest).
        var liveKids: Set<String>
        var defaultKid: String
        var loadedAt: ContinuousClock.Instant
        var lastMissReload: ContinuousClock.Instant?
        var refreshing = false
    }

    private let ring: Mutex<Ring>
    private let reload: (@Sendable () async throws -> [SigningKey])?

    /// A token service over one fixed secret of at least 32 bytes (`PARLEY_JWT_SECRET`, tests).
    public convenience init(secret: [UInt8], lifetime: Duration) async throws {
        guard secret.count >= 32 else {
            throw ChatError(.internal, "The JWT secret must be at least 32 bytes long")
        }
        try await self.init(keys: [.derived(from: secret, now: Date(timeIntervalSince1970: 0))], lifetime: lifetime, reload: nil)
    }

    /// A token service over `keys` (at least one live), reading them again through `reload`
    /// when it is given.
    public init(keys: [SigningKey], lifetime: Duration, reload: (@Sendable () async throws -> [SigningKey])?) async throws {
        self.lifetime = lifetime
        self.reload = reload
        ring = Mutex(try await Self.makeRing(keys))
    }

    /// The id of the key new tokens are signed with.
    public var signingKeyId: String { ring.withLock { $0.signingKid } }

    /// A signed token for a user, in sign-in session `sessionId` (a new session when nil: a
    /// login; a refresh passes the caller's, so logout ends the refreshed tokens too).
    /// It expires ``lifetime`` after `now`, or at `notAfter` when that is sooner (the end of
    /// its sign-in session).
    public func issue(for user: User, now: Date = Date(), sessionId: String? = nil, notAfter: Date? = nil) async throws -> String {
        refreshIfStale()
        let claims = AccessClaims(
            sub: .init(value: user.id.description), org: user.organizationId.description,
            iat: .init(value: now), exp: .init(value: expiry(issuedAt: now, notAfter: notAfter)),
            sid: sessionId ?? "\(EntityID())")
        let (collection, kid) = ring.withLock { ($0.collection, $0.signingKid) }
        return try await collection.sign(claims, kid: JWKIdentifier(string: kid))
    }

    /// When a token issued at `now` expires (see ``issue(for:now:sessionId:notAfter:)``).
    public func expiry(issuedAt now: Date, notAfter: Date? = nil) -> Date {
        let natural = now.addingTimeInterval(lifetime.timeInterval)
        return notAfter.map { min($0, natural) } ?? natural
    }

    /// The identity a token stands for; `unauthorized` when it is forged, malformed, expired
    /// or signed with a key that is unknown or retired.
    public func verify(_ token: String) async throws -> Identity {
        try await grant(for: token).identity
    }

    /// The identity a token stands for with the key that verified it and its expiry (for a
    /// WebSocket, which must end when the token would be refused); `unauthorized` as ``verify(_:)``.
    public func grant(for token: String) async throws -> TokenGrant {
        guard token.utf8.count < 4096 else { throw ChatError.unauthorized }
        refreshIfStale()
        // The ring holds live keys only: a token of a retired or unknown key fails here (its
        // kid finds no key, and the default key's signature does not match).
        if let grant = await grant(from: token) { return grant }
        // Perhaps signed with a key another node has just added: read the keys (at most once a
        // second), then try once more.
        guard await reloadAfterMiss(), let grant = await grant(from: token) else { throw ChatError.unauthorized }
        return grant
    }

    private func grant(from token: String) async -> TokenGrant? {
        let (collection, defaultKid) = ring.withLock { ($0.collection, $0.defaultKid) }
        guard let claims = try? await collection.verify(token, as: AccessClaims.self),
            let userId = EntityID(claims.sub.value), let organizationId = EntityID(claims.org)
        else { return nil }
        return TokenGrant(
            identity: Identity(userId: userId, organizationId: organizationId),
            keyId: Self.keyId(of: token) ?? defaultKid, expiresAt: claims.exp.value, sessionId: claims.sid)
    }

    /// How long a socket ticket may wait for its upgrade.
    public static let ticketLifetime: TimeInterval = 30
    static let ticketUse = "ws"
    private let usedTickets = Mutex<[String: Date]>([:])

    /// A ticket for one WebSocket upgrade (`/ws?ticket=`) standing for `grant`'s session: a
    /// browser cannot put its token in a header there, and a URL ends up in logs, so the URL
    /// carries this instead; it is valid for ``ticketLifetime`` and once (on this node), and the
    /// socket it opens ends when the access token would have.
    public func ticket(for grant: TokenGrant, now: Date = Date()) async throws -> (ticket: String, expiresAt: Date) {
        refreshIfStale()
        let expiresAt = now.addingTimeInterval(Self.ticketLifetime)
        let claims = TicketClaims(
            sub: .init(value: grant.identity.userId.description), org: grant.identity.organizationId.description,
            exp: .init(value: expiresAt), jti: .init(value: "\(EntityID())"), use: Self.ticketUse,
            sexp: grant.expiresAt.timeIntervalSince1970, sid: grant.sessionId)
        let (collection, kid) = ring.withLock { ($0.collection, $0.signingKid) }
        return (try await collection.sign(claims, kid: JWKIdentifier(string: kid)), expiresAt)
    }

    /// The session a ticket stands for, used up by this call unless `consuming` is false (the
    /// upgrade's check before the socket opens); `unauthorized` when it is forged, expired,
    /// already used here, or its key or session has ended.
    public func redeem(ticket: String, consuming: Bool = true, now: Date = Date()) async throws -> TokenGrant {
        guard ticket.utf8.count < 4096 else { throw ChatError.unauthorized }
        refreshIfStale()
        let (collection, defaultKid) = ring.withLock { ($0.collection, $0.defaultKid) }
        guard let claims = try? await collection.verify(ticket, as: TicketClaims.self),
            let userId = EntityID(claims.sub.value), let organizationId = EntityID(claims.org)
        else { throw ChatError.unauthorized }
        let fresh = usedTickets.withLock { used -> Bool in
            used = used.filter { $0.value > now }
            guard used[claims.jti.value] == nil else { return false }
            if consuming { used[claims.jti.value] = claims.exp.value }
            return true
        }
        let expiresAt = Date(timeIntervalSince1970: claims.sexp)
        guard fresh, expiresAt > now else { throw ChatError.unauthorized }
        return TokenGrant(
            identity: Identity(userId: userId, organizationId: organizationId), keyId: Self.keyId(of: ticket) ?? defaultKid,
            expiresAt: expiresAt, sessionId: claims.sid)
    }

    /// Whether tokens signed with this key are still accepted (false once it is retired here).
    public func isLive(keyId: String) -> Bool {
        ring.withLock { $0.liveKids.contains(keyId) }
    }

    /// Reads the keys from the store now (rotation tools and tests call this; requests do it
    /// by themselves when the keys are stale or a token names an unknown key).
    public func reloadKeys() async throws {
        guard let reload else { return }
        let fresh = try await Self.makeRing(try await reload())
        ring.withLock { ring in
            let lastMiss = ring.lastMissReload
            ring = fresh
            ring.lastMissReload = lastMiss
        }
    }

    /// Reads the keys again after a token failed, unless that happened less than a second ago
    /// (forged tokens must not turn into a database read each); true when it read them.
    private func reloadAfterMiss() async -> Bool {
        guard reload != nil else { return false }
        let now = ContinuousClock.now
        let due = ring.withLock { ring -> Bool in
            if let last = ring.lastMissReload, now - last < Self.missReloadInterval { return false }
            ring.lastMissReload = now
            return true
        }
        guard due else { return false }
        return (try? await reloadKeys()) != nil
    }

    /// Starts a background read of the keys when the last one is older than the interval (each
    /// request does; so does the gateway's session sweep, so retirements are seen when no
    /// request comes).
    func refreshIfStale() {
        guard reload != nil else { return }
        let start = ring.withLock { ring -> Bool in
            guard !ring.refreshing, ContinuousClock.now - ring.loadedAt >= Self.refreshInterval else { return false }
            ring.refreshing = true
            return true
        }
        guard start else { return }
        Task {
            try? await self.reloadKeys()
            self.ring.withLock { $0.refreshing = false }
        }
    }

    private static func makeRing(_ keys: [SigningKey]) async throws -> Ring {
        let live = keys.filter(\.isLive).sorted { ($0.createdAt, $0.kid) < ($1.createdAt, $1.kid) }
        guard let newest = live.last, let oldest = live.first else {
            throw ChatError(.internal, "No live signing key")
        }
        let collection = JWTKeyCollection()
        // The oldest key first: it becomes the default, which checks tokens without a kid.
        for key in [oldest] + live.dropFirst() {
            guard key.secret.count >= 32 else { throw ChatError(.internal, "A signing key must be at least 32 bytes long") }
            await collection.add(hmac: HMACKey(from: key.secret), digestAlgorithm: .sha256, kid: JWKIdentifier(string: key.kid))
        }
        return Ring(
            collection: collection, signingKid: newest.kid, liveKids: Set(live.map(\.kid)), defaultKid: oldest.kid, loadedAt: .now)
    }

    /// The `kid` of a token's header, if it has one (tools and tests; verification lets JWTKit
    /// read it).
    public static func keyId(of token: String) -> String? {
        guard let header = token.split(separator: ".", maxSplits: 1).first else { return nil }
        // Every token of a key has the same header, and there are a few keys: decoding it
        // (base64, then JSON) for each request was 5 % of a reconnect storm's server CPU.
        if let known = kidsByHeader.withLock({ $0[String(header)] }) { return known }
        guard let kid = decodeKeyId(header) else { return nil }
        kidsByHeader.withLock { cache in
            if cache.count >= 64 { cache.removeAll() }
            cache[String(header)] = kid
        }
        return kid
    }

    /// Headers already read, by their base64 text (at most 64: keys rotate rarely).
    private static let kidsByHeader = Mutex<[String: String]>([:])

    private static func decodeKeyId(_ header: Substring) -> String? {
        var base64 = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return object["kid"] as? String
    }
}
