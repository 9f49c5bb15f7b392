import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTerminal
import Testing

/// The chat pane's "New messages" jump and the lines under a message (link preview card,
/// thread line): where they land in a fixed-size pane, that they never run past its edge, and
/// that the words in them (a stranger's page title, a thread summary) reach the terminal inert.
@Suite struct TerminalUnreadAndCardsTests {
    typealias Layout = TerminalLayoutTests

    /// `count` messages from Bob, one a second; with `unreadAfter`, the "New messages" line
    /// above the first one past it.
    static func history(_ count: Int, unreadAfter: Int64? = nil) -> ChatScreen {
        var screen = Layout.chat([])
        let messages = (1...count).map { Layout.message(Int64($0), from: Layout.bob, "m\($0)", at: Double($0)) }
        screen.timeline = ChatPresentation.timeline(
            messages, me: Layout.me, names: { $0 == Layout.bob ? "Bob" : nil }, now: Layout.now, calendar: Layout.utc,
            unreadAfter: unreadAfter)
        return screen
    }

    /// The "New messages" label the timeline carries.
    static func unreadLabel(_ screen: ChatScreen) throws -> String {
        let label = screen.timeline.compactMap { item -> String? in if case .unread(let text) = item { text } else { nil } }.first
        return try #require(label)
    }

    /// The chat pane's rows as seen (one-pane layout: row 0 is the header, then the title).
    static func visible(_ screen: ChatScreen, width: Int, height: Int) -> [String] {
        screen.render(width: width, height: height).map(ChatScreen.stripStyles)
    }

    /// The first row of the pane that shows timeline lines (after the title and a pinned line).
    static func firstTimelineRow(_ screen: ChatScreen) -> Int { screen.pinnedLine == nil ? 2 : 3 }

    /// The rows of the pane that show timeline lines (not the typing line, input or status).
    static func timelineRows(_ screen: ChatScreen, height: Int) -> Range<Int> {
        firstTimelineRow(screen)..<(height - 2 - (screen.typingLine == nil ? 0 : 1))
    }

    // MARK: Jump to "New messages"

    @Test func theNewMessagesLineBecomesThePanesFirstLine() throws {
        var screen = Self.history(40, unreadAfter: 20)
        let label = try Self.unreadLabel(screen)
        let jumped = screen.scrollToUnread(width: 40, height: 12)
        #expect(jumped)
        // From the line: itself, blank + Bob's name, m21...m40 = 23 lines; 8 rows shown.
        #expect(screen.scroll == 15)
        let rows = Self.visible(screen, width: 40, height: 12)
        #expect(rows[2].contains(label), "\(rows[2])")
        #expect(rows[3].trimmingCharacters(in: .whitespaces).isEmpty)
        #expect(rows[4].hasPrefix(" Bob"))
        #expect(rows[5].contains("m21") && !rows.contains { $0.contains("m20 ") || $0.hasSuffix("m20") })
    }

    @Test func withoutANewMessagesLineNothingMoves() {
        var screen = Self.history(40)
        screen.scroll = 7
        let jumped = screen.scrollToUnread(width: 40, height: 12)
        #expect(!jumped)
        #expect(screen.scroll == 7)
    }

    @Test func newMessagesThatAllFitLeaveThePaneAtTheNewest() throws {
        var screen = Self.history(40, unreadAfter: 38)
        screen.scroll = 12
        let jumped = screen.scrollToUnread(width: 40, height: 12)
        #expect(jumped)
        #expect(screen.scroll == 0, "4 lines from the marker fit in 8 rows: nothing to scroll")
        let label = try Self.unreadLabel(screen)
        let rows = Self.visible(screen, width: 40, height: 12)
        #expect(rows.contains { $0.contains(label) })
        #expect(rows[9].contains("m40"), "the newest message stays on the last timeline row")
    }

