import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTerminal
import Testing

/// The terminal client's pure parts: what a chat shows (shared presentation), text made inert
/// and fitted, keys, the input line, commands, and the screen rendered from state.
@Suite struct TerminalScreenTests {
    static let ada = EntityID()
    static let bob = EntityID()
    static let conversation = EntityID()
    static var utc: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }
    static let now = Date(timeIntervalSince1970: 1_795_435_200)  // 2026-11-23 12:00 UTC, a Monday

    static func message(
        _ seq: Int64, from sender: EntityID, _ text: String, at offset: TimeInterval, delivery: Delivery = .received,
        replyTo: EntityID? = nil, type: MessageType = .text
    ) -> LocalMessage {
        var message = LocalMessage(
            Message(
                id: EntityID(), conversationId: conversation, seq: seq, updatedSeq: seq, senderId: sender, clientMessageId: "c\(seq)",
                type: type, text: text, replyToId: replyTo, createdAt: now.addingTimeInterval(offset)),
            delivery: delivery)
        message.delivery = delivery
        return message
    }

    static func names(_ id: EntityID) -> String? { id == ada ? "Ada" : id == bob ? "Bob" : nil }

    @Test func theTimelineGroupsBySenderAndDayAndMarksOwnMessages() throws {
        let first = Self.message(1, from: Self.bob, "yesterday's", at: -86_400)
        var quoted = Self.message(2, from: Self.bob, "hello", at: -60)
        quoted.reactions = ["❤️": [Self.ada], "👍": [Self.ada, Self.bob]]
        let messages = [
            first, quoted,
            Self.message(3, from: Self.bob, "still me", at: -30),
            Self.message(4, from: Self.ada, "hi", at: -20, delivery: .read, replyTo: quoted.serverId),
            Self.message(5, from: Self.ada, "later", at: 600, delivery: .sending),
            Self.message(6, from: Self.ada, "Ada renamed the group", at: 601, type: .system),
        ]
        let items = ChatPresentation.timeline(messages, me: Self.ada, names: Self.names, now: Self.now, calendar: Self.utc)
        let shape: [String] = items.map {
            switch $0 {
            case .day(let title): "day \(title)"
            case .notice(let text, _): "notice \(text)"
            case .unread(let label): "unread \(label)"
            case .message(let m): "\(m.startsGroup ? "+" : " ")\(m.senderName): \(m.body) \(m.status?.glyph ?? "")"
            }
        }
        #expect(shape == [
            "day Yesterday", "+Bob: yesterday's ",
            "day Today", "+Bob: hello ", " Bob: still me ", "+You: hi ✓✓", "+You: later ◷", "notice Ada renamed the group",
        ])
        guard case .message(let reply) = items[5], case .message(let reacted) = items[3] else { Issue.record("shape"); return }
        #expect(reply.replyPreview == "↪ Bob: hello" && reply.status == .read && reply.time == "11:59")
        #expect(reacted.reactions == "👍 2  ❤️ 1", "most first")
        #expect(ChatPresentation.dayTitle(Self.now.addingTimeInterval(-3 * 86_400), now: Self.now, calendar: Self.utc) == "Friday")
        #expect(ChatPresentation.dayTitle(Self.now.addingTimeInterval(-30 * 86_400), now: Self.now, calendar: Self.utc) == "24 Oct 2026")
    }

    @Test func bannersBadgesAndPreviewsSayWhatAPersonExpects() {
        #expect(ChatPresentation.banner(.connected) == nil)
        #expect(ChatPresentation.banner(.reconnecting(attempt: 2, retryIn: .milliseconds(3_200)), outboxCount: 2)
            == "Offline · reconnecting in 4 s · 2 waiting to send")
        #expect(ChatPresentation.banner(.connecting) == "Connecting…")
        #expect(ChatPresentation.banner(.connected, syncing: true) == "Syncing…")
        #expect(ChatPresentation.banner(.connected, syncing: true, outboxCount: 3) == "Syncing… · sending 3")
        #expect(ChatPresentation.banner(.connected, syncing: false, outboxCount: 3) == nil, "connected and not syncing: no banner")
        #expect(ChatPresentation.badge(0) == "" && ChatPresentation.badge(7) == "7" && ChatPresentation.badge(250) == "99+")
        #expect(ChatPresentation.byteCount(512) == "512 B" && ChatPresentation.byteCount(12_800) == "12 KB"
            && ChatPresentation.byteCount(1_300_000) == "1.2 MB")
        #expect(ChatPresentation.StatusMark(.failed(reason: "too big")) == .failed && ChatPresentation.StatusMark(.received) == nil)
    }

    @Test func otherPeoplesTextCannotReachTheTerminalAsControl() {
        let hostile = "a\u{1B}[2Jb\u{1B}]0;title\u{07}c\u{9B}31md\u{202E}e\u{7F}f\tg\nh"
        let clean = TerminalText.sanitize(hostile)
        #expect(!clean.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0.value == 0x202E })
        #expect(clean == "a\u{FFFD}[2Jb\u{FFFD}]0;title\u{FFFD}c\u{FFFD}31md\u{FFFD}e\u{FFFD}f g\u{FFFD}h")
        #expect(TerminalText.sanitize("x\ny", keepingNewlines: true) == "x\ny")
    }

    @Test func textIsMeasuredCutAndWrappedInColumns() {
        #expect(TerminalText.width("abc") == 3 && TerminalText.width("日本") == 4 && TerminalText.width("👍") == 2)
        #expect(TerminalText.width("e\u{301}") == 1, "a combining accent takes no column")
        #expect(TerminalText.width("👨‍👩‍👧") == 2, "a ZWJ family is one glyph")
        #expect(TerminalText.truncate("日本語です", to: 5) == "日本…")
        #expect(TerminalText.pad("ab", to: 4) == "ab  ")
        #expect(TerminalText.wrap("the quick brown fox jumps", to: 10) == ["the quick", "brown fox", "jumps"])
        #expect(TerminalText.wrap("abcdefghijkl", to: 5) == ["abcde", "fghij", "kl"])
        #expect(TerminalText.wrap("one\n\ntwo", to: 10) == ["one", "", "two"])
    }

    @Test func keysAreDecodedEvenWhenASequenceIsSplitAcrossReads() {
        var parser = KeyParser()
        #expect(parser.feed(Array("hi\r".utf8)) == [.character("h"), .character("i"), .enter])
        #expect(parser.feed([0x1B, 0x5B]) == [], "half an arrow waits for the rest")
        #expect(parser.feed([0x41, 0x1B, 0x5B, 0x35, 0x7E, 0x03, 0x7F, 0x09]) == [.up, .pageUp, .control("c"), .backspace, .tab])
        let snowman = Array("☃".utf8)
        #expect(parser.feed([snowman[0]]) == [])
        #expect(parser.feed(Array(snowman[1...])) == [.character("☃")])
        #expect(parser.feed([0x1B]) == [.escape])
        #expect(parser.feed([0x1B, 0x5B, 0x33, 0x7E, 0x1B, 0x4F, 0x48]) == [.delete, .home])
    }

    @Test func theInputLineEditsAndRemembersWhatWasSent() {
        var line = LineEditor()
        for character in "hello world" { line.handle(.character(character)) }
        line.handle(.control("w"))
        #expect(line.text == "hello " && line.cursor == 6)
        line.handle(.home)
        line.handle(.character(">"))
        #expect(line.text == ">hello ")
        #expect(line.submit() == ">hello " && line.text.isEmpty)
        for character in "second" { line.handle(.character(character)) }
        _ = line.submit()
        line.handle(.character("d"))
        line.handle(.up)
        #expect(line.text == "second")
        line.handle(.up)
        #expect(line.text == ">hello ")
        line.handle(.down)
        line.handle(.down)
        #expect(line.text == "d", "back to the draft")
        line.handle(.paste("x\u{1B}[31my"))
        #expect(line.text == "dx\u{FFFD}[31my", "pasted control characters are made inert")
    }

    @Test func commandsParseAndRefuseWithAReason() {
        #expect(ChatCommand.parse("hello") == nil && ChatCommand.parse("//not a command") == nil)
        #expect(ChatCommand.parse("/dm bob@x.io") == .direct("bob@x.io"))
        #expect(ChatCommand.parse("/group a@x.io, b@x.io Team lunch") == .group(name: "Team lunch", members: ["a@x.io", "b@x.io"]))
        #expect(ChatCommand.parse("/group bob,carol Lunch") == .group(name: "Lunch", members: ["bob", "carol"]))
        #expect(ChatCommand.parse("/group a@x.io") == .invalid("/group EMAIL,EMAIL… NAME"))
        #expect(ChatCommand.parse("/group a@x.io,b@x.io Team lunch") == .group(name: "Team lunch", members: ["a@x.io", "b@x.io"]))
        #expect(ChatCommand.parse("/reply 2 sure") == .reply(message: 2, text: "sure"))
        #expect(ChatCommand.parse("/reply") == .reply(message: nil, text: nil))
        #expect(ChatCommand.parse("/edit fixed text") == .edit(message: nil, text: "fixed text"))
        #expect(ChatCommand.parse("/react 3 🎉") == .react(message: 3, emoji: "🎉"))
        #expect(ChatCommand.parse("/react") == .invalid("/react [N] EMOJI"))
        #expect(ChatCommand.parse("/attach ~/a.png look") == .attach(path: "~/a.png", caption: "look"))
        #expect(ChatCommand.parse("/save 2 /tmp/x.png") == .save(message: 2, path: "/tmp/x.png"))
        #expect(ChatCommand.parse("/frobnicate") == .invalid("Unknown command /frobnicate: /help lists them"))
    }

    /// Before signing in there is no connection to show: the header says nothing of one.
    @Test func aSignedOutScreenClaimsNoConnection() {
        var screen = ChatScreen()
        screen.account = "not signed in · http://127.0.0.1:8080"
        #expect(screen.render(width: 80, height: 10)[0].contains("● online"), "a signed-in screen's default")
        screen.showsConnection = false
        let header = screen.render(width: 80, height: 10)[0]
        #expect(!header.contains("●") && header.contains("not signed in"), "\(header)")
    }

    @Test func signingInAsksOneThingAtATime() {
        var flow = LoginFlow()
        var answers: [Bool] = []
        var steps: [LoginFlow.Step] = []
        for answer in ["x", "r", "Acme", "not-an-email", "ada@acme.io", "secret123", "Ada", " k3y-42 "] {
            answers.append(flow.answer(answer))
            steps.append(flow.step)
        }
        #expect(answers == [false, false, false, false, false, false, false, true])
        #expect(steps == [.choice, .organization, .email, .email, .password, .displayName, .invite, .invite])
        #expect(flow.registering)
        #expect(flow.organization == "Acme" && flow.email == "ada@acme.io" && flow.password == "secret123" && flow.displayName == "Ada")
        #expect(flow.inviteCode == "k3y-42")
        // No invite: Enter on an empty line.
        var founder = LoginFlow()
        for answer in ["r", "NewCo", "eve@new.co", "secret123", "Eve"] { _ = founder.answer(answer) }
        #expect(founder.answer("") && founder.inviteCode == nil)
        // Logging in asks neither name nor invite.
        var login = LoginFlow()
        let done = ["l", "Acme", "ada@acme.io"].map { login.answer($0) } + [login.answer("secret123")]
        #expect(done == [false, false, false, true] && login.step == .password)
    }

    static func screen() -> ChatScreen {
        var screen = ChatScreen()
        screen.account = "Ada <ada@x.io>"
        screen.rows = [
            .init(id: EntityID(), title: "Bob\u{1B}[31m", preview: "hello\u{1B}]0;x\u{07}", unread: 3, online: true, typing: nil),
            .init(id: EntityID(), title: "日本語のグループ名がとても長い場合", preview: "You: hi", unread: 120, online: nil, typing: "Bob is typing…"),
        ]
        screen.chatTitle = "Bob"
        screen.chatSubtitle = "online"
        screen.timeline = ChatPresentation.timeline(
            [
                message(1, from: bob, "a very long message from Bob that has to wrap over several lines of the chat pane 👍", at: -100),
                message(2, from: ada, "short", at: -50, delivery: .read),
                message(3, from: ada, "not yet", at: -10, delivery: .failed(reason: "x")),
            ], me: ada, names: names, now: now, calendar: utc)
        screen.typingLine = "Bob is typing…"
        return screen
    }

    @Test(arguments: [(100, 30), (72, 20), (60, 16), (40, 12), (20, 6)])
    func everyLineFillsExactlyTheWidthAndCarriesOnlyOurOwnStyles(width: Int, height: Int) {
        let lines = Self.screen().render(width: width, height: height)
        #expect(lines.count == height)
        for line in lines {
            let visible = ChatScreen.stripStyles(line)
            #expect(TerminalText.width(visible) == width, "\(width)x\(height): \(visible)")
            #expect(!visible.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }, "no control left: \(visible)")
            // The only escape sequences are SGR styles: ESC [ digits/; m.
            let sequences = line.components(separatedBy: "\u{1B}").dropFirst()
            #expect(sequences.allSatisfy { $0.hasPrefix("[") && $0.dropFirst().prefix { $0.isNumber || $0 == ";" }.count + 1 < $0.count
                && $0.dropFirst().drop { $0.isNumber || $0 == ";" }.first == "m" })
        }
    }

    @Test func theWideScreenShowsTheListTheChatTheMarksAndTheTyping() {
        let lines = Self.screen().render(width: 100, height: 30).map(ChatScreen.stripStyles)
        let text = lines.joined(separator: "\n")
        #expect(lines[0].hasPrefix(" Parley · Ada <ada@x.io>") && lines[0].contains("● online"))
        #expect(text.contains("● Bob\u{FFFD}[31m") && text.contains(" 3 "), "unread badge beside the sanitized name")
        #expect(text.contains("99+") && text.contains("Bob is typing…"))
        #expect(text.contains("✓✓ read") && text.contains("✗ failed, /resend"))
        #expect(text.contains("── Today ──"))
        var offline = Self.screen()
        offline.banner = "Offline · reconnecting in 2 s"
        #expect(offline.render(width: 100, height: 30).map(ChatScreen.stripStyles)[0].contains("● Offline · reconnecting in 2 s"))
        var narrow = Self.screen()
        narrow.focus = .input
        let chatOnly = narrow.render(width: 50, height: 20).map(ChatScreen.stripStyles)
        #expect(!chatOnly.joined().contains("Conversations") && chatOnly.joined().contains("short"), "one pane when narrow")
        narrow.focus = .list
        #expect(narrow.render(width: 50, height: 20).map(ChatScreen.stripStyles).joined().contains("Conversations"))
    }

    /// /help at 100 columns (the chat pane beside the list is narrower than its lines) and in a
    /// short window: nothing is cut off, long lines go on indented, and PgDn shows the rest.
    @Test(arguments: [(100, 30), (60, 12), (40, 10)])
    func helpIsWrappedNotCutAndScrollsWhenTooLong(width: Int, height: Int) {
        var screen = Self.screen()
        screen.focus = .input
        screen.overlayTitle = "Commands (Esc closes)"
        screen.overlay = ChatCommand.helpLines
        var seen = ""
        // Enough pages for the whole help at 40 columns (each PgDn here moves three lines).
        for _ in 0..<40 {
            let lines = screen.render(width: width, height: height).map(ChatScreen.stripStyles)
            #expect(lines.count == height)
            #expect(lines.allSatisfy { TerminalText.width($0) == width }, "every line fits exactly")
            seen += lines.map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
            guard lines.contains(where: { $0.contains("PgUp/PgDn") }) else { break }
            screen.overlayScroll += 3
        }
        // Every word of every help line was on screen at some point: nothing was cut off.
        let words = Set(ChatCommand.helpLines.joined(separator: " ").split(separator: " ").map(String.init))
        let shown = Set(seen.split(separator: " ").map(String.init))
        #expect(words.subtracting(shown).isEmpty, "cut off at \(width)x\(height): \(words.subtracting(shown).sorted())")
        // A new overlay starts at its top.
        screen.overlay = ["one"]
        #expect(screen.overlayScroll == 0)
    }

    /// An overlay line without two columns (a pinned message's text, a long help line) goes on
    /// indented below itself: every continuation fits the pane with its indent, and no word is
    /// lost at the right edge.
    @Test func aLongSingleColumnOverlayLineWrapsInsideThePane() {
        // Pairs of words that fill a wrapped line exactly (18 + 1 + 19 = 38 columns inside a
        // 40-column pane): with its indent such a continuation was 41 wide, its last character cut.
        let words = (1...8).map { "w\($0)" + String(repeating: "x", count: $0.isMultiple(of: 2) ? 17 : 16) }
        var screen = Self.screen()
        screen.focus = .input
        screen.overlay = ["📌 Ada: " + words.joined(separator: " ")]
        let lines = screen.render(width: 40, height: 30).map(ChatScreen.stripStyles)
        #expect(lines.allSatisfy { TerminalText.width($0) == 40 })
        let shown = Set(lines.joined(separator: " ").split(separator: " ").map(String.init))
        #expect(words.allSatisfy(shown.contains), "\(lines)")
    }
}
