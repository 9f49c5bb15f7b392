import Foundation
import ParleyClient

extension TerminalChat {
    /// The calendar the terminal writes dates and times with: this machine's time zone, and the
    /// locale its environment names (`LC_ALL`, then `LC_TIME`, then `LANG`, as POSIX orders
    /// them: `fr_FR.UTF-8` writes "15:30" and "Aujourd’hui", `en_US.UTF-8` "3:30 PM"). Under
    /// `C`, `POSIX` or nothing, English words and 24-hour times (``ChatPresentation/dateLocale(_:)``).
    nonisolated static let calendar = localCalendar(environment: ProcessInfo.processInfo.environment)

    /// The calendar for an environment's locale variables.
    nonisolated static func localCalendar(environment: [String: String]) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .current
        let name = ["LC_ALL", "LC_TIME", "LANG"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty } ?? ""
        let identifier = String(name.prefix { $0 != "." && $0 != "@" })
        if !identifier.isEmpty, identifier != "C", identifier != "POSIX" {
            calendar.locale = Locale(identifier: identifier)
        }
        return calendar
    }

    /// The language the terminal's texts are written in: the locale its environment names for
    /// messages (`LC_ALL`, then `LC_MESSAGES`, then `LANG`); nil under `C`, `POSIX` or nothing
    /// (English). `fr_FR.UTF-8` writes "Hors ligne" and "Nouveaux messages".
    nonisolated static func localLanguage(environment: [String: String]) -> Locale? {
        let name = ["LC_ALL", "LC_MESSAGES", "LANG"].lazy.compactMap { environment[$0] }.first { !$0.isEmpty } ?? ""
        let identifier = String(name.prefix { $0 != "." && $0 != "@" })
        return identifier.isEmpty || identifier == "C" || identifier == "POSIX" ? nil : Locale(identifier: identifier)
    }
}
