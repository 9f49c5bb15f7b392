import Foundation

/// A key press, decoded from the bytes a terminal sends in raw mode.
public enum Key: Sendable, Equatable {
    case character(Character)
    case enter, tab, backTab, backspace, delete, escape
    case up, down, left, right, home, end, pageUp, pageDown
    case control(Character)
    /// Text the terminal delivered as one bracketed paste (ESC[200~ … ESC[201~), line breaks
    /// as "\n" (a CR or CRLF from the terminal normalised). It is text, never keys: a line break
    /// in it is not Enter and a "/" in it is not a command.
    case paste(String)
}

/// Turns raw terminal input into keys; keeps an incomplete sequence for the next read.
/// Bracketed paste (``TerminalDevice`` turns it on) becomes one ``Key/paste(_:)``, however
/// the reads split the markers or the text.
public struct KeyParser: Sendable {
    private var pending: [UInt8] = []
    /// Inside a bracketed paste: the bytes pasted so far (the end marker not yet seen).
    private var pasted: [UInt8]?
    /// What a terminal sends at the end of a bracketed paste.
    static let pasteEnd: [UInt8] = Array("\u{1B}[201~".utf8)

    /// A parser with nothing pending.
    public init() {}

    /// The keys in `bytes` (plus anything left from the previous call). A lone ESC at the end
    /// of a read is the Escape key (terminals send sequences in one write).
    public mutating func feed(_ bytes: [UInt8]) -> [Key] {
        pending += bytes
        var keys: [Key] = []
        var index = 0
        while index < pending.count {
            if pasted != nil {
                // Everything up to ESC[201~ is text, whatever it holds (ESC, Ctrl-C, CR...).
                if let end = Self.firstIndex(of: Self.pasteEnd, in: pending, from: index) {
                    let text = Self.pastedText((pasted ?? []) + pending[index..<end])
                    pasted = nil
                    if !text.isEmpty { keys.append(.paste(text)) }
                    index = end + Self.pasteEnd.count
                    continue
                }
                // Not there yet: keep the bytes that may be the start of the marker for the next read.
                let keep = Self.markerPrefixLength(at: pending, from: index)
                pasted? += pending[index..<(pending.count - keep)]
                pending.removeFirst(pending.count - keep)
                return keys
            }
            let byte = pending[index]
            switch byte {
            case 0x1B:
                guard index + 1 < pending.count else {
                    keys.append(.escape)
                    index += 1
                    continue
                }
                let next = pending[index + 1]
                if next == UInt8(ascii: "[") || next == UInt8(ascii: "O") {
                    // CSI / SS3: parameters, then a final byte in 0x40...0x7E.
                    var end = index + 2
                    while end < pending.count, !(0x40...0x7E).contains(pending[end]) { end += 1 }
                    guard end < pending.count else {
                        // Incomplete: wait for the rest.
                        pending.removeFirst(index)
                        return keys
                    }
                    let parameters = String(decoding: pending[(index + 2)..<end], as: UTF8.self)
                    if next == UInt8(ascii: "["), pending[end] == UInt8(ascii: "~"), parameters == "200" {
                        pasted = []
                        index = end + 1
                        continue
                    }
                    if let key = Self.sequence(final: pending[end], parameters: parameters) { keys.append(key) }
                    index = end + 1
                } else {
                    keys.append(.escape)
                    index += 1
                }
            case 0x0D, 0x0A: keys.append(.enter); index += 1
            case 0x09: keys.append(.tab); index += 1
            case 0x7F, 0x08: keys.append(.backspace); index += 1
            case 0x01...0x1A:
                keys.append(.control(Character(Unicode.Scalar(byte + 0x60))))
                index += 1
            case 0x00, 0x1C...0x1F: index += 1
            default:
                // One UTF-8 character (2 to 4 bytes when it starts with 11xxxxxx). Only
                // continuation bytes (10xxxxxx) belong to it: a broken one ends at the next other
                // byte (and shows as a replacement character), so it never swallows the key after it.
                let length = switch byte {
                case 0xC2...0xDF: 2
                case 0xE0...0xEF: 3
                case 0xF0...0xF4: 4
                default: 1
                }
                var end = index + 1
                while end < index + length, end < pending.count, (0x80...0xBF).contains(pending[end]) { end += 1 }
                guard end == index + length || end < pending.count else {
                    pending.removeFirst(index)
                    return keys
                }
                let text = String(decoding: pending[index..<end], as: UTF8.self)
                for character in text { keys.append(.character(character)) }
                index = end
            }
        }
        pending.removeAll()
        return keys
    }

    /// Where `marker` starts in `bytes` at or after `start`.
    static func firstIndex(of marker: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard bytes.count - start >= marker.count else { return nil }
        var index = start
        while index <= bytes.count - marker.count {
            if bytes[index] == marker[0], bytes[index..<(index + marker.count)].elementsEqual(marker) { return index }
            index += 1
        }
        return nil
    }

    /// How many bytes at the end of `bytes` (from `start` on) are the beginning of the paste's
    /// end marker, cut by the read.
    static func markerPrefixLength(at bytes: [UInt8], from start: Int) -> Int {
        for length in stride(from: min(pasteEnd.count - 1, bytes.count - start), through: 1, by: -1)
        where bytes[(bytes.count - length)...].elementsEqual(pasteEnd[..<length]) {
            return length
        }
        return 0
    }