    /// Property: for every watermark, with and without a pinned and a typing line, at one and
    /// two panes, the marker is on the pane's first timeline row, or everything from it fits and
    /// the pane shows the newest; never off by one row either way.
    @Test(arguments: [(40, 12), (40, 7), (100, 14), (20, 8)])
    func theMarkerIsOnTheFirstRowOrEverythingBelowItFits(width: Int, height: Int) throws {
        for pinned in [false, true] {
            for typing in [false, true] {
                for after in Int64(0)..<30 {
                    var screen = Self.history(30, unreadAfter: after)
                    if pinned { screen.pinnedLine = "📌 Bob: the rules" }
                    if typing { screen.typingLine = "Bob is typing…" }
                    let label = try Self.unreadLabel(screen)
                    let jumped = screen.scrollToUnread(width: width, height: height)
                    #expect(jumped)
                    let context = "\(width)x\(height) pinned \(pinned) typing \(typing) after \(after) scroll \(screen.scroll)"
                    #expect(screen.scroll <= screen.maxScroll(width: width, height: height), "\(context)")
                    let rows = Self.visible(screen, width: width, height: height)
                    let area = Self.timelineRows(screen, height: height)
                    guard let row = area.first(where: { rows[$0].contains(label) }) else {
                        Issue.record("\(context): the marker is not shown: \(rows)")
                        continue
                    }
                    if row != area.lowerBound {
                        #expect(screen.scroll == 0, "\(context): marker on row \(row) though the pane could scroll")
                        #expect(rows[area.upperBound - 1].contains("m30"), "\(context)")
                    }
                }
            }
        }
    }

    @Test func thePinnedLineTakesARowSoOneMoreLineScrolls() {
        var screen = Self.history(40)
        let plain = screen.maxScroll(width: 40, height: 12)
        screen.pinnedLine = "📌 Bob: the rules  (3 pinned)"
        #expect(screen.maxScroll(width: 40, height: 12) == plain + 1)
        screen.typingLine = "Bob is typing…"
        #expect(screen.maxScroll(width: 40, height: 12) == plain + 2)
        // At the top, the oldest line (the day) is the first under the pinned line.
        screen.scroll = screen.maxScroll(width: 40, height: 12)
        let rows = Self.visible(screen, width: 40, height: 12)
        #expect(rows[2].hasPrefix(" 📌 Bob: the rules"))
        #expect(rows[3].hasPrefix("───"), "\(rows[3])")
        // One line further is the same frame: nothing above the day line.
        var further = screen
        further.scroll += 1
        #expect(further.render(width: 40, height: 12) == screen.render(width: 40, height: 12))
    }

    // MARK: Lines under a message

    /// A screen with one message from Bob whose item carries `card` and `thread`.
    static func withExtras(_ text: String = "look", card: LinkPreview? = nil, thread: String? = nil) throws -> ChatScreen {
        var screen = Layout.chat([Layout.message(1, from: Layout.bob, text, at: 0)])
        let index = try #require(screen.timeline.firstIndex { if case .message = $0 { true } else { false } })
        guard case .message(var item) = screen.timeline[index] else { throw CancellationError() }
        item.previewCard = card.flatMap(ChatPresentation.PreviewCard.init)
        item.threadLine = thread
        screen.timeline[index] = .message(item)
        return screen
    }

