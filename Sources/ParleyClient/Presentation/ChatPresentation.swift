import Foundation
import ParleyProtocol

/// What a chat screen shows, decided once in plain Swift (tested on Linux) so the terminal
/// client and SwiftUI views only lay it out: grouping by sender and day, status marks, the
/// connection banner, badges.
public enum ChatPresentation {
    /// Messages closer than this to the previous one of the same sender join its group.
    public static let groupingWindow: TimeInterval = 5 * 60

    /// One line of a chat's timeline.
    public enum Item: Sendable, Equatable {
        /// "Today", "Yesterday", or a date, before the first message of each day.
        case day(String)
        /// A message; `startsGroup` is true for the first of a run by one sender.
        case message(MessageItem)
        /// A system line ("Ada added Bob").
        case notice(String, id: String)
        /// "New messages": above the first message that was unread when the chat was opened.
        case unread(String)

        /// A stable identity for lists: the message's id, the notice's, the day's title, or
        /// "unread" for the one unread line.
        public var id: String {
            switch self {
            case .day(let title): "day:" + title
            case .message(let item): item.message.id
            case .notice(_, let id): id
            case .unread: "unread"
            }
        }
    }

    /// A message as a bubble shows it.
    public struct MessageItem: Sendable, Equatable {
        /// The message shown.
        public var message: LocalMessage
        /// Whether the signed-in user sent it.
        public var isOwn: Bool
        /// The sender's name (shown when the group starts).
        public var senderName: String
        /// The address of the sender's picture (``User/avatarUrl``), shown beside the name;
        /// nil for one's own messages and for people without one.
        public var senderPicture: String? = nil
        /// First of a run of one sender's messages within ``groupingWindow`` on one day.
        public var startsGroup: Bool
        /// The text to show: the message's, or "This message was deleted".
        public var body: String
        /// "10:42".
        public var time: String
        /// The delivery mark of an own message; nil for others'.
        public var status: StatusMark?
        /// "edited" when edited (and not deleted).
        public var isEdited: Bool
        /// "👍 2  ❤️ 1", reactions in a stable order; empty when none.
        public var reactions: String
        /// Who reacted: "👍 You, Ada Lovelace; ❤️ Bob Byte", in ``reactions``' order; empty when none.
        public var reactionPeople: String = ""
        /// The emoji the signed-in user reacted with (a second tap takes one back).
        public var myReactions: Set<String>
        /// "↪ Ada: the quoted text", when it replies to a message found in the timeline.
        public var replyPreview: String?
        /// "📎 report.pdf (12 KB)" for attachments.
        public var attachmentLine: String?
        /// Which cell shows it (from the interaction layer's component registry).
        public var cell: Cell
        /// "3 replies · 10:42" under a thread's root; nil when it has none.
        public var threadLine: String? = nil
        /// Whether the message is pinned.
        public var isPinned: Bool = false
        /// Whether it mentions the signed-in user (shown highlighted).
        public var mentionsMe: Bool = false
        /// The link preview card, when the server read one (plain texts).
        public var previewCard: PreviewCard? = nil
    }

    /// The delivery state of an own message as a mark and a word.
    public enum StatusMark: String, Sendable, Equatable {
        case sending, notSent, failed, sent, delivered, read

        /// The mark of a delivery state; nil for `received` (a message from someone else).
        public init?(_ delivery: Delivery) {
            switch delivery {
            case .sending: self = .sending
            case .notSent: self = .notSent
            case .failed: self = .failed
            case .sent: self = .sent
            case .delivered: self = .delivered
            case .read: self = .read
            case .received: return nil
            }
        }

        /// A short mark: ◷ sending, ✓ sent, ✓✓ delivered, ✓✓ read (shown coloured), ! not sent.
        public var glyph: String {
            switch self {
            case .sending: "◷"
            case .notSent: "!"
            case .failed: "✗"
            case .sent: "✓"
            case .delivered, .read: "✓✓"
            }
        }

        /// Whether the person can send it again (a refused message; one not sent yet is retried
        /// by the outbox on its own, and "retry now" is ``ChatModel/retryNow()``).
        public var canResend: Bool { self == .failed }

