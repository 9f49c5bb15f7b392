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
}
