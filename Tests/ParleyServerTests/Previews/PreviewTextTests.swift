import Foundation
@testable import ParleyServer
import Testing

/// A stranger's page text made into a preview's (`Previews/PreviewText.swift`,
/// `PageCharset`): character references decoded exactly once and never into a control,
/// tags taken out without eating text, and the page's charset labels read as browsers read them.
@Suite struct PreviewTextTests {
    // MARK: Character references

    @Test(arguments: [
        ("&amp;", "&"), ("&AMP;", "&"), ("&nbsp;", "\u{A0}"), ("&hellip;&mdash;&euro;", "\u{2026}\u{2014}\u{20AC}"),
        ("&#65;&#x42;&#X43;", "ABC"), ("&#65", "A"), ("&#x1F44D;", "👍"), ("&#0065;", "A"),
        // windows-1252's meaning for 0x80-0x9F, as pages mean it; its undefined 0x81 stays a C1 control.
        ("&#150;&#128;&#159;", "\u{2013}\u{20AC}\u{178}"), ("&#129;", "\u{81}"),
        // Not characters: NUL, a surrogate, past U+10FFFF, and a number too long for any integer.
        ("&#0;", "\u{FFFD}"), ("&#xD800;", "\u{FFFD}"), ("&#x110000;", "\u{FFFD}"), ("&#99999999999999999999999;", "\u{FFFD}"),
    ])
    func referencesAreDecoded(raw: String, decoded: String) {
        #expect(PreviewText.decodingEntities(raw) == decoded)
    }

    /// What only looks like a reference stays as written: no digits, no semicolon after a name,
    /// an unknown or mis-cased name, a bare ampersand.
    @Test(arguments: ["&#;", "&#x;", "&#xG;", "&amp", "&Amp;", "&unknown;", "AT&T", "a & b", "&", "&;", "&averyveryverylongname;"])
    func nonReferencesStayAsWritten(raw: String) {
        #expect(PreviewText.decodingEntities(raw) == raw)
    }

    /// One pass: `&amp;lt;` is the text `&lt;`, never `<` (decoding twice would turn a page's
    /// escaped markup into markup).
    @Test func referencesAreDecodedOnce() {
        #expect(PreviewText.decodingEntities("&amp;lt;b&amp;gt;") == "&lt;b&gt;")
        #expect(PreviewText.clean("&amp;lt;b&amp;gt;bold") == "&lt;b&gt;bold")
        #expect(PreviewText.decodingEntities("&#38;#65;") == "&#65;")
    }

    // MARK: Tags

    @Test(arguments: [
        ("a <b>bold</b> c", "a  bold  c"), ("<!-- note -->text", " text"), ("<br/>x<?xml ?>", " x "),
        ("a < b and c > d", "a < b and c > d"), ("I <3 you", "I <3 you"), ("1<2>3", "1<2>3"), ("<>", "<>"),
        ("tail <b", "tail <b"), ("no tags", "no tags"),
    ])
    func tagsBecomeSpacesAndOtherAngleBracketsStay(raw: String, kept: String) {
        #expect(PreviewText.withoutTags(raw) == kept)
    }

    /// Thousands of `<a` with no `>` after them are text, and are found to be in one pass: a
    /// page built to make the scan quadratic must not hold the preview worker.
    @Test func manyUnclosedTagsAreTextAndCheapToScan() {
        let raw = String(repeating: "<a ", count: 60_000) + "end"
        let started = ContinuousClock.now
        let kept = PreviewText.withoutTags(raw)
        #expect(ContinuousClock.now - started < .seconds(1))
        #expect(kept == raw)
    }

    // MARK: Cleaning

    /// Every way a page could smuggle a control, an escape sequence or a direction override
    /// into a preview, written as a reference or a tag too, leaves only text.
    @Test(arguments: [
        ("&#27;[31mred", "[31mred"), ("&#x1B;]8;;https://evil.example&#7;x", "]8;;https://evil.examplex"),
        ("invoice&#x202E;fdp.exe", "invoicefdp.exe"), ("&#8294;iso&#8297;late", "isolate"),
        // 0x9B, the one-byte CSI, is windows-1252's "›" as a reference: text, not a sequence.
        ("&lt;script&gt;alert(1)&lt;/script&gt;", "alert(1)"), ("a&#10;b&#13;&#10;c", "a b c"), ("&#155;2J", "\u{203A}2J"),
        ("  spaced \n\t out\u{3000}", "spaced out"), ("non&nbsp;breaking", "non breaking"), ("A\u{2028}B", "A B"),
    ])
    func cleaningLeavesOnlyText(raw: String, cleaned: String) {
        #expect(PreviewText.clean(raw) == cleaned)
    }

