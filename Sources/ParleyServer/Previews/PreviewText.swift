import Foundation

/// A value from a fetched page made into a preview's text: what the page's author meant to show,
/// and nothing a client could take for markup, a control or a direction override.
enum PreviewText {
    /// The most characters (grapheme clusters, as people count them) a preview text keeps.
    static let maximumLength = 300

    /// `raw` with entities decoded, tags removed, controls and direction overrides dropped,
    /// whitespace collapsed and trimmed, cut to ``maximumLength`` characters; nil when nothing is left.
    static func clean(_ raw: String) -> String? {
        var text = String.UnicodeScalarView()
        var pendingSpace = false
        for scalar in withoutTags(decodingEntities(raw)).unicodeScalars {
            if scalar.properties.isWhitespace {
                pendingSpace = !text.isEmpty
            } else if !isDropped(scalar) {
                if pendingSpace { text.append(" ") }
                pendingSpace = false
                text.append(scalar)
            }
        }
        var cleaned = String(text)
        if cleaned.count > maximumLength {
            // `prefix` counts Characters: the cut never splits an emoji or an accented letter.
            cleaned = String(cleaned.prefix(maximumLength))
            if cleaned.last == " " { cleaned.removeLast() }
        }
        return cleaned.isEmpty ? nil : cleaned
    }

    /// `text` with HTML's character references decoded: the common named ones and every numeric
    /// one (`&#39;`, `&#x1F600;`). An unknown name stays as written.
    static func decodingEntities(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        guard scalars.contains("&") else { return text }
        var decoded = String.UnicodeScalarView()
        var index = 0
        while index < scalars.count {
            if scalars[index] == "&", let match = reference(in: scalars, at: index) {
                decoded.append(match.scalar)
                index = match.end
            } else {
                decoded.append(scalars[index])
                index += 1
            }
        }
        return String(decoded)
    }

    /// The character a reference starting at `start` (on its `&`) stands for, and where it ends.
    private static func reference(in scalars: [Unicode.Scalar], at start: Int) -> (scalar: Unicode.Scalar, end: Int)? {
        var index = start + 1
        guard index < scalars.count else { return nil }
        if scalars[index] == "#" {
            index += 1
            var radix: UInt32 = 10
            if index < scalars.count, scalars[index] == "x" || scalars[index] == "X" {
                radix = 16
                index += 1
            }
            let digitsStart = index
            var value: UInt32 = 0
            while index < scalars.count, let digit = digitValue(scalars[index], radix: radix) {
                value = min(value * radix + digit, 0x110000)  // stays past the last scalar, never overflows
                index += 1
            }
            guard index > digitsStart else { return nil }
            if index < scalars.count, scalars[index] == ";" { index += 1 }
            return (numericReference(value), index)
        }
        var name = ""
        while index < scalars.count, index - start <= 8, isASCIILetterOrDigit(scalars[index]) {
            name.unicodeScalars.append(scalars[index])
            index += 1
        }
        guard index < scalars.count, scalars[index] == ";", let scalar = named[name] else { return nil }
        return (scalar, index + 1)
    }

    /// What `&#value;` stands for, as browsers read it: 0x80-0x9F as windows-1252 (pages write
    /// `&#146;` for an apostrophe), and nothing that is not a character as U+FFFD.
    private static func numericReference(_ value: UInt32) -> Unicode.Scalar {
        if value == 0 { return "\u{FFFD}" }
        if (0x80...0x9F).contains(value) { return PageCharset.windows1252(UInt8(value)) }
        return Unicode.Scalar(value) ?? "\u{FFFD}"
    }

    private static func digitValue(_ scalar: Unicode.Scalar, radix: UInt32) -> UInt32? {
        switch scalar.value {
        case 0x30...0x39: return scalar.value - 0x30
        case 0x41...0x46 where radix == 16: return scalar.value - 0x41 + 10
        case 0x61...0x66 where radix == 16: return scalar.value - 0x61 + 10
        default: return nil
        }
    }

    private static func isASCIILetterOrDigit(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        default: return false
        }
    }

    /// The named references pages use in titles and descriptions (HTML has 2,000; these are
    /// the ones that turn up).
    private static let named: [String: Unicode.Scalar] = [
        "amp": "&", "lt": "<", "gt": ">", "quot": "\"", "apos": "'", "nbsp": "\u{A0}",
        "AMP": "&", "LT": "<", "GT": ">", "QUOT": "\"",
        "hellip": "\u{2026}", "mdash": "\u{2014}", "ndash": "\u{2013}", "middot": "\u{B7}", "bull": "\u{2022}",
        "lsquo": "\u{2018}", "rsquo": "\u{2019}", "ldquo": "\u{201C}", "rdquo": "\u{201D}", "laquo": "\u{AB}", "raquo": "\u{BB}",
        "copy": "\u{A9}", "reg": "\u{AE}", "trade": "\u{2122}", "euro": "\u{20AC}", "times": "\u{D7}",
    ]

    /// `text` without anything that looks like a tag (`<b>`, `</p>`, `<!-- -->`, `<br/>`), each
    /// replaced by a space so that words on either side stay apart. A `<` that starts no tag
    /// (`a < b`, `<3`) is text.
    static func withoutTags(_ text: String) -> String {
        let scalars = Array(text.unicodeScalars)
        guard scalars.contains("<") else { return text }
        var kept = String.UnicodeScalarView()
        // Past the last `>` nothing can be a tag: knowing it keeps a text of many `<a` linear.
        let lastClose = scalars.lastIndex(of: ">") ?? -1
        var index = 0
        while index < scalars.count {
            if scalars[index] == "<", index + 1 < lastClose, startsTag(scalars[index + 1]),
               let close = scalars[(index + 1)...].firstIndex(of: ">") {
                kept.append(" ")
                index = close + 1
            } else {
                kept.append(scalars[index])
                index += 1
            }
        }
        return String(kept)
    }

    /// A letter, `/`, `!` or `?` after `<`: the start of a tag, a comment or a declaration.
    private static func startsTag(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x41...0x5A, 0x61...0x7A, 0x2F, 0x21, 0x3F: return true
        default: return false
        }
    }

    /// Controls (C0, DEL, C1) and the direction embeddings, overrides and isolates that can make
    /// a preview read differently from what it is (`\u{202E}gnp.exe`).
    private static func isDropped(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}
