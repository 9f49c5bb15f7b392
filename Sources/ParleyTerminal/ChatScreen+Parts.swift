import Foundation
import ParleyClient
import ParleyProtocol

extension ChatScreen {
    // MARK: Parts

    func header(width: Int) -> String {
        let left = " Parley · " + TerminalText.sanitize(account)
        let right: String
        let style: Style
        if !showsConnection {
            right = ""
            style = .colour(70)
        } else if let banner {
            right = "● " + banner + " "
            style = .boldColour(214)
        } else {
            right = "● " + TerminalStrings.text("online") + " "
            style = .colour(70)
        }
        // A long name ends in "…" before the connection's state is cut: offline must show. Too
        // narrow for both, a banner (offline, connecting, syncing) wins over the name, which
        // wins over a plain "online".
        if TerminalText.width(right) + 12 > width {
            guard banner != nil, showsConnection else { return Style.reverse.apply(TerminalText.pad(TerminalText.truncate(left, to: width), to: width)) }
            return Style.reverse.apply(style.apply(TerminalText.pad(TerminalText.truncate(" " + right, to: width), to: width)))
        }
        let shown = TerminalText.truncate(left, to: width - TerminalText.width(right) - 1)
        let space = width - TerminalText.width(shown) - TerminalText.width(right)
        return Style.reverse.apply(shown + String(repeating: " ", count: space)) + Style.reverse.apply(style.apply(right))
    }

    func listPane(width: Int, height: Int) -> [String] {
        var lines: [String] = []
        let heading = TerminalText.pad(" " + TerminalStrings.text("Conversations"), to: width)
        let title = focus == .list ? Style.bold.apply(heading) : Style.dim.apply(heading)
        lines.append(title)
        if rows.isEmpty {
            lines.append(Style.dim.apply(TerminalText.pad(" " + TerminalStrings.text("none yet: /dm EMAIL"), to: width)))
            lines.append(Style.dim.apply(TerminalText.pad(" " + TerminalStrings.text("or /group EMAIL,EMAIL… NAME"), to: width)))
        }
        // Two lines a row; keep the selected one visible.
        let capacity = max(1, (height - 1) / 2)
        let first = max(0, min(selectedRow - capacity + 1, rows.count - capacity))
        for (index, row) in rows.enumerated().dropFirst(first).prefix(capacity) {
            let selected = index == selectedRow
            let dot = row.online.map { $0 ? Style.colour(70).apply("●") : Style.dim.apply("○") } ?? " "
            let badge = (row.mentioned ? "@" : "") + ChatPresentation.badge(row.unread)
            let nameWidth = width - 3 - (badge.isEmpty ? 0 : TerminalText.width(badge) + 2)
            var name = TerminalText.pad(TerminalText.sanitize(row.title), to: max(1, nameWidth))
            name = row.unread > 0 ? Style.bold.apply(name) : name
            let badgeStyle: Style = row.muted && !row.mentioned ? .dim : .boldColour(33)
            let badgeText = badge.isEmpty ? "" : " " + Style.reverse.apply(badgeStyle.apply(badge)) + " "
            var first = " " + dot + " " + name + badgeText
            let detail = row.typing.map { Style.italic.apply(Style.colour(70).apply(TerminalText.pad("   " + TerminalText.sanitize($0), to: width))) }
                ?? Style.dim.apply(TerminalText.pad("   " + TerminalText.sanitize(row.preview), to: width))
            if selected { first = Style.reverse.apply(">") + String(first.dropFirst()) }
            lines.append(first)
            lines.append(detail)
        }
        return fill(lines, width: width, height: height)
    }

    func chatPane(width: Int, height: Int) -> [String] {
        guard let chatTitle else {
            var lines = [""]
            lines.append(Style.dim.apply("  " + TerminalStrings.text("Pick a conversation (↑ ↓ Enter), or start one:")))
            lines.append(Style.dim.apply("  /dm EMAIL   /group EMAIL,EMAIL… NAME   " + TerminalStrings.text("/help for everything")))
            return fill(lines, width: width, height: height)
        }
        var lines: [String] = []
        let subtitle = chatSubtitle.isEmpty ? "" : "  " + TerminalText.sanitize(chatSubtitle)
        lines.append(Style.bold.apply(TerminalText.truncate(" " + TerminalText.sanitize(chatTitle), to: width))
            + Style.dim.apply(TerminalText.truncate(subtitle, to: max(0, width - TerminalText.width(" " + TerminalText.sanitize(chatTitle))))))
        if let pinnedLine, overlay == nil {
            lines.append(Style.colour(136).apply(TerminalText.truncate(" " + TerminalText.sanitize(pinnedLine), to: width)))
        }
        let typingRows = typingLine == nil ? 0 : 1
        let available = height - lines.count - typingRows
        let content: [String]
        if let overlay {
            var text = overlayTitle.map { [Style.bold.apply(TerminalText.truncate(" " + TerminalText.sanitize($0), to: width))] } ?? []
            text += Self.overlayWindow(overlay, scroll: overlayScroll, width: width, rows: available - text.count)
            content = Array(text.prefix(available))
        } else {
            let all = timelineLines(width: width)
            // Scrolled past the oldest line: the oldest stays at the top (never a blank pane).
            let scroll = min(self.scroll, max(0, all.count - available))
            let end = max(0, all.count - scroll)
            content = Array(all[max(0, end - available)..<end])
            if content.count < available {
                lines += Array(repeating: "", count: available - content.count)
            }
        }
        lines += content
        if let typingLine { lines.append(Style.italic.apply(Style.colour(70).apply(" " + TerminalText.truncate(TerminalText.sanitize(typingLine), to: width - 1)))) }
        return fill(lines, width: width, height: height)
    }