        /// The word beside or instead of the mark (accessibility, plain terminals).
        public var label: String {
            switch self {
            case .sending: ParleyStrings.text("status.sending")
            case .notSent: ParleyStrings.text("status.notSent")
            case .failed: ParleyStrings.text("status.failed")
            case .sent: ParleyStrings.text("status.sent")
            case .delivered: ParleyStrings.text("status.delivered")
            case .read: ParleyStrings.text("status.read")
            }
        }
    }

    /// The timeline of a conversation: day separators, grouped messages, system notices, and
    /// with `unreadAfter` (the read watermark the chat was opened with) a "New messages" line.
    /// `registry` decides each message's ``Cell`` (an app's own components included);
    /// `pictures` gives the address of a sender's picture.
    public static func timeline(
        _ messages: [LocalMessage], me: EntityID, names: (EntityID) -> String?,
        pictures: (EntityID) -> String? = { _ in nil }, now: Date = Date(),
        calendar: Calendar = .current, registry: MessageComponentRegistry = MessageComponentRegistry(),
        unreadAfter: Int64? = nil
    ) -> [Item] {
        var items: [Item] = []
        var previous: LocalMessage?
        // The "New messages" line goes above the first message from someone else past the
        // read watermark the chat was opened with.
        var unreadPlaced = unreadAfter == nil
        var byServerId: [EntityID: LocalMessage] = [:]
        for message in messages { if let id = message.serverId { byServerId[id] = message } }
        var previousDay: Date?
        for message in messages {
            let day = calendar.startOfDay(for: message.createdAt)
            // A notice ends a group but not a day: one day title per day.
            let newDay = previousDay != day
            previousDay = day
            if newDay { items.append(.day(dayTitle(message.createdAt, now: now, calendar: calendar))) }
            if !unreadPlaced, let after = unreadAfter, let seq = message.seq, seq > after, message.senderId != me, message.type != .system {
                unreadPlaced = true
                items.append(.unread(ParleyStrings.text("timeline.newMessages")))
                previous = nil
            }
            if message.type == .system {
                items.append(.notice(systemLine(message.text, metadata: message.metadata, by: message.senderId, me: me, names: names), id: message.id))
                previous = nil
                continue
            }
            let startsGroup: Bool = if newDay { true } else if let previous {
                previous.senderId != message.senderId || message.createdAt.timeIntervalSince(previous.createdAt) > groupingWindow
            } else { true }
            let isOwn = message.senderId == me
            let name = isOwn ? ParleyStrings.text("who.you") : names(message.senderId) ?? ParleyStrings.text("who.someone")
            var reply: String?
            if let replyTo = message.replyToId {
                if let quoted = byServerId[replyTo] {
                    let who = quoted.senderId == me ? ParleyStrings.text("who.you") : names(quoted.senderId) ?? ParleyStrings.text("who.someone")
                    reply = "↪ \(who): \(quoted.deletedAt != nil ? "deleted message" : firstLine(quoted.text, max: 60))"
                } else {
                    reply = "↪ an earlier message"
                }
            }
            items.append(.message(MessageItem(
                message: message, isOwn: isOwn, senderName: name, senderPicture: isOwn ? nil : pictures(message.senderId),
                startsGroup: startsGroup,
                body: body(of: message),
                time: time(message.createdAt, calendar: calendar), status: isOwn ? StatusMark(message.delivery) : nil,
                isEdited: message.editedAt != nil && message.deletedAt == nil,
                reactions: reactionLine(message.reactions),
                reactionPeople: reactionPeople(message.reactions, me: me, names: names),
                myReactions: Set(message.reactions.filter { $0.value.contains(me) }.keys), replyPreview: reply,
                attachmentLine: message.deletedAt == nil && !message.senderBlocked ? message.attachment.map(attachmentLine) : nil,
                cell: cell(for: message, registry: registry),
                threadLine: message.thread.map { threadLine($0, now: now, calendar: calendar) },
                isPinned: message.pinnedAt != nil, mentionsMe: message.mentions.contains(me) && !isOwn,
                previewCard: message.deletedAt == nil && !message.senderBlocked ? message.preview.flatMap(PreviewCard.init) : nil)))
            previous = message
        }
        return items
    }

