import Foundation
import ParleyTerminal
import ParleyTestSupport
import Testing

/// Raw terminal bytes decoded into keys (escape sequences, controls, UTF-8, however the reads
/// split them) and the input line they edit (cursor by grapheme, history, deletions).
@Suite struct TerminalKeysTests {
    // MARK: Escape sequences

    /// Every key a terminal sends as a sequence, in both the CSI and SS3 forms and with
    /// modifiers: a missed one shows up as stray "[A" typed into the message.
    @Test(arguments: [
        ("\u{1B}[A", Key.up), ("\u{1B}[B", .down), ("\u{1B}[C", .right), ("\u{1B}[D", .left),
        ("\u{1B}[H", .home), ("\u{1B}[F", .end), ("\u{1B}[Z", .backTab),
        ("\u{1B}OA", .up), ("\u{1B}OB", .down), ("\u{1B}OC", .right), ("\u{1B}OD", .left), ("\u{1B}OH", .home), ("\u{1B}OF", .end),
        ("\u{1B}[1~", .home), ("\u{1B}[7~", .home), ("\u{1B}[4~", .end), ("\u{1B}[8~", .end),
        ("\u{1B}[3~", .delete), ("\u{1B}[5~", .pageUp), ("\u{1B}[6~", .pageDown),
        ("\u{1B}[1;5C", .right), ("\u{1B}[1;5D", .left), ("\u{1B}[1;2A", .up), ("\u{1B}[1;3B", .down),
    ])
    func sequencesBecomeKeys(sequence: String, key: Key) {
        var parser = KeyParser()
        #expect(parser.feed(Array(sequence.utf8)) == [key])
        #expect(parser.feed(Array("x".utf8)) == [.character("x")], "nothing left pending after \(sequence.debugDescription)")
    }

    /// Keys the client has no use for (Insert, F-keys, focus, the paste markers) are swallowed
    /// whole: none of their bytes is typed into the message.
    @Test(arguments: ["\u{1B}[2~", "\u{1B}OP", "\u{1B}OS", "\u{1B}[15~", "\u{1B}[24~", "\u{1B}[I", "\u{1B}[O", "\u{1B}[3;5~", "\u{1B}[1;5P"])
    func unknownSequencesAreSwallowedWhole(sequence: String) {
        var parser = KeyParser()
        #expect(parser.feed(Array((sequence + "ok").utf8)) == [.character("o"), .character("k")])
    }

    /// Escape alone, Escape before a non-sequence byte (Alt-x), and two Escapes.
    @Test func escapeOnItsOwnIsTheEscapeKey() {
        var parser = KeyParser()
        #expect(parser.feed([0x1B]) == [.escape])
        #expect(parser.feed(Array("\u{1B}x".utf8)) == [.escape, .character("x")])
        #expect(parser.feed([0x1B, 0x1B]) == [.escape, .escape])
        #expect(parser.feed(Array("a\u{1B}".utf8)) == [.character("a"), .escape])
    }

    /// A sequence cut anywhere after its "[" waits for the rest of it, however many reads.
    @Test func aSequenceCutAfterItsIntroducerWaitsForItsEnd() {
        for sequence in ["\u{1B}[A", "\u{1B}[5~", "\u{1B}[1;5C", "\u{1B}OH", "\u{1B}[15~"] {
            let bytes = Array(sequence.utf8)
            let expected = KeyParser().feeding(bytes)
            for cut in 2..<bytes.count {
                var parser = KeyParser()
                #expect(parser.feed(Array(bytes[..<cut])) == [], "\(sequence.debugDescription) cut at \(cut)")
                #expect(parser.feed(Array(bytes[cut...])) == expected)
            }
        }
    }

    // MARK: Control bytes

