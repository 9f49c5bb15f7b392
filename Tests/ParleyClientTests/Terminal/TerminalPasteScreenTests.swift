import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTerminal
import ParleyTestSupport
import Testing

/// What `parley chat` draws around pasted and multi-line text: the input line shows a pasted
/// break as "⏎" and never a raw line break, the timeline shows Windows line endings as line
/// breaks (not "�"), and PageUp/PageDown stop where the timeline does.
@Suite struct TerminalPasteScreenTests {
    static let me = EntityID()
    static let bob = EntityID()
    static let conversation = EntityID()
    static let now = Date(timeIntervalSince1970: 1_795_435_200)  // 2026-11-23 12:00 UTC
    static var utc: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }

    static func message(_ seq: Int64, from sender: EntityID, _ text: String, at offset: TimeInterval, replyTo: EntityID? = nil) -> LocalMessage {
        LocalMessage(
            Message(
                id: EntityID(), conversationId: conversation, seq: seq, updatedSeq: seq, senderId: sender, clientMessageId: "c\(seq)",
                type: .text, text: text, replyToId: replyTo, createdAt: now.addingTimeInterval(offset)),
            delivery: .received)
    }

    /// A screen with Bob's conversation open in one pane, the focus on the input line.
    static func chat(_ messages: [LocalMessage]) -> ChatScreen {
        var screen = ChatScreen()
        screen.account = "Ada"
        screen.chatTitle = "Bob"
        screen.timeline = ChatPresentation.timeline(messages, me: me, names: { $0 == bob ? "Bob" : nil }, now: now, calendar: utc)
        return screen
    }

    /// Bob's messages "m1" ... "mN", one line each, in one group.
    static func history(_ count: Int) -> ChatScreen {
        chat((1...count).map { message(Int64($0), from: bob, "m\($0)", at: Double($0)) })
    }

    static func visible(_ screen: ChatScreen, width: Int, height: Int) -> [String] {
        screen.render(width: width, height: height).map(ChatScreen.stripStyles)
    }

    /// Whether every escape sequence in a drawn line is one of our SGR styles (ESC [ digits ; m).
    static func onlyStyles(_ line: String) -> Bool {
        let scalars = Array(line.unicodeScalars)
        var index = 0
        while index < scalars.count {
            defer { index += 1 }
            guard scalars[index] == "\u{1B}" else { continue }
            guard index + 1 < scalars.count, scalars[index + 1] == "[" else { return false }
            var end = index + 2
            while end < scalars.count, ("0"..."9").contains(scalars[end]) || scalars[end] == ";" { end += 1 }
            guard end < scalars.count, scalars[end] == "m" else { return false }
            index = end
        }
        return true
    }

    // MARK: The input line

    /// A pasted paragraph shows on the one input line with "⏎" for each break, one column each,
    /// and the cursor counts the glyph as one column as it moves over it.
    @Test func aPastedBreakShowsAsOneColumnGlyph() {
        var screen = ChatScreen()
        screen.input.handle(.paste("line one\nline two"))
        let lines = Self.visible(screen, width: 60, height: 8)
        #expect(lines[6] == "> line one⏎line two" + String(repeating: " ", count: 41))
        #expect(screen.cursor(width: 60, height: 8) == (row: 6, column: 19))
        for _ in 0..<8 { screen.input.handle(.left) }
        #expect(screen.cursor(width: 60, height: 8).column == 11, "just after the ⏎")
        screen.input.handle(.left)
        #expect(screen.cursor(width: 60, height: 8).column == 10, "just before it: one column")
        #expect(TerminalText.width("⏎") == 1)
    }

    /// With a label (a reply) the glyphs show the same and the sent text has real breaks.
    @Test func aPasteIntoAReplyShowsGlyphsAndSendsBreaks() {
        var screen = ChatScreen()
        screen.inputLabel = "↪ reply to Bob"
        screen.input.handle(.paste("a\r\nb\rc"))
        #expect(Self.visible(screen, width: 40, height: 8)[6].hasPrefix("↪ reply to Bob > a⏎b⏎c "))
        #expect(screen.input.submit() == "a\nb\nc")
    }

    /// A password pasted with its line break shows one bullet per character (the break too), never the text.
    @Test func aPastedPasswordShowsOnlyBullets() {
        var screen = ChatScreen()
        screen.masked = true
        screen.inputLabel = "Password"
        screen.input.handle(.paste("hunter2\n"))
        let line = Self.visible(screen, width: 40, height: 8)[6]
        #expect(line.hasPrefix("Password > ••••••••" + " "))
        #expect(!line.contains("hunter") && !line.contains("⏎"))
    }

    /// A paste longer than the line scrolls it to keep the cursor in view: the tail shows, glyphs included.
    @Test func aLongPasteScrollsTheInputToTheCursor() {
        var screen = ChatScreen()
        screen.input.handle(.paste(String(repeating: "a\n", count: 50)))
        let shown = String(String(repeating: "a⏎", count: 50).suffix(37))
        #expect(Self.visible(screen, width: 40, height: 8)[6] == "> " + shown + " ")
        #expect(screen.cursor(width: 40, height: 8) == (row: 6, column: 39))
        screen.input.handle(.home)
        #expect(Self.visible(screen, width: 40, height: 8)[6] == "> " + String(String(repeating: "a⏎", count: 50).prefix(37)) + " ")
        #expect(screen.cursor(width: 40, height: 8).column == 2)
    }

    /// Property: whatever is pasted, typed or received (line breaks of every kind, escapes, wide
    /// characters), no drawn line holds a line break, a CR, a LINE SEPARATOR or any control
    /// beyond our own styles, and every line is exactly the terminal's width.
    @Test(arguments: [UInt64(501), 502, 503, 504, 505])
    func theScreenNeverHoldsALineBreak(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        for round in 0..<40 {
            let count = Int.random(in: 0...6, using: &generator)
            var messages: [LocalMessage] = []
            for index in 0..<count {
                let text = TerminalTestStrings.mixed(Int.random(in: 1...8, using: &generator), using: &generator, newlines: true)
                    + ["", "\r\n", "\r", "\u{2028}"].randomElement(using: &generator)!
                messages.append(Self.message(Int64(index + 1), from: Bool.random(using: &generator) ? Self.bob : Self.me, text, at: Double(index * 400)))
            }
            var screen = Self.chat(messages)
            screen.rows = [ChatScreen.Row(id: Self.conversation, title: "Bob\r\nBob", preview: ChatPresentation.firstLine(messages.last?.text ?? "", max: 80),
                                          unread: 1, online: true, typing: nil)]
            for _ in 0..<Int.random(in: 0...3, using: &generator) {
                screen.input.handle(.paste(TerminalTestStrings.mixed(Int.random(in: 1...6, using: &generator), using: &generator, newlines: true)))
                screen.input.handle([Key.left, .home, .end, .character("x")].randomElement(using: &generator)!)
            }
            screen.scroll = Int.random(in: 0...12, using: &generator)
            for (width, height) in [(20, 6), (40, 12), (80, 24), (Int.random(in: 1...130, using: &generator), Int.random(in: 1...50, using: &generator))] {
                let lines = screen.render(width: width, height: height)
                for (number, line) in lines.enumerated() {
                    let shown = ChatScreen.stripStyles(line)
                    let place = "seed \(seed) round \(round) \(width)x\(height) line \(number): \(line.debugDescription)"
                    #expect(Self.onlyStyles(line), "\(place)")
                    #expect(!shown.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\u{2028}" }, "\(place)")
                    #expect(TerminalText.width(shown) == max(width, 1), "\(place)")
                }
                let cursor = screen.cursor(width: width, height: height)
                #expect((0..<max(width, 1)).contains(cursor.column) && cursor.row == lines.count - (height < 6 ? 1 : 2))
            }
        }
    }

    // MARK: Windows line endings in the timeline

    /// A message written on Windows ("\r\n") shows its lines as lines, with no "�" at the end of each.
    @Test func aWindowsMessageShowsNoReplacementAtLineEnds() {
        let screen = Self.chat([Self.message(1, from: Self.bob, "first\r\nsecond\r\nthird", at: -10)])
        let lines = Self.visible(screen, width: 40, height: 12)
        for word in ["first", "second", "third"] {
            #expect(lines.contains("   " + word + String(repeating: " ", count: 37 - word.count)), "\(lines)")
        }
        #expect(!lines.joined().contains("\u{FFFD}"), "\(lines)")
    }

    /// A CR directly before LF is dropped; a lone CR (which would send the cursor back to the
    /// start of the line and let the rest overwrite it) is still shown inert.
    @Test(arguments: [
        ("a\r\nb", ["a", "b"]), ("a\rb", ["a\u{FFFD}b"]), ("a\r\r\nb", ["a\u{FFFD}", "b"]), ("a\n\rb", ["a", "\u{FFFD}b"]),
        ("a\r\n\r\nb", ["a", "", "b"]), ("a\r", ["a\u{FFFD}"]), ("\r\nb", ["", "b"]),
        ("a\u{2028}b\u{2029}c", ["a\u{FFFD}b\u{FFFD}c"]),
    ])
    func onlyACarriageReturnBeforeALineFeedIsDropped(body: String, shown: [String]) {
        let lines = Self.visible(Self.chat([Self.message(1, from: Self.bob, body, at: -10)]), width: 40, height: 12)
        // The pane's bottom rows: the body, one line each, under the name.
        let bodyLines = Array(lines[(10 - shown.count)..<10])
        #expect(bodyLines == shown.map { "   " + $0 + String(repeating: " ", count: 37 - TerminalText.width($0)) }, "\(lines)")
        #expect(lines[9 - shown.count].hasPrefix(" Bob  11:59"))
    }

    /// Property: a message with Windows line endings looks exactly like the same message with
    /// Unix ones, wrapped and fitted at any width.
    @Test(arguments: [UInt64(601), 602, 603, 604])
    func crlfAndLFLookTheSame(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<60 {
            let paragraphs = (0..<Int.random(in: 1...5, using: &generator)).map { _ in
                TerminalTestStrings.printable(Int.random(in: 0...10, using: &generator), using: &generator)
            }
            let width = Int.random(in: 20...120, using: &generator)
            let unix = Self.chat([Self.message(1, from: Self.bob, paragraphs.joined(separator: "\n"), at: -10)])
            let windows = Self.chat([Self.message(1, from: Self.bob, paragraphs.joined(separator: "\r\n"), at: -10)])
            #expect(windows.render(width: width, height: 30) == unix.render(width: width, height: 30), "seed \(seed): \(paragraphs)")
        }
    }

    /// The helper behind it, on its own: only CR+LF pairs lose their CR.
    @Test(arguments: [
        ("a\r\nb", "a\nb"), ("a\rb", "a\rb"), ("a\r\r\nb", "a\r\nb"), ("\r\n\r\n", "\n\n"), ("a\n\r", "a\n\r"), ("", ""),
        ("日本\r\n👍🏽", "日本\n👍🏽"), ("no breaks", "no breaks"),
    ])
    func carriageReturnsBeforeLineFeedsAreDropped(text: String, expected: String) {
        #expect(TerminalText.droppingCarriageReturnsBeforeLineFeeds(text) == expected)
    }

    /// A list preview and a reply quote show the first line of a Windows message, not both lines
    /// glued with "��" ("\r\n" is one Character in Swift, so splitting on "\n" missed it).
    @Test func previewsAndQuotesStopAtAWindowsLineEnding() throws {
        #expect(ChatPresentation.firstLine("first\r\nsecond", max: 80) == "first")
        #expect(ChatPresentation.firstLine("\r\nafter", max: 80) == "")
        #expect(ChatPresentation.firstLine("over\rwrite", max: 80) == "over\rwrite", "a lone CR ends no line")
        let quoted = Self.message(1, from: Self.bob, "the plan\r\nstep two", at: -30)
        let reply = Self.message(2, from: Self.me, "agreed", at: -10, replyTo: quoted.serverId)
        let items = ChatPresentation.timeline([quoted, reply], me: Self.me, names: { $0 == Self.bob ? "Bob" : nil }, now: Self.now, calendar: Self.utc)
        guard case .message(let answer) = try #require(items.last) else {
            Issue.record("the reply is not last: \(items)")
            return
        }
        #expect(answer.replyPreview == "↪ Bob: the plan")
    }

    // MARK: Scrolling

    /// Extra PageUps at the top are not saved up (PageDown would then need as many presses
    /// before anything moved): PageUp stops at the oldest line and one PageDown moves at once.
    @Test func pageUpStopsAtTheTopAndPageDownMovesAtOnce() {
        var screen = Self.history(40)
        #expect(screen.maxScroll(width: 40, height: 12) == 35, "43 lines (day, blank, name, 40 messages), 8 shown")
        var seen: [Int] = []
        for _ in 0..<25 {
            screen.pageUp(width: 40, height: 12)
            seen.append(screen.scroll)
        }
        #expect(Array(seen.prefix(5)) == [10, 20, 30, 35, 35])
        #expect(seen.dropFirst(3).allSatisfy { $0 == 35 })
        let top = screen.render(width: 40, height: 12)
        #expect(Self.visible(screen, width: 40, height: 12)[2].hasPrefix("───"), "the day line is the first shown")
        screen.pageDown(width: 40, height: 12)
        #expect(screen.scroll == 25)
        #expect(screen.render(width: 40, height: 12) != top, "the first PageDown moves the pane")
        var direct = Self.history(40)
        direct.scroll = 25
        #expect(screen.render(width: 40, height: 12) == direct.render(width: 40, height: 12))
        for _ in 0..<3 { screen.pageDown(width: 40, height: 12) }
        #expect(screen.scroll == 0)
    }

    /// A scroll left bigger than the timeline (a window made taller since, a scroll set by old
    /// code) is taken from where the pane really is: PageDown moves on the first press.
    @Test func pageDownStartsFromWhereThePaneIs() {
        var screen = Self.history(40)
        screen.scroll = 500
        screen.pageDown(width: 40, height: 12)
        #expect(screen.scroll == 25)
        for _ in 0..<10 { screen.pageUp(width: 40, height: 12) }
        #expect(screen.scroll == 35)
        // Taller: 26 rows for the timeline, so only 17 lines are above the pane's top.
        #expect(screen.maxScroll(width: 40, height: 30) == 17)
        screen.pageDown(width: 40, height: 30)
        #expect(screen.scroll == 7)
    }

    /// PageUp asks for an older page once the pane's top is within 20 lines of the oldest line
    /// loaded (and when everything fits), never before, and it still asks at the top after clamping.
    @Test func pageUpAsksForOlderMessagesNearTheTop() {
        var long = Self.history(100)
        #expect(long.maxScroll(width: 40, height: 12) == 95)
        var asked: [Bool] = []
        for _ in 0..<12 { asked.append(long.pageUp(width: 40, height: 12)) }
        #expect(asked == [false, false, false, false, false, false, false, true, true, true, true, true])
        #expect(long.scroll == 95)

        var short = Self.history(3)
        #expect(short.maxScroll(width: 40, height: 12) == 0)
        let asks = short.pageUp(width: 40, height: 12)
        #expect(asks, "all of it fits: load older at once")
        #expect(short.scroll == 0)
    }

    /// The typing line takes a row from the timeline, so one more line can be scrolled.
    @Test func theTypingLineLeavesOneMoreLineToScroll() {
        var screen = Self.history(40)
        screen.typingLine = "Bob is typing…"
        #expect(screen.maxScroll(width: 40, height: 12) == 36)
        for _ in 0..<9 { screen.pageUp(width: 40, height: 12) }
        #expect(screen.scroll == 36)
    }

    /// Property: `maxScroll` is exactly where the pane stops moving: scrolling further draws the
    /// same frame, one line less draws another; PageUp stops there and PageDown counts back down
    /// in as many presses as it took up.
    @Test(arguments: [UInt64(701), 702, 703, 704, 705])
    func maxScrollIsWhereThePaneStops(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        for round in 0..<25 {
            var messages: [LocalMessage] = []
            var at = -20_000.0
            for index in 0..<Int.random(in: 0...45, using: &generator) {
                at += Double([5, 30, 400, 3_000].randomElement(using: &generator)!)
                let words = (0..<Int.random(in: 1...30, using: &generator)).map { "w\(index)x\($0)" }.joined(separator: " ")
                messages.append(Self.message(Int64(index + 1), from: Bool.random(using: &generator) ? Self.bob : Self.me, words, at: at))
            }
            var screen = Self.chat(messages)
            if Bool.random(using: &generator) { screen.typingLine = "Bob is typing…" }
            let width = Int.random(in: 20...140, using: &generator), height = Int.random(in: 6...45, using: &generator)
            let most = screen.maxScroll(width: width, height: height)
            let context = "seed \(seed) round \(round) \(messages.count) messages \(width)x\(height) max \(most)"
            func frame(_ scroll: Int) -> [String] {
                var copy = screen
                copy.scroll = scroll
                return copy.render(width: width, height: height)
            }
            #expect(frame(most + 1) == frame(most), "\(context)")
            #expect(frame(most + 100) == frame(most), "\(context)")
            if most > 0 { #expect(frame(most - 1) != frame(most), "\(context)") }
            var presses = 0
            while screen.scroll < most, presses < 1_000 {
                screen.pageUp(width: width, height: height)
                presses += 1
            }
            #expect(presses == (most + 9) / 10, "\(context)")
            for _ in 0..<3 { screen.pageUp(width: width, height: height) }
            #expect(screen.scroll == most, "\(context)")
            var downs = 0
            while screen.scroll > 0 {
                screen.pageDown(width: width, height: height)
                downs += 1
            }
            #expect(downs == presses, "\(context)")
        }
    }
}
