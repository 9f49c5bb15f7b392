import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Synchronization
import Testing

/// A closed WebSocket gives its memory back. HummingbirdWebSocket keeps an upgraded request's
/// context in a box the context itself holds, a cycle never broken; while Parley's context
/// held its channel strongly, every WebSocket's channel and buffers outlived it: 4.5 KB of
/// heap a connection (500 opened and closed: +2.25 MB), so a day of reconnecting phones grew
/// the server for good. The channel is held weakly now; Hummingbird's own cycle keeps about
/// 1 KB. Read from glibc's heap gauge of a `parley serve` of its own (Linux).
@Suite struct WebSocketMemoryTests {
    #if os(Linux)
    @Test(.heavy) func closedWebSocketsLeaveNoChannelsBehind() async throws {
        let server = try ServeProcess(name: "ws-memory", arguments: ["--rate-limits", "off"])
        defer { server.stop() }
        try await server.waitUntilReady()
        let auth = try await ParleyAPI(baseURL: server.url).register(
            .init(organization: "Acme", email: "ada@acme.io", password: "correct horse", displayName: "Ada"))
        let port = try #require(server.url.port), token = auth.token
        @Sendable func openAndClose(_ count: Int) async throws {
            try await offPool {
                for _ in 0..<count {
                    let socket = try RawWebSocket(port: port, path: "/api/v1/ws?token=\(token)")
                    _ = try socket.next(until: Date().addingTimeInterval(10))  // hello: the gateway served it
                }  // each closed by dropping its socket
            }
        }
        @Sendable func gauge(_ name: String) async throws -> Double {
            let (data, _) = try await URLSession.shared.data(from: server.url.appendingPathComponent("metrics"))
            let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix(name + " ") }
            return try #require(line.flatMap { Double($0.split(separator: " ")[1]) }, "\(name) in /metrics")
        }
        // Warm-up: pools, caches and the allocator's arenas settle.
        try await openAndClose(200)
        try await waitFor("the warm-up's sockets closed") { try await gauge("parley_websocket_connections") == 0 }
        let before = try await gauge("parley_malloc_in_use_bytes")
        let count = 400.0
        try await openAndClose(Int(count))
        try await waitFor("the sockets closed") { try await gauge("parley_websocket_connections") == 0 }
        // Closing lets go of a channel up to 3 s later (the close grace): wait for the heap to
        // come back, and fail only if it never does.
        let last = Mutex(0.0)
        do {
            try await waitFor("the heap given back", timeout: .seconds(20)) {
                let kept = (try await gauge("parley_malloc_in_use_bytes") - before) / count
                last.withLock { $0 = kept }
                return kept < 2_500
            }
        } catch {
            Issue.record("each closed WebSocket kept \(Int(last.withLock { $0 })) bytes of heap (a strong channel kept 4,500)")
        }
    }
    #endif
}
