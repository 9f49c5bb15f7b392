import Foundation
import ParleyProtocol

extension ChatPresentation {
    /// Which cell a message gets, from the interaction layer's ``MessageComponentRegistry``:
    /// an app that registers its own component for a type gets ``custom(_:)``.
    public enum Cell: Sendable, Equatable, Hashable {
        case text, image, video, audio, file, location, system
        /// A deleted message: "This message was deleted", no attachment, no actions but delete
        /// for me.
        case deleted
        /// An app's own component, by its identifier.
        case custom(String)
    }

    /// The cell for a message: deleted messages get ``Cell/deleted``; media without its
    /// attachment falls back to text so nothing shows an empty frame.
    public static func cell(for message: LocalMessage, registry: MessageComponentRegistry = MessageComponentRegistry()) -> Cell {
        if message.deletedAt != nil { return .deleted }
        let identifier = registry.component(for: message).identifier
        let cell: Cell = switch identifier {
        case "text": .text
        case "image": .image
        case "video": .video
        case "audio": .audio
        case "file": .file
        case "location": .location
        case "system": .system
        default: .custom(identifier)
        }
        switch cell {
        case .image, .video, .audio, .file: return message.attachment == nil ? .text : cell
        case .location: return pin(of: message) == nil ? .text : cell
        default: return cell
        }
    }

    /// Where a location message points.
    public struct Pin: Sendable, Equatable {
        /// The latitude, in degrees.
        public var latitude: Double
        /// The longitude, in degrees.
        public var longitude: Double
        /// The place's name, when the sender gave one.
        public var name: String?

        /// A pin at these coordinates, named or not.
        public init(latitude: Double, longitude: Double, name: String? = nil) {
            self.latitude = latitude
            self.longitude = longitude
            self.name = name
        }
    }

    /// The pin of a location message; nil when its metadata has no valid coordinates.
    public static func pin(of message: LocalMessage) -> Pin? {
        guard message.type == .location, let latitude = message.metadata?["latitude"].flatMap(Double.init),
              let longitude = message.metadata?["longitude"].flatMap(Double.init),
              (-90...90).contains(latitude), (-180...180).contains(longitude) else { return nil }
        return Pin(latitude: latitude, longitude: longitude, name: message.metadata?["name"])
    }

    /// Whether a user is reachable now, for a direct conversation's presence dot.
    public enum Presence: String, Sendable, Equatable {
        case online, offline
    }

    /// One row of the conversation list as a screen shows it.
    public struct ListRowItem: Sendable, Equatable, Identifiable {
        /// The conversation's id.
        public var id: EntityID
        /// The group's name or the other people's names.
        public var title: String
        /// Up to two letters for the avatar: "AL" for "Ada Lovelace", "#" for an unnamed group.
        public var initials: String
        /// "Ada is typing…" while someone types there, else the last message ("You: hi").
        public var preview: String
        /// Whether ``preview`` is a typing line (shown in the accent colour).
        public var isTyping: Bool
        /// When the last activity was: "10:42" today, "Yesterday", a weekday, else "23 Nov".
        public var time: String
        /// "" for none, "3", "99+".
        public var badge: String
        /// "@" when unread messages mention the user, else "".
        public var mentionBadge: String = ""
        /// Whether the user muted it: its badge is shown quiet (grey), and it rings no bell.
        public var isMuted: Bool = false
        /// The other person's presence in a direct conversation; nil for groups.
        public var presence: Presence?
        /// The address of the other person's picture in a direct conversation (shown instead
        /// of ``initials`` once loaded); nil for groups and people without one.
        public var picture: String? = nil
        /// "Ada Lovelace, 3 unread, typing" for VoiceOver.
        public var accessibilityLabel: String
    }

