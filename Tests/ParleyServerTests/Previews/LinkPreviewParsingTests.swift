import Foundation
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import Testing

/// The pure halves of link previews, without a socket: which link of a message is previewed,
/// what a page's head says about it (as plain, capped text), and which addresses the fetcher
/// may connect to, so that a message cannot make the server read its own network.
@Suite struct LinkPreviewParsingTests {
    // MARK: The link a message is previewed by

    /// Links as people write them in chat: the sentence's punctuation is not part of the link,
    /// a bracket is when the link opened it, `<...>` says where it ends.
    @Test(arguments: [
        ("see https://example.com/a.", "https://example.com/a"),
        ("(https://example.com/x), then", "https://example.com/x"),
        ("Read https://en.wikipedia.org/wiki/Swift_(programming_language)!", "https://en.wikipedia.org/wiki/Swift_(programming_language)"),
        ("(see https://en.wikipedia.org/wiki/Swift_(programming_language))", "https://en.wikipedia.org/wiki/Swift_(programming_language)"),
        ("a {https://example.com/x}", "https://example.com/x"),
        ("link: <https://example.com/path.>", "https://example.com/path."),
        ("<https://example.com/a>, right?", "https://example.com/a"),
        (#""https://example.com/q?a=1&b=2";"#, "https://example.com/q?a=1&b=2"),
        ("'http://example.com/it's'", "http://example.com/it's"),
        ("HTTPS://Example.com/Path", "https://Example.com/Path"),
        ("line one\nhttps://example.com/next\tafter", "https://example.com/next"),
        ("https://example.com\u{202E}/gpj.exe", "https://example.com"),
        ("https://example.com/caf\u{E9}?q=\u{1F600}", "https://example.com/caf%C3%A9?q=%F0%9F%98%80"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("first ftp://example.com/f then http://example.com/b", "http://example.com/b"),
        ("http://user@evil.example and https://example.com/ok", "https://example.com/ok"),
    ])
    func theFirstLinkIsTakenAsWritten(text: String, link: String) {
        #expect(PreviewURL.first(in: text)?.absoluteString == link)
    }

    /// Nothing to fetch: no link, another scheme, a user name that hides the real host, no host.
    @Test(arguments: [
        "", "no links here", "example.com/page", "www.example.com", "https://", "https:///path", "ftp://example.com/file",
        "javascript:alert(1)", "mailto:someone@example.com", "file:///etc/passwd", "http://user@example.com/",
        "https://user:pass@example.com/", "https://@example.com", "https://bank.example@evil.example/login",
        "git+https://example.com/repo",
    ])
    func textWithoutAFetchableLinkHasNone(text: String) {
        #expect(PreviewURL.first(in: text) == nil)
    }

    @Test func aLinkLongerThan2048IsNotTaken() {
        let long = "https://example.com/" + String(repeating: "a", count: 2_100)
        #expect(PreviewURL.first(in: long) == nil)
        #expect(PreviewURL.first(in: "https://example.com/" + String(repeating: "a", count: 2_000)) != nil)
    }

    static let page = URL(string: "https://example.com/posts/1")!

    /// `og:image` and `Location` values, relative or not, made absolute against the page.
    @Test(arguments: [
        ("/img/a.png", "https://example.com/img/a.png"),
        ("a.png", "https://example.com/posts/a.png"),
        ("//cdn.example.com/a.png", "https://cdn.example.com/a.png"),
        ("HTTP://Other.example/x.png", "http://Other.example/x.png"),
        ("  https://example.com/a b.png\n", "https://example.com/a%20b.png"),
    ])
    func referencesResolveAgainstThePage(reference: String, resolved: String) {
        #expect(PreviewURL.resolve(reference, against: Self.page)?.absoluteString == resolved)
    }

    @Test(arguments: [
        "", "   ", "javascript:alert(1)", "data:image/png;base64,AAAA", "ftp://example.com/a.png", "mailto:x@example.com",
        "https://user@example.com/a.png",
    ])
    func referencesThatAreNotHTTPResolveToNothing(reference: String) {
        #expect(PreviewURL.resolve(reference, against: Self.page) == nil)
    }

    // MARK: What a page says

    static let base = URL(string: "https://example.com/blog/post")!

    static func preview(_ html: String, charset: String? = nil) -> PagePreview {
        PreviewHTML.parse(Array(html.utf8), charset: charset, base: base)
    }

    @Test func openGraphTagsAreReadInEitherAttributeOrder() {
        let page = Self.preview("""
            <!DOCTYPE html><html><head>
            <meta property="og:title" content="First">
            <meta content="About it" property="og:description">
            <meta name="og:site_name" content="Example">
            <meta content="https://img.example/a.png" name="og:image">
            <title>Not this one</title>
            </head><body></body></html>
            """)
        #expect(page == PagePreview(title: "First", description: "About it", imageURL: "https://img.example/a.png", siteName: "Example"))
    }

    @Test func quotingAndCaseAreAsTolerantAsBrowsers() {
        let page = Self.preview("""
            <HEAD><META PROPERTY='og:title' CONTENT='It&#39;s "quoted"'>
            <meta property = "og:description" content = "Spaced out">
            <meta property=og:site_name content=Example >
            <Title>Ignored</Title></HEAD>
            """)
        #expect(page.title == #"It's "quoted""#)
        #expect(page.description == "Spaced out")
        #expect(page.siteName == "Example")
    }

    @Test func entitiesAreDecoded() {
        let page = Self.preview(#"""
            <meta property="og:title" content="Tom &amp; Jerry &lt;3 &quot;cats&quot; &apos;n&apos; &#39;s &#x1F600; &#169;&nbsp;2024 &unknown; &#146;">
            """#)
        #expect(page.title == #"Tom & Jerry <3 "cats" 'n' 's 😀 © 2024 &unknown; ’"#)
    }

    /// An empty or missing `og:title` falls back to `<title>`; its line breaks and runs of spaces
    /// become one space.
    @Test func theTitleElementIsTheFallback() {
        let page = Self.preview("""
            <head><title>
              My   Page
              Title </title><meta property="og:title" content="  "></head>
            """)
        #expect(page.title == "My Page Title")
        #expect(page.description == nil && page.imageURL == nil && page.siteName == nil)
    }

    @Test func theDescriptionMetaIsTheFallback() {
        #expect(Self.preview(#"<head><meta name="Description" content="Plain"></head>"#).description == "Plain")
        let both = Self.preview(#"<meta name="description" content="Plain"><meta property="og:description" content="Open Graph">"#)
        #expect(both.description == "Open Graph")
    }

    /// Tags (also ones written as entities), controls, C1 controls and direction overrides are
    /// gone; what is left is text.
    @Test func markupAndControlsAreStripped() {
        let page = Self.preview(
            "<head><meta property=\"og:description\" content=\"&lt;b&gt;Bold&lt;/b&gt; text\u{07}\u{1B}[31m red \u{202E}evil\u{2066}x\u{9B}\">"
                + "<title>Hello <b>world</b>\u{0}</title></head>")
        #expect(page.description == "Bold text[31m red evilx")
        #expect(page.title == "Hello world")
    }

    /// 300 characters as people count them: an emoji with a skin tone or a family of four
    /// scalars is one, and is never cut in half; a space left at the cut goes too.
    @Test func textsAreCutAt300Characters() {
        let thumbs = String(repeating: "👍🏽", count: 400)
        let family = "a" + String(repeating: "👨‍👩‍👧", count: 400)
        let words = String(repeating: "ab ", count: 200)
        let page = Self.preview(#"""
            <meta property="og:title" content="\#(thumbs)">
            <meta property="og:description" content="\#(family)">
            <meta property="og:site_name" content="\#(words)">
            """#)
        #expect(page.title == String(repeating: "👍🏽", count: 300))
        #expect(page.description?.count == 300)
        #expect(page.description?.last == "👨‍👩‍👧")
        #expect(page.siteName?.count == 299 && page.siteName?.hasSuffix("ab") == true)
    }

    @Test func aRelativeImageIsResolvedAgainstThePage() {
        let page = Self.preview(#"<meta property="og:image" content="/static/cover.png?a=1&amp;b=2">"#)
        #expect(page.imageURL == "https://example.com/static/cover.png?a=1&b=2")
    }

    /// An image a client must not load (script, inline data) is no image; a later one may be.
    @Test func anImageThatIsNotHTTPIsRefused() {
        #expect(Self.preview(#"<meta property="og:image" content="javascript:alert(1)">"#).imageURL == nil)
        let page = Self.preview("""
            <meta property="og:image" content="javascript:alert(1)">
            <meta property="og:image" content="data:image/png;base64,AAAA">
            <meta property="og:image" content="pic.png">
            """)
        #expect(page.imageURL == "https://example.com/blog/pic.png")
    }

    /// What scripts, styles and comments hold looks like tags but is not.
    @Test func scriptsStylesAndCommentsAreSkipped() {
        let page = Self.preview("""
            <head>
            <script>var s = '<meta property="og:title" content="Fake">'; if (a </b) {}</script>
            <style>/* <title>Style</title> */ p::before { content: "</head>" }</style>
            <!-- <meta property="og:title" content="Comment"> -->
            <title>Real</title>
            </head>
            """)
        #expect(page == PagePreview(title: "Real"))
    }

    /// The scan ends with the head; an icon's `<title>` in an `<svg>` does not name the page.
    @Test func onlyTheHeadAndThePagesOwnTitleCount() {
        let page = Self.preview(#"<head><title>T</title></head><body><meta property="og:description" content="Late"></body>"#)
        #expect(page == PagePreview(title: "T"))
        #expect(Self.preview("<body><svg><title>Icon</title></svg><p>No head here</p>").title == nil)
    }

    /// A page that says Latin-1 is read as windows-1252 (as browsers do: curly quotes and the
    /// euro sign in 0x80-0x9F); the response's charset wins over the page's; UTF-8 otherwise,
    /// invalid bytes replaced.
    @Test func latin1PagesAreDecoded() {
        let title: [UInt8] = Array("<title>Caf".utf8) + [0xE9, 0x20, 0x93] + Array("quoted".utf8) + [0x94, 0x20, 0x80] + Array("</title>".utf8)
        let declared = Array(#"<head><meta charset="ISO-8859-1">"#.utf8) + title
        #expect(PreviewHTML.parse(declared, charset: nil, base: Self.base).title == "Café “quoted” €")
        let equiv = Array(#"<meta http-equiv="Content-Type" content="text/html; charset=latin1">"#.utf8) + title
        #expect(PreviewHTML.parse(equiv, charset: nil, base: Self.base).title == "Café “quoted” €")
        #expect(PreviewHTML.parse(title, charset: "iso-8859-1", base: Self.base).title == "Café “quoted” €")
        #expect(PreviewHTML.parse(title, charset: "text/html; charset=windows-1252", base: Self.base).title == "Café “quoted” €")

        let invalid = Array("<title>Caf".utf8) + [0xE9] + Array("!</title>".utf8)
        #expect(PreviewHTML.parse(invalid, charset: nil, base: Self.base).title == "Caf\u{FFFD}!")
        let utf8 = Array(#"<meta charset="iso-8859-1"><title>Café</title>"#.utf8)
        #expect(PreviewHTML.parse(utf8, charset: "utf-8", base: Self.base).title == "Café")
    }

    // MARK: Which addresses are fetched

    /// One address of every non-public range, written the ways a resolver or an attacker
    /// would: IPv4-mapped, NAT64 and 6to4 forms of private IPv4 addresses included.
    @Test(arguments: [
        "0.1.2.3", "10.1.2.3", "100.64.0.1", "100.127.255.254", "127.0.0.1", "127.255.255.254", "169.254.169.254",
        "172.16.0.1", "172.31.255.255", "192.0.0.8", "192.0.2.1", "192.88.99.1", "192.168.1.1", "198.18.0.1", "198.19.255.255",
        "198.51.100.7", "203.0.113.9", "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
        "::", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::ffff:7f00:1", "64:ff9b::10.0.0.1",
        "64:ff9b::7f00:1", "64:ff9b:1::1", "100::1", "2001::1", "2001:1ff:ffff::1", "2001:db8::1", "2002:a00:1::1",
        "2002:7f00:1::", "3fff::1", "fc00::1", "fd12:3456::1", "fe80::1", "febf:ffff::1", "fec0::1", "ff02::1", "ff05::1:3",
        "::127.0.0.1", "5f00::1",
    ])
    func nonPublicAddressesAreRefused(address: String) throws {
        #expect(!AddressPolicy().permits(try #require(IPAddressBytes(address))))
    }

    /// Public addresses, those just outside a refused range among them.
    @Test(arguments: [
        "8.8.8.8", "1.1.1.1", "93.184.215.14", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255",
        "128.0.0.0", "169.253.255.255", "169.255.0.0", "172.15.255.255", "172.32.0.0", "192.0.1.0", "192.0.3.0",
        "192.88.98.255", "192.167.255.255", "192.169.0.0", "198.17.255.255", "198.20.0.0", "198.51.99.255", "203.0.112.255",
        "223.255.255.255", "2001:4860:4860::8888", "2606:4700:4700::1111", "2a00:1450:4001:82a::200e", "2001:200::1",
        "::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "2002:808:808::1",
    ])
    func publicAddressesArePermitted(address: String) throws {
        #expect(AddressPolicy().permits(try #require(IPAddressBytes(address))))
    }

    /// The operator's ranges open exactly themselves (a mapped form of an allowed IPv4
    /// address included), and public addresses stay open.
    @Test func anAllowListPermitsItsRangesAndNothingElse() throws {
        let policy = AddressPolicy(allowed: try AddressPolicy.parseAllowList("127.0.0.1/32,::1"))
        for address in ["127.0.0.1", "::1", "::ffff:127.0.0.1", "8.8.8.8"] {
            #expect(policy.permits(try #require(IPAddressBytes(address))), "\(address)")
        }
        for address in ["127.0.0.2", "10.0.0.1", "192.168.1.1", "169.254.169.254", "::2", "fe80::1", "::ffff:127.0.0.2"] {
            #expect(!policy.permits(try #require(IPAddressBytes(address))), "\(address)")
        }
    }

    @Test func allowListsAreCommaSeparatedWithSpaces() throws {
        #expect(try AddressPolicy.parseAllowList(" 10.0.0.0/8 , fd00::/8 ,") == [CIDR("10.0.0.0/8"), CIDR("fd00::/8")].compactMap { $0 })
        #expect(try AddressPolicy.parseAllowList("").isEmpty)
    }

    /// A bad entry stops the start and is named, so the operator sees which one.
    @Test(arguments: ["10.0.0.0/33", "intranet.local", "10.0.0.0/8;192.168.0.0/16", "1.2.3.4/ 8", "::/129"])
    func aBadAllowListEntryIsNamed(entry: String) {
        let error = #expect(throws: ServerStartError.self) { try AddressPolicy.parseAllowList("127.0.0.1, \(entry)") }
        #expect(error?.description.contains(entry) == true, "\(String(describing: error))")
    }

    /// Prefixes from 0 to the address's bits; the host bits written are cleared; a mapped range
    /// is the IPv4 range it covers.
    @Test(arguments: [
        ("0.0.0.0/0", "0.0.0.0/0"), ("10.0.0.0/32", "10.0.0.0/32"), ("10.1.2.3", "10.1.2.3/32"), ("10.1.2.3/8", "10.0.0.0/8"),
        ("::/0", "::/0"), ("::/128", "::/128"), ("::1", "::1/128"), ("fd00::/8", "fd00::/8"),
        ("2001:0db8:0000:0000:0000:0000:0000:0001/128", "2001:db8::1/128"), ("::ffff:10.0.0.0/104", "10.0.0.0/8"),
        ("1:2:3:4:5:6:7::/128", "1:2:3:4:5:6:7:0/128"),
    ])
    func rangesParseWithinTheirBounds(text: String, written: String) throws {
        #expect(try #require(CIDR(text)).description == written)
    }

    @Test(arguments: [
        "", "10.0.0.0/33", "::/129", "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/", "/8", "10.0.0.0/8/9", "10.0.0.256", "10.0.0",
        "1.2.3.4.5", "01.2.3.4", " 10.0.0.1", "10.0.0.1 ", "example.com", "fe80::1%eth0", "[::1]", "1::2::3", "12345::",
        "1:2:3:4:5:6:7:8:9", "::1.2.3.4:5", "1.2.3.4::", "g::1", "+1::", ":::1", "1:::",
    ])
    func badRangesAreRefused(text: String) {
        #expect(CIDR(text) == nil)
    }

    /// Matching follows the prefix bit by bit; an IPv4-mapped address is its IPv4 address;
    /// otherwise the other family is never inside.
    @Test(arguments: [
        ("10.0.0.0/8", "10.255.255.255", true), ("10.0.0.0/8", "11.0.0.0", false),
        ("192.168.128.0/17", "192.168.127.255", false), ("192.168.128.0/17", "192.168.200.1", true),
        ("2001:db8::/33", "2001:db8:7fff::1", true), ("2001:db8::/33", "2001:db8:8000::1", false),
        ("10.0.0.0/8", "::ffff:10.1.2.3", true), ("::ffff:10.0.0.0/104", "10.200.0.1", true),
        ("0.0.0.0/0", "2001:db8::1", false), ("::/0", "10.0.0.1", false), ("127.0.0.1", "::1", false),
    ])
    func rangesMatchBitByBit(range: String, address: String, inside: Bool) throws {
        #expect(try #require(CIDR(range)).contains(try #require(IPAddressBytes(address))) == inside)
    }

    /// How an address is written does not matter once it is bytes.
    @Test func addressesAreTheirBytes() {
        let mapped: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1]
        #expect(IPAddressBytes("::ffff:127.0.0.1") == .v6(mapped))
        #expect(IPAddressBytes("0:0:0:0:0:ffff:7f00:1") == .v6(mapped))
        #expect(IPAddressBytes("[::1]") == IPAddressBytes("::1"))
        #expect(IPAddressBytes("fe80::1%eth0") == IPAddressBytes("fe80::1"))
        #expect(IPAddressBytes("192.0.2.1") == .v4([192, 0, 2, 1]))
        #expect(IPAddressBytes("example.com") == nil && IPAddressBytes("") == nil)
    }
}
