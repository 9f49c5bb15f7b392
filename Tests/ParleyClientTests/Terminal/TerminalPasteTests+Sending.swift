import Foundation
import ParleyTerminal
import ParleyTestSupport
import Testing

extension TerminalPasteTests {
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

    /// Pasting "hello", "/delete 1", "/quit" as three lines and pressing Enter must not run each
    /// line on its own (deleting a message and quitting): the input holds one paragraph and
    /// Enter sends it as one message, no command run.
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
