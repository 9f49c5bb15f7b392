import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTerminal
import Testing

/// Details of the list and the timeline a person reads at a glance: which badges are loud
/// (unread, mentions) and which quiet (muted), the marks at a message's right edge (pin, edit,
/// delivery) lined up in columns even with wide emoji, attachments under their sender, and
/// what a highlight may and may not do.
@Suite struct TerminalRowsAndMarksTests {
    typealias Layout = TerminalLayoutTests

    static func list(_ rows: [ChatScreen.Row]) -> ChatScreen {
        var screen = ChatScreen()
        screen.focus = .list
        screen.rows = rows
        return screen
    }

    static func row(_ title: String, unread: Int, mentioned: Bool = false, muted: Bool = false) -> ChatScreen.Row {
        .init(id: EntityID(), title: title, preview: "p", unread: unread, online: nil, typing: nil, mentioned: mentioned, muted: muted)
    }

    // MARK: Badges

    @Test func aMentionPutsAnAtBeforeTheCountAtTheRightEdge() {
        let screen = Self.list([Self.row("Dev", unread: 2, mentioned: true), Self.row("Ops", unread: 120, mentioned: true)])
        let text = screen.render(width: 40, height: 10).map(ChatScreen.stripStyles)
        // The first row is the highlighted one.
        #expect(text[2] == ">  Dev" + String(repeating: " ", count: 30) + " @2 ", "\(text[2])")
        #expect(text[4] == "   Ops" + String(repeating: " ", count: 28) + " @99+ ", "\(text[4])")
    }

