import Foundation
import NIOConcurrencyHelpers
import ParleyProtocol

/// The tokens of one sign-in: a short-lived access token and the refresh token that renews it.
public struct SessionTokens: Codable, Sendable, Equatable {
    /// The bearer token.
    public var token: String
    /// The refresh token (nil from a server before refresh tokens: renewed by the bearer token).
    public var refreshToken: String?
    /// When `token` expires, as the server said (else read from the token).
    public var expiresAt: Date?

    /// Tokens with these values.
    public init(token: String, refreshToken: String? = nil, expiresAt: Date? = nil) {
        self.token = token
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
    }

    /// The tokens of a login, registration or renewal; a renewal without a refresh token keeps
    /// `keeping`'s (a bearer renewal of a session that has one).
    public init(_ answer: AuthResponse, keeping previous: String? = nil) {
        self.init(token: answer.token, refreshToken: answer.refreshToken ?? previous, expiresAt: answer.expiresAt)
    }

    /// When the access token expires: the server's word, else its `exp` claim.
    public var accessExpiry: Date? { expiresAt ?? TokenClaims.expiry(of: token) }

    /// How long the access token was issued for (from its claims), if it says.
    var accessLifetime: TimeInterval? {
        guard let expiry = accessExpiry, let issued = TokenClaims.issuedAt(of: token) else { return nil }
        return expiry.timeIntervalSince(issued)
    }

    /// A token whose lifetime cannot be read is renewed when it has less than this left.
    public static let longestRenewalWindow: TimeInterval = 7 * 86400

    /// How long before its expiry the access token is renewed: a third of its lifetime (5
    /// minutes of a 15-minute token), at most ``longestRenewalWindow``.
    public var renewalWindow: TimeInterval {
        guard let lifetime = accessLifetime, lifetime > 0 else { return Self.longestRenewalWindow }
        return min(Self.longestRenewalWindow, lifetime / 3)
    }

    /// Whether the access token is within its ``renewalWindow`` at `now` (false when its expiry
    /// cannot be read).
    public func renewalIsDue(at now: Date) -> Bool {
        guard let expiry = accessExpiry else { return false }
        return expiry.timeIntervalSince(now) < renewalWindow
    }
}

/// Where the tokens of a sign-in are kept between launches, so every renewal is saved before
/// it is used: a refresh token works once, and a stale copy presented later ends the sign-in.
public protocol CredentialStorage: Sendable {
    /// What is saved now (another process of the same user may have renewed).
    func loadTokens() -> SessionTokens?
    /// Saves renewed tokens.
    func saveTokens(_ tokens: SessionTokens) throws
    /// Runs `body` while no other process renews the same sign-in (a file lock for the command
    /// line, whose commands share one profile). By default it just runs it.
    func exclusively<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T
}

extension CredentialStorage {
    /// Just runs `body`: one process (an app) renews alone.
    public func exclusively<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T { try await body() }
}

/// The tokens of one sign-in, shared by every request and connection made for it, and renewed
/// one renewal at a time: requests that find the token expired (or refused) all wait for the
/// same renewal, so a refresh token is never presented twice.
public final class SessionCredentials: Sendable {
    /// Gets new tokens for a sign-in whose access token expired or was refused, from
    /// somewhere else than Parley's refresh token: an app with its own sign-in asks its backend,
    /// which signs the user in to Parley and answers the tokens. It is given the tokens that are
    /// stale; throw a ``ClientError`` with code `unauthorized` when the user must sign in again.
    public typealias TokenProvider = @Sendable (_ stale: SessionTokens) async throws -> SessionTokens

    private struct State {
        var tokens: SessionTokens
        var renewal: Task<SessionTokens, any Error>?
    }

    private let state: NIOLockedValueBox<State>
    private let storage: (any CredentialStorage)?
    private let provider: TokenProvider?
    private let observers = NIOLockedValueBox<[@Sendable (SessionTokens) -> Void]>([])

    /// Credentials starting from `tokens`, saving each renewal to `storage` when given.
    public init(_ tokens: SessionTokens, storage: (any CredentialStorage)? = nil) {
        state = NIOLockedValueBox(State(tokens: tokens))
        self.storage = storage
        provider = nil
    }