    /// Nothing left is no text (a preview shows no empty title).
    @Test(arguments: ["", "   ", "\u{202E}\u{7}", "<b></b>", "&#32;&nbsp;", "&#x202D;&#x2068;", "<!-- only a comment -->"])
    func whatLeavesNothingIsNil(raw: String) {
        #expect(PreviewText.clean(raw) == nil)
    }

    /// 300 characters is kept whole; one more is cut to 300, with no ellipsis added.
    @Test func theLimitIsExactlyThreeHundredCharacters() {
        let accented = String(repeating: "e\u{301}", count: 300)
        #expect(PreviewText.clean(accented) == accented, "a decomposed é is one character")
        let over = String(repeating: "x", count: 300) + "y"
        #expect(PreviewText.clean(over) == String(repeating: "x", count: 300))
        let spaced = String(repeating: "x", count: 299) + "   y"
        #expect(PreviewText.clean(spaced) == String(repeating: "x", count: 299), "collapsed, then the space at the cut goes")
    }

    // MARK: Charsets

    @Test(arguments: [
        ("utf-8", PageCharset.utf8), ("UTF8", .utf8), (" utf-8 ", .utf8), ("text/html; charset=UTF-8", .utf8),
        ("text/html; charset=\"iso-8859-1\"", .windows1252), ("charset='latin1'; q=1", .windows1252), ("Windows-1252", .windows1252),
        ("us-ascii", .windows1252), ("ISO_8859-1:1987", .windows1252),
    ])
    func charsetLabelsAreReadAsBrowsersReadThem(label: String, charset: PageCharset) {
        #expect(PageCharset(label: label) == charset)
    }

    @Test(arguments: ["", "shift_jis", "utf-16", "text/html", "iso-8859-15", "utf-8x"])
    func otherLabelsAreNotRead(label: String) {
        #expect(PageCharset(label: label) == nil)
    }

    /// windows-1252's high half: the curly quotes, euro and friends; its five undefined bytes
    /// stay C1 controls (dropped later); the rest is Latin-1.
    @Test func windows1252MapsItsHighBytes() {
        #expect(PageCharset.windows1252(0x80) == "\u{20AC}" && PageCharset.windows1252(0x9F) == "\u{178}")
        #expect(PageCharset.windows1252(0x92) == "\u{2019}" && PageCharset.windows1252(0x85) == "\u{2026}")
        for undefined: UInt8 in [0x81, 0x8D, 0x8F, 0x90, 0x9D] {
            #expect(PageCharset.windows1252(undefined) == Unicode.Scalar(undefined))
        }
        #expect(PageCharset.windows1252(0x41) == "A" && PageCharset.windows1252(0xE9) == "é" && PageCharset.windows1252(0xA0) == "\u{A0}")
        #expect(PageCharset.windows1252.decode([0x93, 0x68, 0x69, 0x94]) == "\u{201C}hi\u{201D}")
    }

    static let base = URL(string: "https://example.com/post")!

    /// A UTF-8 byte order mark settles the charset, over the response's and the page's labels.
    @Test func aByteOrderMarkWinsOverEveryLabel() {
        let page = [0xEF, 0xBB, 0xBF] + Array(#"<head><meta charset="iso-8859-1"><title>Café</title></head>"#.utf8)
        #expect(PreviewHTML.parse(page, charset: "iso-8859-1", base: Self.base).title == "Café")
        #expect(PreviewHTML.parse(Array(page.dropFirst(3)), charset: nil, base: Self.base).title == "CafÃ©", "without it, Latin-1 as labelled")
    }

    /// A response charset this reader does not know is no answer: the page's own label decides.
    @Test func anUnknownResponseCharsetFallsBackToThePages() {
        let page = Array(#"<meta charset="windows-1252"><title>Caf"#.utf8) + [0xE9] + Array("</title>".utf8)
        #expect(PreviewHTML.parse(page, charset: "text/html; charset=shift_jis", base: Self.base).title == "Café")
    }
}
