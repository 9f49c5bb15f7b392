import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// What the chat and list screens show, at the edges users notice: grouping across midnight,
/// sender changes and the five-minute window; day titles in the calendar's own time zone
/// (daylight saving included); status marks; banners, badges, byte counts and previews.
@Suite struct SDKPresentationRulesTests {
    static func calendar(_ zone: String) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone)!
        return calendar
    }

    static let utc = calendar("UTC")
    /// Tuesday 24 Nov 2026, 15:30 UTC.
    static let now = Date(timeIntervalSince1970: 1_795_534_200)
    /// Tuesday 24 Nov 2026, 00:00 UTC.
    static let midnight = Date(timeIntervalSince1970: 1_795_478_400)

    let me = EntityID(), ada = EntityID(), bob = EntityID()

    func names(_ id: EntityID) -> String? { id == ada ? "Ada" : id == bob ? "Bob" : nil }

    func local(
        _ sender: EntityID, at date: Date, text: String = "hi", type: MessageType = .text, delivery: Delivery? = nil,
        deleted: Bool = false, edited: Bool = false, replyTo: EntityID? = nil, serverId: EntityID = EntityID(),
        attachment: ParleyProtocol.Attachment? = nil, reactions: [String: [EntityID]] = [:]
    ) -> LocalMessage {
        let message = Message(
            id: serverId, conversationId: EntityID(), seq: 1, updatedSeq: 1, senderId: sender, clientMessageId: UUID().uuidString,
            type: type, text: deleted ? "" : text, replyToId: replyTo, attachment: attachment, reactions: reactions, createdAt: date,
            editedAt: edited ? date.addingTimeInterval(30) : nil, deletedAt: deleted ? date.addingTimeInterval(60) : nil)
        return LocalMessage(message, delivery: delivery ?? (sender == me ? .sent : .received))
    }

    func bubbles(_ items: [ChatPresentation.Item]) -> [ChatPresentation.MessageItem] {
        items.compactMap { if case .message(let item) = $0 { item } else { nil } }
    }

    /// A compact picture of a timeline: "D:Today", "N:text", and "+text" for a message that
    /// starts a group, "·text" for one that continues it.
    func shape(_ items: [ChatPresentation.Item]) -> [String] {
        items.map { item in
            switch item {
            case .day(let title): "D:" + title
            case .notice(let text, _): "N:" + text
            case .unread(let label): "U:" + label
            case .message(let bubble): (bubble.startsGroup ? "+" : "·") + bubble.body
            }
        }
    }

    func timeline(_ messages: [LocalMessage], calendar: Calendar = utc, now: Date = now) -> [ChatPresentation.Item] {
        ChatPresentation.timeline(messages, me: me, names: names, now: now, calendar: calendar)
    }

    /// Midnight splits a run even within five minutes: the day title comes first and the next
    /// message starts a new group with the sender's name.
    @Test func midnightStartsANewDayAndANewGroup() {
        let items = timeline([
            local(ada, at: Self.midnight.addingTimeInterval(-120), text: "late"),
            local(ada, at: Self.midnight.addingTimeInterval(-60), text: "later"),
            local(ada, at: Self.midnight.addingTimeInterval(60), text: "early"),
            local(ada, at: Self.midnight.addingTimeInterval(90), text: "earlier"),
        ])
        #expect(shape(items) == ["D:Yesterday", "+late", "·later", "D:Today", "+early", "·earlier"])
        #expect(bubbles(items).map(\.senderName) == ["Ada", "Ada", "Ada", "Ada"])
    }

    /// The five-minute window is inclusive at exactly 300 s and measured from the previous
    /// message (a slow chat of four-minute gaps stays one group).
    @Test func theGroupingWindowIsMeasuredFromThePreviousMessage() {
        let base = Self.midnight.addingTimeInterval(3600)
        let items = timeline([
            local(ada, at: base, text: "a"),
            local(ada, at: base.addingTimeInterval(300), text: "b"),
            local(ada, at: base.addingTimeInterval(601), text: "c"),
            local(ada, at: base.addingTimeInterval(841), text: "d"),
            local(ada, at: base.addingTimeInterval(1081), text: "e"),
        ])
        #expect(shape(items) == ["D:Today", "+a", "·b", "+c", "·d", "·e"])
    }

    /// Every change of sender starts a group, including going back to the earlier sender, and
    /// my messages are "You" with a status mark while others' have none.
    @Test func senderChangesStartGroupsAndOnlyMineHaveMarks() {
        let base = Self.midnight.addingTimeInterval(7200)
        let items = timeline([
            local(ada, at: base, text: "a1"), local(me, at: base.addingTimeInterval(10), text: "m1", delivery: .read),
            local(me, at: base.addingTimeInterval(20), text: "m2", delivery: .sending), local(ada, at: base.addingTimeInterval(30), text: "a2"),
            local(bob, at: base.addingTimeInterval(40), text: "b1"), local(ada, at: base.addingTimeInterval(50), text: "a3"),
        ])
        #expect(shape(items) == ["D:Today", "+a1", "+m1", "·m2", "+a2", "+b1", "+a3"])
        let shown = bubbles(items)
        #expect(shown.map(\.senderName) == ["Ada", "You", "You", "Ada", "Bob", "Ada"])
        #expect(shown.map(\.isOwn) == [false, true, true, false, false, false])
        #expect(shown.map(\.status) == [nil, .read, .sending, nil, nil, nil])
    }

    /// A system line breaks the group around it but never repeats the day title; a system line
    /// first on a day still gets the day title before it.
    @Test func noticesBreakGroupsButNotDays() {
        let base = Self.midnight.addingTimeInterval(-600)
        let items = timeline([
            local(ada, at: base, text: "a"),
            local(ada, at: base.addingTimeInterval(10), text: "Ada added Bob", type: .system),
            local(ada, at: base.addingTimeInterval(20), text: "b"),
            local(ada, at: Self.midnight.addingTimeInterval(5), text: "Bob left", type: .system),
            local(ada, at: Self.midnight.addingTimeInterval(10), text: "c"),
        ])
        #expect(shape(items) == ["D:Yesterday", "+a", "N:Ada added Bob", "+b", "D:Today", "N:Bob left", "+c"])
        #expect(Set(items.map(\.id)).count == items.count)
    }

    /// Seeded timelines over two weeks with random senders, gaps and system lines, checked
    /// against the rules themselves: one title per day before its first line, and a message
    /// continues a group exactly when the line before it is a message of the same sender, the
    /// same day, at most five minutes earlier.
    @Test(arguments: [UInt64(1), 2, 3, 4, 5])
    func groupingAndDayTitlesFollowTheRulesOnRandomTimelines(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var date = Self.now.addingTimeInterval(-14 * 86400)
        var messages: [LocalMessage] = []
        for index in 0..<300 {
            date = date.addingTimeInterval([30, 200, 299, 300, 301, 900, 5000, 40000].randomElement(using: &random)!)
            guard date <= Self.now else { break }
            let sender = [me, ada, bob].randomElement(using: &random)!
            let system = Int.random(in: 0..<15, using: &random) == 0
            messages.append(local(sender, at: date, text: "m\(index)", type: system ? .system : .text))
        }
        let items = timeline(messages)
        var lastDay: Date?
        var titles: [String] = []
        var previous: (item: ChatPresentation.Item, message: LocalMessage?)?
        var index = 0
        for item in items {
            switch item {
            case .day(let title):
                titles.append(title)
                #expect(title == ChatPresentation.dayTitle(messages[index].createdAt, now: Self.now, calendar: Self.utc))
                previous = (item, nil)
            case .notice(let text, _):
                let message = messages[index]
                #expect(text == message.text && message.type == .system)
                #expect(lastDay == Self.utc.startOfDay(for: message.createdAt), "seed \(seed): a notice before its day's title")
                previous = (item, message)
                index += 1
            case .unread:
                Issue.record("no unread line without a watermark")
            case .message(let bubble):
                let message = messages[index]
                #expect(bubble.message == message)
                let day = Self.utc.startOfDay(for: message.createdAt)
                #expect(lastDay == day, "seed \(seed): a message before its day's title")
                var continues = false
                if case .message = previous?.item, let before = previous?.message {
                    continues = before.senderId == message.senderId && Self.utc.isDate(before.createdAt, inSameDayAs: message.createdAt)
                        && message.createdAt.timeIntervalSince(before.createdAt) <= 300
                }
                #expect(bubble.startsGroup == !continues, "seed \(seed): message \(message.text)")
                previous = (item, message)
                index += 1
            }
            if case .day = item { lastDay = Self.utc.startOfDay(for: messages[index].createdAt) }
        }
        #expect(index == messages.count, "every message shown once")
        #expect(Set(titles).count == titles.count, "seed \(seed): a day title repeated: \(titles)")
        #expect(Set(messages.map { Self.utc.startOfDay(for: $0.createdAt) }).count == titles.count)
        #expect(Set(items.map(\.id)).count == items.count, "seed \(seed): identities must be unique for lists")
    }

    /// Day titles are decided in the calendar's time zone: the same instant is "Today" in UTC and
    /// "Yesterday" 14 hours east, and "Yesterday" holds across a daylight-saving change.
    @Test func dayTitlesUseTheCalendarsTimeZone() {
        // 24 Nov 09:00 UTC is 23:00 on the 24th at +14:00, where "now" (15:30 UTC) is 05:30 on the 25th.
        let morning = Self.midnight.addingTimeInterval(9 * 3600)
        #expect(ChatPresentation.dayTitle(morning, now: Self.now, calendar: Self.utc) == "Today")
        #expect(ChatPresentation.dayTitle(morning, now: Self.now, calendar: Self.calendar("Pacific/Kiritimati")) == "Yesterday")
        #expect(ChatPresentation.time(morning, calendar: Self.calendar("Pacific/Kiritimati")) == "23:00")
        #expect(ChatPresentation.time(morning, calendar: Self.calendar("America/St_Johns")) == "05:30")
        // Berlin moves to summer time on 29 Mar 2026 at 01:00 UTC (a 23-hour day).
        let berlin = Self.calendar("Europe/Berlin")
        let beforeChange = Date(timeIntervalSince1970: 1_774_729_800)  // 28 Mar 2026 21:30 local
        let afterChange = Date(timeIntervalSince1970: 1_774_821_600)  // 30 Mar 2026 00:00 local (22:00 UTC)
        #expect(ChatPresentation.dayTitle(beforeChange, now: afterChange.addingTimeInterval(-60), calendar: berlin) == "Yesterday")
        #expect(ChatPresentation.dayTitle(beforeChange, now: afterChange, calendar: berlin) == "Saturday")
        #expect(ChatPresentation.dayTitle(afterChange.addingTimeInterval(-60), now: afterChange, calendar: berlin) == "Yesterday")
        #expect(ChatPresentation.time(afterChange.addingTimeInterval(-60), calendar: berlin) == "23:59")
    }

    /// Day titles by distance: today, yesterday, a weekday for the rest of the week, then a
    /// date with the year.
    @Test(arguments: [
        (0.0, "Today"), (0.6, "Today"), (0.7, "Yesterday"), (1.6, "Yesterday"), (1.7, "Sunday"), (2.0, "Sunday"),
        (3.0, "Saturday"), (6.0, "Wednesday"), (6.6, "Wednesday"), (6.7, "17 Nov 2026"), (30.0, "25 Oct 2026"), (400.0, "20 Oct 2025"),
    ])
    func dayTitlesByDistance(daysAgo: Double, title: String) {
        let date = Self.now.addingTimeInterval(-daysAgo * 86400)
        #expect(ChatPresentation.dayTitle(date, now: Self.now, calendar: Self.utc) == title)
    }

    /// List times: the clock time today, words within the week, a short date this year and the
    /// full date before.
    @Test(arguments: [
        (0.1, "13:06"), (0.7, "Yesterday"), (4.0, "Friday"), (10.0, "14 Nov"), (330.0, "29 Dec 2025"),
    ])
    func listTimesByDistance(daysAgo: Double, text: String) {
        #expect(ChatPresentation.listTime(Self.now.addingTimeInterval(-daysAgo * 86400), now: Self.now, calendar: Self.utc) == text)
    }

    /// Every delivery state's mark: glyph, word and whether the person can resend it.
    @Test(arguments: [
        (Delivery.sending, "◷", "sending", false), (.notSent, "!", "not sent, retrying", false),
        (.failed(reason: "too long"), "✗", "failed", true), (.sent, "✓", "sent", false),
        (.delivered, "✓✓", "delivered", false), (.read, "✓✓", "read", false),
    ])
    func statusMarks(delivery: Delivery, glyph: String, label: String, canResend: Bool) throws {
        let mark = try #require(ChatPresentation.StatusMark(delivery))
        #expect(mark.glyph == glyph && mark.label == label && mark.canResend == canResend)
        // On my bubble the mark follows the delivery state.
        let items = timeline([local(me, at: Self.now, delivery: delivery)])
        #expect(bubbles(items).first?.status == mark)
    }
}