    @Test func aPreviewCardShowsSiteTitleAndAtMostTwoLinesOfDescription() throws {
        let description = (1...40).map { "word\($0)" }.joined(separator: " ")
        let screen = try Self.withExtras(card: LinkPreview(
            url: "https://example.com/a", title: "Example Domain", description: description, siteName: nil))
        Layout.checkFrame(screen, width: 40, height: 14, "card")
        let rows = Self.visible(screen, width: 40, height: 14)
        let bar = try #require(rows.firstIndex { $0.hasPrefix("   ┃ example.com") }, "\(rows)")
        #expect(rows[bar + 1].hasPrefix("   ┃ Example Domain"))
        #expect(rows[bar + 2].hasPrefix("   ┃ word1 word2"))
        #expect(rows[bar + 3].hasPrefix("   ┃ word"))
        #expect(!rows[bar + 4].contains("┃"), "a third description line is not shown: \(rows[bar + 4])")
        // The two lines are consecutive words of the description, wrapped inside the text column.
        let shown = (rows[bar + 2] + " " + rows[bar + 3]).replacingOccurrences(of: "┃", with: "")
            .split(separator: " ").map(String.init)
        #expect(shown == Array(description.split(separator: " ").prefix(shown.count)).map(String.init))
    }

    @Test func aPagesTitleCannotReachTheTerminalAsAnEscapeSequence() throws {
        let hostile = "Pwned\u{1B}]52;c;ZWNobyBoaQ==\u{07}\u{1B}[2J\u{9B}31m\u{202E}gnp.exe"
        let screen = try Self.withExtras(card: LinkPreview(
            url: "https://evil.example/x", title: hostile, description: "line\u{1B}[1Aup\r\nnext", siteName: "Evil\u{1B}[5mSite"))
        for (width, height) in [(40, 14), (100, 14), (20, 10)] {
            Layout.checkFrame(screen, width: width, height: height, "hostile card \(width)x\(height)")
        }
        let joined = Self.visible(screen, width: 100, height: 14).joined(separator: "\n")
        #expect(joined.contains("Pwned\u{FFFD}]52;c;ZWNobyBoaQ==\u{FFFD}\u{FFFD}[2J\u{FFFD}31m\u{FFFD}gnp.exe"))
        #expect(joined.contains("Evil\u{FFFD}[5mSite"))
        #expect(joined.contains("line\u{FFFD}[1Aup"))
    }

    @Test func theThreadLineSitsUnderItsMessageAndIsCutWithAnEllipsisToThePane() throws {
        let screen = try Self.withExtras(thread: "3 replies · 12:00")
        let wide = Self.visible(screen, width: 40, height: 10)
        let message = try #require(wide.firstIndex { $0.hasPrefix("   look") })
        #expect(wide[message + 1].hasPrefix("   💬 3 replies · 12:00  (/thread)"), "\(wide[message + 1])")
        // 20 columns: the text column is 16, the line ends in "…" and never wraps.
        let narrow = Self.visible(screen, width: 20, height: 10)
        let line = try #require(narrow.first { $0.contains("💬") })
        #expect(TerminalText.width(line) == 20)
        let shown = line.trimmingCharacters(in: .whitespaces)
        #expect(shown.hasSuffix("…"), "\(line)")
        #expect(TerminalText.width(shown) == 16)
        Layout.checkFrame(screen, width: 20, height: 10, "thread line")
    }

    @Test func aThreadLineWithAControlCharacterIsInert() throws {
        let screen = try Self.withExtras(thread: "2 replies\u{1B}[31m · \u{85}Yesterday")
        Layout.checkFrame(screen, width: 60, height: 10, "thread")
        let rows = Self.visible(screen, width: 60, height: 10)
        #expect(rows.contains { $0.contains("💬 2 replies\u{FFFD}[31m · \u{FFFD}Yesterday") })
    }

    @Test func cardAndThreadLinesCountInHowFarThePaneScrolls() throws {
        let plain = try Self.withExtras()
        let card = try Self.withExtras(card: LinkPreview(url: "https://example.com", title: "T", description: "d"), thread: "1 reply · 12:00")
        // Card: site, title, one description line; thread: one line.
        let tall = Self.visible(card, width: 40, height: 30).filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        let short = Self.visible(plain, width: 40, height: 30).filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        #expect(tall.count == short.count + 4)
        #expect(card.maxScroll(width: 40, height: 6) == plain.maxScroll(width: 40, height: 6) + 4)
    }
}
