import Foundation
import ParleyTerminal
import ParleyTestSupport
import Testing

/// Pasting into `parley chat`: the terminal's bracketed paste (ESC[200~ … ESC[201~) becomes one
/// `.paste` however the reads split it, the input line keeps its line breaks as text, and a
/// pasted paragraph goes out as one message: no line of it is sent alone or run as a command.
@Suite struct TerminalPasteTests {
    static let start = "\u{1B}[200~"
    static let end = "\u{1B}[201~"

    /// `text` as a terminal sends it when it is pasted with bracketed paste on.
    static func bracketed(_ text: String) -> [UInt8] { Array((start + text + end).utf8) }

    /// The keys of `bytes` fed in reads cut at `cuts` (sorted offsets).
    static func keys(_ bytes: [UInt8], cutAt cuts: [Int]) -> [Key] {
        var parser = KeyParser()
        var keys: [Key] = []
        var from = 0
        for cut in cuts + [bytes.count] {
            keys += parser.feed(Array(bytes[from..<cut]))
            from = cut
        }
        return keys
    }

    /// What a paste of `text` must give: CRLF and a lone CR are line breaks ("\n").
    static func normalised(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        let scalars = Array(text.unicodeScalars)
        for (index, scalar) in scalars.enumerated() {
            if scalar == "\r" {
                out.append("\n")
            } else if scalar == "\n", index > 0, scalars[index - 1] == "\r" {
                continue
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    // MARK: The parser

    /// Two pasted lines were sent as two messages: the paste is one key, its CR a line break.
    @Test func twoPastedLinesAreOnePaste() {
        var parser = KeyParser()
        #expect(parser.feed(Array("\u{1B}[200~line one\rline two\u{1B}[201~".utf8)) == [.paste("line one\nline two")])
        #expect(parser.feed(Array("x".utf8)) == [.character("x")], "nothing left pending, not still pasting")
    }

    /// However a terminal or a file encodes line breaks, the paste holds "\n" only, one per break.
    @Test(arguments: [
        ("a\rb", "a\nb"), ("a\r\nb", "a\nb"), ("a\nb", "a\nb"), ("a\r\r\nb", "a\n\nb"), ("a\n\rb", "a\n\nb"),
        ("a\r\rb", "a\n\nb"), ("a\n\nb", "a\n\nb"), ("end\r", "end\n"), ("\r\nstart", "\nstart"), ("\r", "\n"),
        ("one\r\ntwo\r\nthree\r\n", "one\ntwo\nthree\n"),
    ])
    func lineBreaksInAPasteAreNormalised(pasted: String, expected: String) {
        var parser = KeyParser()
        #expect(parser.feed(Self.bracketed(pasted)) == [.paste(expected)])
    }

    /// Whatever the paste holds between its markers is text: Ctrl-C would quit, Ctrl-D would
    /// quit on an empty line, Tab would switch panes, DEL would erase, if they were keys.
    @Test(arguments: ["a\u{03}b", "\u{04}", "tab\there", "del\u{7F}", "\u{15}\u{17}\u{0B}", "nul\u{0}x", "\u{08}\u{08}"])
    func controlBytesInAPasteAreTextNotKeys(pasted: String) {
        var parser = KeyParser()
        #expect(parser.feed(Self.bracketed(pasted)) == [.paste(pasted)])
    }

    /// A paste ends only at ESC[201~: an escape sequence, another start marker, a near miss of
    /// the end marker or a lone ESC inside it is pasted text (made inert by the input line).
    @Test(arguments: [
        "a\u{1B}[2Jb", "\u{1B}[31mred\u{1B}[0m", "x\u{1B}", "\u{1B}\u{1B}", "\u{1B}[200~nested", "\u{1B}[201x", "\u{1B}[20~",
        "\u{1B}[2011~", "\u{1B}[01~", "\u{1B}O201~", "[201~", "\u{1B}[1;5C", "\u{1B}]52;c;eA==\u{07}", "\u{1B}[201",
    ])
    func anEscapeInsideAPasteDoesNotEndIt(pasted: String) {
        var parser = KeyParser()
        #expect(parser.feed(Self.bracketed(pasted + "tail")) == [.paste(pasted + "tail")])
        #expect(parser.feed(Array("k".utf8)) == [.character("k")])
    }

    /// Keys typed before and after a paste in the same read stay keys, in order.
    @Test func keysAroundAPasteStayKeys() {
        var parser = KeyParser()
        let bytes = Array("h\u{1B}[D".utf8) + Self.bracketed("one\rtwo") + Array("\u{1B}[A\r".utf8)
        #expect(parser.feed(bytes) == [.character("h"), .left, .paste("one\ntwo"), .up, .enter])
    }

    /// Two pastes in a row are two pastes (not one, not three), with nothing between them.
    @Test func backToBackPastesStaySeparate() {
        var parser = KeyParser()
        #expect(parser.feed(Self.bracketed("first") + Self.bracketed("second\r")) == [.paste("first"), .paste("second\n")])
    }

    /// An empty paste (a terminal pasting an empty clipboard) gives no key and leaves nothing pending.
    @Test func anEmptyPasteGivesNothing() {
        var parser = KeyParser()
        #expect(parser.feed(Self.bracketed("")) == [])
        #expect(parser.feed(Array("a".utf8)) == [.character("a")])
    }

    /// An end marker outside a paste (a terminal's stray one) is swallowed whole, never typed as "[201~".
    @Test func aStrayEndMarkerIsSwallowed() {
        var parser = KeyParser()
        #expect(parser.feed(Array((Self.end + "ok").utf8)) == [.character("o"), .character("k")])
    }

    /// A paste is not over until its end marker comes: reads in between give no key at all
    /// (no half paste, no Enter), and the text comes out whole at the end.
    @Test func aPasteSpreadOverManyReadsIsOneKeyAtItsEnd() {
        var parser = KeyParser()
        #expect(parser.feed(Array((Self.start + "first line\r").utf8)) == [])
        #expect(parser.feed(Array("\u{1B}".utf8)) == [], "an ESC at the end of a read inside a paste may start its end marker")
        #expect(parser.feed(Array("[2J second\r\u{1B}[20".utf8)) == [])
        #expect(parser.feed(Array("1".utf8)) == [])
        #expect(parser.feed(Array("~after".utf8)) == [.paste("first line\n\u{1B}[2J second\n"), .character("a"), .character("f"),
                                                    .character("t"), .character("e"), .character("r")])
    }

    /// The markers and the text cut at every byte into two reads give the same keys as one read
    /// (except a cut right after the start marker's ESC: a lone ESC at the end of a read is the
    /// Escape key, and terminals write a marker in one piece).
    @Test func aPasteCutAtEveryByteGivesTheSameKeys() {
        let bytes = Array("x".utf8) + Self.bracketed("one\r\ntwo 日本 👍🏽\r\u{1B}[2J\u{1B}\r/quit\r") + Array("y\r".utf8)
        let expected: [Key] = [.character("x"), .paste("one\ntwo 日本 👍🏽\n\u{1B}[2J\u{1B}\n/quit\n"), .character("y"), .enter]
        #expect(Self.keys(bytes, cutAt: []) == expected)
        for cut in 0...bytes.count where cut != 2 {
            #expect(Self.keys(bytes, cutAt: [cut]) == expected, "cut at \(cut)")
        }
    }

    /// A CR at the end of one read and its LF at the start of the next are one line break.
    @Test func aCRLFCutBetweenReadsIsOneLineBreak() {
        var parser = KeyParser()
        #expect(parser.feed(Array((Self.start + "a\r").utf8)) == [])
        #expect(parser.feed(Array(("\nb" + Self.end).utf8)) == [.paste("a\nb")])
    }

    /// A large paste arrives in 4 KiB reads (the device's buffer): it is one paste holding every
    /// line, whatever byte each read ends on.
    @Test func aLargePasteInDeviceSizedReadsIsOnePaste() {
        let text = (1...1_500).map { "line \($0): naïve café 日本語 👍" }.joined(separator: "\r\n")
        let bytes = Self.bracketed(text)
        #expect(bytes.count > 40_000)
        let keys = Self.keys(bytes, cutAt: Array(stride(from: 4_096, to: bytes.count, by: 4_096)))
        #expect(keys.count == 1)
        guard case .paste(let pasted) = keys.first else {
            Issue.record("not a paste: \(keys.prefix(3))")
            return
        }
        #expect(pasted == text.replacingOccurrences(of: "\r\n", with: "\n"))
        #expect(pasted.split(separator: "\n").count == 1_500)
    }

    /// Property: random pasted text (line breaks of every kind, escapes, near misses of the end
    /// marker, wide characters) cut into random reads is one paste of the normalised text,
    /// between the keys typed around it.
    @Test(arguments: [UInt64(301), 302, 303, 304, 305, 306])
    func randomPastesSurviveRandomReads(seed: UInt64) {
        let pieces = ["a", "Z", " ", "é", "日", "👍", "👨‍👩‍👧", "\r", "\n", "\r\n", "\u{1B}", "\u{1B}[", "\u{1B}[20", "\u{1B}[201",
                      "201~", "~", "\u{1B}[2J", "\u{1B}[200~", "\u{03}", "\t", "/quit", "/delete 1", "\u{7F}"]
        var generator = SeededGenerator(seed: seed)
        var checked = 0
        while checked < 200 {
            let text = (0..<Int.random(in: 1...16, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            guard !text.contains(Self.end) else { continue }
            let bytes = Array("k".utf8) + Self.bracketed(text) + Array("\u{1B}[B".utf8)
            // Cuts anywhere but right after the ESC of the start marker or of the Down key after the
            // paste (a lone ESC at the end of a read is the Escape key).
            let cuts = (0..<Int.random(in: 0...4, using: &generator)).map { _ in Int.random(in: 0...bytes.count, using: &generator) }
                .filter { $0 != 2 && $0 != bytes.count - 2 }.sorted()
            #expect(Self.keys(bytes, cutAt: cuts) == [.character("k"), .paste(Self.normalised(text)), .down],
                    "seed \(seed): \(text.debugDescription) cut at \(cuts)")
            checked += 1
        }
    }

    /// Typed keys are unchanged by paste support: Enter typed as CR or LF is still Enter, and
    /// text typed without markers is still characters.
    @Test func typingWithoutMarkersIsStillKeys() {
        var parser = KeyParser()
        #expect(parser.feed(Array("hi\r\n".utf8)) == [.character("h"), .character("i"), .enter, .enter])
        #expect(parser.feed(Array("\u{1B}[5~\u{1B}[6~".utf8)) == [.pageUp, .pageDown])
    }

    // MARK: The input line

    /// A pasted paragraph stays on the input line (nothing is sent by the paste) with its line
    /// breaks held as one character each, and Enter gives it back with "\n".
    @Test func aPastedParagraphIsSentWholeWithItsLineBreaks() {
        var line = LineEditor()
        let handled = line.handle(.paste("line one\nline two"))
        #expect(handled)
        #expect(line.text == "line one\u{2028}line two")
        #expect(line.cursor == 17)
        #expect(!line.text.unicodeScalars.contains { $0.value < 0x20 })
        #expect(line.submit() == "line one\nline two")
        #expect(line.text.isEmpty && line.cursor == 0)
    }

    /// `LineEditor.lineBreak` is the character the line holds for a pasted break.
    @Test func theLineBreakCharacterIsTheOneTheLineHolds() {
        var line = LineEditor()
        line.handle(.paste("\n"))
        #expect(line.text == String(LineEditor.lineBreak))
        #expect(String(LineEditor.lineBreak).unicodeScalars.map(\.value) == [0x2028])
    }

    /// Line breaks of every kind given to the line (a `.paste` built elsewhere, an old
    /// terminal's CR) count once each; other controls are still made inert.
    @Test(arguments: [
        ("a\r\nb", "a\u{2028}b", "a\nb"), ("a\rb", "a\u{2028}b", "a\nb"), ("a\n\nb", "a\u{2028}\u{2028}b", "a\n\nb"),
        ("a\r\r\nb", "a\u{2028}\u{2028}b", "a\n\nb"),
        ("x\u{1B}[2J\ny", "x\u{FFFD}[2J\u{2028}y", "x\u{FFFD}[2J\ny"),
        ("tab\there\r\n", "tab here\u{2028}", "tab here\n"),
        ("\u{202E}evil\n", "\u{FFFD}evil\u{2028}", "\u{FFFD}evil\n"),
        ("a\u{2028}b\u{2029}c", "a\u{2028}b\u{2028}c", "a\nb\nc"),
    ])
    func pastedLineBreaksAreKeptAndControlsMadeInert(pasted: String, held: String, sent: String) {
        var line = LineEditor()
        line.handle(.paste(pasted))
        #expect(line.text == held)
        #expect(line.cursor == held.count)
        #expect(line.submit() == sent)
    }

    /// A paste goes in at the cursor, and the cursor ends after it.
    @Test func aPasteGoesInAtTheCursor() {
        var line = LineEditor(text: "before after")
        for _ in 0..<5 { line.handle(.left) }
        line.handle(.paste("one\ntwo "))
        #expect(line.text == "before one\u{2028}two after")
        #expect(line.cursor == 15)
        #expect(line.submit() == "before one\ntwo after")
    }

    /// Backspace and Delete take a pasted line break as one character, like any other.
    @Test func backspaceAndDeleteTakeALineBreakWhole() {
        var line = LineEditor()
        line.handle(.paste("ab\ncd"))
        for _ in 0..<2 { line.handle(.left) }
        line.handle(.backspace)
        #expect(line.text == "abcd" && line.cursor == 2)
        line.handle(.paste("\r\n"))
        line.handle(.left)
        line.handle(.delete)
        #expect(line.text == "abcd" && line.cursor == 2)
    }

    /// Ctrl-W stops at a line break as it does at a space: it takes the last word, not the line before it too.
    @Test func deletingAWordStopsAtALineBreak() {
        var line = LineEditor()
        line.handle(.paste("first line\nsecond"))
        line.handle(.control("w"))
        #expect(line.text == "first line\u{2028}" && line.cursor == 11)
        line.handle(.control("w"))
        #expect(line.text == "first " && line.cursor == 6)
    }

    /// A sent paragraph comes back with Up as it was (its breaks still one character each), and
    /// is sent again with its line breaks.
    @Test func historyKeepsAPastedParagraph() {
        var line = LineEditor()
        line.handle(.paste("one\ntwo"))
        _ = line.submit()
        line.handle(.character("x"))
        line.handle(.up)
        #expect(line.text == "one\u{2028}two" && line.cursor == 7)
        line.handle(.down)
        #expect(line.text == "x")
        line.handle(.up)
        #expect(line.submit() == "one\ntwo")
    }

    /// A paste of nothing but line breaks is a blank line: it is not remembered in the history.
    @Test func aPasteOfOnlyLineBreaksIsNotRemembered() {
        var line = LineEditor()
        line.set("kept")
        _ = line.submit()
        line.handle(.paste("\n\r\n  \n"))
        #expect(line.submit() == "\n\n  \n")
        line.handle(.up)
        #expect(line.text == "kept")
    }

    /// Property: random pastes and edits never put a control byte in the line, and what Enter
    /// sends is the line with each break as "\n" (nothing dropped, nothing added).
    @Test(arguments: [UInt64(401), 402, 403, 404])
    func whatIsSentIsWhatTheLineHolds(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        let edits: [Key] = [.left, .right, .home, .end, .backspace, .delete, .control("w"), .control("k")]
        for _ in 0..<150 {
            var line = LineEditor()
            for _ in 0..<Int.random(in: 1...6, using: &generator) {
                if Bool.random(using: &generator) {
                    line.handle(.paste(TerminalTestStrings.mixed(Int.random(in: 1...5, using: &generator), using: &generator, newlines: true)))
                } else {
                    line.handle(edits.randomElement(using: &generator)!)
                }
            }
            let held = line.text
            #expect(!held.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }, "seed \(seed): \(held.debugDescription)")
            let sent = line.submit()
            #expect(sent.unicodeScalars.filter { $0 == "\n" }.count == held.unicodeScalars.filter { $0 == "\u{2028}" }.count)
            #expect(sent.unicodeScalars.map { $0 == "\n" ? "\u{2028}" : $0 } == Array(held.unicodeScalars), "seed \(seed)")
        }
    }

    // MARK: From the keyboard to what is sent

    /// The bug as a person hit it: pasting "hello", "/delete 1", "/quit" as three lines and
    /// pressing Enter. Before, each line was Enter'd on its own, deleting a message and quitting;
    /// now the input holds one paragraph and Enter sends it as one message, no command run.
    @Test func aPastedParagraphWithCommandLinesIsOneMessageNotCommands() {
        var parser = KeyParser()
        var line = LineEditor()
        var submitted: [String] = []
        let bytes = Self.bracketed("hello\r/delete 1\r/quit\r") + [0x0D]
        for key in parser.feed(bytes) {
            if key == .enter {
                submitted.append(line.submit())
            } else {
                line.handle(key)
            }
        }
        #expect(submitted == ["hello\n/delete 1\n/quit\n"])
        #expect(submitted.map(ChatCommand.parse) == [nil])
    }

    /// Text with a line break is never a command, even when it starts with "/": a pasted path
    /// list, a pasted command plus more, a copied line with its line break.
    @Test(arguments: [
        "/quit\n", "/delete 1\nsecond line", "/logout\r\n", "/dm bob@x.io\nhi", "/edit 1 new\ntext", "/usr/bin\n/etc/hosts",
        "\n/quit", "  /delete\n",
    ])
    func textWithALineBreakIsNeverACommand(text: String) {
        #expect(ChatCommand.parse(text) == nil)
    }

    /// One line starting with "/" is still a command, whether typed or pasted and then Entered.
    @Test func oneLineIsStillACommand() {
        #expect(ChatCommand.parse("/quit") == .quit)
        #expect(ChatCommand.parse("/delete 2") == .delete(message: 2))
        var line = LineEditor()
        line.handle(.paste("/react 1 👍"))
        #expect(ChatCommand.parse(line.submit()) == .react(message: 1, emoji: "👍"))
    }

    // MARK: Signing in

    /// A pasted answer often ends with the copied line's break: it is not part of the email,
    /// organization or name, nor of the password (which otherwise keeps its spaces).
    @Test func aPastedLoginAnswerLosesItsTrailingLineBreak() {
        var flow = LoginFlow()
        var complete: [Bool] = []
        complete.append(flow.answer("r\n"))
        #expect(flow.registering && flow.step == .organization)
        complete.append(flow.answer("Acme\n"))
        #expect(flow.organization == "Acme")
        complete.append(flow.answer(" ada@acme.io\r\n"))
        #expect(flow.email == "ada@acme.io" && flow.step == .password)
        complete.append(flow.answer("\n"))
        #expect(flow.step == .password, "a line break alone is no password")
        complete.append(flow.answer("  pass word  \n"))
        #expect(flow.password == "  pass word  ", "spaces kept, the break dropped")
        complete.append(flow.answer("Ada Lovelace\n"))
        #expect(flow.displayName == "Ada Lovelace")
        complete.append(flow.answer("\n"))
        #expect(flow.inviteCode == nil, "a pasted empty line is no invite code")
        #expect(complete == [false, false, false, false, false, false, true])
    }

    /// The whole sign-in path: a password pasted with a trailing break, then Enter.
    @Test func aPastedPasswordThenEnterSignsInWithThePassword() {
        var flow = LoginFlow()
        for answer in ["l", "acme", "ada@acme.io"] { _ = flow.answer(answer) }
        var parser = KeyParser()
        var line = LineEditor()
        var complete = false
        for key in parser.feed(Self.bracketed("s3cret pass\r") + [0x0D]) {
            if key == .enter { complete = flow.answer(line.submit()) } else { line.handle(key) }
        }
        #expect(complete)
        #expect(flow.password == "s3cret pass")
    }

    // MARK: The terminal

    /// Without ESC[?2004h the terminal never brackets a paste (and every pasted line is Enter);
    /// without ESC[?2004l on the way out, the shell after us gets "200~" around every paste.
    @Test func theDeviceTurnsBracketedPasteOnAndOffAgain() {
        #expect(TerminalDevice.enterSequence.contains("\u{1B}[?2004h"))
        #expect(TerminalDevice.restoreSequence.contains("\u{1B}[?2004l"))
        #expect(!TerminalDevice.restoreSequence.contains("\u{1B}[?2004h"))
    }

    /// Every private mode entering sets (alternate screen, paste, a hidden cursor) is undone by
    /// the restore that runs on leaving and on signals, and the restore sets none of them.
    @Test func theRestoreUndoesEveryModeEnteringSets() {
        func modes(_ text: String, _ final: Character) -> Set<String> {
            var found: Set<String> = []
            var rest = Substring(text)
            while let range = rest.range(of: "\u{1B}[?") {
                let digits = rest[range.upperBound...].prefix { $0.isNumber }
                let after = rest[range.upperBound...].dropFirst(digits.count)
                if after.first == final { found.insert(String(digits)) }
                rest = after
            }
            return found
        }
        let set = modes(TerminalDevice.enterSequence, "h")
        let reset = modes(TerminalDevice.restoreSequence, "l")
        #expect(set == ["1049", "2004"])
        #expect(set.isSubset(of: reset))
        #expect(modes(TerminalDevice.enterSequence, "l") == ["25"], "the cursor hidden while drawing")
        #expect(modes(TerminalDevice.restoreSequence, "h") == ["25"], "and shown again")
    }
}
