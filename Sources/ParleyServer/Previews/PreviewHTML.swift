import Foundation
import ParleyRules

/// What a page says about itself, as a link preview shows it.
///
/// Every text is data from a stranger's page: plain text, no markup, controls or direction
/// overrides, 300 characters at most, nil rather than empty.
struct PagePreview: Sendable, Equatable {
    /// `og:title`, else the page's `<title>`.
    var title: String?
    /// `og:description`, else `<meta name="description">`.
    var description: String?
    /// `og:image`, made absolute against the page's URL; always http(s).
    var imageURL: String?
    /// `og:site_name`.
    var siteName: String?
}

/// Reads a ``PagePreview`` out of the start of a fetched HTML page.
///
/// A tolerant scanner, not an HTML parser: what a preview needs sits in `<head>`, written every
/// way real pages write it (attributes in any order, any quoting, any case), and a scan of the
/// bytes finds it in one pass without building a document. The markup is ASCII in every charset
/// read here (UTF-8, windows-1252), so the scan runs on bytes and only the values it keeps are
/// decoded. It stops at `</head>` or after 512 KiB, and skips scripts, styles and comments, whose
/// text may look like tags.
enum PreviewHTML {
    /// How much of a page is scanned when it has no `</head>`.
    static let scanLimit = 512 * 1024

    /// The preview of a page fetched from `base` (redirects followed, so relative image URLs
    /// resolve as the browser would).
    /// - Parameter hint: the `charset` of the response's `Content-Type` (or the whole header
    ///   value), if any; it wins over the page's `<meta charset>`.
    static func parse(_ bytes: [UInt8], charset hint: String?, base: URL) -> PagePreview {
        let hasBOM = bytes.starts(with: [0xEF, 0xBB, 0xBF])
        let start = hasBOM ? 3 : 0
        var scanner = HeadScanner(bytes: Array(bytes[start..<min(bytes.count, start + scanLimit)]))
        scanner.scan()
        let charset: PageCharset = hasBOM ? .utf8 : (hint.flatMap(PageCharset.init(label:)) ?? scanner.charset ?? .utf8)
        func text(_ raw: ArraySlice<UInt8>?) -> String? {
            raw.flatMap { PreviewText.clean(charset.decode($0)) }
        }
        let image = scanner.images.lazy
            .compactMap { PreviewURL.resolve(PreviewText.decodingEntities(charset.decode($0)), against: base) }
            .first
        return PagePreview(
            title: text(scanner.ogTitle) ?? text(scanner.title),
            description: text(scanner.ogDescription) ?? text(scanner.metaDescription),
            imageURL: image?.absoluteString,
            siteName: text(scanner.ogSiteName))
    }
}

/// The charsets a preview reads: UTF-8, and windows-1252 for pages that say Latin-1 (as
/// browsers do: the WHATWG Encoding standard reads every Latin-1 label as windows-1252, whose
/// bytes 0x80-0x9F are the curly quotes and dashes those pages mean).
enum PageCharset: Sendable, Equatable {
    /// UTF-8, the default: invalid bytes become U+FFFD.
    case utf8
    /// windows-1252, read for every Latin-1 label.
    case windows1252

    /// The charset a label names (`utf-8`, `ISO-8859-1`, `"latin1"`, or a whole
    /// `text/html; charset=...`); nil for one not read here, which then falls back to UTF-8.
    init?(label: String) {
        var name = label.lowercased()
        if let range = name.range(of: "charset=") { name = String(name[range.upperBound...]) }
        name = String(name.prefix { $0 != ";" }).trimmingCharacters(in: CharacterSet(charactersIn: "\"' \t\r\n\u{0C}"))
        if Self.utf8Labels.contains(name) {
            self = .utf8
        } else if Self.windows1252Labels.contains(name) {
            self = .windows1252
        } else {
            return nil
        }
    }

    /// `bytes` as text; invalid UTF-8 becomes U+FFFD.
    func decode(_ bytes: ArraySlice<UInt8>) -> String {
        switch self {
        case .utf8:
            return String(decoding: bytes, as: UTF8.self)
        case .windows1252:
            var text = String.UnicodeScalarView()
            for byte in bytes { text.append(Self.windows1252(byte)) }
            return String(text)
        }
    }

    /// The character windows-1252 gives `byte`: Latin-1's, except for 0x80-0x9F (the five bytes
    /// it leaves undefined stay C1 controls, and are dropped as such).
    static func windows1252(_ byte: UInt8) -> Unicode.Scalar {
        guard (0x80...0x9F).contains(byte) else { return Unicode.Scalar(byte) }
        return Unicode.Scalar(high1252[Int(byte - 0x80)]) ?? Unicode.Scalar(byte)
    }

