import Foundation
import ParleyTerminal
import ParleyTestSupport
import Testing

/// Slash commands as people really type them: aliases, capitals, odd spacing, missing or
/// malformed arguments (each refused with a message saying what was expected), unknown names.
@Suite struct TerminalCommandTests {
    /// Lines that are messages, not commands (a "//" escapes a leading slash).
    @Test(arguments: ["hello", "", "   ", "a /help", "//help", "  //shrug", "http://example.com", "¯\\_(ツ)_/¯"])
    func plainTextIsNotACommand(line: String) {
        #expect(ChatCommand.parse(line) == nil)
    }

    /// Commands without arguments, their aliases, any capitals, surrounding spaces, and words
    /// after them (ignored).
    @Test(arguments: [
        ("/help", ChatCommand.help), ("/h", .help), ("/?", .help), ("/HELP", .help), ("   /help   ", .help), ("/help me", .help),
        ("/quit", .quit), ("/q", .quit), ("/exit", .quit), ("/Exit", .quit),
        ("/older", .older), ("/resend", .resend), ("/retry", .retry), ("/reconnect", .retry),
        ("/logout", .logout), ("/close", .close), ("/CLOSE", .close),
    ])
    func bareCommandsAndTheirAliases(line: String, expected: ChatCommand) {
        #expect(ChatCommand.parse(line) == expected)
    }

    /// Conversations and people, with the argument's own inner spacing kept.
    @Test(arguments: [
        ("/open 2", ChatCommand.open("2")), ("/o team", .open("team")), ("/open   Team   Lunch  ", .open("Team   Lunch")),
        ("/dm bob@x.io", .direct("bob@x.io")), ("/direct Bob Smith", .direct("Bob Smith")), ("/DM  bob@x.io  ", .direct("bob@x.io")),
        ("/search hello world", .search("hello world")), ("/find 日本", .search("日本")),
        ("/attach ~/a.png", .attach(path: "~/a.png", caption: "")),
        ("/file /tmp/x.pdf the Q3 report", .attach(path: "/tmp/x.pdf", caption: "the Q3 report")),
    ])
    func commandsTakingTextKeepItWhole(line: String, expected: ChatCommand) {
        #expect(ChatCommand.parse(line) == expected)
    }

    /// Messages named by number from the newest (1...99999) or, with no number, the
    /// highlighted one; a number out of range is text, not a message number.
    @Test(arguments: [
        ("/reply 2 sure", ChatCommand.reply(message: 2, text: "sure")), ("/r 1", .reply(message: 1, text: nil)),
        ("/reply", .reply(message: nil, text: nil)), ("/reply sure thing", .reply(message: nil, text: "sure thing")),
        ("/reply 2    spaced   out  ", .reply(message: 2, text: "spaced   out")), ("/reply 0 hi", .reply(message: nil, text: "0 hi")),
        ("/reply 99999 x", .reply(message: 99_999, text: "x")), ("/reply 100000 x", .reply(message: nil, text: "100000 x")),
        ("/reply 3rd one", .reply(message: nil, text: "3rd one")),
        ("/edit 2", .edit(message: 2, text: nil)), ("/e fixed typo", .edit(message: nil, text: "fixed typo")),
        ("/edit", .edit(message: nil, text: nil)), ("/edit 4 new text", .edit(message: 4, text: "new text")),
        ("/delete", .delete(message: nil)), ("/del 3", .delete(message: 3)), ("/delete  7 ", .delete(message: 7)),
        ("/react 🎉", .react(message: nil, emoji: "🎉")), ("/react 2 👍🏽", .react(message: 2, emoji: "👍🏽")),
        ("/REACT 1 ok", .react(message: 1, emoji: "ok")), ("/unreact 👍", .unreact(message: nil, emoji: "👍")),
        ("/unreact 5 👨‍👩‍👧", .unreact(message: 5, emoji: "👨‍👩‍👧")),
        ("/forward 2 General", .forward(message: 2, to: "General")), ("/fwd Team chat", .forward(message: nil, to: "Team chat")),
        ("/forward 3 4", .forward(message: 3, to: "4")),
        ("/save 2 /tmp/x.png", .save(message: 2, path: "/tmp/x.png")), ("/save ~/out.txt", .save(message: nil, path: "~/out.txt")),
    ])
    func messagesAreNamedByTheirPlaceFromTheNewest(line: String, expected: ChatCommand) {
        #expect(ChatCommand.parse(line) == expected)
    }

