import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Synchronization
import Testing

/// Link previews through a real server and a real web server on loopback: read after
/// the send (never delaying it), refused for a private address unless the operator allows it.
@Suite struct LinkPreviewTests {
    static let page = """
        <html><head><meta charset="utf-8"><title>Fallback</title>
        <meta property="og:title" content="Release notes &amp; more <b>bold</b>">
        <meta content="What changed in 2.0" property="og:description">
        <meta property="og:image" content="/cover.png"><meta property="og:site_name" content="Example">
        </head><body><script>alert(1)</script></body></html>
        """

    private func startPages() async throws -> TestWebPages {
        try await TestWebPages(pages: [
            "/notes": .init(body: Self.page),
            "/moved": .init(status: 302, headers: ["Location": "/notes"]),
            "/file.zip": .init(headers: ["Content-Type": "application/zip"], body: "PK"),
        ])
    }

    /// Runs `body` with the pages and a server configured by `configure`, stopping both after.
    private func withPages(
        store: StoreKind = .sqlite, _ configure: (inout ServerConfiguration) -> Void = { _ in },
        _ body: (TestServer, TestWebPages) async throws -> Void
    ) async throws {
        let pages = try await startPages()
        let server = try await TestServer.start(store: store, configure: configure)
        do {
            try await body(server, pages)
        } catch {
            await server.stop()
            await pages.stop()
            throw error
        }
        await server.stop()
        await pages.stop()
    }

    /// Waits (up to 20 s) until the message carries a preview in the catch-up feed.
    private func previewed(_ message: Message, by user: TestUser) async throws -> Message? {
        let found = Mutex<Message?>(nil)
        try? await waitFor("a preview of \(message.id)", timeout: .seconds(20)) {
            let changes = try await user.api.changes(message.conversationId, since: message.seq - 1)
            guard let previewed = changes.messages.first(where: { $0.id == message.id && $0.preview != nil }) else { return false }
            found.withLock { $0 = previewed }
            return true
        }
        return found.withLock { $0 }
    }