    /// What a message's bubble says: its text; "This message was deleted" for a tombstone (or
    /// "Removed by an admin" when someone else deleted it); "Message from a blocked user"
    /// in place of the words of a sender the viewer blocks.
    public static func body(of message: LocalMessage) -> String {
        if message.deletedAt != nil {
            return ParleyStrings.text(message.deletedBy.map { $0 != message.senderId } == true ? "message.removedByAdmin" : "message.deleted")
        }
        return message.senderBlocked ? ParleyStrings.text("message.fromBlocked") : message.text
    }

    /// A search hit as one line: "#12 14:05 Ada: the [snippet]", or "#12 14:05 Message from a
    /// blocked user" for a sender the viewer blocks, whose words stay folded in results too.
    public static func searchLine(_ result: SearchResult, sender: String, calendar: Calendar = .current) -> String {
        let head = "#\(result.seq) \(time(result.message.createdAt, calendar: calendar))"
        return result.message.senderBlocked == true ? "\(head) Message from a blocked user" : "\(head) \(sender): \(result.snippet)"
    }

    /// "Today", "Yesterday", a weekday within the week, else "23 Nov 2026"; in the calendar's
    /// locale when it has one (``dateLocale(_:)``: "Aujourd’hui", "mardi", "24 nov. 2026").
    public static func dayTitle(_ date: Date, now: Date, calendar: Calendar = .current) -> String {
        let day = calendar.startOfDay(for: date)
        let today = calendar.startOfDay(for: now)
        let days = calendar.dateComponents([.day], from: day, to: today).day ?? 0
        let locale = dateLocale(calendar)
        switch days {
        case 0: return ParleyStrings.text("day.today", locale: locale ?? english)
        case 1: return ParleyStrings.text("day.yesterday", locale: locale ?? english)
        case 2..<7:
            guard let locale else { return weekdays[(calendar.component(.weekday, from: date) + 6) % 7] }
            return date.formatted(style(locale, calendar).weekday(.wide))
        default:
            guard let locale else {
                let parts = calendar.dateComponents([.day, .month, .year], from: date)
                return "\(parts.day ?? 1) \(months[((parts.month ?? 1) + 11) % 12]) \(parts.year ?? 1970)"
            }
            return date.formatted(style(locale, calendar).day().month(.abbreviated).year())
        }
    }

    /// The locale dates and times are written in: the calendar's when it names one the person
    /// chose (an app's `Calendar.current`, or the terminal's from `LANG`). Without one (a server,
    /// a CI machine, Linux's own default `en_001`) nil: English words and 24-hour times, the same
    /// everywhere.
    public static func dateLocale(_ calendar: Calendar) -> Locale? {
        guard let locale = calendar.locale, !["", "en_001", "en_US_POSIX"].contains(locale.identifier) else { return nil }
        return locale
    }

    private static let english = Locale(identifier: "en")

    private static func style(_ locale: Locale, _ calendar: Calendar) -> Date.FormatStyle {
        Date.FormatStyle(locale: locale, calendar: calendar, timeZone: calendar.timeZone)
    }

    // English names whatever the machine's locale (a server or CI may have none).
    private static let weekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// "09:05" in 24-hour time; in the calendar's locale when it has one ("3:30 PM" in the US).
    public static func time(_ date: Date, calendar: Calendar = .current) -> String {
        if let locale = dateLocale(calendar) {
            return date.formatted(Date.FormatStyle(date: .omitted, time: .shortened, locale: locale, calendar: calendar, timeZone: calendar.timeZone))
        }
        let parts = calendar.dateComponents([.hour, .minute], from: date)
        return String(format: "%02d:%02d", parts.hour ?? 0, parts.minute ?? 0)
    }

    /// A date of this year without its year ("24 Nov", "24 nov."), in the calendar's locale.
    static func dayAndMonth(_ date: Date, calendar: Calendar) -> String? {
        guard let locale = dateLocale(calendar) else { return nil }
        return date.formatted(style(locale, calendar).day().month(.abbreviated))
    }

