import Foundation
@testable import ParleyServer
@testable import ParleyStorage
import ParleyTestSupport
import Testing

/// What the preview fetcher refuses, against a real web server on loopback: the other ways a
/// sender can write a loopback or metadata address (decimal, hex, octal, short IPv4, `localhost`,
/// IPv4 inside IPv6) are judged by what they resolve to, and are never connected to; pages that
/// are not HTML, redirects that go nowhere fetchable, and a page that never answers all end in
/// the failure the metric counts.
@Suite struct PreviewFetchRefusalTests {
    static let allowLoopbackOne = AddressPolicy(allowed: [CIDR("127.0.0.1/32")!])

    /// A loopback web server serving `pages`, stopped after `body`.
    static func withPages(_ pages: [String: TestWebPages.Page], _ body: (TestWebPages) async throws -> Void) async throws {
        let server = try await TestWebPages(pages: pages)
        do {
            try await body(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    static let page = TestWebPages.Page(body: "<title>Inside</title>")

    // MARK: Addresses written another way

    /// Each host resolves to 127.0.0.1, written so that a string check for "127.0.0.1" or
    /// "localhost" would pass it. Allowed explicitly, each reaches the test page (so the host
    /// really is loopback); by default each is refused and the page is never asked.
    @Test(arguments: ["2130706433", "0x7f.1", "0x7f000001", "0177.0.0.1", "017700000001", "127.1", "127.0.1", "localhost"])
    func loopbackWrittenAnyWayIsRefused(host: String) async throws {
        try await Self.withPages(["/p": Self.page]) { pages in
            let url = try #require(URL(string: "http://\(host):\(pages.port)/p"))
            await #expect(throws: PreviewFetchFailure.refusedAddress) { try await PreviewFetcher(policy: AddressPolicy()).fetch(url) }
            #expect(pages.hits("/p") == 0, "refused before connecting")
            if host != "localhost" {  // localhost may resolve to ::1 first, which this policy does not allow
                let fetched = try await PreviewFetcher(policy: Self.allowLoopbackOne).fetch(url)
                #expect(PreviewHTML.parse(fetched.html, charset: fetched.charset, base: fetched.url).title == "Inside")
                #expect(pages.hits("/p") == 1)
            }
        }
    }

    /// Literal addresses of places a server must never read for a stranger: cloud metadata,
    /// "this host", loopback inside IPv6. Nothing listens there; the refusal comes first.
    @Test(arguments: [
        "http://169.254.169.254/latest/meta-data/", "http://0.0.0.0/", "http://0/", "http://[::1]/", "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:a9fe:a9fe]/", "http://[64:ff9b::a9fe:a9fe]/", "http://10.0.0.1:8080/admin", "http://[fd00::1]/",
        "https://192.168.1.1/",
    ])
    func privateLiteralsAreRefused(link: String) async throws {
        let url = try #require(URL(string: link))
        await #expect(throws: PreviewFetchFailure.refusedAddress) { try await PreviewFetcher(policy: AddressPolicy()).fetch(url) }
    }

    // MARK: What a page answers

    /// Only a 200 with an HTML type is a page to preview; anything else is `notHTML`.
    @Test(arguments: [
        (200, "application/json"), (200, "text/plain; charset=utf-8"), (200, "image/svg+xml"), (200, ""), (404, "text/html"),
        (500, "text/html"), (204, "text/html"), (304, "text/html"),
    ])
    func onlyAnHTMLPageIsPreviewed(status: Int, type: String) async throws {
        let headers = type.isEmpty ? [:] : ["Content-Type": type]
        try await Self.withPages(["/x": .init(status: status, headers: headers, body: "<title>T</title>")]) { pages in
            await #expect(throws: PreviewFetchFailure.notHTML) {
                try await PreviewFetcher(policy: Self.allowLoopbackOne).fetch(URL(string: pages.url("/x"))!)
            }
        }
    }

    /// The response's charset comes back for the parser, lowercased and unquoted; none is nil.
    @Test(arguments: [
        ("TEXT/HTML; Charset=\"ISO-8859-1\"", "iso-8859-1"), ("text/html;charset=windows-1252", "windows-1252"),
        ("text/html; charset=utf-8; boundary=x", "utf-8"), ("text/html", nil),
    ] as [(String, String?)])
    func theResponseCharsetIsPassedOn(type: String, charset: String?) async throws {
        try await Self.withPages(["/c": .init(headers: ["Content-Type": type], body: "<title>T</title>")]) { pages in
            let fetched = try await PreviewFetcher(policy: Self.allowLoopbackOne).fetch(URL(string: pages.url("/c"))!)
            #expect(fetched.charset == charset)
            #expect(fetched.html == Array("<title>T</title>".utf8))
        }
    }

    /// Every redirect status is followed, to the page it names, relative or absolute.
    @Test(arguments: [301, 302, 303, 307, 308])
    func eachRedirectStatusIsFollowed(status: Int) async throws {
        try await Self.withPages(["/end": Self.page]) { pages in
            let server = try await TestWebPages(pages: ["/from": .init(status: status, headers: ["Location": pages.url("/end")])])
            defer { Task { await server.stop() } }
            let fetched = try await PreviewFetcher(policy: Self.allowLoopbackOne).fetch(URL(string: server.url("/from"))!)
            #expect(fetched.url.absoluteString == pages.url("/end"))
            #expect(pages.hits("/end") == 1)
        }
    }

    /// A redirect with nowhere to go, or to something not http(s), is `badRedirect`.
    @Test(arguments: [nil, "", "ftp://127.0.0.1/file", "javascript:alert(1)", "data:text/html,<title>x</title>", "http://user@127.0.0.1/"])
    func aRedirectThatGoesNowhereFetchableIsRefused(location: String?) async throws {
        let headers = location.map { ["Location": $0] } ?? [:]
        try await Self.withPages(["/r": .init(status: 302, headers: headers)]) { pages in
            await #expect(throws: PreviewFetchFailure.badRedirect) {
                try await PreviewFetcher(policy: Self.allowLoopbackOne).fetch(URL(string: pages.url("/r"))!)
            }
        }
    }

    /// A redirect loop ends after the redirects allowed, at no more requests than that.
    @Test func aRedirectLoopEnds() async throws {
        try await Self.withPages(["/a": .init(status: 302, headers: ["Location": "/b"]), "/b": .init(status: 302, headers: ["Location": "/a"])]) { pages in
            await #expect(throws: PreviewFetchFailure.badRedirect) {
                try await PreviewFetcher(policy: Self.allowLoopbackOne, maxRedirects: 2).fetch(URL(string: pages.url("/a"))!)
            }
            #expect(pages.hits("/a") + pages.hits("/b") == 3, "the first request and two redirects")
        }
    }

