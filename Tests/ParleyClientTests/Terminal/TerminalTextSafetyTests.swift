import Foundation
import ParleyTerminal
import ParleyTestSupport
import Testing

/// What other people type, made inert and measured: no escape sequence, control or bidi
/// override reaches the terminal, and every width, cut and wrap agrees with the columns a
/// terminal really uses (CJK, emoji, ZWJ sequences, flags, combining marks).
@Suite struct TerminalTextSafetyTests {
    // MARK: Sanitizing

    /// Each attack a chat user can type, and exactly what the terminal is given instead.
    @Test(arguments: [
        ("clear \u{1B}[2Jscreen", "clear \u{FFFD}[2Jscreen"),
        ("\u{1B}[31mred", "\u{FFFD}[31mred"),
        ("go \u{1B}]8;;https://evil.example\u{07}here\u{1B}]8;;\u{07}", "go \u{FFFD}]8;;https://evil.example\u{FFFD}here\u{FFFD}]8;;\u{FFFD}"),
        ("\u{1B}]52;c;ZXZpbA==\u{07}", "\u{FFFD}]52;c;ZXZpbA==\u{FFFD}"),
        ("\u{1B}]0;pwned\u{1B}\\", "\u{FFFD}]0;pwned\u{FFFD}\\"),
        ("\u{9B}2J", "\u{FFFD}2J"),
        ("\u{9D}0;t\u{9C}", "\u{FFFD}0;t\u{FFFD}"),
        ("a\u{85}b", "a\u{FFFD}b"),
        ("del\u{7F}", "del\u{FFFD}"),
        ("nul\u{0}x", "nul\u{FFFD}x"),
        ("over\rwrite", "over\u{FFFD}write"),
        ("back\u{08}\u{08}", "back\u{FFFD}\u{FFFD}"),
        ("bell\u{07}", "bell\u{FFFD}"),
        ("invoice_\u{202E}fdp.exe", "invoice_\u{FFFD}fdp.exe"),
        ("\u{2066}isolate\u{2069}", "\u{FFFD}isolate\u{FFFD}"),
        ("\u{202A}\u{202B}\u{202C}\u{202D}", "\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}"),
        ("\u{2067}\u{2068}", "\u{FFFD}\u{FFFD}"),
        ("mark\u{200E}\u{200F}\u{061C}", "mark\u{FFFD}\u{FFFD}\u{FFFD}"),
        ("col1\tcol2", "col1 col2"),
        ("line1\nline2", "line1\u{FFFD}line2"),
        ("日本語 👨‍👩‍👧 e\u{301}", "日本語 👨‍👩‍👧 e\u{301}"),
    ])
    func everyControlBecomesAVisibleReplacement(input: String, expected: String) {
        #expect(TerminalText.sanitize(input) == expected)
    }

    /// Every C0 and C1 control and DEL is replaced one for one, so a name cannot move the cursor,
    /// ring the bell or start a sequence; printable ASCII and Latin-1 pass untouched.
    @Test func theWholeControlRangeIsMappedScalarForScalar() {
        for value in UInt32(0)...0xFF {
            let scalar = Unicode.Scalar(value)!
            let out = Array(TerminalText.sanitize(String(scalar)).unicodeScalars)
            let kept = Array(TerminalText.sanitize(String(scalar), keepingNewlines: true).unicodeScalars)
            switch value {
            case 0x09:
                #expect(out == [" "] && kept == [" "], "tab")
            case 0x0A:
                #expect(out == ["\u{FFFD}"] && kept == ["\n"], "newline")
            case 0x00...0x1F, 0x7F...0x9F:
                #expect(out == ["\u{FFFD}"] && kept == ["\u{FFFD}"], "U+\(String(value, radix: 16))")
            default:
                #expect(out == [scalar] && kept == [scalar], "U+\(String(value, radix: 16))")
            }
        }
    }

    /// A Windows line ending keeps the line break but never a bare CR (which would return the
    /// cursor to the start of the line and let the next line overwrite it).
    @Test func aCarriageReturnNeverSurvivesEvenInsideCRLF() {
        let clean = TerminalText.sanitize("first\r\nsecond\rthird", keepingNewlines: true)
        #expect(!clean.unicodeScalars.contains("\r"))
        #expect(clean.unicodeScalars.filter { $0 == "\n" }.count == 1)
        #expect(clean.hasPrefix("first") && clean.hasSuffix("third"))
    }

    /// Property: for random hostile text, the output is the input with exactly the dangerous
    /// scalars replaced (none dropped, none added), and sanitizing twice changes nothing.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6, 7, 8])
    func sanitizingIsAScalarForScalarMapAndIdempotent(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<200 {
            let input = TerminalTestStrings.mixed(Int.random(in: 0...12, using: &generator), using: &generator, newlines: true)
            for keepingNewlines in [false, true] {
                let output = TerminalText.sanitize(input, keepingNewlines: keepingNewlines)
                let expected = input.unicodeScalars.map { scalar -> Unicode.Scalar in
                    if scalar == "\t" { return " " }
                    if scalar == "\n" && keepingNewlines { return scalar }
                    return TerminalTestStrings.isDangerous(scalar) ? "\u{FFFD}" : scalar
                }
                #expect(Array(output.unicodeScalars) == expected, "seed \(seed): \(input.debugDescription)")
                #expect(TerminalText.sanitize(output, keepingNewlines: keepingNewlines) == output)
                #expect(!output.unicodeScalars.contains { TerminalTestStrings.isDangerous($0) && !($0 == "\n" && keepingNewlines) })
            }
        }
    }

