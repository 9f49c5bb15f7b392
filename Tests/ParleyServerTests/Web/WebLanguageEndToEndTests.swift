import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The web client in the browser's language: a browser set to French gets the sign-in form,
/// the sidebar, the chat's lines, statuses and buttons in French; an English one gets
/// English. What people type is never translated: a message reading "Delete" stays "Delete".
@Suite(.serialized, .needs("chromium")) struct WebLanguageEndToEndTests {
    typealias Web = WebClientEndToEndTests

    /// A page whose browser says it speaks `language` first (navigator.languages, Intl).
    static func page(_ browser: Chromium, language: String) async throws -> BrowserPage {
        let page = try await browser.newPage(language)
        let agent = try await page.eval("navigator.userAgent") as? String ?? "Mozilla/5.0"
        _ = try await page.call("Emulation.setUserAgentOverride", ["userAgent": agent, "acceptLanguage": "\(language),\(language.prefix(2))"])
        _ = try await page.call("Emulation.setLocaleOverride", ["locale": language])
        return page
    }

    static func text(_ page: BrowserPage, _ selector: String) async throws -> String {
        try await page.eval("document.querySelector(\(BrowserPage.literal(selector))).textContent.trim()") as? String ?? ""
    }

    @Test(.heavy) func aFrenchBrowserGetsAFrenchClientAndPeoplesWordsStayTheirs() async throws {
        try await Web.withServerAndBrowser("web-language") { url, browser in
            let carolAuth = try await ParleyAPI(baseURL: url).register(
                .init(organization: "Acme", email: "carol@acme.io", password: "correct horse", displayName: "Carol"))
            let carol = ParleyAPI(baseURL: url, token: carolAuth.token)

            let amelie = try await Self.page(browser, language: "fr-FR")
            try await amelie.goto(url.absoluteString)
            try await amelie.waitFor("document.body.dataset.screen === 'auth'")
            #expect(try await amelie.eval("document.documentElement.lang") as? String == "fr")
            #expect(try await Self.text(amelie, "#auth-login") == "Se connecter")
            #expect(try await Self.text(amelie, "#auth-mode-register") == "Créer un compte")
            try await Web.register(amelie, url, organization: "acme", email: "amelie@acme.io", name: "Amélie")
            #expect(try await amelie.eval("document.querySelector('#search-input').placeholder") as? String == "Rechercher dans les messages")
            #expect(try await amelie.eval("document.querySelector('#new-chat').getAttribute('aria-label')") as? String == "Nouvelle discussion")

            // Carol writes the client's own words as messages: they arrive as she typed them.
            let amelieId = try #require(try await carol.users().first { $0.email == "amelie@acme.io" }?.id)
            let direct = try await carol.createConversation(.init(type: .direct, participantIds: [amelieId]))
            for (n, text) in ["Bonjour Amélie", "Delete", "Reply", "New messages"].enumerated() {
                _ = try await carol.send(.init(clientMessageId: "fr-\(n)", text: text), to: direct.id)
            }
            try await amelie.click("#conversation-list [data-conversation-id=\"\(direct.id)\"]")
            try await amelie.waitFor("\(Web.messages("New messages")).length === 1")
            for text in ["Delete", "Reply", "New messages"] {
                #expect(try await amelie.eval("\(Web.messages(text)).length") as? Int == 1, "\(text) stays as typed")
            }
            #expect(try await Self.text(amelie, "#unread-divider") == "Nouveaux messages")
            #expect(try await Self.text(amelie, ".history-start") == "C’est le début de la conversation.")
            let replyLabel = try await amelie.eval("document.querySelector('#messages .action-reply').getAttribute('aria-label')") as? String
            #expect(replyLabel == "Répondre")

            // Carol has never been online; what Amélie sends gets a French status.
            try await amelie.waitFor("document.querySelector('#chat-subtitle').textContent === 'hors ligne'", "hors ligne")
            try await Web.send(amelie, "Merci !")
            try await amelie.waitFor("\(Web.messages("Merci !"))[0]?.querySelector('.status')?.getAttribute('aria-label') === 'Envoyé'"
                + " || \(Web.messages("Merci !"))[0]?.querySelector('.status')?.getAttribute('aria-label') === 'Distribué'", "a French status")
            try await amelie.screenshot(Web.screens + "/web-french.png")
            #expect(amelie.problems.isEmpty, "\(amelie.problems)")

            // An English browser in the same run: English.
            let ada = try await Self.page(browser, language: "en-GB")
            try await ada.goto(url.absoluteString)
            try await ada.waitFor("document.body.dataset.screen === 'auth'")
            #expect(try await Self.text(ada, "#auth-login") == "Sign in")
            #expect(try await ada.eval("document.documentElement.lang") as? String == "en")
        }
    }
}
