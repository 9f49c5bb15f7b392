import Crypto
import Foundation
import Logging
import ParleyProtocol
import ParleyStorage
import ParleyRules

/// Sign-ins and their rotating refresh tokens: the rules above the store.
///
/// A login starts a session and answers a short-lived access token (its `sid` is the
/// session's id) with a refresh token `"<sid>.<secret>"`; the store keeps only the secret's
/// SHA-256. Each renewal (`POST /auth/refresh {refreshToken}`) answers a new pair and the old
/// refresh token stops working. A refresh token presented again after it was replaced means two
/// holders (a copy was stolen, or a client kept a stale one): the whole session ends, so the
/// thief's copy dies with it. Only a replay within ``reuseGrace`` of the replacement is taken
/// for an answer lost on the way (the client retries with what it had): it renews again, and
/// the token that answer carried is then the stale one.
///
/// Ending a session (logout, the user from another device, an admin, a detected reuse) ends
/// its refresh token at once and its access tokens and WebSockets through
/// ``SessionRevocations`` on every node.
public struct SignInSessions: Sendable {
    let store: any ParleyStore
    let tokens: TokenService
    let revocations: SessionRevocations
    /// How long a refresh token lasts unused; each renewal starts it again.
    let refreshLifetime: Duration
    let now: @Sendable () -> Date
    let logger: Logger

    /// How long after a renewal the token it replaced still renews (an answer lost on the way).
    public static let reuseGrace: TimeInterval = 60
    /// Longest `label` kept.
    static let maxLabelCharacters = 120

    /// Starts a session for a user who just proved who they are; answers both tokens.
    func start(for user: User, label: String?) async throws -> AuthResponse {
        try await create(id: "\(EntityID())", for: user, label: Self.label(label))
    }

    /// Stores a new session row for `user` and answers its first pair of tokens.
    private func create(id: String, for user: User, label: String?) async throws -> AuthResponse {
        let at = now()
        let (refreshToken, hash) = Self.newRefreshToken(sessionId: id)
        let expiresAt = at.addingTimeInterval(refreshLifetime.timeInterval)
        try await store.createSignInSession(
            SignInSession(
                id: id, userId: user.id, organizationId: user.organizationId, tokenHash: hash, label: label, createdAt: at,
                lastUsedAt: at, expiresAt: expiresAt))
        return try await answer(user, sessionId: id, refreshToken: refreshToken, refreshExpiresAt: expiresAt, at: at)
    }

    /// Renews a session by its refresh token: a new access token and a new refresh token.
    /// `unauthorized` when the token is unknown, expired or ended, the user is gone or
    /// deactivated, or it was replaced already (which ends the session).
    func renew(refreshToken: String) async throws -> AuthResponse {
        guard let (id, secret) = Self.parse(refreshToken) else { throw ChatError.unauthorized }
        let presented = Self.hash(secret)
        // A concurrent renewal may win the compare-and-set: read again and decide again.
        for _ in 0..<3 {
            let at = now()
            guard let session = try await store.signInSession(id: id), session.isLive(at: at) else { throw ChatError.unauthorized }
            guard let state = try await store.userState(id: session.userId), state.isActive,
                state.organizationId == session.organizationId, let user = try await store.user(id: session.userId)
            else { throw ChatError.unauthorized }
            if presented != session.tokenHash {
                guard presented == session.previousHash else { throw ChatError.unauthorized }
                guard let rotatedAt = session.rotatedAt, at.timeIntervalSince(rotatedAt) <= Self.reuseGrace else {
                    // Replaced a while ago and presented again: someone else holds a copy.
                    _ = try await end(userId: session.userId, id: id)
                    logger.warning(
                        "A replaced refresh token was presented again: the sign-in session is ended",
                        metadata: ["userId": "\(session.userId)", "sessionId": "\(id)"])
                    throw ChatError(.unauthorized, "This sign-in was ended because its refresh token was used twice; sign in again")
                }
            }
            let (fresh, hash) = Self.newRefreshToken(sessionId: id)
            let expiresAt = at.addingTimeInterval(refreshLifetime.timeInterval)
            if try await store.rotateSignInSession(id: id, from: session.tokenHash, to: hash, at: at, expiresAt: expiresAt) {
                return try await answer(user, sessionId: id, refreshToken: fresh, refreshExpiresAt: expiresAt, at: at)
            }
        }
        throw ChatError(.conflict, "The sign-in is being renewed by another request; try again")
    }