    /// A command missing what it needs says what it needs instead of doing something else.
    @Test(arguments: [
        ("/open", "/open needs a number or part of a title"), ("/open    ", "/open needs a number or part of a title"),
        ("/dm", "/dm needs an email or a name"), ("/direct  ", "/dm needs an email or a name"),
        ("/search", "/search needs some text"), ("/find   ", "/search needs some text"),
        ("/attach", "/attach PATH [CAPTION]"), ("/react", "/react [N] EMOJI"), ("/react 2", "/react [N] EMOJI"),
        ("/unreact", "/unreact [N] EMOJI"), ("/forward", "/forward [N] CONVERSATION"), ("/fwd 2", "/forward [N] CONVERSATION"),
        ("/save", "/save [N] PATH"), ("/save 3", "/save [N] PATH"),
        ("/group", "/group EMAIL,EMAIL… NAME"), ("/group a@x.io, b@x.io", "/group EMAIL,EMAIL… NAME"),
    ])
    func missingArgumentsAreRefusedWithTheUsage(line: String, reason: String) {
        #expect(ChatCommand.parse(line) == .invalid(reason))
    }

    /// "/delete" with something that is not a message number must not fall back to deleting
    /// the newest message: a typo would delete for everyone what the person did not mean.
    @Test(arguments: ["/delete abc", "/delete 0", "/delete -1", "/delete 100000", "/del 2x", "/delete last"])
    func deleteWithAMalformedNumberDeletesNothing(line: String) {
        guard case .invalid(let reason) = ChatCommand.parse(line) else {
            Issue.record("\(line) should be refused, got \(String(describing: ChatCommand.parse(line)))")
            return
        }
        #expect(reason.hasPrefix("/delete [N]"))
    }

    /// Managing the open group: rename (the rest of the line is the name), add people (commas
    /// or spaces), remove someone, leave; each refuses what it cannot take.
    @Test(arguments: [
        ("/rename Launch crew", ChatCommand.rename("Launch crew")), ("/rename", .invalid("/rename needs the group's new name")),
        ("/add a@x.io,b@x.io", .add(["a@x.io", "b@x.io"])), ("/add a@x.io, bob", .add(["a@x.io", "bob"])),
        ("/add", .invalid("/add EMAIL,EMAIL…")), ("/remove carol@x.io", .remove("carol@x.io")), ("/kick bob", .remove("bob")),
        ("/remove", .invalid("/remove needs an email or a name")), ("/leave", .leave),
        ("/leave now", .invalid("/leave takes nothing: it leaves the open group")),
    ])
    func groupManagementCommands(line: String, expected: ChatCommand) {
        #expect(ChatCommand.parse(line) == expected)
    }

    /// One's own profile: `/name` takes the rest of the line, `/picture` a path or "off".
    @Test(arguments: [
        ("/name Ada Lovelace", ChatCommand.myName("Ada Lovelace")), ("/nick  Ada ", .myName("Ada")),
        ("/name", .invalid("/name needs your new display name")),
        ("/picture ~/me.png", .myPicture(path: "~/me.png")), ("/avatar /tmp/a b.jpg", .myPicture(path: "/tmp/a b.jpg")),
        ("/picture off", .myPicture(path: nil)), ("/picture NONE", .myPicture(path: nil)),
        ("/picture", .invalid("/picture PATH, or /picture off")),
    ])
    func profileCommands(line: String, expected: ChatCommand) {
        #expect(ChatCommand.parse(line) == expected)
    }

    /// Groups: members as emails or names, separated by commas with or without spaces, then
    /// the group's name (which may have several words).
    @Test(arguments: [
        ("/group a@x.io,b@x.io Team", ChatCommand.group(name: "Team", members: ["a@x.io", "b@x.io"])),
        ("/group a@x.io, b@x.io Team lunch", .group(name: "Team lunch", members: ["a@x.io", "b@x.io"])),
        ("/group a@x.io b@x.io Team", .group(name: "Team", members: ["a@x.io", "b@x.io"])),
        ("/group a@x.io ,b@x.io Team", .group(name: "Team", members: ["a@x.io", "b@x.io"])),
        ("/group a@x.io,,b@x.io T", .group(name: "T", members: ["a@x.io", "b@x.io"])),
        ("/group alice, bob Lunch", .group(name: "Lunch", members: ["alice", "bob"])),
        ("/group   a@x.io   Night    owls  ", .group(name: "Night owls", members: ["a@x.io"])),
        ("/GROUP bob,carol,dan@x.io Book club", .group(name: "Book club", members: ["bob", "carol", "dan@x.io"])),
    ])
    func groupsTakeMembersThenAName(line: String, expected: ChatCommand) {
        #expect(ChatCommand.parse(line) == expected)
    }

