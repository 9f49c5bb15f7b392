import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Long chats in the web client: paging back through 330 messages loads them all once, in
/// order; back at the newest, the window lets the old pages go (200 kept) and scrolling up
/// brings them back from the server without a duplicate; leaving the chat trims it too.
@Suite(.serialized, .needs("chromium")) struct WebWindowEndToEndTests {
    typealias Web = WebClientEndToEndTests

    /// The seqs of the messages the chat shows, top to bottom.
    static let shownSeqs = "[...document.querySelectorAll('#messages [data-seq]')].map(e => Number(e.dataset.seq))"

    static func window(_ page: BrowserPage, _ id: EntityID) async throws -> (size: Int, hasMoreBefore: Bool) {
        let value = try await page.eval("parleyDebug.window('\(id)')") as? [String: Any] ?? [:]
        return ((value["size"] as? NSNumber)?.intValue ?? -1, value["hasMoreBefore"] as? Bool ?? false)
    }

    /// Scrolls to the top until the window holds `count` messages (one page a time).
    static func pageBack(_ page: BrowserPage, _ id: EntityID, until count: Int) async throws {
        for _ in 0..<20 where try await window(page, id).size < count {
            let before = try await window(page, id).size
            try await page.eval("(() => { const b = document.querySelector('#messages'); b.scrollTop = 0; b.dispatchEvent(new Event('scroll')); })()")
            try await page.waitFor("parleyDebug.window('\(id)').size > \(before)", "a page older than \(before)")
        }
    }

    static func expectShownInOrder(_ page: BrowserPage, count: Int, newest: Int, _ comment: Comment) async throws {
        let seqs = try await page.eval(shownSeqs) as? [NSNumber] ?? []
        let numbers = seqs.map(\.intValue)
        #expect(numbers.count == count, comment)
        #expect(numbers == Array((newest - count + 1)...newest), comment)
    }

    @Test(.heavy) func aLongChatUnloadsOldPagesAndBringsThemBack() async throws {
        try await Web.withServerAndBrowser("web-window", arguments: ["--rate-limits", "off"]) { url, browser in
            let (carol, ada, adaId) = try await Web.carolAndAda(url, browser)
            let direct = try await carol.createConversation(.init(type: .direct, participantIds: [adaId]))
            let total = 330
            // One after another: the seqs are 1...330 (a direct chat has no system line).
            for n in 1...total {
                _ = try await carol.send(.init(clientMessageId: "m\(n)", text: "message \(n)"), to: direct.id)
            }
            let lastSeq = try #require(try await carol.messages(direct.id).messages.last?.seq)
            #expect(lastSeq == Int64(total))

            try await ada.click("#conversation-list [data-conversation-id=\"\(direct.id)\"]")
            try await ada.waitFor("\(Web.messages("message \(total)")).length === 1")
            try await Self.pageBack(ada, direct.id, until: total)
            var window = try await Self.window(ada, direct.id)
            #expect(window.size == total && !window.hasMoreBefore, "\(window)")
            try await ada.waitFor("document.querySelectorAll('#messages [data-seq]').length === \(total)")
            try await Self.expectShownInOrder(ada, count: total, newest: total, "every page loaded once, in order")

            // Back at the newest: the pages read above go.
            try await ada.eval("(() => { const b = document.querySelector('#messages'); b.scrollTop = b.scrollHeight; b.dispatchEvent(new Event('scroll')); })()")
            try await ada.waitFor("parleyDebug.window('\(direct.id)').size === 200", "the window trimmed to 200")
            try await ada.waitFor("document.querySelectorAll('#messages [data-seq]').length === 200")
            try await Self.expectShownInOrder(ada, count: 200, newest: total, "the newest 200 stay")
            #expect(try await ada.eval("[...document.querySelectorAll('#messages .history-start')].map(e => e.textContent).join()") as? String
                == "Scroll up for older messages")
            let bottomGap = try await ada.eval("(() => { const b = document.querySelector('#messages'); return b.scrollHeight - b.scrollTop - b.clientHeight; })()") as? NSNumber
            #expect((bottomGap?.doubleValue ?? 999) < 80, "still at the newest message")

            // Scrolling up pages the old ones back in from the server, once each.
            try await Self.pageBack(ada, direct.id, until: 250)
            window = try await Self.window(ada, direct.id)
            #expect(window.size == 250 && window.hasMoreBefore, "\(window)")
            try await ada.waitFor("document.querySelectorAll('#messages [data-seq]').length === 250")
            try await Self.expectShownInOrder(ada, count: 250, newest: total, "a page back, no duplicate")

            // A message arriving while the window is trimmed goes in at the bottom.
            _ = try await carol.send(.init(clientMessageId: "late", text: "one more"), to: direct.id)
            try await ada.waitFor("\(Web.messages("one more")).length === 1")
            try await Self.expectShownInOrder(ada, count: 251, newest: total + 1, "the new message after the others")

            // Leaving the chat trims what it read, and opening it again shows the newest.
            try await ada.eval("document.querySelector('#back').click()")
            try await ada.waitFor("parleyDebug.window('\(direct.id)').size === 200", "trimmed on leaving")
            try await ada.click("#conversation-list [data-conversation-id=\"\(direct.id)\"]")
            try await ada.waitFor("\(Web.messages("one more")).length === 1")
            try await Self.expectShownInOrder(ada, count: 200, newest: total + 1, "reopened from the kept window")

            // A thread open on an old message stays whole when the chat is trimmed under it.
            // More than 300 in the window (the bound), the root among them.
            try await Self.pageBack(ada, direct.id, until: 301)
            let root = try #require(try await carol.messages(direct.id, before: 41, limit: 1).messages.first)
            #expect(root.seq == 40)
            _ = try await carol.send(.init(clientMessageId: "in-thread", text: "a reply in the thread", threadRootId: root.id), to: direct.id)
            let link = "#messages [data-seq=\"40\"] .thread-link"
            try await ada.waitFor("!!document.querySelector(\(BrowserPage.literal(link)))", "the thread line under message 40")
            try await ada.click(link)
            let replyShown = "[...document.querySelectorAll('#thread-panel .text')].some(e => e.textContent === 'a reply in the thread')"
            try await ada.waitFor(replyShown, "the reply in the thread panel")
            try await ada.eval("(() => { const b = document.querySelector('#messages'); b.scrollTop = b.scrollHeight; b.dispatchEvent(new Event('scroll')); })()")
            try await ada.waitFor("document.querySelectorAll('#messages [data-seq]').length === 200", "trimmed under the thread")
            try await Self.expectShownInOrder(ada, count: 200, newest: total + 1, "the timeline has no stray root above a gap")
            #expect(try await ada.eval(replyShown) as? Bool == true, "the thread keeps its reply")
            #expect(try await ada.eval("[...document.querySelectorAll('#thread-panel .text')].some(e => e.textContent === 'message 40')") as? Bool == true,
                "and its root")
            // The root changes (a second reply updates its thread line): the window's start
            // stays, so the timeline keeps no stray root and paging back leaves no gap.
            _ = try await carol.send(.init(clientMessageId: "in-thread-2", text: "another reply", threadRootId: root.id), to: direct.id)
            try await ada.waitFor("[...document.querySelectorAll('#thread-panel .text')].some(e => e.textContent === 'another reply')", "the second reply")
            try await Self.expectShownInOrder(ada, count: 200, newest: total + 1, "the root's change moves nothing")
            try await Self.pageBack(ada, direct.id, until: 253)
            try await ada.waitFor("document.querySelectorAll('#messages [data-seq]').length === 250")
            try await Self.expectShownInOrder(ada, count: 250, newest: total + 1, "a page back, 82 to 131, no gap")
            #expect(ada.problems.isEmpty, "\(ada.problems)")
        }
    }
}