    // MARK: Widths

    /// The columns a terminal gives each kind of character (a wrong answer overflows the pane or
    /// leaves a gap).
    @Test(arguments: [
        ("a", 1), ("é", 1), ("ß", 1), ("…", 1), ("─", 1), ("\u{FFFD}", 1), ("❤", 1),
        ("日", 2), ("語", 2), ("한", 2), ("\u{1112}\u{1161}\u{11AB}", 2), ("Ａ", 2), ("\u{3000}", 2), ("𠀀", 2),
        ("ｶ", 1),
        ("👍", 2), ("😀", 2), ("👍🏽", 2), ("👨‍👩‍👧", 2), ("👩🏽‍💻", 2), ("🇯🇵", 2), ("🏳️‍🌈", 2), ("❤️", 2), ("1️⃣", 2),
        ("e\u{301}", 1), ("a\u{308}\u{323}", 1), ("\u{301}", 0), ("\u{200B}", 0), ("\u{FEFF}", 0), ("\u{20DD}", 0),
    ])
    func eachCharacterTakesTheColumnsATerminalGivesIt(character: String, columns: Int) throws {
        #expect(character.count == 1, "a single grapheme: \(character.debugDescription)")
        let only = try #require(character.first)
        #expect(TerminalText.width(of: only) == columns, "\(character.debugDescription)")
        #expect(TerminalText.width(character) == columns)
    }

    /// A string's width is the sum of its characters' widths, never negative, at most 2 a character.
    @Test(arguments: [UInt64(11), 12, 13])
    func aStringsWidthIsTheSumOfItsCharacters(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<300 {
            let text = TerminalText.sanitize(TerminalTestStrings.mixed(Int.random(in: 0...10, using: &generator), using: &generator))
            let perCharacter = text.map { TerminalText.width(of: $0) }
            #expect(perCharacter.allSatisfy { (0...2).contains($0) }, "\(text.debugDescription)")
            #expect(TerminalText.width(text) == perCharacter.reduce(0, +))
        }
    }

    // MARK: Cutting and padding

    @Test(arguments: [
        ("hello", 5, true, "hello"), ("hello", 4, true, "hel…"), ("hello", 1, true, "…"), ("hello", 0, true, ""),
        ("hello", -3, true, ""), ("hello", 4, false, "hell"),
        ("日本語です", 5, true, "日本…"), ("日本語です", 4, true, "日…"), ("日本語です", 4, false, "日本"),
        ("日本語です", 3, false, "日"), ("日本", 1, false, ""), ("日本", 1, true, "…"), ("日本", 2, true, "…"),
        ("👨‍👩‍👧👨‍👩‍👧", 3, true, "👨‍👩‍👧…"), ("👨‍👩‍👧👨‍👩‍👧", 3, false, "👨‍👩‍👧"),
        ("🇯🇵🇫🇷🇩🇪", 5, true, "🇯🇵🇫🇷…"), ("e\u{301}e\u{301}e\u{301}", 2, true, "e\u{301}…"),
        ("e\u{301}e\u{301}e\u{301}", 3, true, "e\u{301}e\u{301}e\u{301}"),
    ])
    func truncationNeverSplitsAGraphemeOrOverflows(text: String, columns: Int, ellipsis: Bool, expected: String) {
        let cut = TerminalText.truncate(text, to: columns, ellipsis: ellipsis)
        #expect(cut == expected)
        #expect(Array(cut.unicodeScalars) == Array(expected.unicodeScalars), "no grapheme is recomposed or split")
    }