    /// The chat pane's width in a terminal this wide (beside the list from
    /// ``twoPaneWidth`` on, else the whole width).
    public static func chatWidth(forTerminalWidth width: Int) -> Int {
        let width = max(width, 20)
        return width >= twoPaneWidth ? width - min(32, width / 3) - 1 : width
    }

    /// The timeline as lines for a width (messages wrapped, marks right-aligned).
    func timelineLines(width: Int) -> [String] {
        var lines: [String] = []
        let textWidth = max(8, width - 4)
        for item in timeline {
            switch item {
            case .day(let title):
                let label = " \(title) "
                let side = max(0, (width - TerminalText.width(label)) / 2)
                lines.append(Style.dim.apply(String(repeating: "─", count: side) + label + String(repeating: "─", count: max(0, width - side - TerminalText.width(label)))))
            case .unread(let label):
                let text = " \(label) "
                let side = max(0, (width - TerminalText.width(text)) / 2)
                lines.append(Style.boldColour(39).apply(
                    String(repeating: "─", count: side) + text + String(repeating: "─", count: max(0, width - side - TerminalText.width(text)))))
            case .notice(let text, _):
                let clean = TerminalText.truncate(TerminalText.sanitize(text), to: width - 2)
                let side = max(0, (width - TerminalText.width(clean)) / 2)
                lines.append(String(repeating: " ", count: side) + Style.italic.apply(Style.dim.apply(clean)))
            case .message(let message):
                let selected = message.message.id == selectedMessage
                let marker = selected ? Style.reverse.apply("▶") : " "
                if message.startsGroup {
                    lines.append("")
                    let nameStyle: Style = message.isOwn ? .boldColour(39) : .boldColour(Self.colour(for: message.senderName))
                    lines.append(marker + nameStyle.apply(TerminalText.truncate(TerminalText.sanitize(message.senderName), to: width - 9))
                        + Style.dim.apply("  " + message.time))
                }
                if let reply = message.replyPreview {
                    lines.append("   " + Style.dim.apply("│ " + TerminalText.truncate(TerminalText.sanitize(reply), to: textWidth - 2)))
                }
                // A Windows line ending is a line break, not a "�" at the end of each line.
                var body = TerminalText.wrap(
                    TerminalText.sanitize(TerminalText.droppingCarriageReturnsBeforeLineFeeds(message.body), keepingNewlines: true), to: textWidth)
                if let attachment = message.attachmentLine { body.append(TerminalText.sanitize(attachment)) }
                if message.body.isEmpty && body.count > 1 { body.removeFirst() }
                var meta: [String] = []
                if message.isPinned { meta.append("📌") }
                if message.isEdited { meta.append(TerminalStrings.text("edited")) }
                if let status = message.status {
                    let word = status == .read || status == .failed || status == .notSent ? " " + status.label : ""
                    meta.append(status.glyph + word + (status.canResend ? ", /resend" : ""))
                }
                let metaText = meta.joined(separator: " · ")
                for (index, line) in body.enumerated() {
                    let isLast = index == body.count - 1
                    let lead = (message.startsGroup || index > 0 ? " " : marker) + "  "
                    var styledLine = message.message.deletedAt != nil ? Style.italic.apply(Style.dim.apply(line))
                        : message.mentionsMe ? Style.boldColour(214).apply(line) : line
                    if isLast, !metaText.isEmpty {
                        let gap = width - 3 - TerminalText.width(line) - TerminalText.width(metaText) - 1
                        let metaStyle: Style = message.status == .read ? .colour(39) : message.status == .failed || message.status == .notSent ? .boldColour(196) : .dim
                        if gap >= 1 {
                            styledLine += String(repeating: " ", count: gap) + metaStyle.apply(metaText)
                        } else {
                            lines.append(lead + styledLine)
                            styledLine = String(repeating: " ", count: max(0, width - 4 - TerminalText.width(metaText))) + metaStyle.apply(metaText)
                        }
                    }
                    lines.append(lead + styledLine)
                }
                if !message.reactions.isEmpty {
                    // The highlighted message says who reacted; the others only count.
                    let reactions = selected ? message.reactionPeople : message.reactions
                    lines.append("   " + TerminalText.truncate(TerminalText.sanitize(reactions), to: textWidth))
                }
                lines += Self.extraLines(message, width: textWidth)
            }
        }
        return lines
    }

