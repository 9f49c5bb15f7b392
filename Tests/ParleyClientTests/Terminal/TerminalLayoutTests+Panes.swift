import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTerminal
import ParleyTestSupport
import Testing

extension TerminalLayoutTests {
    // MARK: Panes

    @Test(arguments: [(20, 20), (50, 50), (71, 71), (72, 47), (90, 59), (100, 67), (200, 167)])
    func theChatPaneWidthFollowsTheTerminal(terminal: Int, chat: Int) {
        #expect(ChatScreen.chatWidth(forTerminalWidth: terminal) == chat)
    }

    /// From 72 columns the list and the chat sit side by side with a rule between; below, one
    /// pane at a time: the list when no chat is open or the list has the focus.
    @Test func onePaneBelowSeventyTwoColumnsTwoFromThere() {
        var screen = Self.chat([Self.message(1, from: Self.bob, "hello there", at: -10)])
        screen.rows = [.init(id: EntityID(), title: "Bob", preview: "hello there", unread: 0, online: true, typing: nil)]
        let wide = screen.render(width: 72, height: 12).map(ChatScreen.stripStyles)
        for line in wide[1...9] { #expect(Array(line)[24] == "│", "\(line)") }
        #expect(wide[1].hasPrefix(" Conversations") && wide[1].contains("│ Bob"))
        let narrow = screen.render(width: 71, height: 12).map(ChatScreen.stripStyles)
        #expect(!narrow.joined().contains("│ ") && !narrow.joined().contains("Conversations"))
        #expect(narrow[1].hasPrefix(" Bob") && narrow.contains { $0.hasPrefix("   hello there") })
        screen.focus = .list
        #expect(screen.render(width: 71, height: 12).map(ChatScreen.stripStyles)[1].hasPrefix(" Conversations"))
        screen.focus = .messages
        #expect(screen.render(width: 71, height: 12).map(ChatScreen.stripStyles)[1].hasPrefix(" Bob"))
        screen.chatTitle = nil
        screen.focus = .input
        #expect(screen.render(width: 71, height: 12).map(ChatScreen.stripStyles)[1].hasPrefix(" Conversations"))
    }

    /// A long list scrolls so the highlighted conversation is always on screen.
    @Test(arguments: [(0, 0, 7), (5, 0, 7), (20, 13, 20), (29, 22, 29)])
    func theListKeepsTheHighlightedRowVisible(selected: Int, first: Int, last: Int) {
        var screen = ChatScreen()
        screen.focus = .list
        screen.rows = (0..<30).map { .init(id: EntityID(), title: "Room #\($0)#", preview: "p\($0)", unread: 0, online: nil, typing: nil) }
        screen.selectedRow = selected
        let text = screen.render(width: 40, height: 20).map(ChatScreen.stripStyles)
        let shown = (0..<30).filter { index in text.contains { $0.contains("#\(index)#") } }
        #expect(shown == Array(first...last))
        #expect(text.contains { $0.hasPrefix(">  Room #\(selected)#") }, "the highlighted row is marked")
    }

    /// A row: online dot, the title cut to leave room for the unread badge at the right edge,
    /// the preview under it, or who is typing instead.
    @Test func aListRowShowsDotTitleBadgeAndPreview() {
        var screen = ChatScreen()
        screen.focus = .list
        screen.rows = [
            .init(id: EntityID(), title: "Bob", preview: "see you", unread: 3, online: true, typing: nil),
            .init(id: EntityID(), title: String(repeating: "長", count: 30), preview: "x", unread: 250, online: false, typing: "Bob is typing…"),
            .init(id: EntityID(), title: "Team", preview: "Ada: hi", unread: 0, online: nil, typing: nil),
        ]
        screen.selectedRow = 2
        let text = screen.render(width: 40, height: 12).map(ChatScreen.stripStyles)
        #expect(text[2] == " ● Bob" + String(repeating: " ", count: 31) + " 3 ")
        #expect(text[3] == "   see you" + String(repeating: " ", count: 30))
        #expect(text[4] == " ○ " + String(repeating: "長", count: 15) + "…  99+ ")
        #expect(text[5] == "   Bob is typing…" + String(repeating: " ", count: 23))
        #expect(text[6] == ">  Team" + String(repeating: " ", count: 33))
    }

    // MARK: The timeline

    /// A long message wraps within the pane, wide characters never split and nothing lost.
    @Test func aLongMessageWrapsWithinThePane() {
        let text = String(repeating: "日本語", count: 10)
        let screen = Self.chat([Self.message(1, from: Self.bob, text, at: -10)])
        let lines = screen.render(width: 40, height: 12).map(ChatScreen.stripStyles)
        let characters = Array(text)
        #expect(lines.contains("   " + String(characters[..<18]) + String(repeating: " ", count: 1)))
        #expect(lines.contains("   " + String(characters[18...]) + String(repeating: " ", count: 13)))
        #expect(lines.contains { $0.hasPrefix(" Bob  11:59") })
    }

    /// An own message's mark sits at the right on its last line, or under it when the line is full.
    @Test func deliveryMarksSitRightAlignedOrOnTheirOwnLine() {
        let full = String(repeating: "x", count: 36)
        let screen = Self.chat([
            Self.message(1, from: Self.me, "short", at: -20, delivery: .read),
            Self.message(2, from: Self.me, full, at: -10, delivery: .failed(reason: "too big")),
        ])
        let lines = screen.render(width: 40, height: 12).map(ChatScreen.stripStyles)
        #expect(lines.contains("   short" + String(repeating: " ", count: 24) + "✓✓ read "))
        let index = lines.firstIndex(of: "   " + full + " ")
        #expect(index != nil)
        if let index {
            #expect(lines[index + 1] == "   " + String(repeating: " ", count: 19) + "✗ failed, /resend ")
        }
    }

    /// Day titles are centred rules; system notices are centred; a deleted message says so in
    /// italics; a reply quotes its original; reactions follow the message.
    @Test func daysNoticesDeletionsRepliesAndReactions() throws {
        let original = Self.message(1, from: Self.bob, "the plan", at: -90_000)
        let lines = Self.chat([
            original,
            Self.message(2, from: Self.bob, "Bob renamed the group", at: -100, type: .system),
            Self.message(3, from: Self.bob, "oops", at: -50, deleted: true),
            Self.message(4, from: Self.me, "agreed", at: -20, delivery: .sent, reactions: ["👍": [Self.bob], "❤️": [Self.bob, Self.me]], replyTo: original.serverId),
        ]).render(width: 40, height: 20)
        let text = lines.map(ChatScreen.stripStyles)
        #expect(text.contains(String(repeating: "─", count: 14) + " Yesterday " + String(repeating: "─", count: 15)))
        #expect(text.contains(String(repeating: "─", count: 16) + " Today " + String(repeating: "─", count: 17)))
        #expect(text.contains(String(repeating: " ", count: 9) + "Bob renamed the group" + String(repeating: " ", count: 10)))
        #expect(lines.contains { $0.contains("\u{1B}[3m\u{1B}[2mThis message was deleted") })
        #expect(text.contains("   │ ↪ Bob: the plan" + String(repeating: " ", count: 20)))
        let agreed = try #require(text.firstIndex { $0.hasPrefix("   agreed") })
        #expect(text[agreed].hasSuffix("✓ "))
        #expect(text[agreed + 1] == "   ❤️ 2  👍 1" + String(repeating: " ", count: 27))
    }

    /// The highlighted message says who reacted (the user as "You" first); the others count.
    @Test func theHighlightedMessageSaysWhoReacted() throws {
        let messages = [Self.message(1, from: Self.bob, "ship it", at: -20, reactions: ["🦄": [Self.bob, Self.me], "👍": [Self.bob]])]
        var screen = Self.chat(messages)
        #expect(screen.render(width: 50, height: 12).map(ChatScreen.stripStyles).contains { $0.hasPrefix("   🦄 2  👍 1") })
        screen.selectedMessage = messages[0].id
        screen.focus = .messages
        let text = screen.render(width: 50, height: 12).map(ChatScreen.stripStyles)
        #expect(text.contains { $0.hasPrefix("   🦄 You, Bob; 👍 Bob") }, "\(text)")
    }

    /// Scrolling up shows older lines; scrolling past the oldest keeps it at the top instead of
    /// blanking the pane.
    @Test(arguments: [(0, 33), (5, 28), (30, 3), (43, 1), (500, 1)])
    func scrollingShowsOlderLinesAndStopsAtTheOldest(scroll: Int, firstShown: Int) {
        var screen = Self.chat((1...40).map { Self.message(Int64($0), from: Self.bob, "m\($0)", at: Double($0)) })
        screen.scroll = scroll
        let text = screen.render(width: 40, height: 12).map(ChatScreen.stripStyles)
        let shown = (1...40).filter { text.contains("   m\($0)" + String(repeating: " ", count: 37 - "m\($0)".count)) }
        #expect(shown.first == firstShown, "\(text)")
        #expect(shown.count == (firstShown == 1 ? 5 : 8))
    }

    /// The highlighted message gets a marker at its first line.
    @Test func theHighlightedMessageIsMarked() throws {
        let messages = [Self.message(1, from: Self.bob, "first", at: -30), Self.message(2, from: Self.bob, "second", at: -20)]
        var screen = Self.chat(messages)
        screen.selectedMessage = messages[1].id
        screen.focus = .messages
        let text = screen.render(width: 40, height: 12).map(ChatScreen.stripStyles)
        #expect(text.contains("▶  second" + String(repeating: " ", count: 31)))
        #expect(text.contains("   first" + String(repeating: " ", count: 32)))
        screen.selectedMessage = messages[0].id
        let grouped = screen.render(width: 40, height: 12).map(ChatScreen.stripStyles)
        #expect(grouped.contains { $0.hasPrefix("▶Bob  11:59") }, "the first of a group is marked on its name line")
    }

    /// Overlays (help, search results) are cut to the pane; a long title is cut where it
    /// reaches the edge, never skipping to a character further on.
    @Test func overlaysAreWrappedToThePane() {
        var screen = Self.chat([])
        screen.overlayTitle = String(repeating: "a", count: 18) + "日z"
        screen.overlay = ChatCommand.helpLines
        let text = screen.render(width: 20, height: 30).map(ChatScreen.stripStyles)
        // The title is cut (and says so); the lines are wrapped, not cut: what does not fit on
        // one goes on, indented, and PgUp/PgDn reach what does not fit on the screen.
        #expect(text[2] == " " + String(repeating: "a", count: 18) + "…")
        #expect(text[3] == " /dm EMAIL" + String(repeating: " ", count: 10))
        let joined = text.joined(separator: " ")
        #expect(joined.contains("a direct") && joined.contains("conversation"), "\(text)")
        #expect(joined.contains("PgUp/PgDn"), "\(text)")
        #expect(text.allSatisfy { TerminalText.width($0) == 20 })
    }

    // MARK: Header and status

    /// The header shows the account and the connection at the right; an account too long for
    /// both ends in "…": the connection's state (offline!) stays whole, and nothing overflows.
    @Test func theHeaderCutsALongAccountBeforeOverflowing() {
        var screen = ChatScreen()
        screen.account = "Ada"
        screen.banner = "Offline · reconnecting in 4 s"
        let header = ChatScreen.stripStyles(screen.render(width: 60, height: 8)[0])
        #expect(header == " Parley · Ada" + String(repeating: " ", count: 15) + "● Offline · reconnecting in 4 s ")
        screen.account = "Alexandria Montgomery-Featherstonehaugh <alexandria@example.com>"
        let cut = ChatScreen.stripStyles(screen.render(width: 60, height: 8)[0])
        #expect(cut.hasPrefix(" Parley · Alexandria") && cut.contains("…"), "\(cut)")
        #expect(cut.hasSuffix("● Offline · reconnecting in 4 s ") && TerminalText.width(cut) == 60, "\(cut)")
        for width in [44, 50, 80] {
            let header = ChatScreen.stripStyles(screen.render(width: width, height: 8)[0])
            #expect(header.hasSuffix("● Offline · reconnecting in 4 s ") && TerminalText.width(header) == width, "\(width): \(header)")
        }
        // Too narrow for the name and the state: the state stays (it dropped out at 40 columns).
        for width in [20, 30, 40, 43] {
            let header = ChatScreen.stripStyles(screen.render(width: width, height: 8)[0])
            #expect(header.hasPrefix(" ● Offline") && TerminalText.width(header) == width, "\(width): \(header)")
        }
    }

    /// The bottom line shows the hints for where the keys go, or the status when there is one.
    @Test(arguments: [
        (ChatScreen.Focus.list, " ↑↓ choose · Enter open · Tab type"),
        (.messages, " ↑↓ choose · r reply · e edit · d delete"),
        (.input, " Enter send · ↑ on empty line: pick a message"),
    ])
    func theStatusLineHintsFollowTheFocus(focus: ChatScreen.Focus, hint: String) {
        var screen = ChatScreen()
        screen.focus = focus
        #expect(ChatScreen.stripStyles(screen.render(width: 100, height: 8)[7]).hasPrefix(hint))
        screen.status = "Only your own messages can be edited"
        #expect(ChatScreen.stripStyles(screen.render(width: 100, height: 8)[7]).hasPrefix(" Only your own messages can be edited  "))
    }
}
