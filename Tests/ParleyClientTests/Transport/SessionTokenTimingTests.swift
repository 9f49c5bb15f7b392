import Foundation
@testable import ParleyClient
import ParleyProtocol
import Testing

/// When the SDK renews a sign-in: read from the access token's own claims (base64url JWTs of
/// any length), or the server's `expiresAt`; a third of the token's life before it ends, never
/// more than a week; never for a token whose expiry cannot be read. Renewing too late logs the
/// user out mid-conversation; renewing too early spends refresh tokens for nothing.
@Suite struct SessionTokenTimingTests {
    static let issued = Date(timeIntervalSince1970: 1_795_000_000)

    /// A JWT-shaped token (header.payload.signature) whose payload is `claims`, base64url
    /// encoded without padding as a server writes it.
    static func jwt(_ claims: [String: Any]) -> String {
        let json = try! JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        return "eyJhbGciOiJIUzI1NiJ9." + base64url(json) + ".c2lnbmF0dXJl"
    }

    static func base64url(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func tokens(lifetime: TimeInterval, issued: Date = issued) -> SessionTokens {
        SessionTokens(token: jwt(["iat": issued.timeIntervalSince1970, "exp": issued.timeIntervalSince1970 + lifetime, "sub": "u"]))
    }

    /// Payloads of every length modulo 4 (so every amount of stripped padding), and ones whose
    /// base64 holds `+` and `/` (written `-` and `_`), all read back the same expiry.
    @Test func theExpiryIsReadFromAnyBase64URLPayload() throws {
        var sawDash = false, sawUnderscore = false
        var paddings = Set<Int>()
        for filler in 0..<24 {
            // Bytes ≥ 0xF8 in the JSON make 6-bit groups of all ones: `/` in base64, `_` in base64url.
            let note = String(repeating: "\u{FFFF}", count: filler % 5) + String(repeating: "~", count: filler)
            let claims: [String: Any] = ["exp": 1_795_000_900, "note": note]
            let json = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
            paddings.insert(json.count % 3)
            let encoded = Self.base64url(json)
            sawDash = sawDash || encoded.contains("-")
            sawUnderscore = sawUnderscore || encoded.contains("_")
            let token = "h.\(encoded).s"
            #expect(TokenClaims.expiry(of: token) == Date(timeIntervalSince1970: 1_795_000_900), "payload \(encoded)")
        }
        #expect(paddings == [0, 1, 2], "every padding length was tried")
        #expect(sawDash && sawUnderscore, "the URL-safe alphabet was tried")
    }

    @Test(arguments: [
        "", "opaque-token-from-an-older-server", "a.b", "a.b.c.d", "h.!!!.s", "h..s",
        "h.\(base64url(Data("[1,2]".utf8))).s", "h.\(base64url(Data(#"{"exp":"tomorrow"}"#.utf8))).s",
        "h.\(base64url(Data(#"{"iat":1}"#.utf8))).s",
    ])
    func tokensWithoutAReadableExpiryHaveNone(token: String) {
        #expect(TokenClaims.expiry(of: token) == nil)
        let tokens = SessionTokens(token: token, refreshToken: "r")
        #expect(tokens.accessExpiry == nil)
        #expect(!tokens.renewalIsDue(at: .distantFuture), "an expiry it cannot read is never guessed")
    }

    @Test func fractionalClaimsKeepTheirFraction() {
        let token = Self.jwt(["exp": 1_795_000_000.5, "iat": 1_794_999_000.25])
        #expect(TokenClaims.expiry(of: token) == Date(timeIntervalSince1970: 1_795_000_000.5))
        #expect(TokenClaims.issuedAt(of: token) == Date(timeIntervalSince1970: 1_794_999_000.25))
    }

    /// The server's `expiresAt` is the truth; the claim is read only without it.
    @Test func theServersExpiryWinsOverTheClaim() {
        var tokens = Self.tokens(lifetime: 900)
        #expect(tokens.accessExpiry == Self.issued.addingTimeInterval(900))
        tokens.expiresAt = Self.issued.addingTimeInterval(60)
        #expect(tokens.accessExpiry == Self.issued.addingTimeInterval(60))
        #expect(SessionTokens(token: "opaque", expiresAt: Self.issued).accessExpiry == Self.issued)
    }

    /// A 15-minute token is renewed in its last 5 minutes: not at 9:59, at 10:01.
    @Test func aFifteenMinuteTokenIsRenewedInItsLastThird() {
        let tokens = Self.tokens(lifetime: 900)
        #expect(tokens.renewalWindow == 300)
        #expect(!tokens.renewalIsDue(at: Self.issued))
        #expect(!tokens.renewalIsDue(at: Self.issued.addingTimeInterval(599)))
        #expect(!tokens.renewalIsDue(at: Self.issued.addingTimeInterval(600)), "exactly 5 minutes left is not yet within them")
        #expect(tokens.renewalIsDue(at: Self.issued.addingTimeInterval(601)))
        #expect(tokens.renewalIsDue(at: Self.issued.addingTimeInterval(5000)), "long expired: due")
    }

    @Test func longLivedTokensAreRenewedAtMostAWeekAhead() {
        let month = Self.tokens(lifetime: 90 * 86400)
        #expect(month.renewalWindow == SessionTokens.longestRenewalWindow)
        #expect(!month.renewalIsDue(at: Self.issued.addingTimeInterval(80 * 86400)))
        #expect(month.renewalIsDue(at: Self.issued.addingTimeInterval(84 * 86400)))
        // No `iat`: its lifetime is unknown, the week applies.
        let noIssue = SessionTokens(token: Self.jwt(["exp": Self.issued.timeIntervalSince1970 + 30 * 86400]))
        #expect(noIssue.renewalWindow == SessionTokens.longestRenewalWindow)
        // A token that claims to expire before it was issued has no lifetime to take a third of.
        let backwards = SessionTokens(token: Self.jwt(["iat": 2_000, "exp": 1_000]))
        #expect(backwards.renewalWindow == SessionTokens.longestRenewalWindow)
    }

    /// A renewal that answers no refresh token (a bearer renewal) keeps the one the sign-in
    /// has: dropping it would end the sign-in at the next launch.
    @Test func aRenewalWithoutARefreshTokenKeepsThePreviousOne() {
        let user = User(id: EntityID(), organizationId: EntityID(), email: "a@x.io", displayName: "A")
        let expiry = Self.issued.addingTimeInterval(900)
        let bearer = SessionTokens(AuthResponse(token: "t2", user: user, expiresAt: expiry), keeping: "r1")
        #expect(bearer == SessionTokens(token: "t2", refreshToken: "r1", expiresAt: expiry))
        let rotated = SessionTokens(AuthResponse(token: "t3", user: user, refreshToken: "r2"), keeping: "r1")
        #expect(rotated.refreshToken == "r2", "a new refresh token replaces the spent one")
        #expect(SessionTokens(AuthResponse(token: "t4", user: user)).refreshToken == nil)
    }

    /// Credentials renew only with something to renew by; without, a request keeps the token
    /// it has (and the server's 401 tells the app to sign in again).
    @Test func credentialsWithoutARefreshTokenNeverTryToRenew() async throws {
        let expired = SessionTokens(token: Self.jwt(["exp": 1]))
        let credentials = SessionCredentials(expired)
        #expect(!credentials.canRenew)
        let api = ParleyAPI(baseURL: URL(string: "http://127.0.0.1:9")!, credentials: credentials)
        #expect(try await credentials.validToken(using: api, now: Self.issued) == expired.token, "no request was made (port 9 answers nothing)")
        #expect(api.currentToken == expired.token)
        // A token that is fine is returned as it is, even with a refresh token.
        let fresh = SessionCredentials(SessionTokens(token: Self.tokens(lifetime: 900).token, refreshToken: "r"))
        #expect(fresh.canRenew)
        #expect(try await fresh.validToken(using: api, now: Self.issued) == fresh.tokens.token)
        // Replaced tokens are what every copy of the client sends from now on.
        fresh.replace(SessionTokens(token: "other"))
        #expect(ParleyAPI(baseURL: api.baseURL, credentials: fresh).currentToken == "other")
    }

    /// A token set from outside (a new login for the same user) is used by every copy of the
    /// transport, keeps the refresh token, and is timed by its own expiry, not the old one's.
    @Test func anUpdatedTokenIsTimedByItsOwnExpiry() {
        let oldExpiry = Self.issued.addingTimeInterval(900)
        let credentials = SessionCredentials(SessionTokens(token: Self.tokens(lifetime: 900).token, refreshToken: "r", expiresAt: oldExpiry))
        let transport = LiveTransport(serverURL: URL(string: "http://127.0.0.1:9")!, credentials: credentials)
        let copy = transport
        #expect(copy.tokenExpiresAt == oldExpiry)
        let next = Self.tokens(lifetime: 1800, issued: Self.issued.addingTimeInterval(600)).token
        transport.updateToken(next)
        #expect(copy.credentials?.tokens.token == next && copy.api.currentToken == next)
        #expect(copy.credentials?.tokens.refreshToken == "r", "the sign-in goes on")
        #expect(copy.tokenExpiresAt == Self.issued.addingTimeInterval(2400), "read from the new token")
        // An opaque token (an older server's) has no expiry to renew by.
        transport.updateToken("opaque")
        #expect(copy.tokenExpiresAt == nil)
    }
}