    /// A page that never answers ends the fetch at its timeout (not at the server's pace).
    @Test func aPageThatNeverAnswersTimesOut() async throws {
        try await Self.withPages(["/slow": Self.page]) { pages in
            pages.hold("/slow")
            defer { pages.release("/slow") }
            let started = ContinuousClock.now
            await #expect(throws: PreviewFetchFailure.timeout) {
                try await PreviewFetcher(policy: Self.allowLoopbackOne, timeout: .milliseconds(300)).fetch(URL(string: pages.url("/slow"))!)
            }
            #expect(ContinuousClock.now - started < .seconds(3))
            #expect(pages.hits("/slow") == 1)
        }
    }

    /// Only the bytes asked for are kept, however much more the page sends.
    @Test func theByteLimitIsExact() async throws {
        let body = String(repeating: "0123456789", count: 1_000)
        try await Self.withPages(["/b": .init(body: body)]) { pages in
            let fetched = try await PreviewFetcher(policy: Self.allowLoopbackOne, maxBytes: 1_234).fetch(URL(string: pages.url("/b"))!)
            #expect(fetched.html == Array(body.utf8.prefix(1_234)))
        }
    }

    // MARK: How addresses are written in logs

    /// RFC 5952: lowercase, no leading zeros, the longest run of two or more zero groups (the
    /// first of equal runs) as `::`, a single zero group kept, mapped IPv4 dotted.
    @Test(arguments: [
        ("2001:0DB8:0000:0000:0000:0000:0000:0001", "2001:db8::1"), ("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"),
        ("2001:0:0:1:0:0:0:1", "2001:0:0:1::1"), ("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"), ("::", "::"), ("::1", "::1"),
        ("1::", "1::"), ("0:0:1:0:0:0:0:0", "0:0:1::"), ("FE80::ABCD", "fe80::abcd"), ("::ffff:7f00:1", "::ffff:127.0.0.1"),
        ("1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8"), ("[::1]", "::1"), ("fe80::1%eth0", "fe80::1"), ("192.0.2.255", "192.0.2.255"),
        ("::1.2.3.4", "::102:304"),
    ])
    func addressesAreWrittenInTheirShortestForm(text: String, written: String) throws {
        #expect(try #require(IPAddressBytes(text)).description == written)
        #expect(IPAddressBytes(written) == IPAddressBytes(text), "what is written reads back as the same address")
    }

    /// `::` stands for at least one group; an IPv4 part only ends an address; brackets come in pairs.
    @Test(arguments: [
        "1:2:3:4:5:6:7:8::", "::1:2:3:4:5:6:7:8", "1:2:3:4::5:6:7:8", "1.2.3.4::", "::1.2.3.4:1", "[::1", "::1]", "[]", "[1.2.3.4]",
        "12345::1", "1:2:3:4:5:6:7", "256.0.0.1", "1.2.3.04", "1.2.3.-4", "1.2.3.4.", " ::1", "::g",
    ])
    func malformedAddressesAreNotAddresses(text: String) {
        #expect(IPAddressBytes(text) == nil)
    }
}