    /// Each control byte a keyboard sends: Ctrl-letters, Enter in both forms, Tab, both
    /// Backspaces; NUL and the unused C0 bytes are dropped rather than typed.
    @Test func controlBytesMapToTheirKeys() {
        var expected: [UInt8: [Key]] = [0x00: [], 0x08: [.backspace], 0x09: [.tab], 0x0A: [.enter], 0x0D: [.enter], 0x7F: [.backspace]]
        for byte in UInt8(0x01)...0x1A where expected[byte] == nil {
            expected[byte] = [.control(Character(Unicode.Scalar(byte + 0x60)))]
        }
        for byte in UInt8(0x1C)...0x1F { expected[byte] = [] }
        for byte in UInt8(0x00)...0x1F where byte != 0x1B {
            var parser = KeyParser()
            #expect(parser.feed([byte]) == expected[byte], "byte 0x\(String(byte, radix: 16))")
        }
        var parser = KeyParser()
        #expect(parser.feed([0x03, 0x04, 0x0C, 0x15, 0x17, 0x0B]) == [.control("c"), .control("d"), .control("l"), .control("u"), .control("w"), .control("k")])
    }

    // MARK: UTF-8

    /// A character whose bytes arrive in two reads is one key, wherever the cut falls.
    @Test func utf8SplitAtEveryByteDecodesTheSame() {
        let text = "aé日👍🏽🇯🇵ß"
        let bytes = Array(text.utf8)
        let whole = KeyParser().feeding(bytes)
        #expect(whole.count == text.unicodeScalars.count)
        #expect(whole.map { if case .character(let c) = $0 { String(c) } else { "?" } }.joined() == text)
        for cut in 0...bytes.count {
            var parser = KeyParser()
            let keys = parser.feed(Array(bytes[..<cut])) + parser.feed(Array(bytes[cut...]))
            #expect(keys == whole, "cut at \(cut)")
        }
    }

    /// A broken UTF-8 byte (a stray continuation, a lead byte cut short by another key) shows
    /// as one replacement character and never swallows the key after it, such as Enter.
    @Test(arguments: [
        ([UInt8(0x80), 0x61], [Key.character("\u{FFFD}"), .character("a")]),
        ([0xC3, 0x0D], [.character("\u{FFFD}"), .enter]),
        ([0xE6, 0x97, 0x0D], [.character("\u{FFFD}"), .enter]),
        ([0xF0, 0x9F, 0x1B, 0x5B, 0x41], [.character("\u{FFFD}"), .up]),
        ([0xE1, 0x61, 0x62], [.character("\u{FFFD}"), .character("a"), .character("b")]),
    ])
    func brokenUTF8NeverEatsTheNextKey(bytes: [UInt8], expected: [Key]) {
        var parser = KeyParser()
        #expect(parser.feed(bytes) == expected)
    }

    /// Property: random keystrokes (characters, controls, sequences) give the same keys however
    /// the reads split them, except a cut right after a lone ESC (that is the Escape key).
    @Test(arguments: [UInt64(101), 102, 103, 104, 105])
    func keysDoNotDependOnHowReadsSplitTheBytes(seed: UInt64) {
        let tokens = ["a", "Z", " ", "é", "日", "👍", "👨‍👩‍👧", "\r", "\u{7F}", "\t", "\u{03}", "\u{17}",
                      "\u{1B}[A", "\u{1B}[D", "\u{1B}[3~", "\u{1B}[1;5C", "\u{1B}OH", "\u{1B}[5~", "\u{1B}[2~", "\u{1B}[Z"]
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<200 {
            let bytes = Array((0..<Int.random(in: 1...12, using: &generator)).map { _ in tokens.randomElement(using: &generator)! }.joined().utf8)
            let whole = KeyParser().feeding(bytes)
            let cuts = (0..<3).map { _ in Int.random(in: 0...bytes.count, using: &generator) }
                .filter { $0 == 0 || bytes[$0 - 1] != 0x1B }.sorted()
            var parser = KeyParser()
            var keys: [Key] = []
            var start = 0
            for cut in cuts + [bytes.count] {
                keys += parser.feed(Array(bytes[start..<cut]))
                start = cut
            }
            #expect(keys == whole, "seed \(seed): \(bytes) cut at \(cuts)")
        }
    }

    // MARK: The input line

