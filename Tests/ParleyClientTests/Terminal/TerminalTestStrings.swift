import Foundation
import ParleyTestSupport

/// Hostile and awkward text for the terminal client's property tests: the pieces people (and
/// attackers) really type, mixed by a seeded generator so a failing seed can be replayed.
enum TerminalTestStrings {
    /// Pieces that must come out inert: escape sequences, C0/C1 controls, bidi controls.
    static let hostile: [String] = [
        "\u{1B}[2J", "\u{1B}[31m", "\u{1B}[1;1H", "\u{1B}]8;;https://evil.example\u{07}link\u{1B}]8;;\u{07}",
        "\u{1B}]52;c;ZXZpbA==\u{07}", "\u{1B}]0;title\u{1B}\\", "\u{1B}P+q\u{1B}\\", "\u{9B}31m", "\u{9D}52;c;eA==\u{9C}",
        "\u{85}", "\u{90}", "\u{9F}", "\u{7F}", "\u{00}", "\r", "\u{08}", "\u{07}", "\u{0B}", "\u{0C}", "\u{1B}",
        "\u{202A}", "\u{202B}", "\u{202C}", "\u{202D}", "\u{202E}", "\u{2066}", "\u{2067}", "\u{2068}", "\u{2069}",
        "\u{200E}", "\u{200F}", "\u{061C}", "\t", "\r\n",
    ]

    /// Pieces whose width is easy to get wrong: wide, zero-width and multi-scalar characters.
    static let awkward: [String] = [
        "日本", "語", "한국어", "ｶﾀｶﾅ", "Ａ", "👍", "👍🏽", "👨‍👩‍👧", "🇯🇵", "🏳️‍🌈", "❤️", "1️⃣", "e\u{301}", "\u{301}",
        "a\u{308}\u{323}", "\u{200B}", "\u{FEFF}", "é", "ß", "…", "─", "\u{3000}", "𠀀", "😀",
    ]

    /// Ordinary words and spaces.
    static let plain: [String] = ["hello", "a", "the", "quick", " ", "  ", "x", "brown-fox", "/cmd", "42", "ok."]

    /// A random string of `count` pieces from all three kinds.
    static func mixed(_ count: Int, using generator: inout SeededGenerator, newlines: Bool = false) -> String {
        var text = ""
        for _ in 0..<count {
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<3: text += hostile.randomElement(using: &generator)!
            case 3..<6: text += awkward.randomElement(using: &generator)!
            case 6 where newlines: text += "\n"
            default: text += plain.randomElement(using: &generator)!
            }
        }
        return text
    }

    /// A random string without controls: what reaches the measuring functions after sanitizing.
    static func printable(_ count: Int, using generator: inout SeededGenerator) -> String {
        var text = ""
        for _ in 0..<count {
            text += Bool.random(using: &generator)
                ? awkward.randomElement(using: &generator)! : plain.randomElement(using: &generator)!
        }
        return text
    }

    /// Whether a scalar must never reach the terminal from other people's text.
    static func isDangerous(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C: true
        default: false
        }
    }
}
