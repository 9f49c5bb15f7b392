import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The web client served by `parley serve`, used by two people in two headless Chromium
/// contexts through a real server (killed and restarted for the offline outbox), and a third
/// person in `parley chat` in a terminal. Screenshots go to `.build/test-screens/`.
@Suite(.serialized, .needs("chromium"), .needs("tmux")) struct WebClientEndToEndTests {
    static let screens: String = {
        let folder = Repository.screens
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }()

    /// The chat's messages whose text is exactly `text` (a JS array).
    static func messages(_ text: String) -> String {
        "[...document.querySelectorAll('#messages [data-seq]')].filter(e => e.querySelector('.text')?.textContent === \(BrowserPage.literal(text)))"
    }

    static func register(_ page: BrowserPage, _ url: URL, organization: String, email: String, name: String) async throws {
        try await page.goto(url.absoluteString)
        try await page.waitFor("document.body.dataset.screen === 'auth'")
        try await page.click("#auth-mode-register")
        try await page.fill("#auth-organization", organization)
        try await page.fill("#auth-email", email)
        try await page.fill("#auth-password", "correct horse")
        try await page.fill("#auth-display-name", name)
        try await page.click("#auth-register")
        try await page.waitFor("document.body.dataset.screen === 'main'")
        try await page.waitFor("document.querySelector('#banner').dataset.state === 'online'", "online")
    }

    /// Carol, registered over the API as the first of organization "Acme", and Ada, who
    /// registers into it in a new page of `browser`; Ada's page and id.
    /// Runs `body` with a `parley serve` of its own (a new data directory) and a browser, which
    /// is closed whatever happens.
    static func withServerAndBrowser(_ name: String, arguments: [String] = [], _ body: (URL, Chromium) async throws -> Void) async throws {
        let server = try ServeProcess(name: name, dataDirectory: TestServer.temporaryDirectory(), arguments: arguments)
        defer { server.stop() }
        try await server.waitUntilReady()
        let browser = try await Chromium.launch()
        do {
            try await body(server.url, browser)
        } catch {
            await browser.close()
            throw error
        }
        await browser.close()
    }

    static func carolAndAda(_ url: URL, _ browser: Chromium) async throws -> (carol: ParleyAPI, ada: BrowserPage, adaId: EntityID) {
        let carolAuth = try await ParleyAPI(baseURL: url).register(
            .init(organization: "Acme", email: "carol@acme.io", password: "correct horse", displayName: "Carol"))
        let carol = ParleyAPI(baseURL: url, token: carolAuth.token)
        let ada = try await browser.newPage("ada")
        try await register(ada, url, organization: "acme", email: "ada@acme.io", name: "Ada")
        let adaId = try #require(try await carol.users().first { $0.displayName == "Ada" }?.id)
        return (carol, ada, adaId)
    }

    static func send(_ page: BrowserPage, _ text: String) async throws {
        try await page.type("#composer", text)
        try await page.press("Enter")
    }

    @Test(.heavy) func twoPeopleChatInTwoBrowsersAndWithATerminal() async throws {
        let data = TestServer.temporaryDirectory()
        var server = try ServeProcess(name: "web", dataDirectory: data)
        defer { server.stop() }
        try await server.waitUntilReady()
        let url = server.url

        // The page comes with a strict policy: no inline script, nothing from elsewhere.
        let (_, response) = try await URLSession.shared.data(from: url)
        let headers = (response as? HTTPURLResponse)?.allHeaderFields as? [String: String] ?? [:]
        let policy = headers.first { $0.key.lowercased() == "content-security-policy" }?.value ?? ""
        #expect(policy.contains("script-src 'self'") && policy.contains("object-src 'none'") && !policy.contains("unsafe"), "\(policy)")

        let browser = try await Chromium.launch()
        let ada = try await browser.newPage("ada")
        let bob = try await browser.newPage("bob")
        do {
            // A wrong login says so; then both register into one organization.
            try await ada.goto(url.absoluteString)
            try await ada.waitFor("document.body.dataset.screen === 'auth'")
            try await ada.screenshot(Self.screens + "/web-sign-in.png")
            try await ada.fill("#auth-organization", "Nowhere")
            try await ada.fill("#auth-email", "x@y.io")
            try await ada.fill("#auth-password", "wrongpass1")
            try await ada.click("#auth-login")
            try await ada.waitFor("document.querySelector('#auth-error').textContent.length > 0", "the error")
            try await Self.register(ada, url, organization: "Acme", email: "ada@acme.io", name: "Ada Lovelace")
            try await Self.register(bob, url, organization: "acme", email: "bob@acme.io", name: "Bob")

            // Ada opens a direct chat and writes something that looks like HTML.
            try await ada.click("#new-chat")
            try await ada.type("#new-chat-search", "bob")
            try await ada.click("#new-chat-results [data-user-id]")
            try await ada.click("#new-chat-create")
            let direct = try #require(try await ada.waitFor("document.querySelector('#chat').dataset.conversationId") as? String)
            let hostile = "Hello Bob <img src=x onerror=alert(1)>"
            try await Self.send(ada, hostile)
            let row = "#conversation-list [data-conversation-id=\"\(direct)\"]"
            try await bob.waitFor("document.querySelector('\(row) .unread')?.textContent === '1'", "Bob's unread badge")
            try await bob.waitFor("document.querySelector('\(row) .presence')?.classList.contains('online')", "Ada online")
            try await bob.waitFor("document.querySelector('\(row) .name').textContent === 'Ada Lovelace'", "the name")
            try await ada.waitFor("\(Self.messages(hostile))[0]?.dataset.status === 'delivered'", "delivered")

            // Bob opens it: read on Ada's side; nothing of the text became HTML.
            try await bob.click(row)
            try await bob.waitFor("\(Self.messages(hostile)).length === 1")
            try await ada.waitFor("\(Self.messages(hostile))[0]?.dataset.status === 'read'", "read")
            let injected = try await bob.eval("document.querySelectorAll('#messages img:not(.attachment-image), #conversation-list b').length") as? Int
            #expect(injected == 0, "text and names are never HTML")

            // Typing, then the message; a reaction and an edit travel the other way.
            try await bob.type("#composer", "Hi Ada")
            try await ada.waitFor("document.querySelector('#typing').textContent === 'Bob is typing…'", "typing")
            try await bob.press("Enter")
            try await ada.waitFor("\(Self.messages("Hi Ada")).length === 1")
            try await ada.waitFor("document.querySelector('#typing').textContent === ''", "typing cleared")
            try await ada.eval("\(Self.messages("Hi Ada"))[0].querySelector('.action-react').click(), true")
            try await ada.eval("\(Self.messages("Hi Ada"))[0].querySelector('.react-choice[data-emoji=\"👍\"]').click(), true")
            try await bob.waitFor("\(Self.messages("Hi Ada"))[0]?.querySelector('.reactions')?.textContent.includes('👍 1')", "the reaction")
            try await ada.eval("\(Self.messages(hostile))[0].querySelector('.action-edit').click(), true")
            try await Self.send(ada, "Hello Bob, edited")
            try await bob.waitFor("\(Self.messages("Hello Bob, edited"))[0]?.querySelector('.edited')", "the edit")
            try await bob.eval("\(Self.messages("Hello Bob, edited"))[0].querySelector('.action-reply').click(), true")
            try await Self.send(bob, "Replying here")
            try await ada.waitFor("\(Self.messages("Replying here"))[0]?.querySelector('.reply-quote')?.textContent.includes('Hello Bob, edited')", "the quote")
            try await Self.send(bob, "oops, wrong chat")
            try await ada.waitFor("\(Self.messages("oops, wrong chat")).length === 1")
            try await bob.eval("\(Self.messages("oops, wrong chat"))[0].querySelector('.action-delete').click(), true")
            try await ada.waitFor("\(Self.messages("oops, wrong chat")).length === 0 && document.querySelector('#messages .text.deleted')", "the delete")

            // An image and a file, with upload progress, shown on both sides. The picture is
            // drawn for the occasion (a sky over a hill), not a screenshot of the app itself.
            let image = Self.screens + "/web-upload-source.png"
            let painter = try await browser.newPage("picture", width: 480, height: 300)
            let picture = "<body style='margin:0;height:100vh;background:"
                + "radial-gradient(circle at 75% 28%, #ffe082 0 9%, transparent 10%),"
                + "radial-gradient(ellipse at 30% 120%, #66bb6a 0 55%, transparent 56%),"
                + "linear-gradient(#90caf9, #e3f2fd 70%, #a5d6a7 70%)'>"
            try await painter.goto("data:text/html," + picture.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
            try await painter.screenshot(image)
            let notes = TestServer.temporaryDirectory() + "/meeting-notes.txt"
            try "some notes\n".write(toFile: notes, atomically: true, encoding: .utf8)
            try await ada.setFiles("#attach-input", [image])
            for page in [ada, bob] {
                try await page.waitFor(
                    "[...document.querySelectorAll('img.attachment-image')].some(i => i.src.startsWith('blob:') && i.complete && i.naturalWidth > 0)",
                    "\(page.name) shows the image")
            }
            try await ada.waitFor("document.querySelector('#upload-progress').hidden", "progress hidden when done")
            try await ada.setFiles("#attach-input", [notes])
            for page in [ada, bob] {
                try await page.waitFor("document.querySelector('a.attachment-file')?.textContent.includes('meeting-notes.txt')", "\(page.name) file link")
            }

            // Search finds a message and opens its conversation.
            try await bob.type("#search-input", "edited")
            try await bob.click("#search-results [data-message-id]")
            try await bob.waitFor("document.querySelector('#chat').dataset.conversationId === \(BrowserPage.literal(direct))")
            try await ada.screenshot(Self.screens + "/web-chat-desktop.png")
            try await bob.viewport(width: 390, height: 844)
            try await bob.waitFor("innerWidth === 390", "the phone width")
            try await bob.screenshot(Self.screens + "/web-chat-phone.png")
            try await bob.click("#back")
            try await bob.screenshot(Self.screens + "/web-list-phone.png")
            // A name that looks like HTML is shown as the text it is, in the list and the chat.
            let api = ParleyAPI(baseURL: url)
            let mallory = try await api.register(.init(
                organization: "acme", email: "mallory@acme.io", password: TestUser.password, displayName: "Mallory <b>x</b><img src=x onerror=alert(1)>"))
            let malloryAPI = ParleyAPI(baseURL: url, token: mallory.token)
            let bobId = try #require(try await malloryAPI.users(matching: "bob@acme.io").first?.id)
            let pest = try await malloryAPI.createConversation(.init(type: .direct, participantIds: [bobId]))
            _ = try await malloryAPI.send(.init(clientMessageId: "m1", text: "hi"), to: pest.id)
            let pestRow = "#conversation-list [data-conversation-id=\"\(pest.id)\"]"
            try await bob.waitFor(
                "document.querySelector('\(pestRow) .name')?.textContent === 'Mallory <b>x</b><img src=x onerror=alert(1)>'", "the name as text")
            #expect(try await bob.eval("document.querySelectorAll('#conversation-list b, #conversation-list img').length") as? Int == 0)
            try await bob.click(row)
            try await bob.viewport(width: 1280, height: 800)

            // The server dies: Ada's sends wait in IndexedDB, marked sending; when it is back
            // each arrives once, in order, on both sides.
            server.kill()
            try await ada.waitFor("['offline', 'connecting'].includes(document.querySelector('#banner').dataset.state)", "offline banner")
            try await Self.send(ada, "sent while offline 1")
            try await Self.send(ada, "sent while offline 2")
            try await ada.waitFor("\(Self.messages("sent while offline 2"))[0]?.dataset.status === 'sending'")
            // A file chosen offline waits in the outbox too, shown from the page's memory.
            let plan = TestServer.temporaryDirectory() + "/offline-plan.txt"
            try "written on a train\n".write(toFile: plan, atomically: true, encoding: .utf8)
            try await ada.setFiles("#attach-input", [plan])
            try await ada.waitFor("document.querySelector('#messages .pending-file .file-name')?.textContent === 'offline-plan.txt'", "the queued file")
            #expect(try await ada.eval("window.parleyDebug.outboxSize()") as? Int == 3)
            try await ada.screenshot(Self.screens + "/web-offline-desktop.png")
            server = try ServeProcess(name: "web", dataDirectory: data, port: url.port)
            try await server.waitUntilReady()
            for page in [ada, bob] {
                try await page.waitFor(
                    "\(Self.messages("sent while offline 1")).length === 1 && \(Self.messages("sent while offline 2")).length === 1"
                        + " && document.querySelector('#banner').dataset.state === 'online'", "\(page.name): the offline sends once", timeout: .seconds(40))
            }
            let file = "[...document.querySelectorAll('#messages [data-seq]')].filter(e => e.querySelector('a.attachment-file .file-name')?.textContent === 'offline-plan.txt')"
            for page in [ada, bob] {
                try await page.waitFor("\(file).length === 1", "\(page.name): the offline file once", timeout: .seconds(40))
            }
            let seqs = try await bob.eval(
                "[\(Self.messages("sent while offline 1"))[0].dataset.seq, \(Self.messages("sent while offline 2"))[0].dataset.seq, \(file)[0].dataset.seq].map(Number)") as? [Int]
            #expect(seqs.map { $0[0] < $0[1] && $0[1] < $0[2] } == true, "in the order sent: \(String(describing: seqs))")
            try await ada.waitFor("window.parleyDebug.outboxSize().then(n => n === 0)", "the outbox empties")

            // A person in a terminal joins in: Carol writes to Ada from `parley chat`.
            let carol = try await ParleyAPI(baseURL: url).register(.init(
                organization: "acme", email: "carol@acme.io", password: TestUser.password, displayName: "Carol"))
            let tmux = TerminalClientEndToEndTests.Tmux()
            defer { tmux.kill() }
            try tmux.start("carol", width: 90, height: 24, command: TerminalClientEndToEndTests.chat(
                try TerminalClientEndToEndTests.profile(for: carol, server: url)))
            try await tmux.waitFor("carol", "● online")
            try tmux.type("carol", "/dm ada@acme.io")
            try tmux.press("carol", "Enter")
            try tmux.type("carol", "Hello from a terminal")
            try tmux.press("carol", "Enter")
            try await ada.waitFor(
                "[...document.querySelectorAll('#conversation-list [data-conversation-id]')].some(r => r.querySelector('.name')?.textContent === 'Carol'"
                    + " && r.querySelector('.preview')?.textContent.includes('Hello from a terminal'))", "Carol's row")
            try await ada.eval(
                "[...document.querySelectorAll('#conversation-list [data-conversation-id]')].find(r => r.querySelector('.name')?.textContent === 'Carol').click(), true")
            try await ada.waitFor("\(Self.messages("Hello from a terminal")).length === 1")
            try await Self.send(ada, "Hello from a browser")
            try await tmux.waitFor("carol", "Hello from a browser")
            try await tmux.waitFor("carol", "✓✓ read")
            try tmux.save("carol", as: "with-web")

            #expect(ada.problems.isEmpty, "Ada's page: \(ada.problems)")
            #expect(bob.problems.isEmpty, "Bob's page: \(bob.problems)")
        } catch {
            for page in [ada, bob] {
                try? await page.screenshot(Self.screens + "/web-failure-\(page.name).png")
                Issue.record("\(page.name)'s console: \(page.consoleLog.suffix(20).joined(separator: "\n"))")
            }
            await browser.close()
            throw error
        }
        await browser.close()
    }

    /// A person with a long history and many conversations: the list shows the newest 50 and
    /// pages in as it scrolls, a chat shows its newest 50 messages and pages back as it scrolls
    /// up, to the first one, each message once and in order.
    @Test(.heavy) func theListAndAChatPageInAsYouScroll() async throws {
        let server = try ServeProcess(name: "web-paging", arguments: ["--rate-limits", "off"])  // the setup sends 130 at once
        defer { server.stop() }
        try await server.waitUntilReady()
        let url = server.url
        let browser = try await Chromium.launch()
        let ada = try await browser.newPage("ada")
        do {
            try await Self.register(ada, url, organization: "Acme", email: "ada@acme.io", name: "Ada")
            let adaAuth = try await ParleyAPI(baseURL: url).login(.init(organization: "acme", email: "ada@acme.io", password: "correct horse"))
            let bob = try await ParleyAPI(baseURL: url).register(
                .init(organization: "acme", email: "bob@acme.io", password: TestUser.password, displayName: "Bob"))
            let bobAPI = ParleyAPI(baseURL: url, token: bob.token)
            for n in 0..<60 {
                _ = try await bobAPI.createConversation(.init(type: .group, participantIds: [adaAuth.user.id], name: "Group \(n)"))
            }
            let direct = try await bobAPI.createConversation(.init(type: .direct, participantIds: [adaAuth.user.id]))
            for n in 1...130 { _ = try await bobAPI.send(.init(clientMessageId: "p\(n)", text: "message \(n)"), to: direct.id) }

            // A fresh start (the session is kept, the tab's cache emptied, as on a new device):
            // the newest page of the list. (With its cache the tab would ask only for what changed.)
            // Emptied from a page of the same origin where the app does not run (it would save again).
            try await ada.goto(url.appendingPathComponent("health").absoluteString)
            try await ada.eval(WebCacheEndToEndTests.emptyCache)
            try await ada.goto(url.absoluteString)
            try await ada.waitFor("document.body.dataset.screen === 'main'")
            let rows = "document.querySelectorAll('#conversation-list [data-conversation-id]').length"
            _ = try await ada.waitFor("\(rows) === 50", "the first page of the list")
            // Scrolled to the end until the next page is there (a scroll while a page loads is
            // ignored, so each poll scrolls again).
            _ = try await ada.waitFor(
                "(() => { const l = document.querySelector('#conversation-list'); l.scrollTop = l.scrollHeight; l.dispatchEvent(new Event('scroll')); return \(rows) === 61 })()",
                "every conversation after scrolling")

            // The chat: the newest 50, then older pages as it scrolls to the top.
            try await ada.click("#conversation-list [data-conversation-id=\(BrowserPage.literal(direct.id.description))]")
            let shown = "[...document.querySelectorAll('#messages [data-seq]')].map(e => e.querySelector('.text')?.textContent)"
            _ = try await ada.waitFor("\(shown).length === 50 && \(shown)[49] === 'message 130'", "the newest 50")
            _ = try await ada.waitFor(
                "(() => { const b = document.querySelector('#messages'); b.scrollTop = 0; b.dispatchEvent(new Event('scroll')); return \(shown).length === 130 })()",
                "every message after scrolling up")
            let texts = try await ada.eval("JSON.stringify(\(shown))") as? String
            #expect(texts == String(decoding: try JSONEncoder().encode((1...130).map { "message \($0)" }), as: UTF8.self), "once each, in order")
            #expect(try await ada.eval("document.querySelector('#messages .history-start')?.textContent") as? String
                == "This is the beginning of the conversation.", "the start is said, not 'scroll up'")
            try await ada.screenshot(Self.screens + "/web-paged-back.png")
            #expect(ada.problems.isEmpty, "Ada's page: \(ada.problems)")
        } catch {
            try? await ada.screenshot(Self.screens + "/web-failure-paging.png")
            Issue.record("the console: \(ada.consoleLog.suffix(20).joined(separator: "\n"))")
            await browser.close()
            throw error
        }
        await browser.close()
    }
}
