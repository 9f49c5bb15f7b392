import ParleyClient

/// The lines under a message: its link preview card and its thread line.
extension ChatScreen {
    /// "   ┃ example.com", "   ┃ Title", "   ┃ description" for a preview, and
    /// "   💬 3 replies · 10:42 (/thread)" under a thread's root. Every text inert.
    static func extraLines(_ message: ChatPresentation.MessageItem, width: Int) -> [String] {
        var lines: [String] = []
        if let card = message.previewCard {
            let bar = Style.colour(39).apply("┃ ")
            lines.append("   " + bar + Style.dim.apply(TerminalText.truncate(TerminalText.sanitize(card.site), to: width - 2)))
            lines.append("   " + bar + Style.bold.apply(TerminalText.truncate(TerminalText.sanitize(card.title), to: width - 2)))
            if let description = card.description {
                for line in TerminalText.wrap(TerminalText.sanitize(description), to: width - 2).prefix(2) {
                    lines.append("   " + bar + line)
                }
            }
        }
        if let thread = message.threadLine {
            lines.append("   " + Style.boldColour(39).apply(TerminalText.truncate("💬 " + TerminalText.sanitize(thread) + "  (/thread)", to: width)))
        }
        return lines
    }
}
