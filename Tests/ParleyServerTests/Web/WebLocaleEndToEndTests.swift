import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Dates and times in the web client follow the browser's language: with Chromium set to
/// French the day reads "Aujourd’hui" and times are 24-hour; in American English "Today" and
/// "3:30 PM"-style times.
@Suite(.serialized, .needs("chromium")) struct WebLocaleEndToEndTests {
    typealias Web = WebClientEndToEndTests

    @Test(.heavy) func daysAndTimesInTheBrowsersLanguage() async throws {
        try await Web.withServerAndBrowser("web-locale") { url, browser in
            let carolAuth = try await ParleyAPI(baseURL: url).register(
                .init(organization: "Acme", email: "carol@acme.io", password: "correct horse", displayName: "Carol"))
            let carol = ParleyAPI(baseURL: url, token: carolAuth.token)
            for (locale, email, today, hourPattern) in [
                ("fr-FR", "amelie@acme.io", "Aujourd’hui", "^[0-2][0-9]:[0-5][0-9]$"),
                ("en-US", "ada@acme.io", "Today", "^[0-1][0-9]:[0-5][0-9] [AP]M$"),
            ] {
                let page = try await browser.newPage(locale)
                _ = try await page.call("Emulation.setLocaleOverride", ["locale": locale])
                try await Web.register(page, url, organization: "acme", email: email, name: String(email.prefix { $0 != "@" }).capitalized)
                let id = try #require(try await carol.users().first { $0.email == email }?.id)
                let direct = try await carol.createConversation(.init(type: .direct, participantIds: [id]))
                _ = try await carol.send(.init(clientMessageId: "hello-\(locale)", text: "Bonjour / hello"), to: direct.id)
                try await page.click("#conversation-list [data-conversation-id=\"\(direct.id)\"]")
                try await page.waitFor("\(Web.messages("Bonjour / hello")).length === 1")
                let days = try await page.eval("[...document.querySelectorAll('#messages .day-separator')].map(e => e.textContent)") as? [String] ?? []
                #expect(days.contains(today), "\(locale): \(days)")
                let time = try await page.eval("\(Web.messages("Bonjour / hello"))[0].querySelector('time').textContent") as? String ?? ""
                #expect(time.replacingOccurrences(of: "\u{202F}", with: " ").range(of: hourPattern, options: .regularExpression) != nil, "\(locale): \(time)")
                #expect(page.problems.isEmpty, "\(page.problems)")
            }
        }
    }
}