    /// An emoji with a skin tone, a flag or a ZWJ family arrives as several keys (one per
    /// scalar): the line holds one character and the cursor stays on the text, so typing on
    /// (and drawing the line) cannot run past its end.
    @Test(arguments: ["👍🏽", "🇯🇵", "👨‍👩‍👧", "e\u{301}", "❤️", "1️⃣", "🏳️‍🌈"])
    func aCharacterTypedAsSeveralScalarsKeepsTheCursorOnTheText(character: String) {
        var line = LineEditor()
        for key in KeyParser().feeding(Array(character.utf8)) { line.handle(key) }
        #expect(line.text == character && line.cursor == line.text.count)
        line.handle(.character("!"))
        #expect(line.text == character + "!" && line.cursor == line.text.count)
        line.handle(.backspace)
        line.handle(.backspace)
        #expect(line.text.isEmpty && line.cursor == 0, "one Backspace takes the whole character")
        var screen = ChatScreen()
        screen.input.set("x")
        for key in KeyParser().feeding(Array((character + character).utf8)) { screen.input.handle(key) }
        let lines = screen.render(width: 30, height: 8)
        #expect(ChatScreen.stripStyles(lines[6]).hasPrefix("> x" + character + character))
        #expect(screen.cursor(width: 30, height: 8).column == 3 + 2 * TerminalText.width(character))
    }

    /// Property: whatever is typed, pasted or deleted, the cursor stays within the text and the
    /// text holds no control character.
    @Test(arguments: [UInt64(201), 202, 203, 204, 205, 206])
    func theCursorNeverLeavesTheText(seed: UInt64) {
        let characters: [Character] = ["a", "b", " ", "日", "👍", "\u{1F3FD}", "\u{200D}", "👩", "\u{301}", "\u{1F1EF}", "\u{1F1F5}", "\u{FE0F}"]
        let scalars = characters.map { Key.character($0) }
        let editing: [Key] = [.backspace, .delete, .left, .right, .home, .end, .control("a"), .control("e"), .control("u"),
                              .control("k"), .control("w"), .up, .down, .paste("p\u{1B}[2J\u{301}q"), .paste("🇯🇵 \n x")]
        var generator = SeededGenerator(seed: seed)
        var line = LineEditor()
        for step in 0..<2_000 {
            let key = Int.random(in: 0..<3, using: &generator) == 0 ? editing.randomElement(using: &generator)! : scalars.randomElement(using: &generator)!
            line.handle(key)
            if step % 97 == 0 { _ = line.submit() }
            #expect((0...line.text.count).contains(line.cursor), "seed \(seed) step \(step): \(line.text.debugDescription) cursor \(line.cursor)")
            #expect(!line.text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x1B }, "seed \(seed)")
        }
    }

    /// Editing keys on the text "one two three" with the cursor in several places.
    @Test(arguments: [
        (13, Key.control("w"), "one two ", 8), (8, .control("w"), "one three", 4), (9, .control("w"), "one two hree", 8),
        (0, .control("w"), "one two three", 0), (7, .control("u"), " three", 0), (7, .control("k"), "one two", 7),
        (0, .backspace, "one two three", 0), (13, .delete, "one two three", 13), (4, .delete, "one wo three", 4),
        (4, .backspace, "onetwo three", 3), (0, .left, "one two three", 0), (13, .right, "one two three", 13),
        (5, .home, "one two three", 0), (5, .control("a"), "one two three", 0), (5, .end, "one two three", 13),
        (5, .control("e"), "one two three", 13),
    ])
    func editingKeysChangeTheTextAroundTheCursor(cursor: Int, key: Key, text: String, after: Int) {
        var line = LineEditor(text: "one two three")
        for _ in 0..<(13 - cursor) { line.handle(.left) }
        #expect(line.cursor == cursor)
        let handled = line.handle(key)
        #expect(handled)
        #expect(line.text == text && line.cursor == after)
    }

