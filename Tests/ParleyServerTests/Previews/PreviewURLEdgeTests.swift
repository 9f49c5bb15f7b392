import Foundation
@testable import ParleyRules
import Testing

/// The link a message is previewed by, at the edges the common cases leave (`PreviewURL`):
/// characters a URL may not hold are encoded the way browsers encode them (never dropped,
/// never read as a second fragment), brackets and punctuation around a link, lookalike
/// schemes, and the length limit counted in encoded bytes.
@Suite struct PreviewURLEdgeTests {
    @Test(arguments: [
        // A `%` that starts no escape is itself encoded; a real escape is kept as written.
        ("https://example.com/100%", "https://example.com/100%25"), ("https://example.com/%zz", "https://example.com/%25zz"),
        ("https://example.com/a%2Fb", "https://example.com/a%2Fb"), ("https://example.com/%4", "https://example.com/%254"),
        // One fragment: a second `#` is a character of it.
        ("https://example.com/a#b#c", "https://example.com/a#b%23c"),
        // ASCII a URL may not hold as is.
        ("https://example.com/a|b^c`d", "https://example.com/a%7Cb%5Ec%60d"), ("https://example.com/{x}", "https://example.com/%7Bx%7D"),
        ("https://example.com/a\\b", "https://example.com/a%5Cb"),
        // Brackets: a closing one the link did not open is the sentence's.
        ("[https://example.com/a_(b)]", "https://example.com/a_(b)"), ("(https://example.com/x))", "https://example.com/x"),
        ("https://example.com/x?!.", "https://example.com/x"), ("<https://example.com/a.", "https://example.com/a"),
        ("HTTP://EXAMPLE.COM/P", "http://EXAMPLE.COM/P"), ("https://example.com/path?q=a b", "https://example.com/path?q=a"),
        ("go:https://example.com/x", "https://example.com/x"), ("http://example.com:8080", "http://example.com:8080"),
        // A zero-width character inside a link is part of it, and encoded (never hidden in it).
        ("https://example.com/a\u{200B}b", "https://example.com/a%E2%80%8Bb"),
    ])
    func linksAreEncodedAsBrowsersEncodeThem(text: String, link: String) {
        #expect(PreviewURL.first(in: text)?.absoluteString == link)
    }

    /// Lookalikes of a scheme are no link: fullwidth or lookalike characters, a missing slash,
    /// a scheme glued to another word.
    @Test(arguments: [
        "https\u{FF1A}//example.com", "https:\u{FF0F}\u{FF0F}example.com", "https:/example.com", "https:example.com",
        "hxxps://example.com", "xhttps://example.com", "web+https://example.com", "h\u{0442}tps://example.com", "https ://example.com",
    ])
    func lookalikeSchemesAreNoLink(text: String) {
        #expect(PreviewURL.first(in: text) == nil)
    }

    /// The limit is 2,048 bytes once encoded: a path of 600 "é" is 3,600 encoded bytes, too
    /// long though its text is short; 300 of them fit.
    @Test func theLengthLimitCountsEncodedBytes() throws {
        #expect(PreviewURL.first(in: "https://example.com/" + String(repeating: "é", count: 600)) == nil)
        let fits = try #require(PreviewURL.first(in: "https://example.com/" + String(repeating: "é", count: 300)))
        #expect(fits.absoluteString.utf8.count == 20 + 300 * 6)
        #expect(PreviewURL.first(in: "https://example.com/" + String(repeating: "a", count: 2_028)) != nil)
        #expect(PreviewURL.first(in: "https://example.com/" + String(repeating: "a", count: 2_029)) == nil)
    }

    static let page = URL(string: "https://example.com/posts/1")!

    /// As a browser reads an `og:image` or a `Location`: tabs and line breaks anywhere are
    /// dropped (so they cannot hide a `javascript:`), queries and fragments resolve on the page.
    @Test(arguments: [
        ("\t/img.png", "https://example.com/img.png"), ("https://exa\tmple.com/a.png", "https://example.com/a.png"),
        ("/a\nb.png", "https://example.com/ab.png"), ("?x=1", "https://example.com/posts/1?x=1"),
        ("#top", "https://example.com/posts/1#top"), ("http://[::1]/a.png", "http://[::1]/a.png"),
        ("/cover 1.png", "https://example.com/cover%201.png"),
    ])
    func referencesResolveAsABrowserReadsThem(reference: String, resolved: String) {
        #expect(PreviewURL.resolve(reference, against: Self.page)?.absoluteString == resolved)
    }

    @Test(arguments: [
        "java\nscript:alert(1)", "java\tscript:alert(1)", " javascript:alert(1)", "//user@evil.example/a.png",
        "https://user:pw@example.com/a.png", "vbscript:msgbox(1)", "https://" + String(repeating: "a", count: 2_100) + ".example/",
    ])
    func hiddenSchemesAndCredentialsResolveToNothing(reference: String) {
        #expect(PreviewURL.resolve(reference, against: Self.page) == nil)
    }
}
