import Foundation
import ParleyStorage

/// The link a message's preview is made from, and the links a fetched page points on to.
///
/// Links are read the way people write them in chat: at the end of a sentence, in parentheses,
/// in quotes, in `<...>`. Only `http`/`https` URLs with a host and without a user name or
/// password come out, since the fetcher connects to them: `ftp:`, `javascript:` or
/// `https://bank.example@evil.example` stop here.
package enum PreviewURL {
    /// The longest URL taken, in UTF-8 bytes once percent-encoded: longer ones are not links
    /// people share, and not worth a fetch.
    static let maximumLength = 2048

    /// The first http(s) URL in a message's text, or nil when it has none (or none that can be fetched).
    package static func first(in text: String) -> URL? {
        let scalars = Array(text.unicodeScalars)
        var start = 0
        while start < scalars.count {
            guard let afterScheme = schemeEnd(in: scalars, at: start) else {
                start += 1
                continue
            }
            var end = afterScheme
            while end < scalars.count, !endsLink(scalars[end]) { end += 1 }
            // In <...> the brackets say where the link ends (RFC 3986, appendix C): keep all of it.
            let bracketed = start > 0 && scalars[start - 1] == "<" && end < scalars.count && scalars[end] == ">"
            let link = bracketed ? scalars[start..<end] : withoutTrailingPunctuation(scalars[start..<end])
            if let url = checked(String(String.UnicodeScalarView(link))) { return url }
            start = end
        }
        return nil
    }

    /// `reference` (an `og:image` value, a `Location` header) made absolute against the page it
    /// came from; nil unless the result is an http(s) URL that ``first(in:)`` would also take.
    package static func resolve(_ reference: String, against base: URL) -> URL? {
        // As a browser does: tabs and line breaks anywhere are dropped, spaces at the ends too.
        var cleaned = ""
        for scalar in reference.unicodeScalars where scalar != "\t" && scalar != "\n" && scalar != "\r" {
            cleaned.unicodeScalars.append(scalar)
        }
        cleaned = cleaned.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !cleaned.isEmpty, cleaned.utf8.count <= maximumLength,
              let url = URL(string: percentEncoded(cleaned), relativeTo: base)
        else { return nil }
        return httpURL(url.absoluteURL)
    }

    // MARK: Finding a link in text

    private static let schemes: [[Unicode.Scalar]] = ["https://", "http://"].map { Array($0.unicodeScalars) }
    private static let trailingPunctuation: Set<Unicode.Scalar> = [".", ",", ";", ":", "!", "?", "'", "\""]
    private static let closingBrackets: [Unicode.Scalar: Unicode.Scalar] = [")": "(", "]": "[", "}": "{"]

    /// Where the text after `http://` or `https://` (any case) starts, when a link starts at `start`.
    private static func schemeEnd(in scalars: [Unicode.Scalar], at start: Int) -> Int? {
        // `git+https://`, `xhttp://`: part of another word or scheme, not a link of ours.
        if start > 0, isSchemeCharacter(scalars[start - 1]) { return nil }
        for scheme in schemes where start + scheme.count <= scalars.count {
            if zip(scheme, scalars[start...]).allSatisfy({ $0 == lowercased($1) }) { return start + scheme.count }
        }
        return nil
    }

    /// A space, a control, a direction override or `<>`: not part of a link.
    private static func endsLink(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069, 0x3C, 0x3E: return true
        default: return scalar.properties.isWhitespace
        }
    }

    /// The link without the sentence's punctuation after it: `.`, `,`, quotes and the like, and
    /// a closing bracket with no opening one in the link, so that `(see https://x.io/a)` loses
    /// its `)` but `https://en.wikipedia.org/wiki/Swift_(programming_language)` keeps it, and
    /// `http://[::1]` keeps its `]`.
    private static func withoutTrailingPunctuation(_ link: ArraySlice<Unicode.Scalar>) -> ArraySlice<Unicode.Scalar> {
        var link = link
        var brackets: [Unicode.Scalar: Int] = [:]
        for scalar in link {
            switch scalar {
            case "(", ")", "[", "]", "{", "}": brackets[scalar, default: 0] += 1
            default: break
            }
        }
        while let last = link.last {
            if trailingPunctuation.contains(last) {
                link.removeLast()
            } else if let opening = closingBrackets[last], brackets[opening, default: 0] < brackets[last, default: 0] {
                brackets[last, default: 0] -= 1
                link.removeLast()
            } else {
                break
            }
        }
        return link
    }

    private static func isSchemeCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x61...0x7A, 0x41...0x5A, 0x30...0x39, 0x2B, 0x2D, 0x2E: return true  // a-z A-Z 0-9 + - .
        default: return false
        }
    }

    private static func lowercased(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
        (0x41...0x5A).contains(scalar.value) ? Unicode.Scalar(UInt8(scalar.value + 0x20)) : scalar
    }

    // MARK: Checking a URL

    /// `text` as a URL if it is one the fetcher may take.
    private static func checked(_ text: String) -> URL? {
        guard text.utf8.count <= maximumLength, let url = URL(string: percentEncoded(text)) else { return nil }
        return httpURL(url)
    }

    /// `url` with its scheme in lower case, if it is http(s) with a host, no user name or
    /// password (`http://bank.example@evil.example` reads as the bank to a person, and goes to
    /// evil.example) and not too long.
    private static func httpURL(_ url: URL) -> URL? {
        let text = url.absoluteString
        guard text.utf8.count <= maximumLength, let colon = text.firstIndex(of: ":") else { return nil }
        let scheme = text[..<colon].lowercased()
        let rest = String(text[colon...])
        guard scheme == "http" || scheme == "https", rest.hasPrefix("://") else { return nil }
        let authority = rest.dropFirst(3).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.isEmpty, !authority.contains("@"),
              let normalized = URL(string: scheme + rest), let host = normalized.host, !host.isEmpty
        else { return nil }
        return normalized
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)
    /// ASCII that may not appear as is in a URL (RFC 3986), besides space and controls.
    private static let unsafeASCII = Set("\"<>\\^`{|}".utf8)

    /// `text` with what a URL may not hold as is percent-encoded: non-ASCII (`/café`), spaces
    /// and controls, a `%` not followed by two hex digits, a second `#`. Browsers take such links
    /// and encode them the same way; Foundation's parser would refuse them.
    private static func percentEncoded(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var encoded: [UInt8] = []
        encoded.reserveCapacity(bytes.count)
        var inFragment = false
        for (index, byte) in bytes.enumerated() {
            var keep = byte > 0x20 && byte < 0x7F && !unsafeASCII.contains(byte)
            if byte == UInt8(ascii: "%") {
                keep = index + 2 < bytes.count && isHexDigit(bytes[index + 1]) && isHexDigit(bytes[index + 2])
            } else if byte == UInt8(ascii: "#") {
                keep = !inFragment
                inFragment = true
            }
            if keep {
                encoded.append(byte)
            } else {
                encoded += [UInt8(ascii: "%"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }
}
