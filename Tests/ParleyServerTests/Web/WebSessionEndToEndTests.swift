import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyBench
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The web client's sign-in in headless Chromium: access tokens live minutes, so the page
/// renews with its refresh token (never putting a token in a URL), keeps the socket open under
/// the renewed token (`auth`), and logout ends the refresh token it holds.
@Suite(.serialized, .needs("chromium")) struct WebSessionEndToEndTests {
    static func storage(_ page: BrowserPage, _ key: String) async throws -> String? {
        try await page.eval("localStorage.getItem(\(BrowserPage.literal(key)))") as? String
    }

    @Test(.heavy) func thePageRenewsItsSignInAndKeepsItsSocket() async throws {
        let server = try ServeProcess(name: "web-session")
        defer { server.stop() }
        try await server.waitUntilReady()
        let url = server.url
        let browser = try await Chromium.launch()
        let ada = try await browser.newPage("ada")
        do {
            try await WebClientEndToEndTests.register(ada, url, organization: "acme", email: "ada@x.io", name: "Ada")
            let token = try #require(try await Self.storage(ada, "parley.token"))
            let refresh = try #require(try await Self.storage(ada, "parley.refresh"))
            let expires = try #require(try await Self.storage(ada, "parley.expires"))
            #expect(try #require(WireCoding.parseTimestamp(expires)).timeIntervalSinceNow < 16 * 60, "a minutes-long access token")

            // The token is about to expire: the next request renews first.
            _ = try await ada.eval("localStorage.setItem('parley.expires', new Date(Date.now() + 10000).toISOString()); true")
            try await ada.click("#new-chat")
            try await ada.waitFor("localStorage.getItem('parley.refresh') !== \(BrowserPage.literal(refresh))", "the renewed refresh token")
            let renewed = try #require(try await Self.storage(ada, "parley.token"))
            #expect(renewed != token)
            try await ada.waitFor("window.parleyDebug.state().socketAuthorizedUntil !== null", "the socket taking the renewed token")
            #expect(try await ada.eval("document.querySelector('#banner').dataset.state") as? String == "online")
            let sessions = try await ParleyAPI(baseURL: url, token: renewed).signInSessions()
            #expect(sessions.count == 1 && sessions[0].current, "the same sign-in, renewed")

            // Logging out ends the refresh token the page held.
            let held = try #require(try await Self.storage(ada, "parley.refresh"))
            try await ada.click("#logout")
            try await ada.waitFor("document.body.dataset.screen === 'auth'", "the sign-in screen")
            #expect(try await Self.storage(ada, "parley.refresh") == nil)
            #expect(try await Self.storage(ada, "parley.token") == nil)
            do {
                _ = try await ParleyAPI(baseURL: url).refresh(refreshToken: held)
                Issue.record("a logged-out refresh token renewed")
            } catch let error as ClientError {
                #expect(error.code == .unauthorized, "\(error)")
            }
            #expect(ada.problems.isEmpty, "Ada's page: \(ada.problems)")
        } catch {
            try? await ada.screenshot("\(WebClientEndToEndTests.screens)/web-session-failure.png")
            Issue.record("Ada's console: \(ada.consoleLog.suffix(20).joined(separator: "\n"))")
            await browser.close()
            throw error
        }
        await browser.close()
    }

    /// A sign-up by email domain in the browser: the page says to check the mail, and the
    /// mailed link opens the app signed in.
    @Test(.heavy) func aSignUpByDomainFinishesFromTheMailedLink() async throws {
        let sink = try await SMTPSink()
        let port = try freeLoopbackPort()
        let server = try ServeProcess(
            name: "web-verify", port: port, openOrganizations: false,
            arguments: ["--smtp-url", sink.url, "--public-url", "http://127.0.0.1:\(port)"])
        defer { server.stop() }
        try await server.waitUntilReady()
        let url = server.url
        let admin = try await ParleyAPI(baseURL: url).register(
            RegisterRequest(organization: "Corp", email: "admin@corp.test", password: TestUser.password, displayName: "Admin"))
        _ = try await ParleyAPI(baseURL: url, token: admin.token).setAllowedEmailDomains(["corp.test"])

        let browser = try await Chromium.launch()
        let bob = try await browser.newPage("bob")
        do {
            try await bob.goto(url.absoluteString)
            try await bob.waitFor("document.body.dataset.screen === 'auth'")
            try await bob.click("#auth-mode-register")
            try await bob.fill("#auth-organization", "corp")
            try await bob.fill("#auth-email", "bob@corp.test")
            try await bob.fill("#auth-password", "correct horse")
            try await bob.fill("#auth-display-name", "Bob <b>")
            try await bob.click("#auth-register")
            try await bob.waitFor(
                "document.querySelector('#auth-note').textContent.startsWith('Check your email: we sent a link to bob@corp.test')",
                "the note to check the mail")
            #expect(try await bob.eval("document.body.dataset.screen") as? String == "auth")
            try await bob.screenshot("\(WebClientEndToEndTests.screens)/web-verify-check-email.png")

            let mail = try #require(try await sink.waitForMessages(1).first)
            let token = try #require(SMTPSink.verificationToken(in: mail.body))
            #expect(mail.body.contains("Hello Bob <b>,"), "names are text in a plain-text mail")
            try await bob.goto("\(url.absoluteString)/#verify=\(token)")
            try await bob.waitFor("document.body.dataset.screen === 'main'", "signed in from the link")
            #expect(try await bob.eval("window.parleyDebug.state().me.email") as? String == "bob@corp.test")
            #expect(try await bob.eval("location.hash") as? String == "", "the token is taken out of the address bar")
            #expect(bob.problems.isEmpty, "Bob's page: \(bob.problems)")
        } catch {
            try? await bob.screenshot("\(WebClientEndToEndTests.screens)/web-verify-failure.png")
            Issue.record("Bob's console: \(bob.consoleLog.suffix(20).joined(separator: "\n"))")
            await browser.close()
            await sink.stop()
            throw error
        }
        await browser.close()
        await sink.stop()
    }
}
