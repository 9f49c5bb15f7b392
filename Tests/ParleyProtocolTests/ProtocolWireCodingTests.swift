import Foundation
import ParleyProtocol
import Testing

/// Timestamps: a message's `createdAt` must read the same on every device and survive any
/// number of round trips without drifting; dates from other clients (offsets, no fraction,
/// nanoseconds) must read as the instant they name; anything else must be refused.
@Suite struct ProtocolWireCodingTests {
    /// Exact strings for instants around the edges of the calendar arithmetic: the epoch and
    /// the millisecond before it, leap days (2000 and 1600 are leap, 1900 and 2100 are not),
    /// the first and last instants of years 0001 and 9999, 2038's 32-bit limit, a pre-1970 date.
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000Z"), (-1, "1969-12-31T23:59:59.999Z"), (-1000, "1969-12-31T23:59:59.000Z"),
        (-86_400_001, "1969-12-30T23:59:59.999Z"), (951_782_400_000, "2000-02-29T00:00:00.000Z"),
        (-2_203_891_200_000, "1900-03-01T00:00:00.000Z"), (-2_203_891_200_001, "1900-02-28T23:59:59.999Z"),
        (4_107_499_200_000, "2100-02-28T12:00:00.000Z"), (1_709_251_199_999, "2024-02-29T23:59:59.999Z"),
        (-11_670_998_400_000, "1600-02-29T00:00:00.000Z"), (-62_135_596_800_000, "0001-01-01T00:00:00.000Z"),
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z"), (-14_182_940_000, "1969-07-20T20:17:40.000Z"),
        (2_147_483_647_999, "2038-01-19T03:14:07.999Z"), (1_795_342_530_123, "2026-11-22T10:15:30.123Z"),
        (1_795_342_530_001, "2026-11-22T10:15:30.001Z"), (1_795_342_530_010, "2026-11-22T10:15:30.010Z"),
    ])
    func timestampsHaveTheirExactText(ms: Int64, text: String) {
        #expect(WireCoding.formatTimestamp(Date(millisecondsSince1970: ms)) == text)
        #expect(WireCoding.parseTimestamp(text)?.millisecondsSince1970 == ms)
    }

    /// Seeded over years 0001–9999: format then parse gives the same millisecond, the text
    /// always has the 24-character shape, and texts sort like the instants they name (a client
    /// ordering by the string orders correctly).
    @Test func randomInstantsRoundTripAndSortLikeTheirText() {
        var rng = ProtocolRandom(seed: 0xDA7E)
        var pairs: [(Int64, String)] = []
        for _ in 0..<1_000 {
            let ms = ProtocolSamples.milliseconds(&rng)
            let text = WireCoding.formatTimestamp(Date(millisecondsSince1970: ms))
            #expect(WireCoding.parseTimestamp(text)?.millisecondsSince1970 == ms, "\(ms) → \(text)")
            #expect(text.utf8.count == 24 && text.hasSuffix("Z"), "\(text)")
            #expect(text.suffix(4).prefix(3) == Self.threeDigits(((ms % 1000) + 1000) % 1000), "\(ms) → \(text)")
            pairs.append((ms, text))
        }
        #expect(pairs.sorted { $0.0 < $1.0 }.map(\.1) == pairs.map(\.1).sorted())
    }

    static func threeDigits(_ value: Int64) -> Substring {
        let text = String(value)
        return Substring(String(repeating: "0", count: 3 - text.count) + text)
    }

    /// Seeded over 1600–9999 (where Foundation's Gregorian calendar is proleptic-safe): the
    /// date and time fields are the ones Foundation's calendar gives in UTC.
    @Test func randomInstantsAgreeWithFoundationsCalendar() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
        var rng = ProtocolRandom(seed: 0xCA1)
        for _ in 0..<2_000 {
            let ms = Int64.random(in: -11_670_998_400_000...253_402_300_799_999, using: &rng)
            let date = Date(millisecondsSince1970: ms)
            let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
            let expected = String(
                format: "%04d-%02d-%02dT%02d:%02d:%02d", parts.year!, parts.month!, parts.day!, parts.hour!, parts.minute!, parts.second!)
            #expect(WireCoding.formatTimestamp(date).prefix(19) == expected, "\(ms)")
        }
    }

    /// A date with sub-millisecond precision (what `Date()` gives the server) is written as
    /// the millisecond it is stored as, so the event's `createdAt` and the one `/messages`
    /// returns later are the same text.
    @Test func subMillisecondDatesAreWrittenAsTheirStoredMillisecond() {
        var rng = ProtocolRandom(seed: 0x5B)
        for _ in 0..<2_000 {
            let seconds = Double.random(in: -2_000_000_000...4_000_000_000, using: &rng)
            let date = Date(timeIntervalSince1970: seconds)
            let text = WireCoding.formatTimestamp(date)
            #expect(text == WireCoding.formatTimestamp(date.wholeMilliseconds), "\(seconds)")
            #expect(WireCoding.parseTimestamp(text) == date.wholeMilliseconds, "\(seconds)")
            #expect(Date(millisecondsSince1970: date.millisecondsSince1970) == date.wholeMilliseconds)
            #expect(abs(date.wholeMilliseconds.timeIntervalSince(date)) <= 0.000_5 + 1e-6, "\(seconds)")
        }
    }

    /// Milliseconds survive Date and back exactly, across the whole range the stores keep
    /// (Foundation's ISO style prints …123 as .122 for some of these).
    @Test func millisecondsSurviveDateExactly() {
        var rng = ProtocolRandom(seed: 0x1)
        for _ in 0..<2_000 {
            let ms = ProtocolSamples.milliseconds(&rng)
            #expect(Date(millisecondsSince1970: ms).millisecondsSince1970 == ms)
        }
    }

    /// What other clients send: offsets, lower-case separators, no fraction, one to nine
    /// fraction digits (rounded to the millisecond), and offsets that cross midnight, months
    /// and years. Each reads as the instant it names.
    @Test(arguments: [
        ("2026-11-22T10:15:30Z", Int64(1_795_342_530_000)),
        ("2026-11-22t10:15:30z", 1_795_342_530_000),
        ("2026-11-22T10:15:30.1Z", 1_795_342_530_100),
        ("2026-11-22T10:15:30.12Z", 1_795_342_530_120),
        ("2026-11-22T10:15:30.123Z", 1_795_342_530_123),
        ("2026-11-22T10:15:30.1234Z", 1_795_342_530_123),
        ("2026-11-22T10:15:30.1235Z", 1_795_342_530_124),
        ("2026-11-22T10:15:30.123456789Z", 1_795_342_530_123),
        ("2026-11-22T10:15:30.000000001Z", 1_795_342_530_000),
        ("2026-11-22T10:15:30.9996Z", 1_795_342_531_000),
        ("2026-11-22T10:15:30.000Z", 1_795_342_530_000),
        ("2026-11-22T12:15:30.123+02:00", 1_795_342_530_123),
        ("2026-11-22T04:45:30.123-05:30", 1_795_342_530_123),
        ("2026-11-22T10:15:30.123+00:00", 1_795_342_530_123),
        ("2026-11-22T10:15:30.123-00:00", 1_795_342_530_123),
        ("2026-11-23T00:15:30+14:00", 1_795_342_530_000),
        ("2026-11-21T22:15:30-12:00", 1_795_342_530_000),
        ("2027-01-01T00:30:00+01:00", 1_798_759_800_000),
        ("2026-12-31T23:30:00Z", 1_798_759_800_000),
        ("1970-01-01T00:59:59.999+01:00", -1),
        ("2026-11-22T10:15:60Z", 1_795_342_560_000),
    ])
    func inputFormatsReadAsTheInstantTheyName(text: String, ms: Int64) {
        #expect(WireCoding.parseTimestamp(text)?.millisecondsSince1970 == ms, "\(text)")
    }

    /// Texts that are not the wire's timestamps are refused (a decoder then fails the body with
    /// `invalid_request` rather than storing a wrong instant).
    @Test(arguments: [
        "", "yesterday", "2026-11-22", "2026-11-22T10:15:30", "2026-11-22 10:15:30Z", "2026-11-22T10:15:30.Z",
        "2026-13-01T00:00:00Z", "2026-00-10T00:00:00Z", "2026-11-00T00:00:00Z", "2026-11-32T00:00:00Z",
        "2026-11-22T24:00:00Z", "2026-11-22T10:60:00Z", "2026-11-22T10:15:61Z", "2026-11-22T10:15:30+0200",
        "2026-11-22T10:15:30+02", "2026-11-22T10:15:30Z ", " 2026-11-22T10:15:30Z", "2026-11-22T10:15:30.123ZZ",
        "26-11-22T10:15:30.123Z", "2026/11/22T10:15:30Z", "+2026-11-22T10:15:30Z", "2026-11-22T10:15:30UTC",
        "2026-11-22T10:15:30.12a4Z", "2026-11-22T1O:15:30Z", "２０２６-11-22T10:15:30Z", "2026-11-22T10:15:30,123Z",
        "2026-11-22T10:15:30.1234567890123456789012Z", "2026-11-22T10:15:30+02:00Z", "2026-11-22T10:15:30-:0:00",
        "2026-1-22T10:15:30.123Z", "2026-11-22T10:15:30.123+2:00",
    ])
    func malformedTimestampsAreRefused(text: String) {
        #expect(WireCoding.parseTimestamp(text) == nil, "\(text)")
    }

    /// Seeded: random bytes and random edits of a valid timestamp never crash the parser, and
    /// whatever it accepts is 20 to 40 bytes and formats back to a valid wire timestamp.
    @Test func randomTextNeverCrashesTheParser() {
        var rng = ProtocolRandom(seed: 0xBAD)
        let valid = Array("2026-11-22T10:15:30.123+02:00".utf8)
        let alphabet = Array("0123456789-:T.Zz+ tx".utf8) + [0, 0xFF, 0xC3]
        for _ in 0..<2_000 {
            var bytes = valid
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let position = Int.random(in: 0..<bytes.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: bytes[position] = alphabet.randomElement(using: &rng)!
                case 1: bytes.remove(at: position)
                default: bytes.insert(alphabet.randomElement(using: &rng)!, at: position)
                }
                if bytes.isEmpty { bytes = [0x30] }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            if let date = WireCoding.parseTimestamp(text) {
                #expect((20...40).contains(text.utf8.count), "\(text)")
                #expect(WireCoding.parseTimestamp(WireCoding.formatTimestamp(date)) == date.wholeMilliseconds, "\(text)")
            }
        }
    }

    /// The decoder reads every accepted format inside a body and names the bad text when it
    /// refuses one; a date that is a number (seconds or milliseconds) is refused.
    @Test func theDecoderUsesTheWireFormat() throws {
        struct Stamp: Codable, Equatable { var at: Date }
        let decoder = WireCoding.makeDecoder()
        #expect(try decoder.decode(Stamp.self, from: Data(#"{"at":"2026-11-22T12:15:30.5+02:00"}"#.utf8)).at.millisecondsSince1970 == 1_795_342_530_500)
        do {
            _ = try decoder.decode(Stamp.self, from: Data(#"{"at":"22 Nov 2026"}"#.utf8))
            Issue.record("a non-ISO date decoded")
        } catch DecodingError.dataCorrupted(let context) {
            #expect(context.debugDescription.contains("22 Nov 2026"))
            #expect(context.codingPath.map(\.stringValue) == ["at"])
        }
        #expect(throws: DecodingError.self) { try decoder.decode(Stamp.self, from: Data(#"{"at":1795342530}"#.utf8)) }
        #expect(throws: DecodingError.self) { try decoder.decode(Stamp.self, from: Data(#"{"at":null}"#.utf8)) }
        let encoded = String(decoding: try WireCoding.makeEncoder().encode(Stamp(at: Date(timeIntervalSince1970: 1.0625))), as: UTF8.self)
        #expect(encoded == #"{"at":"1970-01-01T00:00:01.063Z"}"#)
    }

    /// Coders made separately agree, and each call makes a fresh one (a caller changing its
    /// encoder's options does not change anyone else's).
    @Test func codersAreIndependent() throws {
        let first = WireCoding.makeEncoder()
        first.outputFormatting.insert(.prettyPrinted)
        let second = WireCoding.makeEncoder()
        #expect(second.outputFormatting == [.withoutEscapingSlashes])
        #expect(String(decoding: try second.encode(["k": "a/b"]), as: UTF8.self) == #"{"k":"a/b"}"#)
        #expect(first !== second)
    }

    /// `Date.distantPast` and `distantFuture`, which apps use for "never", survive the wire
    /// (distantPast is two days before 0001-01-01 in the proleptic calendar: year 0000).
    @Test func foundationsSentinelDatesRoundTrip() {
        #expect(WireCoding.formatTimestamp(.distantPast) == "0000-12-30T00:00:00.000Z")
        #expect(WireCoding.formatTimestamp(.distantFuture) == "4001-01-01T00:00:00.000Z")
        for date in [Date.distantPast, Date.distantFuture] {
            #expect(WireCoding.parseTimestamp(WireCoding.formatTimestamp(date)) == date)
        }
    }

    /// `{}` carries nothing both ways, and whatever a newer peer puts in it is ignored.
    @Test func emptyPayloadIsAnEmptyObject() throws {
        #expect(String(decoding: try WireCoding.makeEncoder().encode(EmptyPayload()), as: UTF8.self) == "{}")
        #expect(try WireCoding.makeDecoder().decode(EmptyPayload.self, from: Data(#"{"extra":[1,2]}"#.utf8)) == EmptyPayload())
    }
}