    /// A list row from the list model's row, the directory and the typing line (if any).
    public static func listRow(
        _ row: ConversationRow, me: EntityID, users: [EntityID: User], typing: String? = nil,
        now: Date = Date(), calendar: Calendar = .current
    ) -> ListRowItem {
        let conversation = row.conversation
        let names: (EntityID) -> String? = { users[$0]?.displayName }
        let peer = conversation.type == .direct ? conversation.participantIds.first { $0 != me } : nil
        let presence: Presence? = peer.map { users[$0]?.isOnline == true ? .online : .offline }
        let typingText = typing.flatMap { $0.isEmpty ? nil : $0 }
        let preview = typingText ?? self.preview(conversation, me: me, names: names)
        var spoken = [row.title]
        if row.unreadCount > 0 { spoken.append(ParleyStrings.text("spoken.unread", ["count": "\(row.unreadCount)"])) }
        if conversation.mentionCount > 0 {
            spoken.append(ParleyStrings.text(conversation.mentionCount == 1 ? "spoken.mention" : "spoken.mentions", ["count": "\(conversation.mentionCount)"]))
        }
        if conversation.muted { spoken.append(ParleyStrings.text("spoken.muted")) }
        if presence == .online { spoken.append(ParleyStrings.text("subtitle.online")) }
        spoken.append(preview)
        return ListRowItem(
            id: row.id, title: row.title, initials: initials(conversation.type == .group && conversation.name == nil ? "" : row.title),
            preview: preview, isTyping: typingText != nil,
            time: conversation.lastMessage == nil ? "" : listTime(conversation.lastActivityAt, now: now, calendar: calendar),
            badge: badge(row.unreadCount), mentionBadge: conversation.mentionCount > 0 ? "@" : "", isMuted: conversation.muted,
            presence: presence, picture: peer.flatMap { users[$0]?.avatarUrl }, accessibilityLabel: spoken.joined(separator: ", "))
    }

    /// The line under a chat's title: the typing line while someone types, else "online",
    /// "last seen 10:42", "last seen Yesterday", "offline" for a direct chat, "12 members" for
    /// a group.
    public static func subtitle(
        _ conversation: Conversation, me: EntityID, users: [EntityID: User], typing: String? = nil,
        now: Date = Date(), calendar: Calendar = .current
    ) -> String {
        if let typing, !typing.isEmpty { return typing }
        if conversation.type == .group {
            return ParleyStrings.text(conversation.memberCount == 1 ? "subtitle.member" : "subtitle.members", ["count": "\(conversation.memberCount)"])
        }
        guard let peer = conversation.participantIds.first(where: { $0 != me }), let user = users[peer] else { return "" }
        if user.isOnline { return ParleyStrings.text("subtitle.online") }
        guard let seen = user.lastSeenAt else { return ParleyStrings.text("subtitle.offline") }
        let day = listTime(seen, now: now, calendar: calendar)
        return calendar.isDate(seen, inSameDayAs: now)
            ? ParleyStrings.text("subtitle.seenAt", ["time": day])
            : ParleyStrings.text("subtitle.seenOn", ["day": day, "time": time(seen, calendar: calendar)])
    }

    /// A list row's time: "10:42" today, "Yesterday", a weekday within the week, else "23 Nov"
    /// (with the year when it is not this year's).
    public static func listTime(_ date: Date, now: Date, calendar: Calendar = .current) -> String {
        if calendar.isDate(date, inSameDayAs: now) { return time(date, calendar: calendar) }
        let days = calendar.dateComponents([.day], from: calendar.startOfDay(for: date), to: calendar.startOfDay(for: now)).day ?? 0
        if days >= 7, calendar.component(.year, from: date) == calendar.component(.year, from: now),
            let short = dayAndMonth(date, calendar: calendar) {
            return short
        }
        let title = dayTitle(date, now: now, calendar: calendar)
        // "23 Nov 2026" → "23 Nov" this year.
        let year = " \(calendar.component(.year, from: now))"
        return title.hasSuffix(year) ? String(title.dropLast(year.count)) : title
    }

    /// Up to two initials of a name ("Ada Lovelace" → "AL", "bob" → "B"); "#" when empty.
    public static func initials(_ name: String) -> String {
        let letters = name.split(whereSeparator: { $0.isWhitespace || $0 == "," })
            .compactMap { $0.first(where: { $0.isLetter || $0.isNumber }) }
            .prefix(2).map { String($0).uppercased() }
        return letters.isEmpty ? "#" : letters.joined()
    }

    /// "Ada is typing…", "Ada and Bob are typing…", …; nil when nobody types.
    public static func typingLine(_ names: [String]) -> String? { TypingIndicators.line(for: names) }

    /// What an empty conversation list says: on a first run before the server answered, a
    /// loading line rather than "no conversations".
    public static func emptyListText(isLoading: Bool) -> String {
        ParleyStrings.text(isLoading ? "list.loading" : "list.empty")
    }

    /// What an empty chat says.
    public static var emptyChatText: String { ParleyStrings.text("chat.empty") }

    /// The "jump to the newest" button's text: "↓" or "↓ 3 new" when messages arrived below.
    public static func jumpToNewest(newBelow: Int) -> String {
        newBelow <= 0 ? "↓" : ParleyStrings.text("chat.newBelow", ["count": newBelow > 99 ? "99+" : "\(newBelow)"])
    }
}