    @Test func aMutedConversationsBadgeIsQuietUnlessItMentionsTheUser() throws {
        let screen = Self.list([
            Self.row("Quiet", unread: 3, muted: true), Self.row("Loud", unread: 4), Self.row("Called", unread: 5, mentioned: true, muted: true),
        ])
        let lines = screen.render(width: 40, height: 12)
        let quiet = try #require(lines.first { $0.contains("Quiet") })
        let loud = try #require(lines.first { $0.contains("Loud") })
        let called = try #require(lines.first { $0.contains("Called") })
        #expect(quiet.contains(Style.dim.apply("3")) && !quiet.contains(Style.boldColour(33).apply("3")), "\(quiet.debugDescription)")
        #expect(loud.contains(Style.boldColour(33).apply("4")), "\(loud.debugDescription)")
        #expect(called.contains(Style.boldColour(33).apply("@5")), "a mention is loud even when muted: \(called.debugDescription)")
        // Quiet or loud, every row keeps its columns.
        for line in [quiet, loud, called] { #expect(TerminalText.width(ChatScreen.stripStyles(line)) == 40) }
    }

    @Test func onlyConversationsWithUnreadMessagesHaveBoldTitles() throws {
        let screen = Self.list([Self.row("Unread", unread: 1), Self.row("Read", unread: 0)])
        let lines = screen.render(width: 40, height: 10)
        let unread = try #require(lines.first { $0.contains("Unread") })
        let read = try #require(lines.first { $0.contains("Read") && !$0.contains("Unread") })
        #expect(unread.contains("\u{1B}[1m" + "Unread"))
        #expect(!read.contains("\u{1B}[1m" + "Read"))
        #expect(ChatScreen.stripStyles(read) == "   Read" + String(repeating: " ", count: 33), "no badge for nothing unread")
    }

    // MARK: Marks at the right edge

    /// An own message, pinned, edited and read.
    static func marked(_ text: String, from sender: EntityID = Layout.me) -> LocalMessage {
        var message = Layout.message(1, from: sender, text, at: 0, delivery: sender == Layout.me ? .read : .received, edited: true)
        message.pinnedAt = Layout.now
        return message
    }

    /// Property: at every one-pane width the marks fit in, "📌 · edited · ✓✓ read" (a wide pin
    /// among narrow marks) ends one column before the pane's edge, beside the text when both
    /// fit, else on a line of its own; it appears once and never pushes the line past the edge.
    @Test func pinEditAndDeliveryMarksEndAtTheSameColumnAtEveryWidth() throws {
        let meta = "📌 · edited · ✓✓ read"
        for width in (TerminalText.width(meta) + 4)..<72 {
            let screen = Layout.chat([Self.marked("ok")])
            let text = screen.render(width: width, height: 12).map(ChatScreen.stripStyles)
            let rows = text.indices.filter { text[$0].hasSuffix(meta + " ") }
            #expect(rows.count == 1, "width \(width): \(text)")
            guard let row = rows.first else { continue }
            #expect(TerminalText.width(text[row]) == width)
            // "ok" (2) + lead (3) + a gap of at least one column + the marks (21) + 1.
            if width >= 3 + 2 + 1 + TerminalText.width(meta) + 1 {
                #expect(text[row].hasPrefix("   ok "), "width \(width): beside the text: \(text[row])")
            } else {
                #expect(text[row - 1].hasPrefix("   ok"), "width \(width): under the text")
                #expect(!text[row].contains("ok"))
            }
        }
    }

    /// Narrower than the marks: their line is cut at the edge (never wrapped onto the next
    /// screen row), and the delivery glyph still shows.
    @Test(arguments: 20..<25)
    func marksWiderThanThePaneAreCutAtItsEdge(width: Int) throws {
        let text = Layout.chat([Self.marked("ok")]).render(width: width, height: 12).map(ChatScreen.stripStyles)
        let row = try #require(text.first { $0.contains("📌") }, "\(text)")
        #expect(TerminalText.width(row) == width)
        #expect(row.hasPrefix("   📌 · edited · ✓✓"), "\(row)")
    }

    @Test func someoneElsesPinnedEditedMessageHasNoDeliveryMark() throws {
        let screen = Layout.chat([Self.marked("hello", from: Layout.bob)])
        let text = screen.render(width: 40, height: 10).map(ChatScreen.stripStyles)
        let line = try #require(text.first { $0.hasPrefix("   hello") })
        #expect(line == "   hello" + String(repeating: " ", count: 20) + "📌 · edited ", "\(line)")
        #expect(!text.joined().contains("✓"))
    }

    @Test func theMarksFollowTheLastLineOfAWrappedMessage() throws {
        let words = (1...12).map { "w\($0)" }.joined(separator: " ")
        let screen = Layout.chat([Self.marked(words)])
        let text = screen.render(width: 30, height: 14).map(ChatScreen.stripStyles)
        let first = try #require(text.firstIndex { $0.hasPrefix("   w1 ") })
        // 26 columns of text: "w1 … w9" exactly, then "w10 w11 w12".
        #expect(text[first].hasPrefix("   w1 w2 w3 w4 w5 w6 w7 w8 w9 "), "\(text[first])")
        #expect(!text[first].contains("📌"), "the first line has no marks: \(text[first])")
        #expect(text[first + 1].hasPrefix("   w10 w11 w12 "), "\(text[first + 1])")
        let marks = text.indices.filter { text[$0].contains("📌") }
        #expect(marks.count == 1 && marks[0] > first)
    }

    // MARK: Attachments

    static let report = ParleyProtocol.Attachment(
        id: EntityID(), name: "report.pdf", contentType: "application/pdf", size: 12_800, url: "/files/report.pdf")

    @Test func aFileWithoutTextSitsRightUnderTheSendersName() throws {
        let screen = Layout.chat([Layout.message(1, from: Layout.bob, "", at: 0, type: .file, attachment: Self.report)])
        let text = screen.render(width: 40, height: 10).map(ChatScreen.stripStyles)
        let name = try #require(text.firstIndex { $0.hasPrefix(" Bob  12:00") }, "\(text)")
        #expect(text[name + 1] == "   📎 report.pdf (12 KB)" + String(repeating: " ", count: 16), "no empty text line first: \(text[name + 1])")
    }

    @Test func aFileWithTextComesAfterTheText() throws {
        let screen = Layout.chat([Layout.message(1, from: Layout.bob, "the numbers", at: 0, type: .file, attachment: Self.report)])
        let text = screen.render(width: 40, height: 10).map(ChatScreen.stripStyles)
        let body = try #require(text.firstIndex { $0.hasPrefix("   the numbers") })
        #expect(text[body + 1].hasPrefix("   📎 report.pdf (12 KB)"))
    }

    @Test func aFilesNameCannotSetTheWindowTitleOrRingTheBell() {
        var hostile = Self.report
        hostile.name = "x\u{1B}]0;owned\u{07}\u{1B}[8m.pdf"
        let screen = Layout.chat([Layout.message(1, from: Layout.bob, "", at: 0, type: .file, attachment: hostile)])
        for width in [20, 40, 100] { Layout.checkFrame(screen, width: width, height: 10, "attachment \(width)") }
        let text = screen.render(width: 60, height: 10).map(ChatScreen.stripStyles)
        #expect(text.contains { $0.contains("📎 x\u{FFFD}]0;owned\u{FFFD}\u{FFFD}[8m.pdf") }, "\(text)")
    }

    // MARK: Highlights

    /// Puts `change` on the timeline's first message item.
    static func editingFirstItem(_ screen: inout ChatScreen, _ change: (inout ChatPresentation.MessageItem) -> Void) {
        for index in screen.timeline.indices {
            if case .message(var item) = screen.timeline[index] {
                change(&item)
                screen.timeline[index] = .message(item)
                return
            }
        }
    }

    @Test func aMessageMentioningTheUserIsHighlightedAndADeletedOneIsNot() throws {
        var mention = Layout.chat([Layout.message(1, from: Layout.bob, "hey @Ada look", at: 0)])
        Self.editingFirstItem(&mention) { $0.mentionsMe = true }
        let line = try #require(mention.render(width: 40, height: 10).first { $0.contains("hey @Ada") })
        #expect(line.contains(Style.boldColour(214).apply("hey @Ada look")), "\(line.debugDescription)")

        var gone = Layout.chat([Layout.message(1, from: Layout.bob, "", at: 0, deleted: true)])
        Self.editingFirstItem(&gone) { $0.mentionsMe = true }
        let tombstone = try #require(gone.render(width: 40, height: 10).first { $0.contains("This message was deleted") })
        #expect(!tombstone.contains("\u{1B}[1;38;5;214m"), "a deleted message is not a mention any more")
        #expect(tombstone.contains("\u{1B}[3m\u{1B}[2m"))
    }

    @Test func theSelectionMarkerTakesTheLeadColumnOfTheMessagesFirstLineOnly() throws {
        let first = Layout.message(1, from: Layout.bob, "one", at: 0)
        let second = Layout.message(2, from: Layout.bob, (1...12).map { "w\($0)" }.joined(separator: " "), at: 10)
        var screen = Layout.chat([first, second])
        screen.focus = .messages
        screen.selectedMessage = second.id
        let text = screen.render(width: 30, height: 12).map(ChatScreen.stripStyles)
        let start = try #require(text.firstIndex { $0.hasPrefix("▶  w1 ") }, "\(text)")
        #expect(text[start + 1].hasPrefix("   w10"), "a continuation line is not marked: \(text[start + 1])")
        #expect(text.filter { $0.contains("▶") }.count == 1)
        #expect(text.contains { $0.hasPrefix("   one") })
        for line in text { #expect(TerminalText.width(line) == 30) }
    }
}
