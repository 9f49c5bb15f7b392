import ArgumentParser
import Foundation
import ParleyClient
import ParleyProtocol
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `parley bench list`: a user in many conversations (a support agent, a bot): the first page
/// of the list, every page, and a sync with nothing new, in bytes and milliseconds, beside an
/// authenticated request that reads nothing (`GET /users/me`) as the floor.
struct ListBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "A user in many conversations: the list's first page, every page and a sync with nothing new, against GET /users/me.")

    @Option(help: "Conversations the user is in.") var conversations: Int = 2000
    @Option(help: "Timed requests of each kind (the median and p99 are reported).") var runs: Int = 50
    @Option(help: "Server URL to drive (started with --open-organizations); default: one in-process on a temporary SQLite file.")
    var server: String?

    func run() async throws {
        guard conversations > 0, runs > 0 else { throw fail("conversations and runs must be positive") }
        // In-process: no overlap window, so "nothing new" right after the setup is nothing.
        let (baseURL, stop) = try await benchTarget(server) {
            let started = try await Latency.startServer { $0.listSyncOverlap = .zero }
            return (started.url, started.stop)
        }
        let organization = "list-\(UUID().uuidString.prefix(8))"
        let api = ParleyAPI(baseURL: baseURL)
        let reader = try await api.register(.init(organization: organization, email: "reader@bench.io", password: "bench-password", displayName: "Reader"))
        let creator = try await api.register(.init(organization: organization, email: "creator@bench.io", password: "bench-password", displayName: "Creator"))
        let creatorAPI = ParleyAPI(baseURL: baseURL, token: creator.token)
        for n in 0..<conversations {
            _ = try await creatorAPI.createConversation(.init(type: .group, participantIds: [reader.user.id], name: "group \(n)"))
        }
        let http = TimedGet(base: baseURL.appendingPathComponent("api/v1"), token: reader.token)

        let floor = try await http.repeated("users/me", runs: runs)
        let firstPage = try await http.repeated("conversations?limit=50", runs: runs)
        var pageSamples: [Duration] = []
        var total = 0, pages = 0, bytes = 0
        let clock = ContinuousClock()
        for _ in 0..<max(1, runs / 10) {
            let start = clock.now
            var before: String?
            total = 0; pages = 0; bytes = 0
            repeat {
                let (body, _) = try await http.get("conversations?limit=200" + (before.map { "&before=\($0)" } ?? ""))
                let page = try WireCoding.makeDecoder().decode(ConversationsResponse.self, from: body)
                total += page.conversations.count
                pages += 1
                bytes += body.count
                before = page.hasMore == true ? page.nextBefore : nil
            } while before != nil
            pageSamples.append(clock.now - start)
        }
        guard total == conversations else { throw fail("the pages held \(total) conversations, not \(conversations)") }
        if server != nil { try await Task.sleep(for: .seconds(11)) }  // past a running server's overlap window
        let (tokenBody, _) = try await http.get("conversations?limit=1")
        guard let token = try WireCoding.makeDecoder().decode(ConversationsResponse.self, from: tokenBody).syncToken else {
            throw fail("the server gave no sync token (not v1.2)")
        }
        let idle = try await http.repeated("conversations?changedSince=\(token)", runs: runs)
        let nothing = try WireCoding.makeDecoder().decode(ConversationChanges.self, from: idle.body)
        guard nothing.conversations.isEmpty, nothing.removedIds.isEmpty else { throw fail("a sync with nothing new carried changes") }
        if let stop { await stop() }

        let all = Percentiles(pageSamples)
        print("parley bench list: a user in \(conversations) conversations, \(runs) runs each, \(server ?? "in-process server, SQLite")")
        print("request                              bytes   p50 ms   p99 ms   p50 / floor")
        func row(_ name: String, _ bytes: Int, _ p: Percentiles) {
            print(name.padding(toLength: 34, withPad: " ", startingAt: 0) + String(format: "%8d %8.2f %8.2f %10.1fx", bytes, p.p50, p.p99, p.p50 / floor.percentiles.p50))
        }
        row("GET /users/me (floor)", floor.body.count, floor.percentiles)
        row("first page (limit 50)", firstPage.body.count, firstPage.percentiles)
        row("every page (limit 200, \(pages) pages)", bytes, all)
        row("sync with nothing new", idle.body.count, idle.percentiles)
        let json: [String: Any] = [
            "scenario": "list", "conversations": conversations,
            "floor_ms": ["p50": floor.percentiles.p50, "p99": floor.percentiles.p99],
            "first_page": ["bytes": firstPage.body.count, "p50_ms": firstPage.percentiles.p50, "p99_ms": firstPage.percentiles.p99],
            "all_pages": ["bytes": bytes, "pages": pages, "p50_ms": all.p50],
            "sync_nothing_new": ["bytes": idle.body.count, "p50_ms": idle.percentiles.p50, "p99_ms": idle.percentiles.p99],
        ]
        print(String(decoding: try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]), as: UTF8.self))
    }
}

/// Authenticated GETs, timed one at a time on one session (kept-alive connection).
private struct TimedGet {
    let base: URL
    let token: String
    let session = URLSession(configuration: .ephemeral)

    func get(_ path: String) async throws -> (Data, Duration) {
        var request = URLRequest(url: URL(string: base.absoluteString + "/" + path)!)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        let clock = ContinuousClock()
        let start = clock.now
        let (body, response) = try await session.data(for: request)
        let elapsed = clock.now - start
        guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw fail("GET \(path) answered \(String(describing: (response as? HTTPURLResponse)?.statusCode))") }
        return (body, elapsed)
    }

    /// The same request `runs` times after two warm-ups: the last body and the percentiles.
    func repeated(_ path: String, runs: Int) async throws -> (body: Data, percentiles: Percentiles) {
        var body = Data()
        for _ in 0..<2 { body = try await get(path).0 }
        var samples: [Duration] = []
        for _ in 0..<runs {
            let (answer, elapsed) = try await get(path)
            body = answer
            samples.append(elapsed)
        }
        return (body, Percentiles(samples))
    }
}
