import Foundation

/// Text for a terminal: what other people typed made inert, measured in columns, cut and
/// wrapped to a width.
public enum TerminalText {
    /// Other people's text with every control character made visible and harmless: C0 and C1
    /// controls (ESC, so no escape sequence reaches the terminal), DEL, and the bidirectional
    /// overrides that would reorder what is shown, and the Unicode line and paragraph separators
    /// (which terminals draw at no agreed width), each become "�"; a tab becomes a space.
    /// Line breaks are kept only when `keepingNewlines` (wrapping splits on them).
    public static func sanitize(_ text: String, keepingNewlines: Bool = false) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x0A where keepingNewlines: out.append(scalar)
            case 0x09: out.append(" ")
            case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C, 0x2028, 0x2029:
                out.append("\u{FFFD}")
            default: out.append(scalar)
            }
        }
        return String(out)
    }

    /// The text with each CR that directly precedes an LF removed (Windows line endings become
    /// "\n"); a lone CR stays, for ``sanitize(_:keepingNewlines:)`` to make inert.
    public static func droppingCarriageReturnsBeforeLineFeeds(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        let scalars = Array(text.unicodeScalars)
        for (index, scalar) in scalars.enumerated() where !(scalar == "\r" && index + 1 < scalars.count && scalars[index + 1] == "\n") {
            out.append(scalar)
        }
        return String(out)
    }

    /// Columns a character takes: 0 for combining marks, 2 for wide (East Asian, emoji), else 1.
    public static func width(of character: Character) -> Int {
        var widest = 0
        for scalar in character.unicodeScalars {
            widest = max(widest, width(of: scalar))
        }
        // An emoji sequence (ZWJ, variation selector 16) shows as one wide glyph.
        if character.unicodeScalars.count > 1, character.unicodeScalars.contains(where: { $0.value == 0xFE0F || $0.value == 0x200D }) {
            return 2
        }
        return widest
    }

    static func width(of scalar: Unicode.Scalar) -> Int {
        let value = scalar.value
        if value == 0 { return 0 }
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if value == 0x200B || (0xFE00...0xFE0F).contains(value) { return 0 }
        if scalar.properties.isEmojiPresentation { return 2 }
        switch value {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
            0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x1F300...0x1F64F,
            0x1F900...0x1F9FF, 0x20000...0x3FFFD:
            return 2
        default:
            return 1
        }
    }

    /// Columns a string takes.
    public static func width(_ text: String) -> Int { text.reduce(0) { $0 + width(of: $1) } }

    /// The string cut to at most `columns` (with "…" when cut and `ellipsis`), never splitting a wide character.
    public static func truncate(_ text: String, to columns: Int, ellipsis: Bool = true) -> String {
        guard columns > 0 else { return "" }
        if width(text) <= columns { return text }
        let budget = ellipsis ? columns - 1 : columns
        var used = 0
        var out = ""
        for character in text {
            let w = width(of: character)
            if used + w > budget { break }
            out.append(character)
            used += w
        }
        return ellipsis ? out + "…" : out
    }

    /// The string padded with spaces (or cut) to exactly `columns`.
    public static func pad(_ text: String, to columns: Int) -> String {
        let cut = truncate(text, to: columns)
        return cut + String(repeating: " ", count: max(0, columns - width(cut)))
    }

    /// Lines of at most `columns`, broken at spaces where possible and at line breaks always.
    public static func wrap(_ text: String, to columns: Int) -> [String] {
        guard columns > 0 else { return [] }
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = ""
            var lineWidth = 0
            for word in paragraph.split(separator: " ", omittingEmptySubsequences: false) {
                var word = String(word)
                let wordWidth = width(word)
                let gap = line.isEmpty ? 0 : 1
                if lineWidth + gap + wordWidth <= columns {
                    if gap == 1 { line += " " }
                    line += word
                    lineWidth += gap + wordWidth
                    continue
                }
                if !line.isEmpty { lines.append(line) }
                line = ""
                lineWidth = 0
                // A word longer than a line is cut into pieces.
                while width(word) > columns {
                    var piece = truncate(word, to: columns, ellipsis: false)
                    // A character wider than the line goes on a line of its own (else this never ends).
                    if piece.isEmpty, let first = word.first { piece = String(first) }
                    word = String(word.dropFirst(piece.count))
                    if word.isEmpty {
                        word = piece
                        break
                    }
                    lines.append(piece)
                }
                line = word
                lineWidth = width(word)
            }
            lines.append(line)
        }
        return lines
    }
}

/// The few text styles the client uses, as ANSI SGR sequences.
public enum Style: Sendable {
    case plain, bold, dim, reverse, italic
    case colour(Int)
    case boldColour(Int)

    var sgr: String {
        switch self {
        case .plain: "\u{1B}[0m"
        case .bold: "\u{1B}[1m"
        case .dim: "\u{1B}[2m"
        case .italic: "\u{1B}[3m"
        case .reverse: "\u{1B}[7m"
        case .colour(let n): "\u{1B}[38;5;\(n)m"
        case .boldColour(let n): "\u{1B}[1;38;5;\(n)m"
        }
    }

    /// `text` (already sanitized and fitted) in this style, then back to plain.
    public func apply(_ text: String) -> String {
        if case .plain = self { return text }
        return sgr + text + Style.plain.sgr
    }
}
