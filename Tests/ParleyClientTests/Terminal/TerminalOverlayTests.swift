import Foundation
@testable import ParleyTerminal
import ParleyTestSupport
import Testing

/// The terminal's fitting and overlay helpers (`ChatScreen.fitStyled`, `overlayWindow`,
/// `colour(for:)`) and the commands the other suites leave out (`/thread`, `/pin`, `/mute`):
/// a styled line is exactly its width however it is cut, an overlay wraps and scrolls inside
/// its pane, and a typo never pins or opens the wrong message.
@Suite struct TerminalOverlayTests {
    static func fit(_ line: String, _ width: Int) -> String { ChatScreen().fitStyled(line, width: width) }
    static func visible(_ line: String) -> String { ChatScreen.stripStyles(line) }

    // MARK: Fitting a styled line

    @Test(arguments: [
        ("ab", 5, "ab   "), ("abcdef", 3, "abc"), ("日本語", 4, "日本"), ("a日", 2, "a "), ("a日b", 2, "a "), ("👨‍👩‍👧x", 2, "👨‍👩‍👧"),
        ("e\u{301}e\u{301}", 1, "e\u{301}"), ("", 3, "   "), ("abc", 0, ""),
    ])
    func aLineIsCutOrPaddedToExactlyItsWidth(line: String, width: Int, shown: String) {
        let fitted = Self.fit(line, width)
        #expect(Self.visible(fitted) == shown)
        #expect(TerminalText.width(Self.visible(fitted)) == width)
    }

    /// Styles take no columns; a cut inside a styled run ends with a reset, so the colour does
    /// not bleed into the next pane or line.
    @Test func stylesAreKeptAndACutResets() {
        let styled = "› " + Style.boldColour(39).apply("Ada") + " " + Style.dim.apply("12:30")
        let whole = Self.fit(styled, 20)
        #expect(Self.visible(whole) == "› Ada 12:30" + String(repeating: " ", count: 9))
        let cut = Self.fit(styled, 4)
        #expect(Self.visible(cut) == "› Ad")
        #expect(cut.hasSuffix(Style.plain.sgr), "\(cut.debugDescription)")
        #expect(cut.contains(Style.boldColour(39).sgr))
    }

    /// Property: whatever the text and styles, the fitted line is exactly `width` columns.
    @Test(arguments: [UInt64(601), 602, 603])
    func everyFittedLineIsExactlyItsWidth(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        let styles: [Style] = [.plain, .bold, .dim, .reverse, .colour(70), .boldColour(214)]
        for _ in 0..<300 {
            var line = ""
            for _ in 0..<Int.random(in: 0...4, using: &generator) {
                // Each piece starts with a letter, as a screen's do: a joiner or a half flag right
                // after an escape would be measured differently by a person and by the stripped text.
                let text = "x" + TerminalText.sanitize(TerminalTestStrings.mixed(Int.random(in: 0...6, using: &generator), using: &generator))
                line += styles.randomElement(using: &generator)!.apply(text)
            }
            let width = Int.random(in: 0...25, using: &generator)
            #expect(ChatScreen.visibleWidth(Self.fit(line, width)) == width, "\(line.debugDescription) to \(width)")
        }
    }

    // MARK: Overlays

    /// Nothing to show in no room.
    @Test func noRoomShowsNothing() {
        #expect(ChatScreen.overlayWindow(["help"], scroll: 0, width: 40, rows: 0).isEmpty)
        #expect(ChatScreen.overlayWindow(["help"], scroll: 0, width: 4, rows: 10).isEmpty)
    }

    /// A two-column line that does not fit becomes its command, then what it does indented.
    @Test func aTwoColumnLineThatDoesNotFitBreaksAtItsColumns() {
        let lines = ChatScreen.overlayWindow(["/dm EMAIL" + String(repeating: " ", count: 21) + "a direct conversation"], scroll: 0, width: 20, rows: 10)
        #expect(lines == [" /dm EMAIL", "   a direct", "   conversation"])
        let fits = ChatScreen.overlayWindow(["/dm EMAIL   talk"], scroll: 0, width: 40, rows: 10)
        #expect(fits == [" /dm EMAIL   talk"], "a line that fits is left as it is")
    }

    /// What an overlay shows (a help text, a pinned message, someone's profile) is made inert.
    @Test func overlayTextIsSanitized() {
        let lines = ChatScreen.overlayWindow(["pinned: \u{1B}]52;c;eA==\u{7} hi\u{202E}"], scroll: 0, width: 60, rows: 5)
        #expect(lines == [" pinned: \u{FFFD}]52;c;eA==\u{FFFD} hi\u{FFFD}"])
    }

