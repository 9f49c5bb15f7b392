import Foundation

/// A slash command typed in the input line. Messages are named by their place from the newest
/// (1 = the newest), or default to the highlighted one.
public enum ChatCommand: Sendable, Equatable {
    case help, quit, older, resend, retry, logout, close
    /// A list row's number or part of its title.
    case open(String)
    /// Someone's email or name.
    case direct(String)
    /// A group's name and its members' emails or names.
    case group(name: String, members: [String])
    /// Renames the open group.
    case rename(String)
    /// Adds people (emails or names) to the open group.
    case add([String])
    /// Removes someone (an email or a name) from the open group.
    case remove(String)
    /// Leaves the open group.
    case leave
    case reply(message: Int?, text: String?)
    case edit(message: Int?, text: String?)
    case delete(message: Int?)
    case react(message: Int?, emoji: String)
    case unreact(message: Int?, emoji: String)
    case forward(message: Int?, to: String)
    case search(String)
    case attach(path: String, caption: String)
    /// Saves a message's attachment (or its text) to a file.
    case save(message: Int?, path: String)
    /// Opens the thread of a message (its replies; lines typed then reply in it).
    case thread(message: Int?)
    /// Pins (true) or unpins a message for everyone.
    case pin(message: Int?, pinned: Bool)
    /// Lists the pinned messages.
    case pins
    /// Mutes (true) or unmutes the open conversation.
    case mute(Bool)
    /// Blocks (true) or unblocks someone (an email or a name).
    case block(String, Bool)
    /// Reports a message to the organization's admins, with a reason.
    case report(message: Int?, reason: String)
    /// Reports a person (an email or a name) with a reason.
    case reportPerson(String, reason: String)
    /// Changes the user's own display name.
    case myName(String)
    /// Makes the image at a path the user's picture; nil takes it away.
    case myPicture(path: String?)
    case invalid(String)

    /// The commands and what they do, for `/help`, in the language of `ParleyStrings.locale`:
    /// each command as typed, then (from the 31st column) what it does.
    public static var helpLines: [String] {
        let columns: [(command: String, does: String)] = [
            ("/dm EMAIL", TerminalStrings.text("a direct conversation")),
            ("/group EMAIL,EMAIL… NAME", TerminalStrings.text("a group with these people")),
            ("/open N|TEXT", TerminalStrings.text("open a conversation (number or title)")),
            ("/rename NAME  /add EMAIL,…", TerminalStrings.text("rename the open group, add people to it")),
            ("/remove EMAIL  /leave", TerminalStrings.text("take someone out of the open group, leave it")),
            ("/reply [N] [TEXT]", TerminalStrings.text("reply to message N (1 = newest)")),
            ("/edit [N] [TEXT]", TerminalStrings.text("edit your message N")),
            ("/delete [N]", TerminalStrings.text("delete your message N for everyone")),
            ("/react [N] EMOJI", TerminalStrings.text("react; /unreact [N] EMOJI takes it back")),
            ("/forward [N] CONVERSATION", TerminalStrings.text("forward message N")),
            ("/search TEXT", TerminalStrings.text("search this conversation")),
            ("/attach PATH [CAPTION]", TerminalStrings.text("send a file (an image shows as one)")),
            ("/save [N] PATH", TerminalStrings.text("save message N's attachment to a file")),
            ("/thread [N]", TerminalStrings.text("open message N's thread (Esc or /close leaves it)")),
            ("/pin [N]  /unpin [N]  /pins", TerminalStrings.text("pin message N for everyone, unpin it, list pins")),
            ("/mute  /unmute", TerminalStrings.text("no notifications here except mentions (or again)")),
            ("/block EMAIL /unblock EMAIL", TerminalStrings.text("no direct messages, typing or alerts from someone")),
            ("/report [N] REASON", TerminalStrings.text("report message N to the admins")),
            ("/report @EMAIL REASON", TerminalStrings.text("report a person to the admins")),
            ("/name NAME", TerminalStrings.text("change your display name")),
            ("/picture PATH  /picture off", TerminalStrings.text("your picture (PNG, JPEG, GIF, WebP), or none")),
            (TerminalStrings.text("@NAME then Tab"), TerminalStrings.text("complete a name: the person is mentioned")),
            ("/older", TerminalStrings.text("load older messages (or PgUp)")),
            ("/resend", TerminalStrings.text("send failed messages again")),
            ("/retry", TerminalStrings.text("reconnect now")),
            ("/close  /logout  /quit", TerminalStrings.text("(Ctrl-C quits too)")),
        ]
        // At least three spaces between the columns: the overlay splits a line there to wrap it.
        return columns.map { $0.command + String(repeating: " ", count: max(3, 30 - $0.command.count)) + $0.does }
            + [TerminalStrings.text("Keys: Tab list/input · ↑ on an empty line picks a message · Esc back")]
    }

