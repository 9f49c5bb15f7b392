import Foundation
import ParleyClient
import ParleyProtocol
@testable import ParleyTerminal
import ParleyTestSupport
import Testing

/// Dates and times in the person's locale, decided once for every client: a calendar that
/// names a locale writes its times and day names ("15:30", "Aujourd’hui", "mardi" in French;
/// "3:30 PM" in the US); one that names none (a server, CI, Linux's own default) keeps the
/// English 24-hour forms every other test reads. The terminal takes its locale from `LANG`.
@Suite struct DateLocalePresentationTests {
    /// Tuesday 24 Nov 2026, 15:30 UTC.
    static let now = PresentationTests.now

    static func calendar(_ locale: String?) -> Calendar {
        var calendar = PresentationTests.utc
        if let locale { calendar.locale = Locale(identifier: locale) }
        return calendar
    }

    @Test func aFrenchCalendarWritesFrenchDaysAndTimes() {
        let fr = Self.calendar("fr_FR")
        #expect(ChatPresentation.time(Self.now, calendar: fr) == "15:30")
        #expect(ChatPresentation.dayTitle(Self.now, now: Self.now, calendar: fr) == "Aujourd’hui")
        #expect(ChatPresentation.dayTitle(Self.now.addingTimeInterval(-86_400), now: Self.now, calendar: fr) == "Hier")
        #expect(ChatPresentation.dayTitle(Self.now.addingTimeInterval(-3 * 86_400), now: Self.now, calendar: fr) == "samedi")
        #expect(ChatPresentation.dayTitle(Self.now.addingTimeInterval(-400 * 86_400), now: Self.now, calendar: fr) == "20 oct. 2025")
        #expect(ChatPresentation.listTime(Self.now.addingTimeInterval(-30 * 86_400), now: Self.now, calendar: fr) == "25 oct.")
    }

    @Test func anAmericanCalendarWritesTwelveHourTimes() {
        let us = Self.calendar("en_US")
        #expect(ChatPresentation.time(Self.now, calendar: us).replacingOccurrences(of: "\u{202F}", with: " ") == "3:30 PM")
        #expect(ChatPresentation.dayTitle(Self.now.addingTimeInterval(-86_400), now: Self.now, calendar: us) == "Yesterday")
        #expect(ChatPresentation.dayTitle(Self.now.addingTimeInterval(-400 * 86_400), now: Self.now, calendar: us) == "Oct 20, 2025")
        #expect(ChatPresentation.listTime(Self.now.addingTimeInterval(-30 * 86_400), now: Self.now, calendar: us) == "Oct 25")
    }

    @Test(arguments: [nil, "", "en_001", "en_US_POSIX"])
    func aCalendarWithoutAChosenLocaleKeepsTheEnglishForms(locale: String?) {
        let plain = Self.calendar(locale)
        #expect(ChatPresentation.dateLocale(plain) == nil)
        #expect(ChatPresentation.time(Self.now, calendar: plain) == "15:30")
        #expect(ChatPresentation.dayTitle(Self.now, now: Self.now, calendar: plain) == "Today")
        #expect(ChatPresentation.dayTitle(Self.now.addingTimeInterval(-3 * 86_400), now: Self.now, calendar: plain) == "Saturday")
        #expect(ChatPresentation.dayTitle(Self.now.addingTimeInterval(-400 * 86_400), now: Self.now, calendar: plain) == "20 Oct 2025")
        #expect(ChatPresentation.listTime(Self.now.addingTimeInterval(-30 * 86_400), now: Self.now, calendar: plain) == "25 Oct")
    }

    /// The timeline's times and day titles follow the calendar it is given.
    @Test func theTimelineFollowsTheCalendar() {
        let messages = PresentationSamples.messages(now: Self.now)
        let items = ChatPresentation.timeline(
            messages, me: PresentationSamples.me.id, names: PresentationSamples.names(now: Self.now), now: Self.now, calendar: Self.calendar("fr_FR"))
        let days = items.compactMap { if case .day(let title) = $0 { title } else { nil } }
        #expect(days.contains("Aujourd’hui"), "\(days)")
    }

    @Test(arguments: [
        (["LANG": "fr_FR.UTF-8"], "fr_FR"), (["LANG": "en_US.UTF-8", "LC_TIME": "de_DE.UTF-8"], "de_DE"),
        (["LC_ALL": "pt_BR.UTF-8", "LANG": "fr_FR.UTF-8"], "pt_BR"), (["LANG": "C.UTF-8"], nil), (["LANG": "POSIX"], nil),
        ([:], nil), (["LC_ALL": "", "LANG": "sv_SE@euro"], "sv_SE"),
    ] as [([String: String], String?)])
    func theTerminalTakesItsLocaleFromTheEnvironment(environment: [String: String], locale: String?) {
        let calendar = TerminalChat.localCalendar(environment: environment)
        #expect(ChatPresentation.dateLocale(calendar)?.identifier == locale)
    }
}