    /// Reactions as "👍 2  ❤️ 1", most first, then by emoji.
    public static func reactionLine(_ reactions: [String: [EntityID]]) -> String {
        ordered(reactions).map { "\($0.key) \($0.value.count)" }.joined(separator: "  ")
    }

    /// "👍 You, Ada Lovelace; ❤️ Bob Byte": who reacted with what, the user first as "You",
    /// then the others in the order they reacted.
    public static func reactionPeople(_ reactions: [String: [EntityID]], me: EntityID, names: (EntityID) -> String?) -> String {
        ordered(reactions).map { emoji, users in
            let people = users.contains(me) ? [me] + users.filter { $0 != me } : users
            return "\(emoji) " + people.map { $0 == me ? ParleyStrings.text("who.you") : names($0) ?? ParleyStrings.text("who.someone") }.joined(separator: ", ")
        }.joined(separator: "; ")
    }

    /// Reactions with someone behind them, the most chosen first (then by emoji).
    private static func ordered(_ reactions: [String: [EntityID]]) -> [(key: String, value: [EntityID])] {
        reactions.filter { !$0.value.isEmpty }
            .sorted { $0.value.count != $1.value.count ? $0.value.count > $1.value.count : $0.key < $1.key }
    }

    /// "📎 report.pdf (12 KB)" or "🖼 photo.png (1.2 MB)".
    public static func attachmentLine(_ attachment: Attachment) -> String {
        let icon = attachment.contentType.hasPrefix("image/") ? "🖼" : "📎"
        return "\(icon) \(attachment.name) (\(byteCount(attachment.size)))"
    }

    /// What VoiceOver says of an attachment, without the emoji of ``attachmentLine(_:)``:
    /// "Picture, photo.png, 1.2 MB", "Video, clip.mov, 8.0 MB", "File, report.pdf, 12 KB".
    public static func spokenAttachment(_ attachment: Attachment) -> String {
        let kind = switch MessageType.forAttachment(contentType: attachment.contentType) {
        case .image: "Picture"
        case .video: "Video"
        case .audio: "Sound"
        default: "File"
        }
        return "\(kind), \(attachment.name), \(byteCount(attachment.size))"
    }

    /// "512 B", "12 KB", "1.2 MB".
    public static func byteCount(_ bytes: Int64) -> String {
        switch bytes {
        case ..<1024: return "\(bytes) B"
        case ..<(1024 * 1024): return "\(bytes / 1024) KB"
        default: return String(format: "%.1f MB", Double(bytes) / 1_048_576)
        }
    }

    /// A badge: "" for none, the count, "99+" above 99.
    public static func badge(_ count: Int) -> String {
        count <= 0 ? "" : count > 99 ? "99+" : "\(count)"
    }

    /// The connection banner's text; nil while connected (no banner). `retryHint` names how to
    /// retry after the client gave up ("/retry" in the terminal); a screen with a retry button
    /// passes nil.
    public static func banner(_ state: ConnectionState, syncing: Bool = false, outboxCount: Int = 0, retryHint: String? = nil) -> String? {
        let waiting = outboxCount > 0 ? ParleyStrings.text("banner.waiting", ["count": "\(outboxCount)"]) : ""
        switch state {
        case .connected:
            return syncing ? ParleyStrings.text("banner.syncing") + (outboxCount > 0 ? ParleyStrings.text("banner.sending", ["count": "\(outboxCount)"]) : "") : nil
        case .connecting: return ParleyStrings.text("banner.connecting") + waiting
        case .disconnected: return ParleyStrings.text("banner.offline") + waiting
        case .reconnecting(_, let retryIn):
            let seconds = Int((Double(retryIn.components.seconds) + Double(retryIn.components.attoseconds) / 1e18).rounded(.up))
            return ParleyStrings.text("banner.reconnecting", ["seconds": "\(max(seconds, 1))"]) + waiting
        case .failed: return ParleyStrings.text("banner.unreachable") + (retryHint.map { " (\($0))" } ?? "") + waiting
        }
    }

