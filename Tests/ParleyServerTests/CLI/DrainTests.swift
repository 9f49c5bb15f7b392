import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `parley serve` as an operator runs it behind a load balancer: after SIGTERM, `/ready`
/// answers 503 for the drain delay while `/health` and open connections keep working, then the
/// process closes its sockets and exits 0.
@Suite struct DrainTests {
    static func status(_ url: URL) async -> Int? {
        var request = URLRequest(url: url)
        request.timeoutInterval = 5
        return (try? await URLSession.shared.data(for: request)).flatMap { ($0.1 as? HTTPURLResponse)?.statusCode }
    }

    @Test(.heavy) func sigtermDrainsReadyThenClosesAndExitsCleanly() async throws {
        // A drain long enough to be seen on a loaded machine.
        let server = try ServeProcess(name: "drain", drainSeconds: 8)
        defer { server.stop() }
        try await server.waitUntilReady()
        try await waitFor("/ready to answer 200", timeout: .seconds(60)) {
            await Self.status(server.url.appendingPathComponent("ready")) == 200
        }
        let api = ParleyAPI(baseURL: server.url)
        let alice = try await api.register(.init(organization: "drain", email: "alice@x.io", password: "alice-secret", displayName: "Alice"))
        let direct = try await ParleyAPI(baseURL: server.url, token: alice.token)
            .createConversation(.init(type: .group, participantIds: [], name: "notes"))
        let socket = RealtimeConnection(serverURL: server.url, token: alice.token)
        _ = try await socket.connect()

        let started = ContinuousClock.now
        server.process.signal(SIGTERM)
        try await waitFor("/ready to answer 503", timeout: .seconds(6)) {
            await Self.status(server.url.appendingPathComponent("ready")) == 503
        }
        #expect(await Self.status(server.url.appendingPathComponent("health")) == 200, "alive while draining")
        let during = try await socket.sendMessage(.init(conversationId: direct.id, clientMessageId: "d1", text: "during the drain"))
        #expect(during.seq >= 1, "open connections keep working while draining")

        let exit: Int32 = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                server.process.waitUntilExit()
                continuation.resume(returning: server.process.terminationStatus)
            }
        }
        #expect(exit == 0)
        #expect(ContinuousClock.now - started >= .milliseconds(7500), "it drained before closing")
        await socket.close()
    }
}
