import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Any emoji as a reaction in the web client, and who reacted: beside the six quick ones the
/// picker takes whatever is typed (or picked from the system's emoji keyboard); a reaction's
/// chip counts and names the people behind it.
@Suite(.serialized, .needs("chromium")) struct WebReactionsEndToEndTests {
    typealias Web = WebClientEndToEndTests

    @Test(.heavy) func anyEmojiAndWhoReacted() async throws {
        try await Web.withServerAndBrowser("web-reactions") { url, browser in
            let (carol, ada, adaId) = try await Web.carolAndAda(url, browser)
            let direct = try await carol.createConversation(.init(type: .direct, participantIds: [adaId]))
            let message = try await carol.send(.init(clientMessageId: "c1", text: "Shipped the release"), to: direct.id)
            try await ada.click("#conversation-list [data-conversation-id=\"\(direct.id)\"]")
            let bubble = "document.querySelector('#messages [data-message-id=\"\(message.id)\"]')"
            try await ada.waitFor("\(bubble) !== null")

            try await ada.eval("\(bubble).querySelector('.action-react').click(), true")
            try await ada.waitFor("!\(bubble).querySelector('.react-picker').hidden", "the picker")
            try await ada.eval("\(bubble).querySelector('.react-other-input').focus(), true")
            try await ada.waitFor("document.activeElement?.classList.contains('react-other-input')", "the field focused")
            // Carol renames herself meanwhile: the message is drawn again (its signature has her
            // name), and the open picker with its focused field carries over.
            try await ada.eval("window.before = \(bubble), true")
            _ = try await carol.updateProfile(.init(displayName: "Carol B."))
            try await ada.waitFor("\(bubble) !== window.before", "the message redrawn")
            try await ada.waitFor(
                "!\(bubble).querySelector('.react-picker').hidden && document.activeElement === \(bubble).querySelector('.react-other-input')",
                "the picker still open, its field focused")
            try await ada.call("Input.insertText", ["text": "🦄"])
            // Typed into the field, which a redraw of the message (its sender's name arriving,
            // say) keeps, with the focus.
            try await ada.waitFor("document.activeElement?.value === '🦄'", "the unicorn typed")
            try await ada.press("Enter")
            try await waitFor("the unicorn stored", timeout: .seconds(40)) {
                try await carol.messages(direct.id).messages.first?.reactions["🦄"] == [adaId]
            }
            try await ada.waitFor("\(bubble).querySelector('.reaction[data-emoji=\"🦄\"]')?.textContent === '🦄 1'", "the chip")
            #expect(try await ada.eval("\(bubble).querySelector('.react-picker').hidden") as? Bool == true, "the picker closed")

            // Carol adds the same: the chip counts two and names both.
            _ = try await carol.react(message.id, in: direct.id, emoji: "🦄")
            try await ada.waitFor("\(bubble).querySelector('.reaction[data-emoji=\"🦄\"]')?.textContent === '🦄 2'", "two")
            #expect(try await ada.eval("\(bubble).querySelector('.reaction[data-emoji=\"🦄\"]').title") as? String == "Ada, Carol B.")
            try await ada.screenshot(Web.screens + "/web-reactions.png")
            #expect(ada.problems.isEmpty, "\(ada.problems)")
        }
    }
}