    /// The pasted bytes as text, with CRLF and a lone CR (what terminals send for a line break)
    /// made "\n".
    static func pastedText(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == 0x0D {
                out.append(0x0A)
                if index + 1 < bytes.count, bytes[index + 1] == 0x0A { index += 1 }
            } else {
                out.append(bytes[index])
            }
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func sequence(final: UInt8, parameters: String) -> Key? {
        switch final {
        case UInt8(ascii: "A"): .up
        case UInt8(ascii: "B"): .down
        case UInt8(ascii: "C"): .right
        case UInt8(ascii: "D"): .left
        case UInt8(ascii: "H"): .home
        case UInt8(ascii: "F"): .end
        case UInt8(ascii: "Z"): .backTab
        case UInt8(ascii: "~"):
            switch parameters {
            case "1", "7": .home
            case "4", "8": .end
            case "3": .delete
            case "5": .pageUp
            case "6": .pageDown
            default: nil
            }
        default: nil
        }
    }
}

/// The input line: text, a cursor, and the history of what was sent (Up/Down).
public struct LineEditor: Sendable, Equatable {
    /// A line break pasted into the line. The text holds it as U+2028 LINE SEPARATOR (one
    /// character, never a control byte), the screen shows it as "⏎" (one column), and
    /// ``submit()`` gives it back as "\n", so a pasted paragraph is sent as one message.
    public static let lineBreak: Character = "\u{2028}"

    /// The text being typed.
    public private(set) var text: String = ""
    /// The cursor, in characters from the start.
    public private(set) var cursor: Int = 0
    private var history: [String] = []
    private var historyIndex: Int?
    private var draft = ""

    /// An editor holding `text`, the cursor at its end, with no history.
    public init(text: String = "") {
        self.text = text
        cursor = text.count
    }

    /// Replaces the text (editing a message starts from its text), cursor at the end. Its line
    /// breaks (LF or CRLF) become ``lineBreak``, as a pasted one would: shown as "⏎", sent as "\n".
    public mutating func set(_ text: String) {
        self.text = String(text.map { $0 == "\n" || $0 == "\r\n" ? Self.lineBreak : $0 })
        cursor = self.text.count
        historyIndex = nil
    }

    /// Applies an editing key; returns false for keys it does not handle.
    @discardableResult
    public mutating func handle(_ key: Key) -> Bool {
        switch key {
        case .character(let character):
            insert(String(character))
        case .paste(let text):
            insert(text)
        case .backspace:
            guard cursor > 0 else { return true }
            let at = text.index(text.startIndex, offsetBy: cursor - 1)
            text.remove(at: at)
            cursor -= 1
        case .delete:
            guard cursor < text.count else { return true }
            text.remove(at: text.index(text.startIndex, offsetBy: cursor))
        case .left: cursor = max(0, cursor - 1)
        case .right: cursor = min(text.count, cursor + 1)
        case .home, .control("a"): cursor = 0
        case .end, .control("e"): cursor = text.count
        case .control("u"):
            text.removeSubrange(text.startIndex..<text.index(text.startIndex, offsetBy: cursor))
            cursor = 0
        case .control("k"):
            text.removeSubrange(text.index(text.startIndex, offsetBy: cursor)...)
        case .control("w"):
            let before = Array(text.prefix(cursor))
            var start = before.count
            let gap: (Character) -> Bool = { $0 == " " || $0 == Self.lineBreak }
            while start > 0, gap(before[start - 1]) { start -= 1 }
            while start > 0, !gap(before[start - 1]) { start -= 1 }
            text = String(before[..<start]) + text.dropFirst(cursor)
            cursor = start
        case .up:
            guard !history.isEmpty else { return true }
            if historyIndex == nil { draft = text }
            let next = max(0, (historyIndex ?? history.count) - 1)
            historyIndex = next
            text = history[next]
            cursor = text.count
        case .down:
            guard let index = historyIndex else { return true }
            if index + 1 < history.count {
                historyIndex = index + 1
                text = history[index + 1]
            } else {
                historyIndex = nil
                text = draft
            }
            cursor = text.count
        default:
            return false
        }
        return true
    }

    /// Takes the text (Enter), pasted line breaks as "\n": it goes into the history and the
    /// line empties.
    public mutating func submit() -> String {
        let kept = text
        let sent = String(String.UnicodeScalarView(kept.unicodeScalars.map { $0 == "\u{2028}" ? "\n" : $0 }))
        if !sent.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, history.last != kept { history.append(kept) }
        if history.count > 200 { history.removeFirst(history.count - 200) }
        text = ""
        cursor = 0
        historyIndex = nil
        draft = ""
        return sent
    }

    private mutating func insert(_ piece: String) {
        // Line breaks (LF, CRLF, a lone CR, the Unicode line and paragraph separators) are kept,
        // as ``lineBreak``; other controls made inert.
        var breaks = String.UnicodeScalarView()
        var previous: Unicode.Scalar?
        for scalar in piece.unicodeScalars {
            defer { previous = scalar }
            if scalar == "\n", previous == "\r" { continue }
            breaks.append(scalar == "\r" || scalar == "\u{2028}" || scalar == "\u{2029}" ? "\n" : scalar)
        }
        let sanitized = TerminalText.sanitize(String(breaks), keepingNewlines: true).unicodeScalars
        let clean = String(String.UnicodeScalarView(sanitized.map { $0 == "\n" ? "\u{2028}" : $0 }))
        // Counted after joining: a skin tone, ZWJ, flag half or combining mark typed as its own
        // key joins the character before it, so adding `clean.count` would put the cursor past the end.
        let head = String(text.prefix(cursor)) + clean
        text = head + text.dropFirst(cursor)
        cursor = min(head.count, text.count)
    }
}