    private static let high1252: [UInt32] = [
        0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
        0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
    ]
    private static let utf8Labels: Set<String> = ["utf-8", "utf8", "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "x-unicode20utf8"]
    private static let windows1252Labels: Set<String> = [
        "windows-1252", "cp1252", "x-cp1252", "iso-8859-1", "iso8859-1", "iso88591", "iso_8859-1", "iso_8859-1:1987", "iso-ir-100",
        "latin1", "latin-1", "l1", "csisolatin1", "ibm819", "cp819", "us-ascii", "ascii", "ansi_x3.4-1968",
    ]
}

/// One pass over a page's head, keeping the raw bytes of the values a preview needs.
private struct HeadScanner {
    let bytes: [UInt8]
    var position = 0
    var ogTitle: ArraySlice<UInt8>?
    var ogDescription: ArraySlice<UInt8>?
    var ogSiteName: ArraySlice<UInt8>?
    var metaDescription: ArraySlice<UInt8>?
    var title: ArraySlice<UInt8>?
    /// Every `og:image` (a few), in order: the first one that resolves to http(s) is taken.
    var images: [ArraySlice<UInt8>] = []
    /// The first charset a `<meta>` names that ``PageCharset`` reads.
    var charset: PageCharset?
    /// Inside how many `<svg>`: their `<title>`s name icons, not the page.
    var svgDepth = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Everything the Open Graph tags can say has been said.
    var isComplete: Bool {
        ogTitle != nil && ogDescription != nil && ogSiteName != nil && !images.isEmpty
    }

    mutating func scan() {
        while position < bytes.count, let open = bytes[position...].firstIndex(of: Byte.lessThan) {
            position = open + 1
            guard open + 1 < bytes.count else { return }
            let next = bytes[open + 1]
            if starts(with: Byte.commentStart, at: open) {
                position = find(Byte.commentEnd, from: open + 4).map { $0 + Byte.commentEnd.count } ?? bytes.count
            } else if next == Byte.slash {
                let name = tagName(at: open + 2)
                position = find([Byte.greaterThan], from: open + 2).map { $0 + 1 } ?? bytes.count
                if name == "head" { return }
                if name == "svg" { svgDepth = max(0, svgDepth - 1) }
            } else if next == Byte.exclamation || next == Byte.question {
                position = find([Byte.greaterThan], from: open + 1).map { $0 + 1 } ?? bytes.count
            } else {
                let name = tagName(at: open + 1)
                guard !name.isEmpty else { continue }  // `a < b`: text
                let tag = readAttributes(from: open + 1 + name.utf8.count, keeping: name == "meta")
                position = tag.end
                switch name {
                case "script", "style":
                    position = closingTag(name, from: position)
                case "title":
                    let end = closingTag(name, from: position)
                    if title == nil, svgDepth == 0 { title = bytes[position..<end] }
                    position = end
                case "meta":
                    meta(tag.attributes)
                case "svg":
                    if !tag.selfClosing { svgDepth += 1 }
                default:
                    break
                }
                if isComplete { return }
            }
        }
    }

    /// Keeps what a `<meta>` says: a charset, or an Open Graph or description value.
    private mutating func meta(_ attributes: [String: ArraySlice<UInt8>]) {
        if charset == nil, let value = attributes["charset"] {
            charset = PageCharset(label: Self.ascii(value))
        }
        if charset == nil, let equiv = attributes["http-equiv"], Self.ascii(equiv).lowercased() == "content-type",
           let content = attributes["content"] {
            charset = PageCharset(label: Self.ascii(content))
        }
        guard let content = attributes["content"] else { return }
        // `property` is the Open Graph spelling, `name` the one many pages use anyway.
        for key in [attributes["property"], attributes["name"]] {
            guard let key else { continue }
            switch Self.ascii(key).trimmingCharacters(in: .whitespaces).lowercased() {
            case "og:title": ogTitle = ogTitle ?? content
            case "og:description": ogDescription = ogDescription ?? content
            case "description": metaDescription = metaDescription ?? content
            case "og:site_name": ogSiteName = ogSiteName ?? content
            case "og:image", "og:image:url", "og:image:secure_url": if images.count < 4 { images.append(content) }
            default: break
            }
        }
    }

