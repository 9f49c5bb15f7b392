import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Cancelling a request the SDK has in flight, at any moment of its life, ends it and leaves
/// the process responsive. swift-corelibs-foundation's async URLSession calls deadlock when their
/// task is cancelled as the answer arrives (swift-corelibs-foundation#5412); on two cores that
/// stopped every task of the test process (`ChatClient.stop()` cancels what is in flight), and
/// a CI run with it. This test hangs, and the watchdog names it, if that path comes back.
@Suite struct SDKCancellationTests {
    @Test func requestsCancelledAtAnyMomentAllEnd() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let rounds = 300
        var answered = 0, refused = 0
        for round in 0..<rounds {
            let request = Task { try await alice.api.me() }
            // Cancelled at once (before it leaves), or after up to 3 ms: in flight, or as the
            // answer comes back, which is where the deadlock was.
            if round % 3 != 0 { try await Task.sleep(for: .microseconds(round % 60 * 50)) }
            request.cancel()
            switch await request.result {
            case .success(let me):
                #expect(me.id == alice.id)
                answered += 1
            case .failure:
                refused += 1
            }
        }
        #expect(answered + refused == rounds)
        #expect(refused >= rounds / 3, "a request cancelled before it leaves is never answered")
        // And the SDK still works afterwards.
        #expect(try await alice.api.me().id == alice.id)
    }
}