    func inputLine(width: Int) -> String {
        let (text, _) = fittedInput(width: width)
        return text
    }

    /// The input line fitted to the width (scrolled so the cursor shows) and the cursor's column.
    func fittedInput(width: Int) -> (String, Int) {
        // The label is cut so that some text and the cursor always fit beside it (and, in a
        // terminal of a few columns, cut to leave the cursor on screen).
        let name = inputLabel.map { TerminalText.truncate(TerminalText.sanitize($0), to: max(1, width - 8)) + " " } ?? ""
        let label = TerminalText.truncate(name + "> ", to: max(0, width - 1), ellipsis: false)
        // Each character as shown, made inert one by one (the text may be one's own message from
        // another device, with line breaks or escapes), so the cursor still counts characters.
        // A pasted line break shows as "⏎" (the line stays one line; the message keeps the break).
        let characters = masked
            ? Array(repeating: "•", count: input.text.count)
            : input.text.map { $0 == LineEditor.lineBreak ? "⏎" : TerminalText.sanitize(String($0)) }
        let cursor = min(input.cursor, characters.count)
        let room = max(0, width - TerminalText.width(label) - 1)
        var start = 0
        var before = characters[0..<cursor].reduce(0) { $0 + TerminalText.width($1) }
        while before > room, start < cursor {
            before -= TerminalText.width(characters[start])
            start += 1
        }
        let shown = TerminalText.truncate(characters[start...].joined(), to: room, ellipsis: false)
        let styledLabel = focus == .input ? Style.boldColour(39).apply(label) : Style.dim.apply(label)
        let padding = String(repeating: " ", count: max(0, width - TerminalText.width(label) - TerminalText.width(shown)))
        return (styledLabel + shown + padding, TerminalText.width(label) + before)
    }

    func statusLine(width: Int) -> String {
        if let status { return Style.colour(214).apply(TerminalText.pad(" " + TerminalText.sanitize(status), to: width)) }
        let hints: String = switch focus {
        case .list: TerminalStrings.text("↑↓ choose · Enter open · Tab type · /help · Ctrl-C quit")
        case .messages: TerminalStrings.text("↑↓ choose · r reply · e edit · d delete · + react · f forward · Esc back")
        case .input: TerminalStrings.text("Enter send · ↑ on empty line: pick a message · Tab list · PgUp older · /help")
        }
        return Style.dim.apply(TerminalText.pad(" " + hints, to: width))
    }

    private func fill(_ lines: [String], width: Int, height: Int) -> [String] {
        var out = Array(lines.prefix(height)).map { fitStyled($0, width: width) }
        while out.count < height { out.append(String(repeating: " ", count: width)) }
        return out
    }

    /// A styled line made exactly `width` visible columns: cut (keeping its escape sequences,
    /// which take no room) or padded. A line never runs past the edge and wraps.
    func fitStyled(_ line: String, width: Int) -> String {
        var out = ""
        var used = 0
        var escape = false
        var cut = false
        for character in line {
            if escape {
                out.append(character)
                if let scalar = character.unicodeScalars.first, (0x40...0x7E).contains(scalar.value), character != "[" { escape = false }
                continue
            }
            if character == "\u{1B}" {
                escape = true
                out.append(character)
                continue
            }
            let w = TerminalText.width(of: character)
            // Once cut, nothing more is shown (a narrow character after a wide one that did not
            // fit would appear out of place).
            if cut || used + w > width {
                cut = true
                continue
            }
            out.append(character)
            used += w
        }
        if cut { out += Style.plain.sgr }
        return used >= width ? out : out + String(repeating: " ", count: width - used)
    }

    /// Columns a styled line takes on screen (SGR sequences skipped).
    static func visibleWidth(_ line: String) -> Int {
        TerminalText.width(stripStyles(line))
    }

    /// The line without its SGR sequences (what a person sees).
    public static func stripStyles(_ line: String) -> String {
        var out = ""
        var inEscape = false
        for scalar in line.unicodeScalars {
            if inEscape {
                if (0x40...0x7E).contains(scalar.value) && scalar != "[" { inEscape = false }
                continue
            }
            if scalar == "\u{1B}" { inEscape = true; continue }
            out.unicodeScalars.append(scalar)
        }
        return out
    }

    /// A stable colour for a name (256-colour palette, readable on dark and light).
    static func colour(for name: String) -> Int {
        let palette = [167, 172, 107, 73, 140, 175, 109, 137]
        let sum = name.unicodeScalars.reduce(0) { ($0 &* 31 &+ Int($1.value)) & 0xFFFF }
        return palette[sum % palette.count]
    }
}
