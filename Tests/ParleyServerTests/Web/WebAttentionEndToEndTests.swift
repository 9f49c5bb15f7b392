import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The web client catching a person's attention and surviving what browsers do to it, in
/// headless Chromium against `parley serve`: the unread count in the tab's title, a system
/// notification for a message elsewhere (none for the chat on screen), a link per conversation
/// that a reload reopens, sends over REST while the WebSocket is down, and a phone-sized
/// window with a long display name.
@Suite(.serialized, .needs("chromium")) struct WebAttentionEndToEndTests {
    typealias Web = WebClientEndToEndTests

    /// The browser's Notification, recorded: headless Chromium shows none. Permission granted.
    static let recordNotifications = """
        (() => { window.__shown = [];
          window.Notification = class { static permission = 'granted';
            static requestPermission() { return Promise.resolve('granted'); }
            constructor(title, options) { window.__shown.push({ title, body: options.body, tag: options.tag }); }
            close() {} };
          return true; })()
        """

    @Test(.heavy) func theTitleCountsNotificationsComeAndALinkReopensTheChat() async throws {
        var server = try ServeProcess(name: "web-attention", dataDirectory: TestServer.temporaryDirectory())
        defer { server.stop() }
        try await server.waitUntilReady()
        let url = server.url
        let browser = try await Chromium.launch()
        let ada = try await browser.newPage("ada")
        let bob = try await browser.newPage("bob")
        do {
            try await Web.register(ada, url, organization: "Acme", email: "ada@acme.io", name: "Ada Lovelace")
            try await Web.register(bob, url, organization: "acme", email: "bob@acme.io", name: "Bob")
            #expect(try await bob.eval("document.title") as? String == "Parley")
            _ = try await bob.eval(Self.recordNotifications)

            try await ada.click("#new-chat")
            try await ada.type("#new-chat-search", "bob")
            try await ada.click("#new-chat-results [data-user-id]")
            try await ada.click("#new-chat-create")
            let direct = try #require(try await ada.waitFor("document.querySelector('#chat').dataset.conversationId") as? String)
            #expect(try await ada.eval("location.hash") as? String == "#c=\(direct)", "the open chat is in the address")
            try await Web.send(ada, "Are you there? <b>bold</b>")
            try await bob.waitFor("document.title === '(1) Parley'", "Bob's title counts it")
            try await bob.waitFor("window.__shown.length === 1", "a notification")
            let shown = try #require(try await bob.eval("JSON.stringify(window.__shown[0])") as? String)
            let note = try #require(try JSONSerialization.jsonObject(with: Data(shown.utf8)) as? [String: String])
            #expect(note == ["title": "Ada Lovelace", "body": "Are you there? <b>bold</b>", "tag": direct], "plain text: \(note)")
            try await Web.send(ada, "Second")
            try await bob.waitFor("document.title === '(2) Parley'")

            // Bob opens it: the title clears, the address names it, and what comes now while
            // he reads it notifies nothing.
            try await bob.click("#conversation-list [data-conversation-id=\"\(direct)\"]")
            try await bob.waitFor("document.title === 'Parley'", "read: no count")
            #expect(try await bob.eval("location.hash") as? String == "#c=\(direct)")
            try await Web.send(ada, "Third")
            try await bob.waitFor("\(Web.messages("Third")).length === 1")
            #expect(try await bob.eval("window.__shown.length") as? Int == 2, "none for the chat on screen")

            // A reload (or the link pasted into another tab) reopens that chat.
            try await bob.goto(url.absoluteString + "#c=\(direct)")
            try await bob.waitFor("document.body.dataset.screen === 'main'")
            try await bob.waitFor("document.querySelector('#chat').dataset.conversationId === '\(direct)'", "the linked chat open")
            try await bob.waitFor("\(Web.messages("Second")).length === 1", "its messages")
            try await bob.waitFor("document.title === 'Parley'", "what is on screen is read")
            try await bob.screenshot(Web.screens + "/web-linked-chat.png")
            try await bob.click("#back")
            try await bob.waitFor("location.hash === ''", "closed: the link goes")
        } catch {
            await browser.close()
            throw error
        }
        await browser.close()
    }

    /// The WebSocket is down (a proxy that drops it, a reconnect still waiting): a message goes
    /// over REST at once, once, and shows as sent.
    @Test(.heavy) func aMessageGoesOverRESTWhileTheSocketIsDown() async throws {
        var server = try ServeProcess(name: "web-rest", dataDirectory: TestServer.temporaryDirectory())
        defer { server.stop() }
        try await server.waitUntilReady()
        let url = server.url
        let browser = try await Chromium.launch()
        let ada = try await browser.newPage("ada")
        let bob = try await browser.newPage("bob")
        do {
            try await Web.register(ada, url, organization: "Acme", email: "ada@acme.io", name: "Ada")
            try await Web.register(bob, url, organization: "acme", email: "bob@acme.io", name: "Bob")
            try await ada.click("#new-chat")
            try await ada.type("#new-chat-search", "bob")
            try await ada.click("#new-chat-results [data-user-id]")
            try await ada.click("#new-chat-create")
            try await ada.waitFor("document.querySelector('#chat').dataset.conversationId")
            _ = try await ada.eval("import('/web/client.js').then((m) => { m.socket.stop(); return true; })")
            try await Web.send(ada, "Sent over REST")
            try await ada.waitFor(
                "['sent', 'delivered', 'read'].includes(\(Web.messages("Sent over REST"))[0]?.dataset.status)", "sent without the socket")
            try await bob.waitFor("[...document.querySelectorAll('#conversation-list .preview')].some(e => e.textContent.includes('Sent over REST'))", "at Bob's")
            #expect(try await ada.eval("window.parleyDebug.state().pending.length") as? Int == 0, "the outbox is empty")
        } catch {
            await browser.close()
            throw error
        }
        await browser.close()
    }

    /// A group managed in the web client: renamed, someone added and someone removed, then
    /// left; the others see each change as a sentence that says who did it.
    @Test(.heavy) func aGroupIsRenamedGrowsShrinksAndIsLeft() async throws {
        var server = try ServeProcess(name: "web-group", dataDirectory: TestServer.temporaryDirectory())
        defer { server.stop() }
        try await server.waitUntilReady()
        let url = server.url
        let api = ParleyAPI(baseURL: url)
        let carol = try await api.register(.init(organization: "Acme", email: "carol@acme.io", password: "correct horse", displayName: "Carol"))
        let dave = try await api.register(.init(organization: "Acme", email: "dave@acme.io", password: "correct horse", displayName: "Dave"))
        let browser = try await Chromium.launch()
        let ada = try await browser.newPage("ada")
        let bob = try await browser.newPage("bob")
        do {
            try await Web.register(ada, url, organization: "Acme", email: "ada@acme.io", name: "Ada")
            try await Web.register(bob, url, organization: "acme", email: "bob@acme.io", name: "Bob")
            try await ada.click("#new-chat")
            for person in ["bob", "carol"] {
                try await ada.fill("#new-chat-search", person)
                _ = try await ada.eval("document.querySelector('#new-chat-search').dispatchEvent(new Event('input')), true")
                try await ada.waitFor("[...document.querySelectorAll('#new-chat-results .user-email')].some(e => e.textContent.startsWith('\(person)@'))")
                try await ada.eval("[...document.querySelectorAll('#new-chat-results [data-user-id]')].find(b => b.textContent.includes('\(person)@')).click(), true")
            }
            try await ada.fill("#new-chat-name", "Launch")
            try await ada.click("#new-chat-create")
            let group = try #require(try await ada.waitFor("document.querySelector('#chat').dataset.conversationId") as? String)

            try await ada.click("#group-open")
            try await ada.waitFor("document.querySelector('#group-count').textContent === '(3)'", "three members")
            try await ada.fill("#group-name", "Launch crew")
            try await ada.click("#group-rename")
            try await ada.waitFor("document.querySelector('#chat-title').textContent === 'Launch crew'", "renamed")
            try await ada.fill("#group-add-search", "dave")
            _ = try await ada.eval("document.querySelector('#group-add-search').dispatchEvent(new Event('input')), true")
            try await ada.waitFor("document.querySelector('#group-add-results [data-user-id]')", "Dave found")
            try await ada.click("#group-add-results [data-user-id]")
            try await ada.waitFor("document.querySelector('#group-count').textContent === '(4)'", "Dave added")
            try await ada.click("[data-remove-user-id=\"\(carol.user.id)\"]")
            try await ada.waitFor("document.querySelector('#group-count').textContent === '(3)'", "Carol removed")
            try await ada.screenshot(Web.screens + "/web-group-panel.png")
            let row = "#conversation-list [data-conversation-id=\"\(group)\"]"
            try await bob.waitFor("document.querySelector('\(row) .name')?.textContent === 'Launch crew'", "Bob's list follows")
            try await bob.click(row)
            for line in ["Ada renamed the group to “Launch crew”", "Ada added Dave", "Ada removed Carol"] {
                try await bob.waitFor("[...document.querySelectorAll('#messages .msg.system .text')].some(e => e.textContent === \(BrowserPage.literal(line)))", line)
            }

            try await ada.click("#group-leave")
            try await ada.waitFor("!document.querySelector('\(row)') && document.querySelector('#group-panel').hidden", "left: gone from Ada's list")
            try await bob.waitFor("[...document.querySelectorAll('#messages .msg.system .text')].some(e => e.textContent === 'Ada left')", "Bob sees Ada leave")
            let now = try await ParleyAPI(baseURL: url, token: dave.token).conversation(EntityID(group)!)
            #expect(now.participantIds.count == 2 && now.participantIds.contains(dave.user.id), "Bob and Dave remain")
            #expect(!now.participantIds.contains(carol.user.id))
        } catch {
            await browser.close()
            throw error
        }
        await browser.close()
    }

    /// A chat with unread messages opens at the first of them, under a "New messages" line,
    /// not at the bottom; the newest are below, and reading them clears the count.
    @Test(.heavy) func aChatOpensAtItsFirstUnreadMessage() async throws {
        var server = try ServeProcess(name: "web-unread", dataDirectory: TestServer.temporaryDirectory())
        defer { server.stop() }
        try await server.waitUntilReady()
        let url = server.url
        let api = ParleyAPI(baseURL: url)
        let ada = try await api.register(.init(organization: "Acme", email: "ada@acme.io", password: "correct horse", displayName: "Ada"))
        let bob = try await api.register(.init(organization: "Acme", email: "bob@acme.io", password: "correct horse", displayName: "Bob"))
        let bobAPI = ParleyAPI(baseURL: url, token: bob.token)
        let direct = try await bobAPI.createConversation(.init(type: .direct, participantIds: [ada.user.id]))
        for n in 1...3 { _ = try await bobAPI.send(.init(clientMessageId: "old\(n)", text: "old \(n)"), to: direct.id) }
        _ = try await ParleyAPI(baseURL: url, token: ada.token).markRead(direct.id, upToSeq: 3)
        for n in 1...40 { _ = try await bobAPI.send(.init(clientMessageId: "new\(n)", text: "new \(n)"), to: direct.id) }

        let browser = try await Chromium.launch()
        let page = try await browser.newPage("ada")
        do {
            try await page.goto(url.absoluteString)
            try await page.waitFor("document.body.dataset.screen === 'auth'")
            try await page.fill("#auth-organization", "Acme")
            try await page.fill("#auth-email", "ada@acme.io")
            try await page.fill("#auth-password", "correct horse")
            try await page.click("#auth-login")
            try await page.waitFor("document.title === '(40) Parley'", "forty unread")
            try await page.click("#conversation-list [data-conversation-id=\"\(direct.id)\"]")
            try await page.waitFor("document.querySelector('#unread-divider')?.nextElementSibling?.querySelector('.text')?.textContent === 'new 1'", "the line above the first unread")
            let box = "document.querySelector('#messages')"
            try await page.waitFor("(() => { const b = \(box).getBoundingClientRect(); const t = document.querySelector('#unread-divider').getBoundingClientRect().top; return t >= b.top && t < b.top + 120; })()", "opened at the line")
            let newest = "\(WebClientEndToEndTests.messages("new 40"))[0]"
            #expect(try await page.eval("\(newest).getBoundingClientRect().top > \(box).getBoundingClientRect().bottom") as? Bool == true, "the newest is below")
            #expect(try await page.eval("!document.querySelector('#jump-latest').hidden") as? Bool == true, "a way down")
            try await page.screenshot(WebClientEndToEndTests.screens + "/web-first-unread.png")
            try await page.click("#jump-latest")
            try await page.waitFor("document.title === 'Parley'", "read to the end")
        } catch {
            await browser.close()
            throw error
        }
        await browser.close()
    }

    /// A phone-sized window and a long display name: nothing is pushed off screen.
    @Test(.heavy) func aLongNameFitsAPhoneSizedWindow() async throws {
        var server = try ServeProcess(name: "web-narrow", dataDirectory: TestServer.temporaryDirectory())
        defer { server.stop() }
        try await server.waitUntilReady()
        let browser = try await Chromium.launch()
        let page = try await browser.newPage("phone", width: 390, height: 844)
        do {
            let long = "Maximiliana Alexandrina Constantinopoulou-Wolfeschlegelsteinhausen the Third"
            try await Web.register(page, server.url, organization: "Acme", email: "max@acme.io", name: long)
            try await page.waitFor("document.querySelector('#me-name').textContent.length > 20")
            #expect(try await page.eval("document.documentElement.scrollWidth") as? Int ?? 999 <= 390, "no horizontal scroll")
            for control in ["#logout", "#new-chat"] {
                let right = try await page.eval("Math.round(document.querySelector('\(control)').getBoundingClientRect().right)") as? Int ?? 999
                #expect(right <= 390, "\(control) ends at \(right) px")
            }
            try await page.screenshot(Web.screens + "/web-phone-long-name.png")
        } catch {
            await browser.close()
            throw error
        }
        await browser.close()
    }
}
