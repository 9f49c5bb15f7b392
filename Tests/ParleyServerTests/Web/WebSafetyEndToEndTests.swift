import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Trust and safety in the web client, in headless Chromium against `parley serve`:
/// Bob reports a message of Mallory's and blocks her from the group's member list; her next
/// group message folds away as "from a blocked user" for him (and counts nowhere), not for
/// Alice; Alice, the organization's admin, finds the report in the admin console with the
/// message's text, resolves it and reads "report.resolved" in the audit log. Bob, a member,
/// has no console entry, and the `#admin` link shows him the server's refusal in words.
/// Mallory's name, her message and Bob's reason are all `<img src=x onerror=alert(1)>`-style
/// markup, which must stay text. Screenshots go to `.build/test-screens/`.
@Suite(.serialized, .needs("chromium")) struct WebSafetyEndToEndTests {
    typealias Web = WebClientEndToEndTests

    static let hostile = "<img src=x onerror=alert(1)>"

    @Test(.heavy) func reportBlockAndTheAdminConsole() async throws {
        let server = try ServeProcess(name: "web-safety", dataDirectory: TestServer.temporaryDirectory())
        defer { server.stop() }
        try await server.waitUntilReady()
        let url = server.url
        let browser = try await Chromium.launch()
        let alice = try await browser.newPage("alice")
        let bob = try await browser.newPage("bob")
        do {
            // Alice founds Acme (its admin); Bob joins; Mallory, with markup for a name, too.
            try await Web.register(alice, url, organization: "Acme", email: "alice@acme.io", name: "Alice")
            try await Web.register(bob, url, organization: "acme", email: "bob@acme.io", name: "Bob")
            let malloryAuth = try await ParleyAPI(baseURL: url).register(.init(
                organization: "acme", email: "mallory@acme.io", password: "correct horse", displayName: Self.hostile))
            let mallory = ParleyAPI(baseURL: url, token: malloryAuth.token)
            let malloryId = malloryAuth.user.id
            let users = try await mallory.users()
            let aliceId = try #require(users.first { $0.displayName == "Alice" }?.id)
            let bobId = try #require(users.first { $0.displayName == "Bob" }?.id)
            let group = try await mallory.createConversation(.init(type: .group, participantIds: [aliceId, bobId], name: "Hall"))
            let first = try await mallory.send(.init(clientMessageId: "m1", text: Self.hostile), to: group.id)
            let row = "#conversation-list [data-conversation-id=\"\(group.id)\"]"

            // A member: no admin console in the menu.
            #expect(try await bob.eval("window.parleyDebug.state().me.role") as? String == "member")
            try await bob.click("#menu-open")
            try await bob.waitFor("!document.querySelector('#app-menu').hidden", "Bob's menu")
            #expect(try await bob.eval("document.querySelector('#admin-open').hidden") as? Bool == true, "members have no admin console entry")
            #expect(try await bob.eval("document.querySelector('#account-open').hidden") as? Bool == false)
            try await bob.press("Escape")
            try await bob.waitFor("document.querySelector('#app-menu').hidden", "the menu closed")

            // Bob opens the group: Mallory's name and message are text, not an image.
            try await bob.click(row)
            try await bob.waitFor("\(Web.messages(Self.hostile)).length === 1", "Mallory's message")
            let message = "document.querySelector('#messages [data-message-id=\"\(first.id)\"]')"
            try await bob.waitFor("\(message).querySelector('.sender')?.textContent === \(BrowserPage.literal(Self.hostile))", "her name as text")
            #expect(try await bob.eval("document.querySelectorAll('img:not(.attachment-image):not(#viewer-image):not([src=\"/web/favicon.svg\"])').length") as? Int == 0)

            // Bob reports it: a dialog quoting it asks why; a confirmation follows.
            try await bob.eval("\(message).querySelector('.action-report').click(), true")
            try await bob.waitFor("!document.querySelector('#report-panel').hidden", "the report dialog")
            #expect(try await bob.eval("document.querySelector('#report-subject .report-quote-text').textContent") as? String == Self.hostile)
            try await bob.waitFor("document.activeElement?.id === 'report-reason'", "focus on the reason")
            try await bob.click("#report-send")
            try await bob.waitFor("document.querySelector('#report-error').textContent.length > 0", "a reason is asked for")
            let reason = "Spam again \(Self.hostile)"
            try await bob.type("#report-reason", reason)
            try await bob.click("#report-send")
            try await bob.waitFor("!document.querySelector('#report-done').hidden", "the confirmation")
            #expect(try await bob.eval("document.querySelector('#report-form').hidden") as? Bool == true)
            let aliceToken = try #require(try await alice.eval("localStorage.getItem('parley.token')") as? String)
            let aliceAPI = ParleyAPI(baseURL: url, token: aliceToken)
            let filed = try await aliceAPI.reports(status: .open).reports
            #expect(filed.count == 1 && filed.first?.reason == reason && filed.first?.messageId == first.id && filed.first?.userId == malloryId)
            try await bob.click("#report-close")
            try await bob.waitFor("document.querySelector('#report-panel').hidden")

            // Bob blocks Mallory from the group's member list; her message folds away at once.
            try await bob.click("#group-open")
            try await bob.click("#group-members [data-profile-user-id=\"\(malloryId)\"]")
            try await bob.waitFor("!document.querySelector('#person-panel').hidden", "Mallory's panel")
            try await bob.waitFor("document.querySelector('#person-name').textContent === \(BrowserPage.literal(Self.hostile))", "her name in the panel")
            #expect(try await bob.eval("document.querySelector('#person-block').textContent") as? String == "Block")
            try await bob.click("#person-block")
            try await bob.waitFor("document.querySelector('#person-block').dataset.blocked === 'true'", "blocked")
            #expect(try await bob.eval("document.querySelector('#person-block').textContent") as? String == "Unblock")
            let bobToken = try #require(try await bob.eval("localStorage.getItem('parley.token')") as? String)
            #expect(try await ParleyAPI(baseURL: url, token: bobToken).blockedUsers().map(\.id) == [malloryId])
            try await bob.click("#person-close")
            try await bob.waitFor("\(message)?.dataset.blocked === 'true' && !\(message).querySelector('.text')", "the earlier message folded")

            // Her next group message: folded for Bob, counted nowhere, shown on asking; plain for Alice.
            try await bob.click("#back")
            try await bob.waitFor("!document.querySelector('#chat').dataset.conversationId", "Bob back at the list")
            let later = "Anyone want cheap watches?"
            let second = try await mallory.send(.init(clientMessageId: "m2", text: later), to: group.id)
            try await bob.waitFor("document.querySelector('\(row) .preview').textContent === 'Message from a blocked user'", "the folded preview")
            #expect(try await bob.eval("document.querySelector('\(row) .unread').hidden") as? Bool == true, "no unread badge for a blocked sender")
            #expect(try await bob.eval("window.parleyDebug.state().conversations.find(c => c.id === '\(group.id)').unreadCount") as? Int == 0)
            try await bob.click(row)
            let folded = "document.querySelector('#messages [data-message-id=\"\(second.id)\"]')"
            try await bob.waitFor("\(folded)?.dataset.blocked === 'true'", "the new message folded")
            #expect(try await bob.eval("\(folded).querySelector('.blocked-note').textContent") as? String == "Message from a blocked user")
            #expect(try await bob.eval("\(Web.messages(later)).length") as? Int == 0, "its text is not shown")
            try await bob.screenshot(Web.screens + "/web-safety-blocked.png")
            try await bob.eval("\(folded).querySelector('.blocked-toggle').click(), true")
            try await bob.waitFor("\(Web.messages(later)).length === 1", "shown on asking")
            try await bob.eval("\(folded).querySelector('.blocked-toggle').click(), true")
            try await bob.waitFor("\(Web.messages(later)).length === 0", "folded again")

            // Search finds it, still folded: no snippet of her words.
            try await bob.click("#back")
            try await bob.waitFor("!document.querySelector('#chat').dataset.conversationId", "Bob back at the list")
            try await bob.type("#search-input", "watches")
            let hit = "document.querySelector('#search-results .search-hit[data-message-id=\"\(second.id)\"]')"
            try await bob.waitFor("\(hit) !== null", "the search hit")
            #expect(try await bob.eval("\(hit).querySelector('.snippet').textContent") as? String == "Message from a blocked user")
            #expect(try await bob.eval("document.querySelector('#search-results').textContent.includes('watches')") as? Bool == false)
            try await bob.screenshot(Web.screens + "/web-safety-search.png")
            try await bob.press("Escape")
            try await bob.waitFor("document.querySelector('#search-results').hidden", "the search cleared")

            try await alice.waitFor("document.querySelector('\(row) .unread')?.textContent === '2'", "Alice's unread badge")
            try await alice.click(row)
            try await alice.waitFor("\(Web.messages(later)).length === 1 && \(Web.messages(Self.hostile)).length === 1", "Alice sees both")
            #expect(try await alice.eval("document.querySelectorAll('#messages [data-blocked]').length") as? Int == 0, "nothing folded for Alice")

            // Alice, the admin: the console from the menu, the report with the message's text.
            #expect(try await alice.eval("window.parleyDebug.state().me.role") as? String == "admin")
            try await alice.click("#menu-open")
            try await alice.waitFor("!document.querySelector('#app-menu').hidden && !document.querySelector('#admin-open').hidden", "the console entry")
            try await alice.click("#admin-open")
            try await alice.waitFor("!document.querySelector('#admin-panel').hidden", "the admin console")
            let report = "document.querySelector('#admin-reports .admin-report[data-status=\"open\"]')"
            try await alice.waitFor("\(report) !== null", "the open report")
            #expect(try await alice.eval("\(report).querySelector('.report-reason').textContent") as? String == reason)
            #expect(try await alice.eval("\(report).querySelector('.report-message-text').textContent") as? String == Self.hostile)
            #expect(try await alice.eval("\(report).querySelector('.report-reporter').textContent") as? String == "Bob")
            #expect(try await alice.eval("\(report).querySelector('.report-user').textContent") as? String == Self.hostile)
            #expect(try await alice.eval("document.querySelectorAll('#admin-panel img').length") as? Int == 0, "markup stays text")
            #expect(try await alice.eval("document.querySelector('#admin-error').textContent") as? String == "")
            try await alice.screenshot(Web.screens + "/web-admin-reports.png")

            // The admin deletes the reported message: a tombstone that says who removed it.
            try await alice.eval("\(report).querySelector('.report-delete-message').click(), true")
            try await alice.waitFor("\(report)?.querySelector('.report-message-text')?.textContent === 'Removed by an admin'", "the message removed")
            #expect(try await alice.eval("\(report).querySelector('.report-delete-message') === null") as? Bool == true)
            try await alice.waitFor(
                "document.querySelector('#messages [data-message-id=\"\(first.id)\"] .text.deleted')?.textContent === 'Removed by an admin'", "the tombstone in the chat")
            #expect(try await aliceAPI.messages(group.id).messages.first { $0.id == first.id }?.deletedBy == aliceId)

            // Resolve: gone from the open ones, listed with the resolved, on record in the log.
            try await alice.eval("\(report).querySelector('.report-resolve').click(), true")
            try await alice.waitFor("document.querySelector('#admin-reports .admin-empty')?.textContent.startsWith('No open reports')", "no open reports left")
            #expect(try await aliceAPI.reports(status: .resolved).reports.map(\.id) == filed.map(\.id))
            try await alice.eval("""
                (() => { const s = document.querySelector('#admin-report-status'); s.value = 'resolved';
                  s.dispatchEvent(new Event('change', {bubbles: true})); return true })()
                """)
            try await alice.waitFor("document.querySelector('#admin-reports .admin-report[data-status=\"resolved\"] .report-reopen') !== null", "the resolved report")
            try await alice.click("#admin-tab-audit")
            try await alice.waitFor(
                "[...document.querySelectorAll('#admin-audit .audit-entry .audit-action')].some(e => e.textContent === 'report.resolved')", "report.resolved in the log")
            #expect(try await alice.eval("document.querySelector('#admin-audit .audit-entry .audit-actor').textContent") as? String == "Alice")
            try await alice.screenshot(Web.screens + "/web-admin-audit.png")

            // Members and roles: Mallory's name is text; erasing her asks first, naming her.
            try await alice.click("#admin-tab-members")
            let member = "document.querySelector('#admin-members [data-user-id=\"\(malloryId)\"]')"
            try await alice.waitFor("\(member) !== null", "Mallory in the members")
            #expect(try await alice.eval("\(member).querySelector('.user-name').textContent") as? String == Self.hostile)
            #expect(try await alice.eval("\(member).querySelector('.role-badge').textContent") as? String == "member")
            try await alice.eval("\(member).querySelector('.admin-erase').click(), true")
            try await alice.waitFor("\(member).querySelector('.admin-confirm-yes')?.textContent === \(BrowserPage.literal("Erase \(Self.hostile)"))", "the confirm step names her")
            try await alice.screenshot(Web.screens + "/web-admin-members.png")
            try await alice.eval("\(member).querySelector('.admin-confirm-cancel').click(), true")
            try await alice.waitFor("\(member).querySelector('.admin-erase') !== null", "cancelled")
            #expect(try await aliceAPI.users().contains { $0.id == malloryId && $0.displayName == Self.hostile }, "nobody was erased")
            #expect(try await alice.eval("document.querySelectorAll('#admin-panel img').length") as? Int == 0)

            // A member who opens the console's link reads the refusal in words.
            try await bob.eval("location.hash = '#admin', true")
            try await bob.waitFor("!document.querySelector('#admin-panel').hidden", "the console for Bob")
            try await bob.waitFor("document.querySelector('#admin-error').textContent.startsWith('Only admins')", "the refusal")
            #expect(try await bob.eval("document.querySelectorAll('#admin-reports .admin-report').length") as? Int == 0, "no reports shown to a member")
            try await bob.click("#admin-close")

            // Bob's own data: the download, and Mallory among the people he blocks.
            try await bob.click("#menu-open")
            try await bob.click("#account-open")
            try await bob.waitFor("!document.querySelector('#account-panel').hidden", "the account panel")
            try await bob.waitFor("document.querySelector('#blocked-list [data-user-id=\"\(malloryId)\"] .user-name')?.textContent === \(BrowserPage.literal(Self.hostile))", "Mallory blocked")
            try await bob.click("#export-download")
            try await bob.waitFor("document.querySelector('#export-status').textContent.startsWith('Downloaded parley-export.zip')", "the export")
            #expect(try await bob.eval("document.querySelector('#account-error').textContent") as? String == "")

            #expect(alice.problems.isEmpty, "Alice's page: \(alice.problems)")
            #expect(bob.problems.isEmpty, "Bob's page: \(bob.problems)")
        } catch {
            for page in [alice, bob] {
                try? await page.screenshot(Web.screens + "/web-safety-failure-\(page.name).png")
                Issue.record("\(page.name)'s console: \(page.consoleLog.suffix(20).joined(separator: "\n"))")
            }
            await browser.close()
            throw error
        }
        await browser.close()
    }
}
