import Foundation

/// The JSON coders every Parley component uses, so dates and keys look the same on both sides.
///
/// Dates are ISO 8601 UTC with milliseconds (`2026-11-22T10:15:30.123Z`); decoding also
/// accepts dates without fractional seconds.
public enum WireCoding {
    /// A new encoder configured for the wire format.
    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(formatTimestamp(date))
        }
        return encoder
    }

    /// A new decoder configured for the wire format.
    public static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = parseTimestamp(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "Expected an ISO 8601 date, got \(text)")
            }
            return date
        }
        return decoder
    }

    /// Formats a date as the wire's ISO 8601 UTC timestamp with milliseconds.
    ///
    /// Done with integer arithmetic on whole milliseconds: Foundation's format styles truncate
    /// the binary fraction (…123 ms prints as .122), which would make a date drift on every
    /// round trip.
    public static func formatTimestamp(_ date: Date) -> String {
        let ms = date.millisecondsSince1970
        let (seconds, milli) = ms.quotientAndRemainder(dividingBy: 1000)
        let secondsFloor = milli < 0 ? seconds - 1 : seconds
        let millis = milli < 0 ? milli + 1000 : milli
        let (daysRaw, secondOfDay) = secondsFloor.quotientAndRemainder(dividingBy: 86_400)
        let days = secondOfDay < 0 ? daysRaw - 1 : daysRaw
        let sod = secondOfDay < 0 ? secondOfDay + 86_400 : secondOfDay
        let (year, month, day) = civil(fromDays: days)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(sod / 3600, 2)):\(pad(sod / 60 % 60, 2)):\(pad(sod % 60, 2)).\(pad(millis, 3))Z"
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)`; fractions beyond milliseconds are rounded.
    public static func parseTimestamp(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 40 else { return nil }
        func number(_ from: Int, _ length: Int) -> Int64? {
            guard from + length <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[from..<from + length] {
                guard byte >= 48, byte <= 57 else { return nil }
                value = value * 10 + Int64(byte - 48)
            }
            return value
        }
        guard let year = number(0, 4), bytes[4] == UInt8(ascii: "-"), let month = number(5, 2),
            bytes[7] == UInt8(ascii: "-"), let day = number(8, 2),
            bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t"),
            let hour = number(11, 2), bytes[13] == UInt8(ascii: ":"), let minute = number(14, 2),
            bytes[16] == UInt8(ascii: ":"), let second = number(17, 2),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var index = 19
        var fractionMs: Double = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 100.0
            let start = index
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                fractionMs += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < bytes.count else { return nil }
        var offsetSeconds: Int64 = 0
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            guard index + 1 == bytes.count else { return nil }
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == bytes.count, let oh = number(index + 1, 2), bytes[index + 3] == UInt8(ascii: ":"),
                let om = number(index + 4, 2)
            else { return nil }
            offsetSeconds = (oh * 3600 + om * 60) * (bytes[index] == UInt8(ascii: "+") ? 1 : -1)
        default:
            return nil
        }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(millisecondsSince1970: seconds * 1000 + Int64(fractionMs.rounded()))
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01.
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

extension Date {
    /// This date truncated to whole milliseconds, the precision the wire and the stores keep.
    public var wholeMilliseconds: Date {
        Date(millisecondsSince1970: millisecondsSince1970)
    }

    /// Milliseconds since 1970, as the stores keep timestamps.
    public var millisecondsSince1970: Int64 {
        Int64((timeIntervalSince1970 * 1000).rounded())
    }

    /// A date from milliseconds since 1970.
    public init(millisecondsSince1970 ms: Int64) {
        self.init(timeIntervalSince1970: Double(ms) / 1000)
    }
}

/// An empty JSON object (`{}`), the data of commands and replies that carry nothing.
public struct EmptyPayload: Codable, Sendable, Equatable {
    /// The empty payload.
    public init() {}
}
