/// Paging the chat pane: how far it can scroll at a terminal size, and PageUp/PageDown bounded by it.
extension ChatScreen {
    /// How many lines the chat can scroll up at this terminal size: the timeline's lines beyond
    /// what the pane shows at once (0 when they all fit). The pane never shows more than this.
    public func maxScroll(width: Int, height: Int) -> Int {
        let available = max(height, 6) - 3 - 1 - (typingLine == nil ? 0 : 1) - (pinnedLine == nil ? 0 : 1)
        return max(0, timelineLines(width: Self.chatWidth(forTerminalWidth: width)).count - available)
    }

    /// PageUp: `lines` older, but not past the oldest line, so presses at the top are not saved
    /// up for PageDown to undo. True when the pane's top is within 20 lines of the oldest line
    /// (time to load an older page).
    @discardableResult
    public mutating func pageUp(by lines: Int = 10, width: Int, height: Int) -> Bool {
        let most = maxScroll(width: width, height: height)
        scroll = min(min(scroll, most) + lines, most)
        return scroll + 20 >= most
    }

    /// PageDown: `lines` newer, from where the pane really is (a window grown since PageUp may
    /// show more than `scroll` says), down to the newest.
    public mutating func pageDown(by lines: Int = 10, width: Int, height: Int) {
        scroll = max(0, min(scroll, maxScroll(width: width, height: height)) - lines)
    }

    /// Scrolls so the "New messages" line is the pane's first line (as near as the timeline
    /// allows); false when the timeline has none.
    @discardableResult
    public mutating func scrollToUnread(width: Int, height: Int) -> Bool {
        guard let index = timeline.firstIndex(where: { if case .unread = $0 { true } else { false } }) else { return false }
        var below = self
        below.timeline = Array(timeline[index...])
        let lines = below.timelineLines(width: Self.chatWidth(forTerminalWidth: width)).count
        let available = max(height, 6) - 3 - 1 - (typingLine == nil ? 0 : 1) - (pinnedLine == nil ? 0 : 1)
        scroll = min(max(0, lines - available), maxScroll(width: width, height: height))
        return true
    }
}
