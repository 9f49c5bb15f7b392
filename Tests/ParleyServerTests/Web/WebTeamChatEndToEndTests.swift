import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Team chat in the web client, in headless Chromium against `parley serve`: a thread opened from
/// its root's "n replies", a reply with an "@" completion, a pin in the pinned bar, a mute,
/// a mention badge in the list, and a link preview card whose texts stay text.
@Suite(.serialized, .needs("chromium")) struct WebTeamChatEndToEndTests {
    typealias Web = WebClientEndToEndTests

    @Test(.heavy) func threadsMentionsPinsMuteAndPreviews() async throws {
        let pages = try await TestWebPages(pages: [
            "/notes": .init(body: """
                <html><head><title>x</title><meta property="og:title" content="Release &lt;b&gt;notes&lt;/b&gt;">
                <meta property="og:description" content="<img src=x onerror=alert(1)>What changed"></head></html>
                """),
        ])
        var server = try ServeProcess(
            name: "web-team", dataDirectory: TestServer.temporaryDirectory(), arguments: ["--link-preview-allow", "127.0.0.1/32"])
        defer { server.stop() }
        try await server.waitUntilReady()
        let url = server.url
        let api = ParleyAPI(baseURL: url)
        let carolAuth = try await api.register(.init(organization: "Acme", email: "carol@acme.io", password: "correct horse", displayName: "Carol"))
        let carol = ParleyAPI(baseURL: url, token: carolAuth.token)
        let browser = try await Chromium.launch()
        let ada = try await browser.newPage("ada")
        let bob = try await browser.newPage("bob")
        do {
            try await Web.register(ada, url, organization: "acme", email: "ada@acme.io", name: "Ada")
            try await Web.register(bob, url, organization: "acme", email: "bob@acme.io", name: "Bob")
            let users = try await carol.users()
            let adaId = try #require(users.first { $0.displayName == "Ada" }?.id)
            let bobId = try #require(users.first { $0.displayName == "Bob" }?.id)
            let group = try await carol.createConversation(.init(type: .group, participantIds: [adaId, bobId], name: "Launch"))
            let root = try await carol.send(.init(clientMessageId: "root", text: "Launch checklist"), to: group.id)
            _ = try await carol.send(.init(clientMessageId: "r1", text: "Docs are done", threadRootId: root.id), to: group.id)

            // Bob opens the group: the root with "1 reply", the reply not in the timeline.
            try await bob.click("#conversation-list [data-conversation-id=\"\(group.id)\"]")
            try await bob.waitFor("\(Web.messages("Launch checklist")).length === 1")
            try await bob.waitFor("document.querySelector('#messages .thread-link')?.textContent.startsWith('💬 1 reply')", "the thread line")
            #expect(try await bob.eval("\(Web.messages("Docs are done")).length") as? Int == 0, "replies stay in their thread")
            try await bob.click("#messages .thread-link")
            try await bob.waitFor("!document.querySelector('#thread-panel').hidden")
            try await bob.waitFor("[...document.querySelectorAll('#thread-messages .text')].some(e => e.textContent === 'Docs are done')", "the reply in the panel")

            // "@Ca" offers Carol; Enter takes her; the reply goes with the mention.
            try await bob.type("#thread-composer", "Thanks @Ca")
            try await bob.waitFor("!document.querySelector('#thread-mentions').hidden && document.querySelector('#thread-mentions li')?.textContent === '@Carol'")
            try await bob.press("Enter")
            try await bob.waitFor("document.querySelector('#thread-composer').value === 'Thanks @Carol '", "completed")
            try await bob.press("Enter")
            try await bob.waitFor("[...document.querySelectorAll('#thread-messages .text')].some(e => e.textContent === 'Thanks @Carol')")
            let thread = try await carol.thread(root.id, in: group.id)
            #expect(thread.messages.map(\.text) == ["Docs are done", "Thanks @Carol"])
            #expect(thread.messages.last?.mentions == [carolAuth.user.id])
            try await bob.waitFor("document.querySelector('#messages .thread-link')?.textContent.startsWith('💬 2 replies')", "the count moved")
            try await bob.screenshot(Web.screens + "/web-thread.png")

            // Pin the root: the pinned bar names it, for Ada too.
            try await bob.click("#thread-close")
            _ = try await bob.eval("document.querySelector('#messages [data-message-id=\"\(root.id)\"] .action-pin').click(), true")
            try await bob.waitFor("!document.querySelector('#pinned-bar').hidden && document.querySelector('#pinned-bar .pin-text').textContent === 'Carol: Launch checklist'")
            #expect(try await bob.eval("document.querySelector('#pinned-bar').textContent") as? String == "📌Carol: Launch checklist", "one pin: no count, nothing else")

            // Mute from the header; the row shows it; Carol's mention of Ada badges Ada's row.
            try await bob.click("#mute-toggle")
            try await bob.waitFor("document.querySelector('#mute-toggle').getAttribute('aria-pressed') === 'true'")
            try await bob.waitFor("document.querySelector('#conversation-list [data-conversation-id=\"\(group.id)\"]').classList.contains('muted')")
            #expect(try await carol.conversation(group.id).muted == false, "Bob's mute is his own")
            _ = try await carol.send(.init(clientMessageId: "m1", text: "@Ada can you review?", mentions: [adaId]), to: group.id)
            try await ada.waitFor(
                "!document.querySelector('#conversation-list [data-conversation-id=\"\(group.id)\"] .mention-badge').hidden", "Ada's mention badge")
            try await ada.screenshot(Web.screens + "/web-mention-badge.png")

            // A link: the preview card's texts are text, never markup.
            _ = try await carol.send(.init(clientMessageId: "l1", text: "See \(pages.url("/notes"))"), to: group.id)
            try await bob.waitFor("document.querySelector('#messages .preview-card .preview-title')?.textContent === 'Release notes'", "the card", timeout: .seconds(20))
            #expect(try await bob.eval("document.querySelector('#messages .preview-card img, #messages .preview-card b') === null") as? Bool == true)
            #expect(try await bob.eval("document.querySelector('#messages .preview-card .preview-description').textContent") as? String == "What changed")
            try await bob.screenshot(Web.screens + "/web-preview-pin-mute.png")
        } catch {
            await browser.close()
            await pages.stop()
            throw error
        }
        await browser.close()
        await pages.stop()
    }

    /// In a large group the server sends no one their view with a message (only the activity),
    /// so the web client moves the mention badge itself, as it does the unread count.
    @Test(.heavy) func aMentionInALargeGroupBadgesTheRowLive() async throws {
        var server = try ServeProcess(
            name: "web-large", dataDirectory: TestServer.temporaryDirectory(), arguments: ["--large-group-size", "2"])
        defer { server.stop() }
        try await server.waitUntilReady()
        let url = server.url
        let api = ParleyAPI(baseURL: url)
        let carolAuth = try await api.register(.init(organization: "Acme", email: "carol@acme.io", password: "correct horse", displayName: "Carol"))
        let bobAuth = try await api.register(.init(organization: "Acme", email: "bob@acme.io", password: "correct horse", displayName: "Bob"))
        let carol = ParleyAPI(baseURL: url, token: carolAuth.token)
        let browser = try await Chromium.launch()
        let ada = try await browser.newPage("ada")
        do {
            try await Web.register(ada, url, organization: "acme", email: "ada@acme.io", name: "Ada")
            let adaId = try #require(try await carol.users().first { $0.displayName == "Ada" }?.id)
            let group = try await carol.createConversation(.init(type: .group, participantIds: [adaId, bobAuth.user.id], name: "Everyone"))
            let row = "document.querySelector('#conversation-list [data-conversation-id=\"\(group.id)\"]')"
            try await ada.waitFor("\(row) !== null", "the group in Ada's list")
            _ = try await carol.send(.init(clientMessageId: "p1", text: "Standup in 5"), to: group.id)
            try await ada.waitFor("\(row).textContent.includes('Standup in 5')", "the plain message in the row")
            #expect(try await ada.eval("\(row).querySelector('.mention-badge').hidden") as? Bool == true)
            _ = try await carol.send(.init(clientMessageId: "m1", text: "@Ada notes please", mentions: [adaId]), to: group.id)
            try await ada.waitFor("!\(row).querySelector('.mention-badge').hidden", "Ada's mention badge, live")
            #expect(try await carol.conversation(group.id).memberCount == 3)
        } catch {
            await browser.close()
            throw error
        }
        await browser.close()
    }
}