    /// Block and unblock someone, report a message (by its number, or the highlighted
    /// one) or a person, each with a reason; what lacks one is refused with the usage.
    @Test(arguments: [
        ("/block bob@x.io", ChatCommand.block("bob@x.io", true)),
        ("/unblock Bob Builder", .block("Bob Builder", false)),
        ("/block", .invalid("/block needs an email or a name")),
        ("/report 3 spam and insults", .report(message: 3, reason: "spam and insults")),
        ("/report keeps messaging me", .report(message: nil, reason: "keeps messaging me")),
        ("/report @bob@x.io sends threats", .reportPerson("bob@x.io", reason: "sends threats")),
        ("/report", .invalid("/report [N] REASON")),
        ("/report 2", .invalid("/report [N] REASON")),
        ("/report @bob", .invalid("/report @EMAIL REASON")),
    ])
    func blockAndReport(line: String, expected: ChatCommand) {
        #expect(ChatCommand.parse(line) == expected)
    }

    /// An unknown command names itself (lower-cased, without its arguments) and points at /help.
    @Test(arguments: [
        ("/frobnicate", "Unknown command /frobnicate: /help lists them"),
        ("/Frob now please", "Unknown command /frob: /help lists them"),
        ("/", "Unknown command /: /help lists them"),
        ("/ ", "Unknown command /: /help lists them"),
        ("/replyall hi", "Unknown command /replyall: /help lists them"),
    ])
    func unknownCommandsSayWhichAndWhereToLook(line: String, reason: String) {
        #expect(ChatCommand.parse(line) == .invalid(reason))
    }

    /// An unknown command containing an escape sequence is echoed in the status line made
    /// inert: the refusal cannot itself clear the screen.
    @Test func anUnknownCommandsEchoIsSanitizedOnScreen() throws {
        let command = try #require(ChatCommand.parse("/\u{1B}[2J\u{1B}]52;c;eA==\u{07}"))
        guard case .invalid(let reason) = command else {
            Issue.record("expected a refusal, got \(command)")
            return
        }
        var screen = ChatScreen()
        screen.status = reason
        let status = try #require(screen.render(width: 60, height: 8).last)
        let visible = ChatScreen.stripStyles(status)
        #expect(visible.hasPrefix(" Unknown command /\u{FFFD}[2j\u{FFFD}]52;c;ea==\u{FFFD}"))
        #expect(status.components(separatedBy: "\u{1B}").count == 3, "only our own colour and reset: \(status.debugDescription)")
    }

    /// Every command /help lists is one the parser knows (a help text naming a command that
    /// answers "Unknown command" sends people in circles).
    @Test func everyCommandInTheHelpIsKnown() {
        let named = ChatCommand.helpLines.flatMap { line in
            line.split(separator: " ").filter { $0.hasPrefix("/") }.map { String($0) }
        }
        #expect(Set(named).isSuperset(of: ["/dm", "/group", "/open", "/reply", "/edit", "/delete", "/react", "/unreact",
                                          "/forward", "/search", "/attach", "/save", "/older", "/resend", "/retry", "/close",
                                          "/logout", "/quit"]))
        for name in named {
            if case .invalid(let reason) = ChatCommand.parse(name) {
                #expect(!reason.hasPrefix("Unknown command"), "\(name) is in /help but unknown")
            }
        }
    }

    /// Property: any line starting with "/" (but not "//") gives a command, any refusal has a
    /// reason, and a number given to /reply comes back as that number with the text trimmed.
    @Test(arguments: [UInt64(301), 302, 303])
    func randomCommandLinesAlwaysGetAnAnswer(seed: UInt64) {
        let names = ["reply", "r", "edit", "delete", "react", "open", "dm", "group", "search", "attach", "save", "forward", "xyz", ""]
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<300 {
            let name = names.randomElement(using: &generator)!
            let argument = TerminalTestStrings.printable(Int.random(in: 0...5, using: &generator), using: &generator)
            let line = String(repeating: " ", count: Int.random(in: 0...2, using: &generator)) + "/" + name + " " + argument
            guard let command = ChatCommand.parse(line) else {
                Issue.record("\(line.debugDescription) was taken for a message")
                continue
            }
            if case .invalid(let reason) = command { #expect(!reason.isEmpty) }
        }
        for _ in 0..<300 {
            let number = Int.random(in: 1...99_999, using: &generator)
            let words = (0..<Int.random(in: 1...4, using: &generator)).map { _ in ["sure", "日本", "👍🏽", "ok."].randomElement(using: &generator)! }
            let text = words.joined(separator: " ")
            #expect(ChatCommand.parse("/reply  \(number)   \(text)  ") == .reply(message: number, text: text))
            #expect(ChatCommand.parse("/react \(number) \(words[0])") == .react(message: number, emoji: words[0]))
        }
    }
}