    /// A system message as a sentence with who did what, from its metadata: "You renamed the
    /// group to “Launch”", "Ada added Bob and Carol", "Bob removed Dan", "Carol left". Names
    /// not known yet read "Someone"; a message without a known action keeps its own text.
    public static func systemLine(
        _ text: String, metadata: [String: String]?, by actor: EntityID, me: EntityID, names: (EntityID) -> String?
    ) -> String {
        func name(_ id: EntityID) -> String { id == me ? ParleyStrings.text("who.youObject") : names(id) ?? ParleyStrings.text("who.someone") }
        func list(_ ids: [EntityID]) -> String {
            let all = ids.map(name)
            guard all.count > 1 else { return all.first ?? ParleyStrings.text("who.people") }
            return all.dropLast().joined(separator: ", ") + ParleyStrings.text("list.and") + (all.last ?? "")
        }
        // "You …" and "Ada …" are two sentences: in French the verb agrees ("Vous avez", "Ada a").
        let own = actor == me ? ".you" : ""
        let who = names(actor) ?? ParleyStrings.text("who.someone")
        func line(_ key: String, _ values: [String: String] = [:]) -> String {
            ParleyStrings.fill(ParleyStrings.text(key + own), values.merging(["who": who]) { given, _ in given })
        }
        let meta = metadata ?? [:]
        let ids = { (key: String) in (meta[key] ?? "").split(separator: ",").compactMap { EntityID(String($0)) } }
        switch meta["action"] {
        case "renamed": return meta["name"].map { line("system.renamedTo", ["name": $0]) } ?? line("system.renamed")
        case "participants.added": return line("system.added", ["people": list(ids("userIds"))])
        case "participant.removed": return line("system.removed", ["people": list(ids("userId"))])
        case "participant.left": return line("system.left")
        default: return text.isEmpty ? line("system.changed") : text
        }
    }

    /// Whether a new message elsewhere deserves the terminal's bell: some conversation other
    /// than the open one has more unread messages than before (a new conversation with unread
    /// ones too). Nothing rings for the first list (what was unread at start) or for reading.
    public static func shouldRing(previousUnread: [EntityID: Int]?, currentUnread: [EntityID: Int], open: EntityID?) -> Bool {
        guard let previousUnread else { return false }
        return currentUnread.contains { id, count in id != open && count > (previousUnread[id] ?? 0) }
    }

    /// The first line of a text, cut to `max` characters with an ellipsis.
    public static func firstLine(_ text: String, max: Int) -> String {
        // "\r\n" is one Character in Swift: a Windows line ending ends the line too.
        let line = text.split(maxSplits: 1, omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).first.map(String.init) ?? ""
        return line.count > max ? String(line.prefix(max - 1)) + "…" : line
    }

    /// A conversation's title: its name, else the other participants' names ("Someone" for one
    /// not known yet), else "Just you". Worked out when shown, so a name that arrives after the
    /// list (the directory loads after a first sign-in) replaces "Someone" at the next frame.
    public static func title(_ conversation: Conversation, me: EntityID, names: (EntityID) -> String?) -> String {
        if let name = conversation.name { return name }
        let others = conversation.participantIds.filter { $0 != me }.map { names($0) ?? ParleyStrings.text("who.someone") }
        return others.isEmpty ? ParleyStrings.text("conversation.justYou") : others.joined(separator: ", ")
    }

    /// A conversation list row's preview: "You: hi", "Ada: hello", "📎 file", "No messages yet".
    public static func preview(_ conversation: Conversation, me: EntityID, names: (EntityID) -> String?) -> String {
        guard let last = conversation.lastMessage else { return ParleyStrings.text("preview.none") }
        if last.deletedAt != nil { return ParleyStrings.text("message.deleted") }
        if last.senderBlocked == true { return ParleyStrings.text("message.fromBlocked") }
        if last.type == .system {
            return firstLine(systemLine(last.text, metadata: last.metadata, by: last.senderId, me: me, names: names), max: 80)
        }
        let who = last.senderId == me ? ParleyStrings.text("who.you") : names(last.senderId) ?? ParleyStrings.text("who.someone")
        let body = last.text.isEmpty ? (last.attachment.map(attachmentLine) ?? "") : firstLine(last.text, max: 80)
        return conversation.type == .direct && last.senderId != me ? body : ParleyStrings.text("preview.from", ["who": who, "text": body])
    }
}
