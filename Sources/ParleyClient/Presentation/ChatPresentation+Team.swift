import Foundation
import ParleyProtocol

/// How thread lines, preview cards, "@" completion and pins are shown. Shared by the
/// terminal client and SwiftUI (the web client mirrors the same rules in its scripts).
extension ChatPresentation {
    /// A link preview as a card shows it: every text plain, already cut by the server.
    public struct PreviewCard: Sendable, Equatable {
        /// The page's title (or its address when it has none).
        public var title: String
        /// The page's description, if any.
        public var description: String?
        /// "example.com" or the site's name.
        public var site: String
        /// The image to load through the media cache, if any.
        public var imageURL: String?
        /// The page's address, opened on tap.
        public var url: String

        /// A card from a preview; nil when it has neither title nor description.
        public init?(_ preview: LinkPreview) {
            guard preview.title != nil || preview.description != nil else { return nil }
            let host = URL(string: preview.url)?.host ?? preview.url
            title = preview.title ?? host
            description = preview.description
            site = preview.siteName ?? host
            imageURL = preview.imageUrl
            url = preview.url
        }
    }

    /// "1 reply · 10:42", "3 replies · Yesterday": under a thread's root.
    public static func threadLine(_ summary: ThreadSummary, now: Date = Date(), calendar: Calendar = .current) -> String {
        let count = summary.replyCount == 1 ? "1 reply" : "\(summary.replyCount) replies"
        return "\(count) · \(listTime(summary.lastReplyAt, now: now, calendar: calendar))"
    }

    /// The "@" word being typed at the end of `text` (after "@", no space yet), lowercased;
    /// nil when the text does not end in one. "Hi @ad" → "ad"; "Hi @" → "".
    public static func mentionQuery(in text: String) -> String? {
        guard let at = text.lastIndex(of: "@") else { return nil }
        // "@" starts a word: at the start or after whitespace (not inside an address).
        if at > text.startIndex, !text[text.index(before: at)].isWhitespace { return nil }
        let word = text[text.index(after: at)...]
        guard !word.contains(where: \.isWhitespace), word.count <= 40 else { return nil }
        return word.lowercased()
    }

    /// Who "@query" may mean: participants (not the signed-in user) whose name has a word
    /// starting with the query, by name; at most `limit`.
    public static func mentionCandidates(
        _ query: String, participants: [EntityID], me: EntityID, names: (EntityID) -> String?, limit: Int = 6
    ) -> [(id: EntityID, name: String)] {
        let wanted = query.lowercased()
        return participants.filter { $0 != me }
            .compactMap { id in names(id).map { (id: id, name: $0) } }
            .filter { candidate in
                wanted.isEmpty || candidate.name.lowercased().split(separator: " ").contains { $0.hasPrefix(wanted) }
            }
            .sorted { $0.name.localizedCaseInsensitiveCompare($1.name) == .orderedAscending }
            .prefix(limit).map { $0 }
    }

    /// The text with its trailing "@query" replaced by "@Name " (the completion chosen).
    public static func completingMention(_ text: String, with name: String) -> String {
        guard mentionQuery(in: text) != nil, let at = text.lastIndex(of: "@") else { return text }
        return String(text[..<at]) + "@" + name + " "
    }

    /// The participants a text mentions: every "@Name" of a participant's full name written in
    /// it (longest names first, so "@Ada Lovelace" is not read as "@Ada"). The server checks them.
    public static func mentions(in text: String, participants: [EntityID], names: (EntityID) -> String?) -> [EntityID] {
        let lowered = text.lowercased()
        var found: [EntityID] = []
        let named = participants.compactMap { id in names(id).map { (id: id, name: $0.lowercased()) } }
            .sorted { $0.name.count > $1.name.count }
        var consumed: [Range<String.Index>] = []
        for candidate in named where !candidate.name.isEmpty {
            var searchFrom = lowered.startIndex
            while let range = lowered.range(of: "@" + candidate.name, range: searchFrom..<lowered.endIndex) {
                searchFrom = range.upperBound
                let ends = range.upperBound == lowered.endIndex || !(lowered[range.upperBound].isLetter || lowered[range.upperBound].isNumber)
                let starts = range.lowerBound == lowered.startIndex || lowered[lowered.index(before: range.lowerBound)].isWhitespace
                guard ends, starts, !consumed.contains(where: { $0.overlaps(range) }) else { continue }
                consumed.append(range)
                if !found.contains(candidate.id) { found.append(candidate.id) }
            }
        }
        return found
    }

    /// The pinned bar's line: "📌 Ada: the rules" for the newest pin, "📌 3 pinned" beside it
    /// when there are more; nil when nothing is pinned.
    public static func pinnedLine(_ pinned: [LocalMessage], me: EntityID, names: (EntityID) -> String?) -> String? {
        guard let newest = pinned.max(by: { ($0.pinnedAt ?? .distantPast) < ($1.pinnedAt ?? .distantPast) }) else { return nil }
        let who = newest.senderId == me ? ParleyStrings.text("who.you") : names(newest.senderId) ?? ParleyStrings.text("who.someone")
        let line = "📌 \(who): \(firstLine(newest.text, max: 60))"
        return pinned.count > 1 ? line + "  (\(pinned.count) pinned)" : line
    }
}