    /// Ctrl-W over trailing spaces takes the spaces and the word before them.
    @Test func deletingAWordTakesTheSpacesBeforeTheCursorToo() {
        var line = LineEditor(text: "foo bar   ")
        line.handle(.control("w"))
        #expect(line.text == "foo " && line.cursor == 4)
        var blank = LineEditor(text: "    ")
        blank.handle(.control("w"))
        #expect(blank.text.isEmpty && blank.cursor == 0)
        var wide = LineEditor(text: "日本 👨‍👩‍👧👍")
        wide.handle(.control("w"))
        #expect(wide.text == "日本 " && wide.cursor == 3)
    }

    /// Keys the line does not own (Enter, Tab, Escape, paging, Ctrl-C...) are passed back to
    /// the controller untouched.
    @Test(arguments: [Key.enter, .tab, .backTab, .escape, .pageUp, .pageDown, .control("c"), .control("d"), .control("l")])
    func keysTheLineDoesNotOwnAreLeftAlone(key: Key) {
        var line = LineEditor(text: "draft")
        let handled = line.handle(key)
        #expect(!handled)
        #expect(line.text == "draft" && line.cursor == 5)
    }

    /// Pasted or typed control characters become visible replacements, never raw bytes in a
    /// message; a pasted tab becomes a space.
    @Test func pastedControlsAreMadeInert() {
        var line = LineEditor()
        line.handle(.paste("a\tb\u{1B}]52;c;eA==\u{07}\u{202E}c"))
        #expect(line.text == "a b\u{FFFD}]52;c;eA==\u{FFFD}\u{FFFD}c")
        #expect(line.cursor == line.text.count)
        line.handle(.home)
        line.handle(.paste("日本"))
        #expect(line.text.hasPrefix("日本a b") && line.cursor == 2)
    }

    // MARK: History

    /// Up walks back through what was sent, Down walks forward and ends on the unsent draft.
    @Test func historyWalksBackAndForthAndRestoresTheDraft() {
        var line = LineEditor()
        for sent in ["first", "second", "third"] {
            line.set(sent)
            #expect(line.submit() == sent)
        }
        line.handle(.paste("draft"))
        var seen: [String] = []
        for _ in 0..<4 {
            line.handle(.up)
            seen.append(line.text)
        }
        #expect(seen == ["third", "second", "first", "first"], "Up stops at the oldest")
        #expect(line.cursor == 5)
        seen = []
        for _ in 0..<4 {
            line.handle(.down)
            seen.append(line.text)
        }
        #expect(seen == ["second", "third", "draft", "draft"], "Down ends on the draft")
    }

    /// Blank lines and a repeat of the last line are not remembered; the history keeps the
    /// newest 200.
    @Test func historySkipsBlanksAndRepeatsAndKeepsTheNewest200() {
        var line = LineEditor()
        for sent in ["same", "same", "   ", "", "other", "same"] {
            line.set(sent)
            _ = line.submit()
        }
        var seen: [String] = []
        for _ in 0..<4 {
            line.handle(.up)
            seen.append(line.text)
        }
        #expect(seen == ["same", "other", "same", "same"])

        var long = LineEditor()
        for index in 0..<250 {
            long.set("m\(index)")
            _ = long.submit()
        }
        for _ in 0..<300 { long.handle(.up) }
        #expect(long.text == "m50", "the oldest kept is the 200th from the end")
    }

    /// Up and Down with nothing sent, or Down when not browsing, change nothing.
    @Test func historyKeysWithNothingToShowKeepTheLine() {
        var line = LineEditor(text: "typing")
        line.handle(.left)
        line.handle(.up)
        #expect(line.text == "typing" && line.cursor == 5)
        line.handle(.down)
        #expect(line.text == "typing" && line.cursor == 5)
        #expect(line.submit() == "typing")
        line.handle(.down)
        #expect(line.text.isEmpty)
    }
}

extension KeyParser {
    /// The keys of `bytes` fed to a fresh parser in one read.
    func feeding(_ bytes: [UInt8]) -> [Key] {
        var copy = self
        return copy.feed(bytes)
    }
}