    /// Credentials renewed by the app's own `provider` (its backend) instead of Parley's
    /// refresh token: called, one call at a time, when the access token is about to expire or
    /// the server refuses it. Each answer is saved to `storage` when given.
    public init(_ tokens: SessionTokens, storage: (any CredentialStorage)? = nil, provider: @escaping TokenProvider) {
        state = NIOLockedValueBox(State(tokens: tokens))
        self.storage = storage
        self.provider = provider
    }

    /// Whether these credentials can renew themselves (a refresh token, or a provider).
    public var canRenew: Bool { provider != nil || tokens.refreshToken != nil }

    /// The current tokens.
    public var tokens: SessionTokens { state.withLockedValue { $0.tokens } }

    /// Replaces the tokens (a new login for the same user, or tokens renewed elsewhere).
    public func replace(_ tokens: SessionTokens) { state.withLockedValue { $0.tokens = tokens } }

    /// Calls `observer` with the tokens after each renewal (after they are saved).
    public func onRenewed(_ observer: @escaping @Sendable (SessionTokens) -> Void) {
        observers.withLockedValue { $0.append(observer) }
    }

    /// The access token, renewed first when it expires within `margin` and there is a refresh
    /// token to renew it with.
    public func validToken(using api: ParleyAPI, margin: TimeInterval = 30, now: Date = Date()) async throws -> String {
        let current = tokens
        guard canRenew, let expiry = current.accessExpiry, expiry.timeIntervalSince(now) < margin else {
            return current.token
        }
        return try await renew(replacing: current.token, using: api).token
    }

    /// Renews the sign-in and answers the new tokens. With `replacing`, renews only while that
    /// is still the current access token (else the newer tokens are the answer: someone renewed
    /// meanwhile). Concurrent calls share one renewal.
    public func renew(replacing stale: String? = nil, using api: ParleyAPI) async throws -> SessionTokens {
        let task = state.withLockedValue { state -> Task<SessionTokens, any Error>? in
            if let stale, state.tokens.token != stale { return nil }
            if let running = state.renewal { return running }
            let seen = state.tokens
            let task = Task { try await self.performRenewal(from: seen, using: api) }
            state.renewal = task
            return task
        }
        guard let task else { return tokens }
        return try await task.value
    }

    private func performRenewal(from seen: SessionTokens, using api: ParleyAPI) async throws -> SessionTokens {
        let storage = self.storage
        let result: Result<SessionTokens, any Error>
        do {
            let renewed: SessionTokens
            if let provider {
                // The app's backend answers; what it answers is the sign-in from now on.
                renewed = try await provider(seen)
                try? storage?.saveTokens(renewed)
            } else if let storage {
                renewed = try await storage.exclusively {
                    // Another process of this sign-in may have renewed already: its tokens are
                    // the current ones, and ours are spent.
                    var from = seen
                    if let saved = storage.loadTokens(), saved.refreshToken != nil, saved.refreshToken != seen.refreshToken {
                        if let expiry = saved.accessExpiry, expiry.timeIntervalSinceNow > 60 { return saved }
                        from = saved
                    }
                    let fresh = try await Self.exchange(from, using: api)
                    // The old refresh token is spent now: the new one is used even when it
                    // cannot be saved (a locked keychain); the next renewal saves again.
                    try? storage.saveTokens(fresh)
                    return fresh
                }
            } else {
                renewed = try await Self.exchange(seen, using: api)
            }
            result = .success(renewed)
        } catch {
            result = .failure(error)
        }
        state.withLockedValue { state in
            state.renewal = nil
            if case .success(let renewed) = result { state.tokens = renewed }
        }
        let renewed = try result.get()
        for observer in observers.withLockedValue({ $0 }) { observer(renewed) }
        return renewed
    }

    /// One `POST /auth/refresh`: by the refresh token when there is one, else by the bearer token.
    private static func exchange(_ tokens: SessionTokens, using api: ParleyAPI) async throws -> SessionTokens {
        var plain = api
        plain.credentials = nil
        if let refreshToken = tokens.refreshToken {
            plain.token = nil
            return SessionTokens(try await plain.refresh(refreshToken: refreshToken))
        }
        plain.token = tokens.token
        return SessionTokens(try await plain.refresh())
    }
}