    /// Renews by a valid access token (the contract before refresh tokens): a new access token
    /// in the same session, never outliving it. A session from before refresh tokens (or a
    /// token without one) gets a refresh token here, so old sign-ins move over.
    func renew(bearer grant: TokenGrant, user: User) async throws -> AuthResponse {
        let at = now()
        if let id = grant.sessionId, let session = try await store.signInSession(id: id) {
            guard session.isLive(at: at), session.userId == user.id else { throw ChatError.unauthorized }
            try await store.touchSignInSession(id: id, at: at)
            let token = try await tokens.issue(for: user, now: at, sessionId: id, notAfter: session.expiresAt)
            return AuthResponse(
                token: token, user: user, expiresAt: tokens.expiry(issuedAt: at, notAfter: session.expiresAt),
                refreshExpiresAt: session.expiresAt)
        }
        return try await create(id: grant.sessionId ?? "\(EntityID())", for: user, label: nil)
    }

    /// Ends the user's sessions (only `id` when given): refresh tokens at once, access tokens and
    /// WebSockets on every node through the revocations. Answers the ids ended.
    func end(userId: EntityID, id: String?, accessTokensUntil: Date? = nil) async throws -> [String] {
        let at = now()
        var ended = try await store.endSignInSessions(userId: userId, id: id, at: at)
        // A session with no row (a token from before refresh tokens) is ended by its id alone.
        if let id, !ended.contains(id) { ended.append(id) }
        let until = max(accessTokensUntil ?? at, tokens.expiry(issuedAt: at))
        for session in ended { try await revocations.revoke(session, userId: userId, expiresAt: until, now: at) }
        return ended
    }

    /// The user's live sessions, newest first; `current` marks the caller's.
    func list(userId: EntityID, current: String?) async throws -> [SignInSessionInfo] {
        try await store.signInSessions(userId: userId, now: now()).map {
            SignInSessionInfo(
                id: $0.id, label: $0.label, createdAt: $0.createdAt, lastUsedAt: $0.lastUsedAt, expiresAt: $0.expiresAt,
                current: $0.id == current)
        }
    }

    private func answer(_ user: User, sessionId: String, refreshToken: String, refreshExpiresAt: Date, at: Date) async throws -> AuthResponse {
        let token = try await tokens.issue(for: user, now: at, sessionId: sessionId, notAfter: refreshExpiresAt)
        return AuthResponse(
            token: token, user: user, refreshToken: refreshToken, expiresAt: tokens.expiry(issuedAt: at, notAfter: refreshExpiresAt),
            refreshExpiresAt: refreshExpiresAt)
    }

    /// A new refresh token for a session, and the hash the store keeps.
    static func newRefreshToken(sessionId: String) -> (token: String, hash: String) {
        let secret = RandomCode.make()
        return ("\(sessionId).\(secret)", hash(secret))
    }

    /// SHA-256 of a secret, hex.
    static func hash(_ secret: String) -> String {
        SHA256.hash(data: Data(secret.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// The session id and secret of a well-formed refresh token.
    static func parse(_ token: String) -> (id: String, secret: String)? {
        guard token.utf8.count <= 200 else { return nil }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, EntityID(String(parts[0])) != nil, parts[1].utf8.count >= 32,
            parts[1].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") })
        else { return nil }
        return (String(parts[0]), String(parts[1]))
    }

    /// What signed in, from its User-Agent: shortened, with controls and bidi overrides made harmless.
    static func label(_ userAgent: String?) -> String? {
        guard let userAgent else { return nil }
        let text = Limits.neutralized(Limits.trimmed(userAgent))
        guard !text.isEmpty else { return nil }
        return String(text.prefix(maxLabelCharacters))
    }
}