    /// A tag's attributes (names in lower case, the first of a name kept, values raw), whether it
    /// ends in `/>`, and where the tag ends. Quoted, single-quoted, unquoted and bare attributes.
    private func readAttributes(from start: Int, keeping: Bool) -> (attributes: [String: ArraySlice<UInt8>], selfClosing: Bool, end: Int) {
        var attributes: [String: ArraySlice<UInt8>] = [:]
        var selfClosing = false
        var index = start
        while index < bytes.count {
            let byte = bytes[index]
            if byte == Byte.greaterThan { return (attributes, selfClosing, index + 1) }
            if Byte.isSpace(byte) || byte == Byte.slash {
                selfClosing = byte == Byte.slash
                index += 1
                continue
            }
            selfClosing = false
            let nameStart = index
            while index < bytes.count, !Byte.isSpace(bytes[index]), bytes[index] != Byte.slash, bytes[index] != Byte.greaterThan,
                  !(bytes[index] == Byte.equals && index > nameStart) {
                index += 1
            }
            let name = bytes[nameStart..<index]
            while index < bytes.count, Byte.isSpace(bytes[index]) { index += 1 }
            var value = bytes[index..<index]
            if index < bytes.count, bytes[index] == Byte.equals {
                index += 1
                while index < bytes.count, Byte.isSpace(bytes[index]) { index += 1 }
                if index < bytes.count, bytes[index] == Byte.doubleQuote || bytes[index] == Byte.singleQuote {
                    let quote = bytes[index]
                    let valueStart = index + 1
                    index = valueStart
                    while index < bytes.count, bytes[index] != quote { index += 1 }
                    value = bytes[valueStart..<index]
                    if index < bytes.count { index += 1 }
                } else {
                    let valueStart = index
                    while index < bytes.count, !Byte.isSpace(bytes[index]), bytes[index] != Byte.greaterThan { index += 1 }
                    value = bytes[valueStart..<index]
                }
            }
            if keeping {
                let key = Self.ascii(name).lowercased()
                if attributes[key] == nil { attributes[key] = value }
            }
        }
        return (attributes, selfClosing, bytes.count)
    }

    /// The lower-cased name of a tag whose name starts at `index`; empty when no letter is there.
    private func tagName(at index: Int) -> String {
        guard index < bytes.count, Byte.isLetter(bytes[index]) else { return "" }
        var end = index
        while end < bytes.count, Byte.isLetter(bytes[end]) || Byte.isDigit(bytes[end]) || bytes[end] == Byte.hyphen || bytes[end] == Byte.colon {
            end += 1
        }
        return Self.ascii(bytes[index..<end]).lowercased()
    }

    /// Where `</name` (any case) starts from `start` on, or the end: what ends a script, a style
    /// or a title, whatever they hold.
    private func closingTag(_ name: String, from start: Int) -> Int {
        let pattern = Array(name.utf8)
        var index = start
        while let open = find([Byte.lessThan, Byte.slash], from: index) {
            let after = open + 2 + pattern.count
            if after <= bytes.count, (0..<pattern.count).allSatisfy({ Byte.lowercased(bytes[open + 2 + $0]) == pattern[$0] }),
               after == bytes.count || Byte.isSpace(bytes[after]) || bytes[after] == Byte.slash || bytes[after] == Byte.greaterThan {
                return open
            }
            index = open + 1
        }
        return bytes.count
    }

    private func starts(with pattern: [UInt8], at index: Int) -> Bool {
        index + pattern.count <= bytes.count && bytes[index..<(index + pattern.count)].elementsEqual(pattern)
    }

    /// Where `pattern` next starts from `start` on.
    private func find(_ pattern: [UInt8], from start: Int) -> Int? {
        var index = start
        while index < bytes.count, let candidate = bytes[index...].firstIndex(of: pattern[0]) {
            if starts(with: pattern, at: candidate) { return candidate }
            index = candidate + 1
        }
        return nil
    }

    private static func ascii(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes, as: UTF8.self)
    }
}

/// The bytes markup is made of.
private enum Byte {
    static let lessThan = UInt8(ascii: "<")
    static let greaterThan = UInt8(ascii: ">")
    static let slash = UInt8(ascii: "/")
    static let equals = UInt8(ascii: "=")
    static let exclamation = UInt8(ascii: "!")
    static let question = UInt8(ascii: "?")
    static let hyphen = UInt8(ascii: "-")
    static let colon = UInt8(ascii: ":")
    static let doubleQuote = UInt8(ascii: "\"")
    static let singleQuote = UInt8(ascii: "'")
    static let commentStart = Array("<!--".utf8)
    static let commentEnd = Array("-->".utf8)

    /// HTML's whitespace: space, tab, line feed, form feed, carriage return.
    static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D
    }

    static func isLetter(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }

    static func isDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte)
    }

    static func lowercased(_ byte: UInt8) -> UInt8 {
        (0x41...0x5A).contains(byte) ? byte + 0x20 : byte
    }
}
