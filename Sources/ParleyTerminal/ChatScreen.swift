import Foundation
import ParleyClient
import ParleyProtocol

/// Everything the terminal client shows, as plain values: the screen is a pure function of it
/// (``render(width:height:)``), so it is tested without a terminal.
public struct ChatScreen: Sendable, Equatable {
    /// One row of the conversation list.
    public struct Row: Sendable, Equatable {
        /// The conversation's id.
        public var id: EntityID
        /// The conversation's title.
        public var title: String
        /// The line under the title when nobody types: "Ada: hello", "No messages yet".
        public var preview: String
        /// How many messages are unread (the badge).
        public var unread: Int
        /// Direct conversations: whether the other person is online; nil for groups.
        public var online: Bool?
        /// "Ada is typing…" when someone is.
        public var typing: String?
        /// Unread messages mention the user (an "@" beside the badge).
        public var mentioned: Bool
        /// The user muted it (its badge is dim).
        public var muted: Bool

        /// A row of these values.
        public init(
            id: EntityID, title: String, preview: String, unread: Int, online: Bool?, typing: String?, mentioned: Bool = false,
            muted: Bool = false
        ) {
            self.mentioned = mentioned
            self.muted = muted
            self.id = id
            self.title = title
            self.preview = preview
            self.unread = unread
            self.online = online
            self.typing = typing
        }
    }

    /// Where keys go.
    public enum Focus: Sendable, Equatable { case list, input, messages }

    /// Who is signed in ("Ada · acme").
    public var account: String = ""
    /// The connection banner's text; nil while connected.
    public var banner: String?
    /// Whether the header shows the connection at all (not before signing in: there is none).
    public var showsConnection = true
    /// The conversation list, in display order.
    public var rows: [Row] = []
    /// The highlighted row of the list.
    public var selectedRow: Int = 0
    /// The open conversation's title and subtitle ("3 members" or "online").
    public var chatTitle: String?
    /// The open conversation's subtitle; empty for none.
    public var chatSubtitle: String = ""
    /// "📌 Ada: the rules (3 pinned)" under the title when something is pinned.
    public var pinnedLine: String?
    /// The open conversation's timeline: day separators, messages, system notices.
    public var timeline: [ChatPresentation.Item] = []
    /// The highlighted message (message mode), by ``LocalMessage/id``.
    public var selectedMessage: String?
    /// Lines scrolled up from the newest.
    public var scroll: Int = 0
    /// "Ada is typing…" under the timeline, or nil.
    public var typingLine: String?
    /// Where keys go now.
    public var focus: Focus = .input
    /// What the input line is for: "Reply to Ada", "Edit", or a login prompt.
    public var inputLabel: String?
    /// The input line's text and cursor.
    public var input = LineEditor()
    /// Hide the input's characters (passwords).
    public var masked = false
    /// The bottom line: a notice, an error, or the key hints.
    public var status: String?
    /// Search results or help text shown in place of the chat (a new one starts at its top).
    public var overlay: [String]? {
        didSet { overlayScroll = 0 }
    }
    /// How many of the overlay's wrapped lines are scrolled off its top (PgUp/PgDn).
    public var overlayScroll = 0
    /// The heading above ``overlay``, if any.
    public var overlayTitle: String?

    /// An empty screen: no account, rows or chat, the focus on the input line.
    public init() {}

    /// Below this width one pane is shown at a time.
    public static let twoPaneWidth = 72

    /// The whole screen, `height` lines of exactly `width` columns (styled with ANSI SGR). Text
    /// from other people is sanitized here, whatever the caller did.
    public func render(width: Int, height: Int) -> [String] {
        let lines = layout(width: max(width, 20), height: max(height, 6))
        guard width < 20 || height < 6 else { return lines }
        // A terminal smaller than the layout (a split pane, a window being resized): every line cut
        // to the real width, and on very few rows only the lowest ones down to the input line, so
        // nothing wraps or scrolls the screen.
        let columns = max(width, 1)
        var shown = lines.map { fitStyled($0, width: columns) }
        shown[shown.count - 2] = fitStyled(fittedInput(width: columns).0, width: columns)
        if height < 6 { shown = Array(shown.dropLast().suffix(max(height, 1))) }
        return shown
    }

    private func layout(width: Int, height: Int) -> [String] {
        let height = max(height, 6)
        var lines: [String] = []
        lines.append(header(width: width))
        let body = height - 3
        let twoPanes = width >= Self.twoPaneWidth
        let showList = twoPanes || chatTitle == nil || focus == .list
        let listWidth = twoPanes ? min(32, width / 3) : width
        let chatWidth = Self.chatWidth(forTerminalWidth: width)
        let list = showList ? listPane(width: listWidth, height: body) : []
        let chat = (twoPanes || !showList) ? chatPane(width: chatWidth, height: body) : []
        for index in 0..<body {
            if twoPanes {
                lines.append(list[index] + Style.dim.apply("│") + chat[index])
            } else {
                lines.append(showList ? list[index] : chat[index])
            }
        }
        lines.append(inputLine(width: width))
        lines.append(statusLine(width: width))
        return lines
    }

    /// Where the cursor goes: the input line's row and column (0-based).
    public func cursor(width: Int, height: Int) -> (row: Int, column: Int) {
        let columns = max(width, 1)
        let (_, column) = fittedInput(width: width < 20 ? columns : width)
        return (height < 6 ? max(height, 1) - 1 : height - 2, min(column, columns - 1))
    }

}

extension ChatScreen {
    /// The overlay's lines wrapped to the pane (a long line goes on, indented, instead of being
    /// cut off) and, when they need more than `rows`, the window `scroll` shows with a last line
    /// saying where it is and that PgUp/PgDn move it.
    static func overlayWindow(_ overlay: [String], scroll: Int, width: Int, rows: Int) -> [String] {
        guard rows > 0, width > 4 else { return [] }
        var wrapped: [String] = []
        for line in overlay.map({ TerminalText.sanitize($0) }) {
            // A line in two columns ("/dm EMAIL      a direct conversation") that does not fit
            // becomes its first column, then the rest indented below it.
            var pieces: [String]
            if TerminalText.width(line) > width - 2, let gap = line.range(of: "   ") {
                let rest = line[gap.upperBound...].trimmingCharacters(in: .whitespaces)
                pieces = TerminalText.wrap(String(line[..<gap.lowerBound]), to: width - 2)
                    + TerminalText.wrap(rest, to: width - 4).map { "  " + $0 }
            } else {
                // The first line as wide as the pane; the rest wrapped again two columns
                // narrower, so the indent does not push their ends past the edge.
                let first = TerminalText.wrap(line, to: width - 2)
                pieces = Array(first.prefix(1))
                if first.count > 1 {
                    pieces += TerminalText.wrap(first.dropFirst().joined(separator: " "), to: width - 4).map { "  " + $0 }
                }
            }
            wrapped += pieces.isEmpty ? [""] : pieces.map { " " + $0 }
        }
        guard wrapped.count > rows else { return wrapped }
        guard rows > 1 else { return [Style.dim.apply(TerminalText.truncate(" " + TerminalStrings.text("PgDn: more"), to: width))] }
        let shown = rows - 1
        let start = min(max(0, scroll), wrapped.count - shown)
        let position = " \(start + 1)–\(start + shown)/\(wrapped.count) PgUp/PgDn"
        return Array(wrapped[start..<start + shown]) + [Style.dim.apply(TerminalText.truncate(position, to: width))]
    }
}
