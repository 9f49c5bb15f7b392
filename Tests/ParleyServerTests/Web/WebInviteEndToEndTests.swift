import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// A newcomer's first hour, in the web client, on a server that admits people to an existing
/// organization by invitation only: an admin founds an organization in one browser, is told
/// how to bring people in, creates an invite and copies its join link; a second person opens
/// the link in another browser, finds the sign-up form filled in and lands in the same
/// organization as a member (no Invite button); the admin revokes a second invite.
/// Screenshots go to `.build/test-screens/`.
@Suite(.serialized) struct WebInviteEndToEndTests {
    static var screens: String { WebClientEndToEndTests.screens }

    /// The row of the invite list for `code` (a JS expression: the element or null).
    static func row(_ code: String) -> String {
        "document.querySelector('#invite-list [data-code=\(BrowserPage.literal(code))]')"
    }

    /// The codes of the invite list, top to bottom, joined by spaces (a JS expression).
    static let listedCodes = "[...document.querySelectorAll('#invite-list [data-code]')].map(r => r.dataset.code).join(' ')"

    @Test(.heavy) func anAdminInvitesANewcomerWhoJoinsThroughTheLink() async throws {
        let server = try ServeProcess(name: "web-invite", openOrganizations: false)
        defer { server.stop() }
        try await server.waitUntilReady()
        let url = server.url

        let browser = try await Chromium.launch()
        let ada = try await browser.newPage("ada")
        let grace = try await browser.newPage("grace")
        do {
            // Ada founds Initech in the browser: its first member, so its admin.
            try await WebClientEndToEndTests.register(ada, url, organization: "Initech", email: "ada@initech.io", name: "Ada")
            try await ada.waitFor("document.querySelector('#invite-open')?.hidden === false", "the Invite button")
            #expect(try await ada.eval("window.parleyDebug.state().me.role") as? String == "admin")

            // Nobody else can join by the name alone here.
            do {
                _ = try await ParleyAPI(baseURL: url).register(.init(
                    organization: "initech", email: "eve@initech.io", password: TestUser.password, displayName: "Eve"))
                Issue.record("registered into an existing organization without an invite")
            } catch let error as ClientError {
                #expect(error.code == .forbidden, "\(error)")
            }

            // New chat finds nobody, and says how people get in, with a way to the panel.
            try await ada.click("#new-chat")
            try await ada.waitFor("document.querySelector('#new-chat-nobody')?.textContent.includes('with an invite')", "the hint to invite")
            try await ada.click("#new-chat-invite")
            try await ada.waitFor(
                "!document.querySelector('#invite-panel').hidden && document.querySelector('#new-chat-panel').hidden", "the invite panel")
            try await ada.waitFor("document.activeElement?.id === 'invite-email'", "focus on the panel's first field")
            try await ada.waitFor("document.querySelector('#invite-list')?.textContent === 'No invites yet.'", "the empty list")

            // Out of range is refused before sending; the server's own refusals show too.
            try await ada.fill("#invite-max-uses", "0")
            try await ada.click("#invite-create")
            try await ada.waitFor("document.querySelector('#invite-error').textContent.includes('1 to 1000')", "the range error")
            try await ada.fill("#invite-max-uses", "")
            try await ada.fill("#invite-email", "not an address")
            try await ada.click("#invite-create")
            try await ada.waitFor("document.querySelector('#invite-error').textContent.includes('not a valid address')", "the server's error")
            #expect(try await ada.eval("document.querySelector('#invite-link') === null") as? Bool == true, "no invite was made")

            // A one-use invite for two days: its code and join link, and the list shows it.
            try await ada.fill("#invite-email", "")
            try await ada.fill("#invite-expires", "48")
            try await ada.click("#invite-create")
            let link = try #require(try await ada.waitFor("document.querySelector('#invite-link')?.value", "the join link") as? String)
            let code = try #require(try await ada.eval("document.querySelector('#invite-code').value") as? String)
            #expect(code.count == 43, "\(code)")
            #expect(link == "\(url.absoluteString)/#join=\(code)&organization=Initech", "\(link)")
            #expect(try await ada.eval("document.querySelector('#invite-error').textContent") as? String == "")
            try await ada.waitFor("\(Self.row(code))?.dataset.state === 'open'", "the invite listed")
            let facts = try await ada.eval("\(Self.row(code)).querySelector('.invite-facts').textContent") as? String ?? ""
            #expect(facts.contains("0/1 used") && facts.contains("expires") && facts.contains("anyone"), "\(facts)")
            let adaToken = try #require(try await ada.eval("localStorage.getItem('parley.token')") as? String)
            let invites = try await ParleyAPI(baseURL: url, token: adaToken).invites()
            #expect(invites.map(\.code) == [code] && invites.first?.maxUses == 1)
            // Copy answers either way (the clipboard, or the text selected for Ctrl+C).
            try await ada.click("#invite-copy")
            try await ada.waitFor("document.querySelector('#invite-copy-status').textContent.length > 0", "the copy status")
            try await ada.screenshot(Self.screens + "/web-invite-panel.png")

            // On a phone the panel fits the width.
            try await ada.viewport(width: 390, height: 844)
            try await ada.waitFor("innerWidth === 390", "the phone width")
            let fits = try await ada.eval("""
                (() => { const p = document.querySelector('#invite-panel .panel'); const r = p.getBoundingClientRect();
                  return r.left >= 0 && r.right <= innerWidth + 0.5 && p.scrollWidth <= p.clientWidth
                    && [...p.querySelectorAll('*')].every(e => e.getBoundingClientRect().right <= r.right + 0.5) })()
                """) as? Bool
            #expect(fits == true, "the invite panel fits 390 px")
            try await ada.screenshot(Self.screens + "/web-invite-phone.png")
            try await ada.viewport(width: 1280, height: 800)

            // Escape closes it, as the other panels.
            try await ada.press("Escape")
            try await ada.waitFor("document.querySelector('#invite-panel').hidden", "the panel closed")

            // Grace opens the link: the sign-up form, filled in; the code leaves the address bar.
            try await grace.goto(link)
            try await grace.waitFor(
                "document.body.dataset.screen === 'auth' && document.querySelector('#auth-form').dataset.mode === 'register'", "the sign-up form")
            #expect(try await grace.eval("document.querySelector('#auth-invite').value") as? String == code)
            #expect(try await grace.eval("document.querySelector('#auth-organization').value") as? String == "Initech")
            #expect(try await grace.eval("location.hash") as? String == "", "the code is out of the address bar")
            #expect(try await grace.eval("location.href") as? String == url.absoluteString + "/")
            #expect(try await grace.eval("document.activeElement?.id") as? String == "auth-email", "the first empty field")
            let note = try await grace.eval("document.querySelector('#auth-note').textContent") as? String ?? ""
            #expect(note.contains("Initech"), "\(note)")
            try await grace.screenshot(Self.screens + "/web-join-form.png")
            try await grace.fill("#auth-email", "grace@initech.io")
            try await grace.fill("#auth-password", "correct horse")
            try await grace.fill("#auth-display-name", "Grace Hopper")
            try await grace.click("#auth-register")
            try await grace.waitFor("document.body.dataset.screen === 'main'", "Grace signed up")
            try await grace.waitFor("document.querySelector('#banner').dataset.state === 'online'", "online")

            // A member: no Invite button; New chat tells her whom to ask.
            #expect(try await grace.eval("window.parleyDebug.state().me.role") as? String == "member")
            #expect(try await grace.eval("document.querySelector('#invite-open').hidden") as? Bool == true, "members have no Invite button")
            try await grace.click("#new-chat")
            try await grace.type("#new-chat-search", "nobody by this name")
            try await grace.waitFor("document.querySelector('#new-chat-nobody')?.textContent.includes('ask Ada')", "ask the admin")
            #expect(try await grace.eval("document.querySelector('#new-chat-invite') === null") as? Bool == true)
            try await grace.click("#new-chat-close")

            // Same organization: Ada finds Grace in New chat; the invite is used up.
            let adaAPI = ParleyAPI(baseURL: url, token: adaToken)
            let people = try await adaAPI.users()
            #expect(Set(people.map(\.email)) == ["ada@initech.io", "grace@initech.io"])
            #expect(people.first { $0.email == "grace@initech.io" }?.role == .member)
            try await ada.click("#new-chat")
            try await ada.type("#new-chat-search", "grace")
            try await ada.waitFor(
                "document.querySelector('#new-chat-results [data-user-id] .user-name')?.textContent === 'Grace Hopper'", "Grace in New chat")
            try await ada.click("#new-chat-close")
            try await ada.click("#invite-open")
            try await ada.waitFor("\(Self.row(code))?.dataset.state === 'used'", "the first invite used up")

            // A second invite, for one address, five uses, a day: listed first; then revoked.
            try await ada.fill("#invite-email", "heidi@initech.io")
            try await ada.fill("#invite-max-uses", "5")
            try await ada.fill("#invite-expires", "24")
            try await ada.click("#invite-create")
            let second = try #require(try await ada.waitFor("document.querySelector('#invite-code')?.value", "the second code") as? String)
            #expect(second != code)
            try await ada.waitFor("\(Self.listedCodes) === \(BrowserPage.literal("\(second) \(code)"))", "newest first")
            let secondFacts = try await ada.eval("\(Self.row(second)).querySelector('.invite-facts').textContent") as? String ?? ""
            #expect(secondFacts.contains("heidi@initech.io") && secondFacts.contains("0/5 used"), "\(secondFacts)")
            let listed = try await adaAPI.invites()
            #expect(listed.map(\.code) == [second, code])
            #expect(listed.first?.email == "heidi@initech.io" && listed.first?.maxUses == 5 && listed.last?.uses == 1)
            try await ada.screenshot(Self.screens + "/web-invite-list.png")
            try await ada.eval("\(Self.row(second)).querySelector('.invite-revoke').click(), true")
            try await ada.waitFor("\(Self.listedCodes) === \(BrowserPage.literal(code))", "the revoked invite gone")
            #expect(try await ada.eval("document.querySelector('#invite-link') === null") as? Bool == true, "its link is no longer shown")
            #expect(try await ada.eval("document.querySelector('#invite-error').textContent") as? String == "")
            #expect(try await adaAPI.invites().map(\.code) == [code])

            #expect(ada.problems.isEmpty, "Ada's page: \(ada.problems)")
            #expect(grace.problems.isEmpty, "Grace's page: \(grace.problems)")
        } catch {
            for page in [ada, grace] {
                try? await page.screenshot(Self.screens + "/web-invite-failure-\(page.name).png")
                Issue.record("\(page.name)'s console: \(page.consoleLog.suffix(20).joined(separator: "\n"))")
            }
            await browser.close()
            throw error
        }
        await browser.close()
    }
}
