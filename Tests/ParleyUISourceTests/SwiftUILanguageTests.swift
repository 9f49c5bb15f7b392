import Foundation
import Testing

/// ParleyUI's own words in English and French: every text a SwiftUI view shows or VoiceOver
/// reads goes through `tr(…)` (ParleyUI's String Catalog), and the catalog has each key in
/// both languages with the same `%@` values. A bare `Text("Search")` would look its key up in
/// the app's bundle, where no translation of ParleyUI's is.
@Suite struct SwiftUILanguageTests {
    typealias Source = SwiftUISourceTests

    /// The code of a ParleyUI file before its previews (sample data there is not shown to people).
    static func code(_ file: URL) throws -> String {
        let text = try String(contentsOf: file, encoding: .utf8)
        return String(text[..<(text.range(of: "#Preview")?.lowerBound ?? text.endIndex)])
    }

    /// The catalog's texts: key → language → value.
    static func catalog() throws -> [String: [String: String]] {
        let url = Source.root.appendingPathComponent("Sources/ParleyUI/Resources/Localizable.xcstrings")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any] ?? [:]
        var texts: [String: [String: String]] = [:]
        for (key, entry) in json["strings"] as? [String: [String: Any]] ?? [:] {
            for (language, localization) in entry["localizations"] as? [String: [String: Any]] ?? [:] {
                texts[key, default: [:]][language] = (localization["stringUnit"] as? [String: Any])?["value"] as? String
            }
        }
        return texts
    }

    /// The keys `tr("…")` asks for: each interpolation is a `%@`.
    static func keys(in code: String) throws -> [String] {
        let call = try NSRegularExpression(pattern: #"(?<![\w.])tr\("((?:[^"\\]|\\\((?:[^()]|\([^()]*\))*\)|\\.)*)"\)"#)
        let interpolation = try NSRegularExpression(pattern: #"\\\((?:[^()]|\([^()]*\))*\)"#)
        return call.matches(in: code, range: NSRange(code.startIndex..., in: code)).compactMap { match in
            guard let range = Range(match.range(at: 1), in: code) else { return nil }
            let literal = String(code[range])
            return interpolation.stringByReplacingMatches(
                in: literal, range: NSRange(literal.startIndex..., in: literal), withTemplate: "%@")
        }
    }

    @Test func everyTextAViewAsksForIsInEnglishAndFrench() throws {
        let catalog = try Self.catalog()
        var asked = Set<String>()
        for file in Source.swiftFiles(under: "Sources/ParleyUI") {
            asked.formUnion(try Self.keys(in: Self.code(file)))
        }
        #expect(asked.count > 90, "\(asked.count) texts")
        for key in asked.sorted() {
            let english = catalog[key]?["en"], french = catalog[key]?["fr"]
            #expect(english != nil && french != nil, "\(key) is missing in the catalog")
            #expect(english?.components(separatedBy: "%@").count == french?.components(separatedBy: "%@").count, "\(key): the same values")
        }
        #expect(Set(catalog.keys).subtracting(asked).isEmpty, "texts no view asks for: \(Set(catalog.keys).subtracting(asked).sorted())")
    }

    /// No view shows a bare English literal: the calls that put text on screen or in VoiceOver
    /// take `tr(…)`, a value, or `Text(verbatim:)`.
    @Test func noViewShowsABareEnglishLiteral() throws {
        let calls = #"(?:(?<![\w.])(?:Text|Button|Label|TextField|SecureField|Section|ContentUnavailableView|ProgressView|Toggle|Menu|LabeledContent)\(|\.(?:navigationTitle|alert|confirmationDialog|accessibilityLabel|accessibilityHint|accessibilityValue)\(|prompt:\s*)"#
        // A literal as the first argument, or as a branch of a ternary there.
        let shown = try NSRegularExpression(pattern: calls + #"(?:[^"\n]*\?\s*)?"[^"]*[A-Za-z]{2}"#)
        // A symbol's name is not a text: `systemImage: muted ? "bell" : "bell.slash"` goes first.
        // and an interpolated value is not words of ours: `"\(emoji) ✓"`.
        let symbol = try NSRegularExpression(pattern: #"(?:systemImage|systemName):\s*[^,)]*|\\\([^)]*\)"#)
        var bare: [String] = []
        for file in Source.swiftFiles(under: "Sources/ParleyUI") {
            for (number, line) in try Self.code(file).components(separatedBy: "\n").enumerated() {
                let code = symbol.stringByReplacingMatches(
                    in: line, range: NSRange(line.startIndex..., in: line), withTemplate: "")
                if line.trimmingCharacters(in: .whitespaces).hasPrefix("//") { continue }
                if shown.firstMatch(in: code, range: NSRange(code.startIndex..., in: code)) != nil {
                    bare.append("\(Source.relative(file)):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(bare.isEmpty, "\(bare.joined(separator: "\n"))")
    }
}
