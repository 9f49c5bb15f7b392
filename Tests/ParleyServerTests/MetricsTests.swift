import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `GET /metrics` as Prometheus scrapes it, after real traffic: HTTP requests by route pattern
/// and status with duration histograms, send commit and batch histograms, fan-out lag, live
/// connections and queue depth gauges, rate-limit refusals.
@Suite struct MetricsTests {
    static func scrape(_ server: TestServer) async throws -> String {
        let (data, response) = try await URLSession.shared.data(from: server.baseURL.appendingPathComponent("metrics"))
        #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("text/plain") == true)
        return String(decoding: data, as: UTF8.self)
    }

    @Test func theFamiliesAnOperatorNeedsAreThereWithHistogramsAndGauges() async throws {
        let clock = ManualClock()
        let server = try await TestServer.start {
            $0.clock = clock.serverClock
            $0.rateLimits = RateLimitSettings()
            $0.rateLimits.sendsPerUser = RateLimit(burst: 3, perSecond: 1)
        }
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let socket = try await alice.connect()
        let bobSocket = try await bob.connect()
        for n in 0..<5 {
            _ = try? await socket.sendMessage(.init(conversationId: direct.id, clientMessageId: "m\(n)", text: "\(n)"))
        }
        _ = try await bob.api.messages(direct.id)
        _ = try? await server.raw("GET", "conversations/\(EntityID())", token: bob.token)

        let text = try await Self.scrape(server)
        for family in [
            "# TYPE parley_http_requests_total counter", "# TYPE parley_http_request_duration_seconds histogram",
            "# TYPE parley_send_commit_seconds histogram", "# TYPE parley_send_transaction_seconds histogram",
            "# TYPE parley_send_batch_size histogram", "# TYPE parley_send_fanout_seconds histogram",
            "# TYPE parley_websocket_connections gauge", "# TYPE parley_websocket_queue_depth_max gauge",
            "# TYPE parley_rate_limited_total counter",
        ] {
            #expect(text.contains(family), "missing \(family)")
        }
        // Route patterns, not ids; statuses as they were answered.
        #expect(text.contains(#"parley_http_requests_total{method="GET",route="/api/v1/conversations/{id}/messages",status="200"} 1"#), "\(text.split(separator: "\n").filter { $0.contains("http_requests") })")
        #expect(text.contains(#"route="/api/v1/conversations/{id}",status="404"} 1"#))
        #expect(!text.contains(direct.id.description), "no ids in label values")
        #expect(text.contains("parley_websocket_connections 2"))
        #expect(text.contains(#"parley_rate_limited_total{kind="send"} 2"#))
        #expect(text.contains("parley_send_commit_seconds_count 3"))
        #expect(text.contains(#"parley_http_request_duration_seconds_bucket{method="GET",route="/api/v1/conversations/{id}/messages",le="+Inf"} 1"#))
        await socket.close()
        await bobSocket.close()
    }

    /// Where the memory is: SQLite's allocations and glibc's heap, as gauges beside the rest.
    @Test func memoryGaugesSaySQLitesShareAndTheHeaps() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, _, direct) = try await server.directPair()
        _ = try await alice.api.send(SendMessageRequest(clientMessageId: "m", text: "hello"), to: direct.id)
        let text = try await Self.scrape(server)
        func gauge(_ name: String) -> Double? {
            text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
        }
        // An open SQLite store has pages and statements cached.
        #expect((gauge("parley_sqlite_memory_bytes") ?? 0) > 0, "\(text)")
        #if os(Linux)
        let inUse = try #require(gauge("parley_malloc_in_use_bytes"))
        #expect(inUse >= (gauge("parley_sqlite_memory_bytes") ?? 0), "SQLite's allocations are part of the heap")
        #expect(gauge("parley_malloc_free_kept_bytes") != nil)
        #endif
    }
}
