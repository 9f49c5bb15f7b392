import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTerminal
import ParleyTestSupport
import Testing

/// The screen rendered from state at every size a terminal can have: each line exactly the
/// width (a longer one wraps and scrolls the whole screen), only our own SGR styles reach the
/// terminal, the cursor sits on the input line where the text is, and each pane shows what a
/// person expects (list, wrapped messages, marks, scrolling, overlays).
@Suite struct TerminalLayoutTests {
    static let me = EntityID()
    static let bob = EntityID()
    static let conversation = EntityID()
    static let now = Date(timeIntervalSince1970: 1_795_435_200)  // 2026-11-23 12:00 UTC
    static var utc: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }

    static func message(
        _ seq: Int64, from sender: EntityID, _ text: String, at offset: TimeInterval, delivery: Delivery = .received,
        type: MessageType = .text, attachment: ParleyProtocol.Attachment? = nil, reactions: [String: [EntityID]] = [:],
        replyTo: EntityID? = nil, edited: Bool = false, deleted: Bool = false
    ) -> LocalMessage {
        let at = now.addingTimeInterval(offset)
        return LocalMessage(
            Message(
                id: EntityID(), conversationId: conversation, seq: seq, updatedSeq: seq, senderId: sender, clientMessageId: "c\(seq)",
                type: type, text: text, replyToId: replyTo, attachment: attachment, reactions: reactions, createdAt: at,
                editedAt: edited ? at : nil, deletedAt: deleted ? at : nil),
            delivery: delivery)
    }

    static func timeline(_ messages: [LocalMessage], names: [EntityID: String] = [:]) -> [ChatPresentation.Item] {
        ChatPresentation.timeline(messages, me: me, names: { names[$0] ?? ($0 == bob ? "Bob" : nil) }, now: now, calendar: utc)
    }

    /// A screen with a conversation open, in one pane (focus on the input line).
    static func chat(_ messages: [LocalMessage], title: String = "Bob") -> ChatScreen {
        var screen = ChatScreen()
        screen.account = "Ada"
        screen.chatTitle = title
        screen.timeline = timeline(messages)
        return screen
    }

    // MARK: Checks every frame must pass

    /// The escape sequences of a line, or nil when one is not an SGR style (ESC [ digits ; m).
    static func sgrSequences(_ line: String) -> [String]? {
        let scalars = Array(line.unicodeScalars)
        var sequences: [String] = []
        var index = 0
        while index < scalars.count {
            guard scalars[index] == "\u{1B}" else {
                index += 1
                continue
            }
            guard index + 1 < scalars.count, scalars[index + 1] == "[" else { return nil }
            var end = index + 2
            while end < scalars.count, ("0"..."9").contains(scalars[end]) || scalars[end] == ";" { end += 1 }
            guard end < scalars.count, scalars[end] == "m" else { return nil }
            sequences.append(String(String.UnicodeScalarView(scalars[index...end])))
            index = end + 1
        }
        return sequences
    }

    /// The characters of a visible line up to `columns`, or nil if a wide character straddles it.
    static func prefix(_ visible: String, columns: Int) -> String? {
        var used = 0
        var out = ""
        for character in visible {
            if used == columns && TerminalText.width(of: character) > 0 { break }
            used += TerminalText.width(of: character)
            if used > columns { return nil }
            out.append(character)
        }
        return used >= columns ? out : nil
    }

    /// Every invariant of a frame: its size, each line's width, nothing but SGR, no control
    /// character visible, and the cursor on screen, on the input line, between two characters.
    static func checkFrame(_ screen: ChatScreen, width: Int, height: Int, _ context: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let lines = screen.render(width: width, height: height)
        #expect(lines.count == height, "\(context): \(lines.count) lines", sourceLocation: sourceLocation)
        for (row, line) in lines.enumerated() {
            let visible = ChatScreen.stripStyles(line)
            #expect(TerminalText.width(visible) == width, "\(context) row \(row): \(visible.debugDescription)", sourceLocation: sourceLocation)
            #expect(sgrSequences(line) != nil, "\(context) row \(row): \(line.debugDescription)", sourceLocation: sourceLocation)
            #expect(!visible.unicodeScalars.contains(where: TerminalTestStrings.isDangerous),
                    "\(context) row \(row): \(visible.debugDescription)", sourceLocation: sourceLocation)
        }
        let cursor = screen.cursor(width: width, height: height)
        #expect((0..<height).contains(cursor.row) && (0..<width).contains(cursor.column), "\(context): cursor \(cursor)",
                sourceLocation: sourceLocation)
        if lines.indices.contains(cursor.row) {
            #expect(prefix(ChatScreen.stripStyles(lines[cursor.row]), columns: cursor.column) != nil,
                    "\(context): the cursor splits a wide character", sourceLocation: sourceLocation)
        }
    }

    // MARK: Properties over random hostile state

    static func randomScreen(using generator: inout SeededGenerator) -> ChatScreen {
        func text(_ most: Int, newlines: Bool = false) -> String {
            TerminalTestStrings.mixed(Int.random(in: 0...most, using: &generator), using: &generator, newlines: newlines)
        }
        var screen = ChatScreen()
        screen.account = text(4)
        screen.showsConnection = Bool.random(using: &generator)
        screen.banner = [nil, "Connecting…", "Syncing… · sending 3", "Offline · reconnecting in 4 s · 2 waiting to send"]
            .randomElement(using: &generator)!
        screen.rows = (0..<Int.random(in: 0...25, using: &generator)).map { _ in
            ChatScreen.Row(
                id: EntityID(), title: text(5), preview: text(8), unread: [0, 1, 7, 99, 100, 5_000].randomElement(using: &generator)!,
                online: [nil, true, false].randomElement(using: &generator)!, typing: Bool.random(using: &generator) ? nil : text(3))
        }
        screen.selectedRow = Int.random(in: 0...max(0, screen.rows.count - 1), using: &generator)
        if Bool.random(using: &generator) {
            screen.chatTitle = text(5)
            screen.chatSubtitle = Bool.random(using: &generator) ? "" : text(3)
            let carol = EntityID()
            let names = [bob: text(4), carol: text(3)]
            var messages: [LocalMessage] = []
            var offset: TimeInterval = -3 * 86_400
            for seq in 1...Int64.random(in: 1...14, using: &generator) {
                offset += [30, 200, 400, 5_000, 90_000].randomElement(using: &generator)!
                let sender = [me, bob, carol].randomElement(using: &generator)!
                let delivery: Delivery = sender == me
                    ? [.sending, .notSent, .failed(reason: text(2)), .sent, .delivered, .read].randomElement(using: &generator)! : .received
                let kind = Int.random(in: 0..<8, using: &generator)
                let attachment = kind == 1
                    ? ParleyProtocol.Attachment(id: EntityID(), name: text(3), contentType: "image/png", size: Int64.random(in: 0...9_000_000, using: &generator), url: "/a")
                    : nil
                messages.append(message(
                    seq, from: sender, Bool.random(using: &generator) ? text(20, newlines: true) : "x", at: offset, delivery: delivery,
                    type: kind == 0 ? .system : kind == 1 ? .image : .text, attachment: attachment,
                    reactions: kind == 2 ? ["👍": [me, bob], "\u{1B}[5m": [carol]] : [:],
                    replyTo: kind == 3 ? messages.last?.serverId : kind == 4 ? EntityID() : nil,
                    edited: kind == 5, deleted: kind == 6))
            }
            screen.timeline = ChatPresentation.timeline(messages, me: me, names: { names[$0] }, now: now, calendar: utc)
            screen.selectedMessage = Bool.random(using: &generator) ? messages.randomElement(using: &generator)?.id : nil
            screen.scroll = [0, 0, 3, 17, 500].randomElement(using: &generator)!
            screen.typingLine = Bool.random(using: &generator) ? nil : text(3)
            if Int.random(in: 0..<4, using: &generator) == 0 {
                screen.overlayTitle = Bool.random(using: &generator) ? nil : text(6)
                screen.overlay = (0..<Int.random(in: 0...30, using: &generator)).map { _ in text(8) }
            }
        }
        screen.focus = [.list, .input, .messages].randomElement(using: &generator)!
        screen.inputLabel = Bool.random(using: &generator) ? nil : text(6)
        screen.input.set(text(12, newlines: true))
        for _ in 0..<Int.random(in: 0...8, using: &generator) { screen.input.handle(.left) }
        screen.masked = Int.random(in: 0..<5, using: &generator) == 0
        screen.status = Bool.random(using: &generator) ? nil : text(6)
        return screen
    }

    /// Property: whatever people named themselves or wrote, at any usual terminal size, every
    /// frame keeps its invariants.
    @Test(arguments: [UInt64(401), 402, 403, 404, 405, 406, 407, 408])
    func everyFrameKeepsItsShapeWhateverTheContent(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        for round in 0..<40 {
            let screen = Self.randomScreen(using: &generator)
            let width = Int.random(in: 20...160, using: &generator)
            let height = Int.random(in: 6...50, using: &generator)
            Self.checkFrame(screen, width: width, height: height, "seed \(seed) round \(round) \(width)x\(height)")
        }
    }

    /// Property: a very narrow or very short terminal (a split pane, a window being resized)
    /// still gets exactly its size: a line wider than the terminal wraps and scrolls the screen.
    @Test(arguments: [UInt64(501), 502, 503])
    func tinyTerminalsGetExactlyTheirSize(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        for round in 0..<30 {
            let screen = Self.randomScreen(using: &generator)
            for (width, height) in [(1, 1), (2, 3), (5, 24), (10, 5), (19, 40), (80, 1), (80, 2), (80, 5), (19, 6), (12, 12)] {
                Self.checkFrame(screen, width: width, height: height, "seed \(seed) round \(round) \(width)x\(height)")
            }
        }
    }

    /// On a short terminal the input line stays (it is the one being typed into), last.
    @Test(arguments: [1, 2, 3, 4, 5])
    func aShortTerminalKeepsTheInputLine(height: Int) {
        var screen = Self.chat([Self.message(1, from: Self.bob, "hello", at: -10)])
        screen.input.set("typing")
        let lines = screen.render(width: 40, height: height).map(ChatScreen.stripStyles)
        #expect(lines.count == height)
        #expect(lines.last == "> typing" + String(repeating: " ", count: 32))
        #expect(screen.cursor(width: 40, height: height) == (row: height - 1, column: 8))
    }

    /// A 10-column pane shows the start of each line and the input with its cursor.
    @Test func aTenColumnTerminalShowsTheInputWithItsCursor() {
        var screen = Self.chat([Self.message(1, from: Self.bob, "hello", at: -10)])
        screen.input.set("abcdefghijkl")
        let lines = screen.render(width: 10, height: 8).map(ChatScreen.stripStyles)
        #expect(lines[0] == " Parley · ")
        #expect(lines[6] == "> fghijkl ", "scrolled to keep the cursor in view")
        #expect(screen.cursor(width: 10, height: 8) == (row: 6, column: 9))
    }

    // MARK: The input line

    /// A long line scrolls so the cursor stays in view, in ASCII and in wide characters.
    @Test func theInputLineScrollsToKeepTheCursorInView() {
        var screen = ChatScreen()
        screen.input.set("abcdefghijklmnopqrstuvwxyz0123456789")
        #expect(ChatScreen.stripStyles(screen.render(width: 30, height: 8)[6]) == "> jklmnopqrstuvwxyz0123456789 ")
        #expect(screen.cursor(width: 30, height: 8).column == 29)
        screen.input.handle(.home)
        #expect(ChatScreen.stripStyles(screen.render(width: 30, height: 8)[6]) == "> abcdefghijklmnopqrstuvwxyz0 ")
        #expect(screen.cursor(width: 30, height: 8).column == 2)
        screen.input.set(String(repeating: "日本語", count: 10))
        let wide = ChatScreen.stripStyles(screen.render(width: 30, height: 8)[6])
        #expect(wide == "> " + String(Array(String(repeating: "日本語", count: 10)).suffix(13)) + "  ")
        #expect(screen.cursor(width: 30, height: 8).column == 28)
    }

    /// A reply to someone with a long name, or a long login question, never pushes the input
    /// line past the edge: the label is cut and the typed text still shows beside the cursor.
    @Test(arguments: [
        ("↪ reply to Alexandria Montgomery-Featherstonehaugh", 40),
        ("Invite code (Enter for none)", 20), ("Password (8+ characters)", 24), ("✎ edit", 20),
        ("日本語の長いラベル日本語の長いラベル", 30),
    ])
    func aLongInputLabelIsCutNotOverflowing(label: String, width: Int) throws {
        var screen = ChatScreen()
        screen.inputLabel = label
        screen.input.set("hi")
        let line = ChatScreen.stripStyles(screen.render(width: width, height: 10)[8])
        #expect(TerminalText.width(line) == width, "\(line)")
        let cursor = screen.cursor(width: width, height: 10)
        #expect(cursor.column < width)
        let before = try #require(Self.prefix(line, columns: cursor.column))
        #expect(before.hasSuffix("> hi"), "the typed text sits just before the cursor: \(before)")
        if TerminalText.width(label) + 4 + 4 <= width {
            #expect(line.hasPrefix(label + " > hi"), "a label that fits is not cut")
        } else {
            #expect(line.contains("… > hi"))
        }
    }

    /// Editing one's own message written elsewhere with line breaks or escapes: the input line
    /// shows it on one inert line, while the text to be sent keeps its line breaks.
    @Test func editingAMultiLineMessageShowsItOnOneInertLine() {
        var screen = ChatScreen()
        screen.inputLabel = "✎ edit"
        screen.input.set("first\r\nsecond\n\u{1B}[2Jthird")
        screen.input.handle(.left)
        let lines = screen.render(width: 60, height: 8)
        let visible = ChatScreen.stripStyles(lines[6])
        // Line breaks show as a pasted one does (⏎), other controls as inert replacement marks.
        #expect(visible.hasPrefix("✎ edit > first⏎second⏎\u{FFFD}[2Jthird"))
        #expect(Self.sgrSequences(lines[6])?.count == 2, "only the label's style: \(lines[6].debugDescription)")
        #expect(screen.cursor(width: 60, height: 8).column == TerminalText.width("✎ edit > first⏎second⏎\u{FFFD}[2Jthir"))
        #expect(screen.input.submit() == "first\nsecond\n\u{1B}[2Jthird", "the message itself keeps its line breaks (CRLF as LF)")
    }

    /// A password is never drawn: one bullet per character, and the cursor after them.
    @Test func aMaskedInputShowsOnlyBullets() {
        var screen = ChatScreen()
        screen.inputLabel = "Password"
        screen.masked = true
        screen.input.set("hunter2 日本")
        let frame = screen.render(width: 50, height: 8)
        #expect(!frame.joined().contains("hunter"))
        #expect(ChatScreen.stripStyles(frame[6]).hasPrefix("Password > ••••••••••  "))
        #expect(screen.cursor(width: 50, height: 8).column == 21)
    }
}