    @Test(arguments: StoreKind.available)
    func anAllowedPageIsPreviewedAfterTheSend(kind: StoreKind) async throws {
        try await withPages(store: kind, { $0.linkPreviewAllow = [CIDR("127.0.0.1/32")!] }) { server, pages in
            let (alice, bob, direct) = try await server.directPair()
            let bobEvents = EventRecorder(try await bob.connect())
            let sent = try await alice.api.send(.init(clientMessageId: "l1", text: "See \(pages.url("/moved")) for more."), to: direct.id)
            #expect(sent.preview == nil)  // the send's answer does not wait for the page
            let found = try #require(try await previewed(sent, by: bob))
            let preview = try #require(found.preview)
            #expect(preview.url == pages.url("/moved"))
            #expect(preview.title == "Release notes & more bold" && preview.description == "What changed in 2.0")
            #expect(preview.imageUrl == pages.url("/cover.png") && preview.siteName == "Example")
            #expect(found.updatedSeq == sent.seq + 1)
            try await bobEvents.wait { events in
                events.contains { if case .messageUpdated(let e) = $0 { e.message.preview != nil } else { false } }
            }
            // The same URL again within ten minutes: from the cache, not fetched again.
            let again = try await alice.api.send(.init(clientMessageId: "l2", text: pages.url("/moved")), to: direct.id)
            #expect(try await previewed(again, by: bob)?.preview?.title == preview.title)
            #expect(pages.hits("/moved") == 1 && pages.hits("/notes") == 1)
            // Not HTML: no preview, and the metric says why.
            _ = try await alice.api.send(.init(clientMessageId: "l3", text: pages.url("/file.zip")), to: direct.id)
            try await waitForMetric(server, #"parley_link_previews_total{outcome="not_html"} 1"#)
        }
    }

    @Test func aPrivateAddressIsNeverFetchedWithoutTheAllowOption() async throws {
        try await withPages() { server, pages in
            let (alice, _, direct) = try await server.directPair()
            _ = try await alice.api.send(.init(clientMessageId: "p1", text: pages.url("/notes")), to: direct.id)
            _ = try await alice.api.send(.init(clientMessageId: "p2", text: "http://localhost:\(pages.port)/notes"), to: direct.id)
            try await waitForMetric(server, #"parley_link_previews_total{outcome="refused"} 2"#)
            #expect(pages.hits("/notes") == 0)
            let messages = try await alice.api.messages(direct.id).messages
            #expect(messages.allSatisfy { $0.preview == nil })
        }
    }

    /// A link typed with a capital scheme is fetched as `http://…` and its preview still lands
    /// on the message (the rule compared the read URL with the typed text, and dropped it); one
    /// link sent twice while its page is still answering is fetched once, both messages
    /// previewed (each worker fetched it for itself).
    @Test func aLinkAsTypedAndOneSentTwiceAtOnce() async throws {
        try await withPages({ $0.linkPreviewAllow = [CIDR("127.0.0.1/32")!] }) { server, pages in
            let (alice, bob, direct) = try await server.directPair()
            let shouted = pages.url("/notes").replacingOccurrences(of: "http://", with: "HTTP://")
            let typed = try await alice.api.send(.init(clientMessageId: "c1", text: "Read \(shouted) now"), to: direct.id)
            let found = try #require(try await previewed(typed, by: bob), "a preview for \(shouted)")
            #expect(found.preview?.title == "Release notes & more bold" && found.preview?.url == pages.url("/notes"))

            pages.hold("/moved")
            let first = try await alice.api.send(.init(clientMessageId: "t1", text: pages.url("/moved")), to: direct.id)
            try await waitFor("the first fetch at the page") { pages.hits("/moved") == 1 }
            let second = try await alice.api.send(.init(clientMessageId: "t2", text: "again: \(pages.url("/moved"))"), to: direct.id)
            // Either the second job joins the first fetch, or (the defect) fetches again.
            try await waitFor("the second job taken") {
                pages.hits("/moved") == 2 || server.app.metrics.value("parley_link_previews_total", labels: ["outcome": "cached"]) == 1
            }
            pages.release("/moved")
            #expect(try await previewed(first, by: bob)?.preview?.title == "Release notes & more bold")
            #expect(try await previewed(second, by: bob)?.preview?.title == "Release notes & more bold")
            #expect(pages.hits("/moved") == 1, "fetched once for both")
        }
    }

    /// A page that never answers ends in `timeout` at the fetch's deadline (here 1 s), and the
    /// message gets no preview; the worker is free for the next link.
    @Test func aPageThatNeverAnswersTimesOut() async throws {
        try await withPages({
            $0.linkPreviewAllow = [CIDR("127.0.0.1/32")!]
            $0.linkPreviewTimeout = .seconds(1)
        }) { server, pages in
            let (alice, bob, direct) = try await server.directPair()
            pages.hold("/notes")
            _ = try await alice.api.send(.init(clientMessageId: "s1", text: pages.url("/notes")), to: direct.id)
            try await waitForMetric(server, #"parley_link_previews_total{outcome="timeout"} 1"#)
            #expect(pages.hits("/notes") == 1)
            #expect(try await alice.api.messages(direct.id).messages.allSatisfy { $0.preview == nil })
            let next = try await alice.api.send(.init(clientMessageId: "s2", text: pages.url("/moved")), to: direct.id)
            pages.release("/notes")
            #expect(try await previewed(next, by: bob)?.preview?.title == "Release notes & more bold")
        }
    }

    @Test func previewsOffFetchNothing() async throws {
        let pages = try await startPages()
        let server = try await TestServer.start {
            $0.linkPreviews = false
            $0.linkPreviewAllow = [CIDR("127.0.0.1/32")!]
        }
        // No worker at all: nothing could fetch, now or later.
        #expect(server.app.previews == nil)
        let (alice, _, direct) = try await server.directPair()
        let sent = try await alice.api.send(.init(clientMessageId: "o1", text: pages.url("/notes")), to: direct.id)
        #expect(pages.hits("/notes") == 0)
        #expect(try await alice.api.changes(direct.id, since: 0).messages.first { $0.id == sent.id }?.preview == nil)
        await server.stop()
        await pages.stop()
    }

    private func waitForMetric(_ server: TestServer, _ line: String) async throws {
        try await waitFor("the metric line \(line)", timeout: .seconds(20)) {
            var request = URLRequest(url: server.baseURL.appendingPathComponent("metrics"))
            request.timeoutInterval = 10
            let (data, _) = try await URLSession.shared.data(for: request)
            return String(decoding: data, as: UTF8.self).contains(line)
        }
    }
}