    /// Parses a line that starts with "/"; nil for a plain message. A command is one line: text
    /// with a line break (a pasted paragraph) is a message even when it starts with "/".
    public static func parse(_ line: String) -> ChatCommand? {
        guard !line.unicodeScalars.contains(where: { $0 == "\n" || $0 == "\r" }) else { return nil }
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("/"), !trimmed.hasPrefix("//") else { return nil }
        let parts = trimmed.dropFirst().split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        let name = parts.first.map { String($0).lowercased() } ?? ""
        let rest = parts.count > 1 ? String(parts[1]).trimmingCharacters(in: .whitespaces) : ""
        let (number, afterNumber) = leadingNumber(rest)
        switch name {
        case "help", "h", "?": return .help
        case "quit", "q", "exit": return .quit
        case "older": return .older
        case "resend": return .resend
        case "retry", "reconnect": return .retry
        case "logout": return .logout
        case "close": return .close
        case "open", "o":
            return rest.isEmpty ? .invalid(TerminalStrings.text("/open needs a number or part of a title")) : .open(rest)
        case "dm", "direct":
            return rest.isEmpty ? .invalid(Self.needsSomeone("/dm")) : .direct(rest)
        case "group":
            // Members first (emails, or names joined by commas), then the group's name.
            var words = rest.split(separator: " ").map(String.init)
            var members: [String] = []
            var more = true
            while more, let word = words.first {
                members += word.split(separator: ",").map(String.init)
                words.removeFirst()
                more = word.hasSuffix(",") || (words.first.map { $0.contains("@") || $0.hasPrefix(",") } ?? false)
            }
            guard !members.isEmpty, !words.isEmpty else { return .invalid("/group EMAIL,EMAIL… NAME") }
            return .group(name: words.joined(separator: " "), members: members)
        case "rename":
            return rest.isEmpty ? .invalid(TerminalStrings.text("/rename needs the group's new name")) : .rename(rest)
        case "add":
            let people = rest.split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init)
            return people.isEmpty ? .invalid("/add EMAIL,EMAIL…") : .add(people)
        case "remove", "kick":
            return rest.isEmpty ? .invalid(Self.needsSomeone("/remove")) : .remove(rest)
        case "leave": return rest.isEmpty ? .leave : .invalid(TerminalStrings.text("/leave takes nothing: it leaves the open group"))
        case "reply", "r": return .reply(message: number, text: afterNumber.isEmpty ? nil : afterNumber)
        case "edit", "e": return .edit(message: number, text: afterNumber.isEmpty ? nil : afterNumber)
        case "delete", "del":
            // Anything but a message number is refused: falling back to the newest message would
            // delete, for everyone, what a typo did not name.
            guard rest.isEmpty || number != nil else { return .invalid(Self.notANumber("/delete [N]")) }
            return .delete(message: number)
        case "react", "unreact":
            guard !afterNumber.isEmpty else { return .invalid("/\(name) [N] EMOJI") }
            return name == "react" ? .react(message: number, emoji: afterNumber) : .unreact(message: number, emoji: afterNumber)
        case "forward", "fwd":
            guard !afterNumber.isEmpty else { return .invalid("/forward [N] CONVERSATION") }
            return .forward(message: number, to: afterNumber)
        case "search", "find": return rest.isEmpty ? .invalid(TerminalStrings.text("/search needs some text")) : .search(rest)
        case "attach", "file":
            let pieces = rest.split(separator: " ", maxSplits: 1)
            guard let path = pieces.first else { return .invalid("/attach PATH [CAPTION]") }
            return .attach(path: String(path), caption: pieces.count > 1 ? String(pieces[1]) : "")
        case "save":
            guard !afterNumber.isEmpty else { return .invalid("/save [N] PATH") }
            return .save(message: number, path: afterNumber)
        case "thread", "t":
            guard rest.isEmpty || number != nil else { return .invalid(Self.notANumber("/thread [N]")) }
            return .thread(message: number)
        case "pin", "unpin":
            guard rest.isEmpty || number != nil else { return .invalid(Self.notANumber("/\(name) [N]")) }
            return .pin(message: number, pinned: name == "pin")
        case "pins", "pinned": return .pins
        case "mute":
            return rest.isEmpty ? .mute(true) : rest.lowercased() == "off" ? .mute(false) : .invalid(TerminalStrings.text("/mute, or /mute off"))
        case "unmute": return .mute(false)
        case "block", "unblock":
            return rest.isEmpty ? .invalid(Self.needsSomeone("/\(name)")) : .block(rest, name == "block")
        case "report":
            if rest.hasPrefix("@") {
                let pieces = rest.dropFirst().split(separator: " ", maxSplits: 1)
                guard pieces.count == 2 else { return .invalid("/report @EMAIL REASON") }
                return .reportPerson(String(pieces[0]), reason: String(pieces[1]))
            }
            guard !afterNumber.isEmpty else { return .invalid("/report [N] REASON") }
            return .report(message: number, reason: afterNumber)
        case "name", "nick":
            return rest.isEmpty ? .invalid(TerminalStrings.text("/name needs your new display name")) : .myName(rest)
        case "picture", "avatar":
            guard !rest.isEmpty else { return .invalid(TerminalStrings.text("/picture PATH, or /picture off")) }
            return .myPicture(path: ["off", "none", "remove"].contains(rest.lowercased()) ? nil : rest)
        default: return .invalid(TerminalStrings.text("Unknown command /{name}: /help lists them", ["name": name]))
        }
    }

    /// The refusal of a command whose N is not a message number ("/delete [N]: N is …").
    static func notANumber(_ usage: String) -> String {
        TerminalStrings.text("{usage}: N is a message number, 1 = the newest", ["usage": usage])
    }

    /// The refusal of a command that names someone but was given nobody ("/dm needs …").
    static func needsSomeone(_ command: String) -> String {
        TerminalStrings.text("{command} needs an email or a name", ["command": command])
    }

    /// "3 hello" → (3, "hello"); "hello" → (nil, "hello").
    static func leadingNumber(_ text: String) -> (Int?, String) {
        let pieces = text.split(separator: " ", maxSplits: 1)
        guard let first = pieces.first, let number = Int(first), number > 0, number < 100_000 else { return (nil, text) }
        return (number, pieces.count > 1 ? String(pieces[1]).trimmingCharacters(in: .whitespaces) : "")
    }
}
