import Foundation
import ParleyTestSupport
import Testing

/// The web client's French table against its sources: every text the views pass to `t()` or
/// `tn()` and every fixed text of index.html has its French, with the same `{placeholders}`.
/// A text added in English only would show English to a French browser without any test in
/// a browser noticing.
@Suite struct WebTranslationTableTests {
    static let web = Repository.root.appendingPathComponent("Sources/ParleyServer/Web")

    /// The table: English → French, read from i18n-fr.js's `'key': 'value'` pairs.
    static func table() throws -> [String: String] {
        let text = try String(contentsOf: web.appendingPathComponent("i18n-fr.js"), encoding: .utf8)
        let pair = try NSRegularExpression(pattern: #"'((?:[^'\\]|\\.)*)':\s*'((?:[^'\\]|\\.)*)'"#)
        var table: [String: String] = [:]
        for match in pair.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            guard let key = Range(match.range(at: 1), in: text), let value = Range(match.range(at: 2), in: text) else { continue }
            table[text[key].replacingOccurrences(of: "\\'", with: "'")] = text[value].replacingOccurrences(of: "\\'", with: "'")
        }
        return table
    }

    /// The English texts a view asks for: the string literals in the first argument of each
    /// `t(` and the two forms of each `tn(`, leaving out a literal compared (`kind === 'x' ?`)
    /// and a bare placeholder.
    static func asked(in source: String) throws -> Set<String> {
        let call = try NSRegularExpression(pattern: #"\btn?\("#)
        let literal = try NSRegularExpression(pattern: #"(===\s*|!==\s*)?'((?:[^'\\]|\\.)*)'"#)
        var found = Set<String>()
        let characters = Array(source.utf16)
        for match in call.matches(in: source, range: NSRange(source.startIndex..., in: source)) {
            // The arguments up to the values object or the closing parenthesis.
            var depth = 0, end = match.range.upperBound
            scan: while end < characters.count {
                switch characters[end] {
                case 0x28, 0x5B, 0x7B: depth += 1
                case 0x29, 0x5D, 0x7D:
                    if depth == 0 { break scan }
                    depth -= 1
                case 0x2C where depth == 0 && end + 2 < characters.count && characters[end + 2] == 0x7B: break scan
                default: break
                }
                end += 1
            }
            let range = NSRange(location: match.range.upperBound, length: end - match.range.upperBound)
            for found1 in literal.matches(in: source, range: range) where found1.range(at: 1).location == NSNotFound {
                guard let text = Range(found1.range(at: 2), in: source) else { continue }
                let english = source[text].replacingOccurrences(of: "\\'", with: "'")
                guard english.contains(where: \.isLetter), english.range(of: #"^\{\w+\}$"#, options: .regularExpression) == nil else { continue }
                found.insert(english)
            }
        }
        return found
    }

    static func placeholders(_ text: String) -> Set<String> {
        Set(text.split(separator: "{").dropFirst().map { String($0.prefix { $0 != "}" }) })
    }

    @Test func everyTextTheViewsAskForHasItsFrench() throws {
        let table = try Self.table()
        #expect(table.count > 250, "\(table.count) texts")
        var asked = Set<String>()
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.web.path).filter { $0.hasSuffix(".js") && !$0.hasPrefix("i18n") }
        for file in files {
            asked.formUnion(try Self.asked(in: String(contentsOf: Self.web.appendingPathComponent(file), encoding: .utf8)))
        }
        #expect(asked.count > 200, "\(asked.count) texts asked for")
        #expect(asked.subtracting(table.keys).isEmpty, "no French for: \(asked.subtracting(table.keys).sorted())")
        for (english, french) in table {
            #expect(Self.placeholders(english) == Self.placeholders(french), "\(english) → \(french)")
        }
    }

    /// index.html's fixed texts and the labels people hear, put in French by localize().
    @Test func everyFixedTextOfThePageHasItsFrench() throws {
        let table = try Self.table()
        let html = try String(contentsOf: Self.web.appendingPathComponent("index.html"), encoding: .utf8)
        let body = String(html[(html.range(of: "<body")?.lowerBound ?? html.startIndex)...])
        let text = try NSRegularExpression(pattern: #">([^<>]*[A-Za-z][^<>]*)<"#)
        let attribute = try NSRegularExpression(pattern: #"(?:placeholder|aria-label|title|alt)="([^"]*[A-Za-z][^"]*)""#)
        var fixed = Set<String>()
        for expression in [text, attribute] {
            for match in expression.matches(in: body, range: NSRange(body.startIndex..., in: body)) {
                guard let range = Range(match.range(at: 1), in: body) else { continue }
                let value = body[range].trimmingCharacters(in: .whitespacesAndNewlines)
                if !value.isEmpty, value != "Parley", !value.hasPrefix("example.") { fixed.insert(value) }
            }
        }
        #expect(fixed.count > 70, "\(fixed.count) fixed texts")
        #expect(fixed.subtracting(table.keys).isEmpty, "no French for: \(fixed.subtracting(table.keys).sorted())")
    }
}
