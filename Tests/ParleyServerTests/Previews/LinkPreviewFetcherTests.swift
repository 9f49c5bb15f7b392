import Foundation
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing

/// The fetcher's bounds against a real web server on loopback (allowed explicitly): at most
/// 1 MiB read, at most 3 redirects, and a redirect to an address the policy does not allow is
/// refused before anything connects to it.
@Suite struct LinkPreviewFetcherTests {
    static let allowLoopbackOne = AddressPolicy(allowed: [CIDR("127.0.0.1/32")!])

    @Test func aPageLargerThanOneMebibyteIsReadOnlyThatFar() async throws {
        let head = #"<html><head><meta property="og:title" content="Big page"></head><body>"#
        let pages = try await TestWebPages(pages: ["/big": .init(body: head + String(repeating: "x", count: 3 << 20))])
        defer { Task { await pages.stop() } }
        let page = try await PreviewFetcher(policy: Self.allowLoopbackOne).fetch(URL(string: pages.url("/big"))!)
        #expect(page.html.count <= 1 << 20 && page.html.count > 1 << 19, "\(page.html.count) bytes read")
        #expect(PreviewHTML.parse(page.html, charset: page.charset, base: page.url).title == "Big page")
    }

    @Test func threeRedirectsAreFollowedAndAFourthIsRefused() async throws {
        var scripted: [String: TestWebPages.Page] = ["/r0": .init(body: #"<title>End</title>"#)]
        for hop in 1...4 { scripted["/r\(hop)"] = .init(status: 302, headers: ["Location": "/r\(hop - 1)"]) }
        let pages = try await TestWebPages(pages: scripted)
        defer { Task { await pages.stop() } }
        let fetcher = PreviewFetcher(policy: Self.allowLoopbackOne)
        let three = try await fetcher.fetch(URL(string: pages.url("/r3"))!)
        #expect(three.url.path == "/r0")
        await #expect(throws: PreviewFetchFailure.badRedirect) { try await fetcher.fetch(URL(string: pages.url("/r4"))!) }
        #expect(pages.hits("/r0") == 1, "the fourth redirect is not followed")
    }

    @Test func aRedirectToAnAddressNotAllowedIsRefusedUnfetched() async throws {
        let pages = try await TestWebPages(pages: [
            "/away": .init(status: 302, headers: ["Location": "http://127.0.0.2:1/inside"]),
            "/v6": .init(status: 301, headers: ["Location": "http://[::1]:1/inside"]),
        ])
        defer { Task { await pages.stop() } }
        let fetcher = PreviewFetcher(policy: Self.allowLoopbackOne)
        await #expect(throws: PreviewFetchFailure.refusedAddress) { try await fetcher.fetch(URL(string: pages.url("/away"))!) }
        await #expect(throws: PreviewFetchFailure.refusedAddress) { try await fetcher.fetch(URL(string: pages.url("/v6"))!) }
    }
}