    /// Property: a cut is never wider than asked, keeps whole characters from the start, and
    /// keeps as many as fit (a cut that drops one more than needed hides text for nothing).
    @Test(arguments: [UInt64(21), 22, 23, 24])
    func truncationKeepsTheLongestPrefixThatFits(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<300 {
            let text = TerminalTestStrings.printable(Int.random(in: 0...10, using: &generator), using: &generator)
            let columns = Int.random(in: 0...24, using: &generator)
            let ellipsis = Bool.random(using: &generator)
            let cut = TerminalText.truncate(text, to: columns, ellipsis: ellipsis)
            #expect(TerminalText.width(cut) <= max(0, columns), "\(text.debugDescription) to \(columns)")
            if columns > 0, TerminalText.width(text) <= columns {
                #expect(cut == text, "what fits is left alone")
                continue
            }
            guard columns > 0 else {
                #expect(cut.isEmpty)
                continue
            }
            let kept = ellipsis ? Array(cut.dropLast()) : Array(cut)
            if ellipsis { #expect(cut.last == "…") }
            let characters = Array(text)
            #expect(Array(characters.prefix(kept.count)) == kept, "a prefix of whole characters")
            let budget = ellipsis ? columns - 1 : columns
            let keptWidth = kept.reduce(0) { $0 + TerminalText.width(of: $1) }
            #expect(keptWidth + TerminalText.width(of: characters[kept.count]) > budget, "the next character would not fit")
        }
    }

    /// Property: padding gives exactly the columns asked for, whatever the text.
    @Test(arguments: [UInt64(31), 32])
    func paddingAlwaysFillsExactlyTheColumns(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<300 {
            let text = TerminalText.sanitize(TerminalTestStrings.mixed(Int.random(in: 0...8, using: &generator), using: &generator))
            let columns = Int.random(in: 0...30, using: &generator)
            let padded = TerminalText.pad(text, to: columns)
            #expect(TerminalText.width(padded) == columns, "\(text.debugDescription) to \(columns)")
        }
    }

    // MARK: Wrapping

    @Test(arguments: [
        ("", 5, [""]),
        ("a\n", 5, ["a", ""]),
        ("\n\n", 3, ["", "", ""]),
        ("abc", 0, []),
        ("the quick brown fox", 9, ["the quick", "brown fox"]),
        ("日本語のテキスト", 5, ["日本", "語の", "テキ", "スト"]),
        ("日本 語の テキスト", 6, ["日本", "語の", "テキス", "ト"]),
        ("👨‍👩‍👧👨‍👩‍👧👨‍👩‍👧", 3, ["👨‍👩‍👧", "👨‍👩‍👧", "👨‍👩‍👧"]),
        ("🇯🇵🇫🇷🇩🇪", 4, ["🇯🇵🇫🇷", "🇩🇪"]),
        ("e\u{301}e\u{301}e\u{301}", 2, ["e\u{301}e\u{301}", "e\u{301}"]),
        ("ok 👍🏽👍🏽", 4, ["ok", "👍🏽👍🏽"]),
        ("a  b", 10, ["a  b"]),
        ("short\nand a longer line", 8, ["short", "and a", "longer", "line"]),
    ])
    func wrappingBreaksAtSpacesAndNeverInsideACharacter(text: String, columns: Int, expected: [String]) {
        let lines = TerminalText.wrap(text, to: columns)
        #expect(lines == expected)
        #expect(lines.map { Array($0.unicodeScalars) } == expected.map { Array($0.unicodeScalars) })
    }

    /// A pane one column wide (a tiny split window) must still wrap a wide character: it goes on
    /// a line of its own instead of the wrap looping forever.
    @Test func wrappingAWideCharacterIntoOneColumnTerminates() {
        #expect(TerminalText.wrap("日本", to: 1) == ["日", "本"])
        #expect(TerminalText.wrap("a👍b", to: 1) == ["a", "👍", "b"])
    }

    /// Property: no wrapped line is wider than the pane (one column included), no line holds a line break, and no
    /// character is lost or changed (only the spaces where lines break go).
    @Test(arguments: [UInt64(41), 42, 43, 44, 45])
    func wrappingKeepsEveryCharacterWithinTheWidth(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<250 {
            let raw = TerminalTestStrings.mixed(Int.random(in: 0...16, using: &generator), using: &generator, newlines: true)
            let text = TerminalText.sanitize(raw, keepingNewlines: true)
            let columns = Int.random(in: 1...30, using: &generator)
            let lines = TerminalText.wrap(text, to: columns)
            // Only a character wider than the whole line may stand alone on a wider line.
            #expect(lines.allSatisfy { TerminalText.width($0) <= columns || $0.count == 1 },
                    "seed \(seed): \(text.debugDescription) to \(columns): \(lines)")
            #expect(!lines.contains { $0.contains("\n") })
            #expect(lines.count >= text.filter { $0 == "\n" }.count + 1, "every line break starts a line")
            let content = { (s: String) in s.unicodeScalars.filter { $0 != " " && $0 != "\n" }.map(\.value) }
            #expect(content(lines.joined(separator: "\n")) == content(text), "seed \(seed): \(text.debugDescription)")
        }
    }

    // MARK: Styles

    /// Our own styles are plain SGR sequences that the screen's width arithmetic skips; a style
    /// that left anything visible behind would shift every column after it.
    @Test(arguments: [
        (Style.plain, "text"), (Style.bold, "\u{1B}[1mtext\u{1B}[0m"), (Style.dim, "\u{1B}[2mtext\u{1B}[0m"),
        (Style.italic, "\u{1B}[3mtext\u{1B}[0m"), (Style.reverse, "\u{1B}[7mtext\u{1B}[0m"),
        (Style.colour(214), "\u{1B}[38;5;214mtext\u{1B}[0m"), (Style.boldColour(39), "\u{1B}[1;38;5;39mtext\u{1B}[0m"),
    ])
    func stylesAreSGRThatTakeNoColumns(style: Style, expected: String) {
        let styled = style.apply("text")
        #expect(styled == expected)
        #expect(ChatScreen.stripStyles(styled) == "text")
        #expect(ChatScreen.stripStyles(Style.bold.apply(Style.colour(70).apply("日本👍"))) == "日本👍")
    }
}
