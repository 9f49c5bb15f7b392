import Foundation
@testable import ParleyServer
import Testing

/// `SMTPConfiguration(url:from:)` reads `url.user` / `url.password`, which URLComponents has
/// already percent-decoded: decoding them again lost a password holding a literal `%` (written
/// `%25` in the URL; nil, so AUTH PLAIN sent an empty password) or changed it (`a%2541` became
/// `aA` instead of `a%41`).
@Suite struct SMTPPasswordPercentTests {
    @Test func aPercentSignInAPasswordIsDecodedOnce() throws {
        let percent = try SMTPConfiguration(url: "smtp://mailer:100%25sure@mail.corp.test", from: "no-reply@parley.test")
        #expect(percent.password == "100%sure")
        let escaped = try SMTPConfiguration(url: "smtp://mailer:a%2541@mail.corp.test", from: "no-reply@parley.test")
        #expect(escaped.password == "a%41")
        let user = try SMTPConfiguration(url: "smtp://50%25off@mail.corp.test", from: "no-reply@parley.test")
        #expect(user.username == "50%off")
    }
}
