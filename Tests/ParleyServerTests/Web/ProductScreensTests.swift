import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The screenshots in docs/screenshots, taken of a team in a normal morning rather than of a
/// test's traps: four people of Northwind with pictures, a group with a reply, a picture and
/// reactions, a direct chat and a second group in the list. Maya reads in a browser (desktop
/// and phone), Leo in `parley chat`. The test checks what makes the pictures worth showing
/// (every portrait and the image loaded, the reply quoted, the reactions counted); the images
/// land in `.build/test-screens/product-*.png`, to be copied to docs/screenshots.
@Suite(.serialized, .needs("chromium"), .needs("tmux")) struct ProductScreensTests {
    typealias Web = WebClientEndToEndTests
    typealias Tmux = TerminalClientEndToEndTests.Tmux
    typealias Terminal = TerminalClientEndToEndTests

    struct Person {
        let auth: AuthResponse
        let api: ParleyAPI
        var id: EntityID { auth.user.id }
    }

    @Test(.heavy) func aTeamsMorning() async throws {
        try await Web.withServerAndBrowser("product") { url, browser in
            let maya = try await browser.newPage("maya")
            try await Web.register(maya, url, organization: "Northwind", email: "maya@northwind.io", name: "Maya Chen")
            func join(_ email: String, _ name: String) async throws -> Person {
                let auth = try await ParleyAPI(baseURL: url).register(
                    .init(organization: "northwind", email: email, password: "correct horse", displayName: name))
                return Person(auth: auth, api: ParleyAPI(baseURL: url, token: auth.token))
            }
            let leo = try await join("leo@northwind.io", "Leo Okafor")
            let priya = try await join("priya@northwind.io", "Priya Raman")
            let sam = try await join("sam@northwind.io", "Sam Whitfield")
            let mayaToken = try #require(try await maya.eval("localStorage.getItem('parley.token')") as? String)
            let mayaAPI = ParleyAPI(baseURL: url, token: mayaToken)
            let mayaId = try await mayaAPI.me().id

            // Portraits, drawn for the occasion.
            let painter = try await browser.newPage("painter", width: 240, height: 240)
            for (api, skin, ground, name) in [
                (mayaAPI, "#e0ac69", "#b2dfdb", "maya"), (leo.api, "#8d5524", "#ffcc80", "leo"),
                (priya.api, "#c68642", "#f8bbd0", "priya"), (sam.api, "#f1c27d", "#c5cae9", "sam"),
            ] {
                let file = try await WebProfileEndToEndTests.portrait(painter, skin: skin, ground: ground, "product-\(name)")
                let picture = try await api.upload(file: URL(fileURLWithPath: file), name: "\(name).png", contentType: "image/png")
                _ = try await api.updateProfile(.init(avatar: .set(picture.id)))
            }
            // A screen design Sam shares.
            let mockup = Web.screens + "/product-mockup-source.png"
            let design = try await browser.newPage("design", width: 640, height: 400)
            try await design.goto("data:text/html," + ("<body style='margin:0;height:100vh;display:grid;place-items:center;"
                + "background:linear-gradient(135deg,#e3f2fd,#ede7f6)'><div style='width:180px;height:340px;border-radius:28px;"
                + "background:#fff;box-shadow:0 12px 40px #5c6bc055;padding:18px;box-sizing:border-box'>"
                + "<div style='height:90px;border-radius:16px;background:linear-gradient(135deg,#7b9dff,#3b6ef5)'></div>"
                + "<div style='height:12px;margin-top:18px;border-radius:6px;background:#cfd8dc;width:80%'></div>"
                + "<div style='height:12px;margin-top:10px;border-radius:6px;background:#eceff1;width:60%'></div>"
                + "<div style='height:38px;margin-top:120px;border-radius:19px;background:#3b6ef5'></div></div></body>")
                .addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
            try await design.screenshot(mockup)

            // The morning: a group with a reply, a picture and reactions; a direct chat; another group.
            let review = try await sam.api.createConversation(.init(type: .group, participantIds: [mayaId, priya.id], name: "Design review"))
            _ = try await sam.api.send(.init(clientMessageId: "s0", text: "Slides for Thursday are in the shared folder"), to: review.id)
            let crew = try await leo.api.createConversation(.init(type: .group, participantIds: [mayaId, priya.id, sam.id], name: "Launch crew"))
            let beta = try await leo.api.send(.init(clientMessageId: "l1", text: "Morning! Beta 2 is on TestFlight 🚀"), to: crew.id)
            let installed = try await priya.api.send(.init(clientMessageId: "p1", text: "Installed. Sign-in feels so much faster now"), to: crew.id)
            let shot = try await sam.api.upload(file: URL(fileURLWithPath: mockup), name: "onboarding.png", contentType: "image/png")
            let image = try await sam.api.send(
                .init(clientMessageId: "s1", text: "New onboarding, first pass", type: .image, attachmentId: shot.id), to: crew.id)
            _ = try await leo.api.send(.init(clientMessageId: "l2", text: "Love the illustration. Ship it with beta 3?", replyToId: image.id), to: crew.id)
            _ = try await mayaAPI.send(.init(clientMessageId: "m1", text: "Yes! I'll update the release notes"), to: crew.id)
            for (api, emoji, message) in [
                (mayaAPI, "🎉", beta.id), (priya.api, "🎉", beta.id), (sam.api, "🎉", beta.id), (leo.api, "👍", installed.id),
                (mayaAPI, "😍", image.id), (priya.api, "😍", image.id),
            ] { _ = try await api.react(message, in: crew.id, emoji: emoji) }
            let direct = try await priya.api.createConversation(.init(type: .direct, participantIds: [mayaId]))
            _ = try await priya.api.send(.init(clientMessageId: "p2", text: "Can we move our 1:1 to 3 pm?"), to: direct.id)

            // Maya, on a desktop: the crew's chat with everyone's picture loaded.
            try await maya.click("#conversation-list [data-conversation-id=\"\(crew.id)\"]")
            try await maya.waitFor(
                "[...document.querySelectorAll('img.attachment-image')].some(i => i.complete && i.naturalWidth > 0)", "the mockup")
            try await maya.waitFor(WebProfileEndToEndTests.pictured("#messages [data-message-id=\"\(beta.id)\"] .sender-line"), "Leo's picture")
            try await maya.waitFor(WebProfileEndToEndTests.pictured("#conversation-list [data-conversation-id=\"\(direct.id)\"]"), "Priya's in the list")
            try await maya.waitFor(WebProfileEndToEndTests.pictured("#me-avatar"), "her own")
            #expect(try await maya.eval("document.querySelector('#messages [data-message-id=\"\(beta.id)\"] .reaction')?.textContent") as? String == "🎉 3")
            try await maya.waitFor("document.querySelector('.reply-quote') !== null", "the reply's quote")
            // Read on screen: the open chat's badge goes (the receipt is batched).
            try await maya.waitFor("document.querySelector('#conversation-list [data-conversation-id=\"\(crew.id)\"] .unread').hidden", "read")
            try await maya.eval("document.activeElement?.blur(), true")
            try await maya.screenshot(Web.screens + "/product-web-desktop.png")

            // The picture, full screen: opened from the chat, closed with Escape.
            try await maya.eval("document.querySelector('#messages [data-message-id=\"\(image.id)\"] .attachment-open').click(), true")
            try await maya.waitFor(
                "!document.querySelector('#image-viewer').hidden && document.querySelector('#viewer-image').complete && document.querySelector('#viewer-image').naturalWidth > 0",
                "the viewer")
            #expect(try await maya.eval("document.querySelector('#viewer-name').textContent") as? String == "onboarding.png")
            #expect(try await maya.eval("document.querySelector('#viewer-download').download") as? String == "onboarding.png")
            try await maya.screenshot(Web.screens + "/product-web-viewer.png")
            try await maya.press("Escape")
            try await maya.waitFor("document.querySelector('#image-viewer').hidden && document.activeElement?.classList.contains('attachment-open')", "closed, focus back")

            // On a phone.
            let phone = try await browser.newPage("phone", width: 390, height: 844)
            try await phone.goto(url.absoluteString)
            try await phone.waitFor("document.body.dataset.screen === 'auth'")
            try await phone.fill("#auth-organization", "Northwind")
            try await phone.fill("#auth-email", "maya@northwind.io")
            try await phone.fill("#auth-password", "correct horse")
            try await phone.click("#auth-login")
            try await phone.waitFor("document.body.dataset.screen === 'main'")
            try await phone.click("#conversation-list [data-conversation-id=\"\(crew.id)\"]")
            try await phone.waitFor(
                "[...document.querySelectorAll('img.attachment-image')].some(i => i.complete && i.naturalWidth > 0)", "the mockup on the phone")
            try await phone.waitFor(WebProfileEndToEndTests.pictured("#messages [data-message-id=\"\(installed.id)\"] .sender-line"), "Priya's picture")
            try await phone.waitFor("document.querySelector('#conversation-list [data-conversation-id=\"\(crew.id)\"] .unread').hidden", "read")
            try await phone.eval("document.activeElement?.blur(), true")
            try await phone.screenshot(Web.screens + "/product-web-phone.png")

            // Leo, in a terminal: the same chat.
            let tmux = Tmux()
            defer { tmux.kill() }
            try tmux.start("leo", width: 110, height: 30, command: Terminal.chat(try Terminal.profile(for: leo.auth, server: url)))
            try await tmux.waitFor("leo", "● online")
            try await tmux.waitFor("leo", "Launch crew")
            try tmux.type("leo", "/open Launch crew")
            try tmux.press("leo", "Enter")
            try await tmux.waitFor("leo", "release notes")
            try await tmux.waitFor("leo", "🎉 3")
            // Read on screen: the row's count goes (the receipt is batched).
            try await waitFor("Leo's row without a count") {
                let row = try tmux.screen("leo").split(separator: "\n").first { $0.contains("Launch crew") && $0.contains("│") && !$0.contains("members") }
                return row.map { !$0.replacingOccurrences(of: " ", with: "").contains("crew3") } ?? false
            }
            try tmux.save("leo", as: "product")
            let page = Web.screens + "/product-terminal.html"
            let converted = try Spawn.run("python3", [Repository.url("scripts/ansi-to-html.py").path, Web.screens + "/terminal-product.ansi"])
            #expect(converted.status == 0)
            try converted.output.write(toFile: page, atomically: true, encoding: .utf8)
            let terminal = try await browser.newPage("terminal", width: 1000, height: 560)
            try await terminal.goto("file://" + page)
            try await terminal.screenshot(Web.screens + "/product-terminal.png")
            #expect(maya.problems.isEmpty && phone.problems.isEmpty, "\(maya.problems) \(phone.problems)")
        }
    }
}
