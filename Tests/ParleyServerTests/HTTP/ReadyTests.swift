import Foundation
@testable import ParleyServer
import ParleyTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `/ready` tells a load balancer in time that a node cannot write, even when the store does
/// not answer at all (a database behind a silent partition): no health check waits on it.
@Suite struct ReadyTests {
    static func status(_ server: TestServer) async throws -> Int {
        var request = URLRequest(url: server.baseURL.appendingPathComponent("ready"))
        request.timeoutInterval = 30
        let (_, response) = try await URLSession.shared.data(for: request)
        return (response as? HTTPURLResponse)?.statusCode ?? 0
    }

    /// A healthy node is ready on every store, and its answer is its probe's.
    @Test(arguments: StoreKind.available)
    func aHealthyNodeIsReady(kind: StoreKind) async throws {
        let server = try await TestServer.start(store: kind)
        defer { Task { await server.stop() } }
        try await waitFor("/ready to answer 200", timeout: .seconds(60)) { try await Self.status(server) == 200 }
        #expect(server.app.health.probesStarted >= 1)
        #expect(!server.app.health.isTroubled)
    }

    @Test func aStoreThatAnswersNothingIsNotReadyWithinTheProbesTime() async throws {
        // SQLite waits for the lock for as long as the test holds it, so the probe hangs.
        let server = try await TestServer.start { $0.sqliteBusyTimeout = .seconds(300) }
        defer { Task { await server.stop() } }
        #expect(try await Self.status(server) == 200)
        let lock = try await HeldWriteLock.take(server.dataDirectory + "/parley.sqlite")
        // The good answer is reused for a second; then the probe waits on the lock, and /ready
        // says no when the probe's time (2 s) is up, not when the store gives up.
        try await waitFor("/ready to answer 503", timeout: .seconds(60)) { try await Self.status(server) == 503 }
        // Asked again while that probe still waits: no, from what is known, without a second
        // probe piling up behind the first.
        let probes = server.app.health.probesStarted
        #expect(try await Self.status(server) == 503)
        #expect(try await Self.status(server) == 503)
        #expect(server.app.health.probesStarted == probes)
        await lock.letGo()
        try await waitFor("/ready to answer 200 again", timeout: .seconds(60)) { try await Self.status(server) == 200 }
    }
}