    /// More lines than rows: a window of `rows - 1` lines and where it is, the scroll kept
    /// inside the text at both ends.
    @Test(arguments: [(0, 1), (-5, 1), (3, 4), (7, 8), (100, 8)])
    func aLongOverlayScrollsWithinItsText(scroll: Int, first: Int) {
        let overlay = (1...10).map { "line \($0)" }
        let lines = ChatScreen.overlayWindow(overlay, scroll: scroll, width: 40, rows: 4)
        #expect(lines.count == 4)
        #expect(Array(lines.prefix(3)) == (first..<first + 3).map { " line \($0)" })
        #expect(Self.visible(lines[3]) == " \(first)–\(first + 2)/10 PgUp/PgDn")
    }

    @Test func anOverlayThatFitsHasNoPositionLine() {
        #expect(ChatScreen.overlayWindow(["a", "b", "", "c"], scroll: 3, width: 10, rows: 4) == [" a", " b", " ", " c"])
        let one = ChatScreen.overlayWindow(["a", "b"], scroll: 0, width: 30, rows: 1)
        #expect(one.count == 1 && Self.visible(one[0]) == " PgDn: more")
    }

    /// Property: every line of the help overlay fits any pane it is shown in.
    @Test(arguments: [5, 12, 20, 31, 47, 80])
    func theHelpFitsAnyPane(width: Int) {
        let lines = ChatScreen.overlayWindow(ChatCommand.helpLines, scroll: 0, width: width, rows: 500)
        #expect(!lines.isEmpty)
        for line in lines {
            #expect(ChatScreen.visibleWidth(line) <= width, "\(line.debugDescription) in \(width)")
        }
    }

    /// The help's columns are split where the overlay splits them: the first run of three
    /// spaces ends the command, and what it does starts at column 30 or later.
    @Test func theHelpsColumnsAreWhereTheOverlaySplitsThem() throws {
        for line in ChatCommand.helpLines.dropLast() {
            let gap = try #require(line.range(of: "   "), "\(line)")
            let command = String(line[..<gap.lowerBound])
            #expect(command.hasPrefix("/") || command.hasPrefix("@"), "\(line)")
            let does = line[gap.upperBound...].drop { $0 == " " }
            #expect(line.distance(from: line.startIndex, to: does.startIndex) >= 30, "\(line)")
        }
    }

    // MARK: Name colours

    /// A name always gets the same colour, from the readable palette, whatever the name.
    @Test func aNameAlwaysGetsItsColour() {
        let palette: Set<Int> = [167, 172, 107, 73, 140, 175, 109, 137]
        var seen = Set<Int>()
        for index in 0..<200 {
            let name = index.isMultiple(of: 2) ? "user\(index)" : String(repeating: "日本👍", count: index)
            let colour = ChatScreen.colour(for: name)
            #expect(palette.contains(colour) && ChatScreen.colour(for: name) == colour)
            seen.insert(colour)
        }
        #expect(seen == palette, "every colour is used")
        #expect(palette.contains(ChatScreen.colour(for: "")))
    }

    // MARK: Commands the other suites leave out

    @Test(arguments: [
        ("/thread", ChatCommand.thread(message: nil)), ("/t 3", .thread(message: 3)), ("/THREAD  12 ", .thread(message: 12)),
        ("/pin", .pin(message: nil, pinned: true)), ("/pin 2", .pin(message: 2, pinned: true)), ("/unpin 2", .pin(message: 2, pinned: false)),
        ("/pins", .pins), ("/pinned", .pins), ("/mute", .mute(true)), ("/mute off", .mute(false)), ("/mute OFF", .mute(false)),
        ("/unmute", .mute(false)), ("\t/pins", .pins),
    ])
    func threadsPinsAndMuting(line: String, expected: ChatCommand) {
        #expect(ChatCommand.parse(line) == expected)
    }

    /// A typo after /thread, /pin or /unpin names no message: it is refused, never taken for
    /// the highlighted one (a pin shows to everyone).
    @Test(arguments: ["/thread abc", "/t 0", "/pin last", "/pin 100000", "/unpin -2", "/unpin 2x"])
    func aNumberThatIsNotOneIsRefused(line: String) throws {
        guard case .invalid(let reason) = try #require(ChatCommand.parse(line)) else {
            Issue.record("\(line) was accepted")
            return
        }
        #expect(reason.contains("N is a message number"), "\(reason)")
    }

    @Test func muteTakesOnlyOff() {
        #expect(ChatCommand.parse("/mute please") == .invalid("/mute, or /mute off"))
    }

    /// A line with a line break is a message even when it starts with "/" (a pasted
    /// paragraph starting with a path must not run a command).
    @Test(arguments: ["/quit\n", "/delete 1\nsorry", "/leave\r", "/pin 2\r\nhello"])
    func aLineWithABreakIsAMessage(line: String) {
        #expect(ChatCommand.parse(line) == nil)
    }
}
