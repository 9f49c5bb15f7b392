import Foundation
import NIOCore
import NIOPosix
@testable import ParleyBench
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How one storm client judges live `message.created` seqs against what it has applied: the
/// bench's "redelivered", "gaps", catch-ups and "back" figures. A client is driven on its own
/// loop (no WebSocket: its frames are handed to it as the socket handler would), and its
/// catch-ups read a real in-process server's `/changes`.
@Suite struct StormClientAccountingTests {
    /// A running server with one group of two, `messages` sent into it, and a client of its
    /// second member on a one-thread loop group (nothing dialed).
    final class Rig: Sendable {
        let stop: @Sendable () async -> Void
        let api: ParleyAPI
        let conversation: EntityID
        let loops: MultiThreadedEventLoopGroup
        let client: StormClient

        init(messages: Int) async throws {
            let server = try await ParleySetup.startServer()
            stop = server.stop
            let members = try await ParleySetup.groups(baseURL: server.url, groups: 1, size: 2)
            api = ParleyAPI(baseURL: server.url, token: members[0].token)
            conversation = members[0].conversationId
            loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            let socket = SocketSpec(
                index: 1, group: 0, host: "127.0.0.1", port: server.url.port ?? 0, path: "/api/v1/ws", token: members[1].token,
                conversationId: conversation.description, isSender: false)
            client = StormClient(
                spec: StormSpec(socket: socket, baseURL: server.url), loop: loops.next(), backoff: ConnectionStateMachine(),
                session: URLSession(configuration: .ephemeral))
            try await send(messages)
        }

        /// Sends `count` messages as the first member.
        func send(_ count: Int) async throws {
            for _ in 0..<count {
                _ = try await api.send(.init(clientMessageId: "storm-\(UUID())", text: "storm"), to: conversation)
            }
        }

        /// The conversation's counter as the store has it.
        func storedSeq() async throws -> Int64 { try await api.changes(conversation, since: 0).lastSeq }

        /// Runs `body` on the client's loop, as its socket handler would.
        func onLoop<T: Sendable>(_ body: @escaping @Sendable (StormClient) -> T) async throws -> T {
            let client = self.client
            return try await client.loop.submit { body(client) }.get()
        }

        func snapshot() async throws -> StormClient.Snapshot { try await onLoop { $0.snapshot() } }

        /// Waits until the client counts as back at `target` (its seq reached it while connected).
        func waitUntilBack() async throws {
            try await waitFor("the storm client to be back", timeout: .seconds(10)) { try await self.snapshot().backAt != nil }
        }

        func close() async {
            try? await loops.shutdownGracefully()
            await stop()
        }
    }

    /// Runs `body` with a rig of `messages` sent and the stored seq (the target), then stops
    /// the server; with `caughtUp`, the client has had its hello and caught up to the target.
    static func withRig(messages: Int, caughtUp: Bool = true, _ body: (Rig, Int64) async throws -> Void) async throws {
        let rig = try await Rig(messages: messages)
        do {
            let target = try await rig.storedSeq()
            if caughtUp {
                try await rig.onLoop { client in
                    client.expect(target, origin: monotonicNanos())
                    client.connected(0)
                }
                try await rig.waitUntilBack()
            }
            try await body(rig, target)
        } catch {
            await rig.close()
            throw error
        }
        await rig.close()
    }

    @Test func aHelloCatchesUpFromTheStoreAndMakesTheClientBackAtTheStoredSeq() async throws {
        try await Self.withRig(messages: 3) { rig, target in
            #expect(target >= 3)
            let stats = try await rig.snapshot()
            #expect(stats.catchUps == 1)
            #expect(stats.failedCatchUps == 0 && stats.gaps == 0 && stats.redelivered == 0)
            #expect(stats.dials == 0 && stats.refusedDials == 0)
            #expect((stats.backAt ?? -1) >= 0)
            #expect(stats.helloAt != nil)
        }
    }

    @Test func aLiveFrameTheCatchUpAlreadyAppliedIsRedeliveredNotAGap() async throws {
        try await Self.withRig(messages: 3) { rig, target in
            try await rig.onLoop { client in
                client.received(seq: target)
                client.received(seq: target - 1)
                client.received(seq: 1)
            }
            let stats = try await rig.snapshot()
            #expect(stats.redelivered == 3)
            #expect(stats.gaps == 0)
            #expect(stats.catchUps == 1, "a frame already applied must not start another catch-up")
        }
    }

    @Test func theNextSeqMovesTheClientOnWithoutACatchUp() async throws {
        try await Self.withRig(messages: 2) { rig, target in
            try await rig.send(2)
            try await rig.onLoop { client in
                client.resetStats()
                client.received(seq: target + 1)
                client.received(seq: target + 2)
                client.expect(target + 2, origin: monotonicNanos())
            }
            let stats = try await rig.snapshot()
            #expect(stats.backAt != nil, "two frames in order bring the client to the new seq")
            #expect(stats.catchUps == 0 && stats.gaps == 0 && stats.redelivered == 0)
            // The same two again are duplicates, not progress.
            try await rig.onLoop { client in
                client.received(seq: target + 1)
                client.received(seq: target + 2)
            }
            #expect(try await rig.snapshot().redelivered == 2)
        }
    }

    @Test func aFramePastAGapIsCountedAndItsCatchUpFetchesWhatWasSkipped() async throws {
        try await Self.withRig(messages: 1) { rig, target in
            try await rig.send(3)
            let newest = try await rig.storedSeq()
            #expect(newest >= target + 3)
            try await rig.onLoop { client in
                client.resetStats()
                client.expect(newest, origin: monotonicNanos())
                // target + 1 and target + 2 never arrived live.
                client.received(seq: newest)
            }
            let during = try await rig.snapshot()
            #expect(during.gaps == 1)
            #expect(during.catchUps == 1)
            try await rig.waitUntilBack()
            let after = try await rig.snapshot()
            #expect(after.gaps == 1 && after.redelivered == 0 && after.failedCatchUps == 0)
            // Everything up to `newest` is applied now: each of those frames is a redelivery.
            try await rig.onLoop { client in
                for seq in (target + 1)...newest { client.received(seq: seq) }
            }
            #expect(try await rig.snapshot().redelivered == Int(newest - target))
        }
    }

    @Test func framesDuringACatchUpAreHeldNotCountedAsGapsOrRedeliveries() async throws {
        try await Self.withRig(messages: 4, caughtUp: false) { rig, target in
            try await rig.onLoop { client in
                client.expect(target, origin: monotonicNanos())
                client.connected(0)
                // While the catch-up's request is out: frames it will also return.
                client.received(seq: target)
                client.received(seq: 1)
                client.received(seq: target)
            }
            try await rig.waitUntilBack()
            let stats = try await rig.snapshot()
            #expect(stats.catchUps == 1)
            #expect(stats.gaps == 0)
            #expect(stats.redelivered == 0)
        }
    }

    @Test func aFrameBeyondWhatTheCatchUpReturnedIsAGapAndStartsAnother() async throws {
        try await Self.withRig(messages: 2, caughtUp: false) { rig, target in
            try await rig.onLoop { client in
                client.expect(target, origin: monotonicNanos())
                client.connected(0)
                // Seen live while catching up, but two past what the store will answer.
                client.received(seq: target + 2)
            }
            try await rig.waitUntilBack()
            let stats = try await rig.snapshot()
            #expect(stats.gaps == 1)
            #expect(stats.catchUps == 2)
            #expect(stats.redelivered == 0)
        }
    }

    @Test func theNextFrameAfterTheStoresSeqIsAppliedAtOnceEvenIfSeenDuringTheCatchUp() async throws {
        try await Self.withRig(messages: 2, caughtUp: false) { rig, target in
            try await rig.onLoop { client in
                client.expect(target + 1, origin: monotonicNanos())
                client.connected(0)
                client.received(seq: target + 1)
            }
            try await rig.waitUntilBack()
            let stats = try await rig.snapshot()
            #expect(stats.catchUps == 1, "one past the store's seq is the next one, not a gap")
            #expect(stats.gaps == 0)
        }
    }

    @Test func aClientNeverCountsAsBackBeforeItReachesTheTarget() async throws {
        try await Self.withRig(messages: 1) { rig, target in
            try await rig.onLoop { client in
                client.resetStats()
                client.expect(target + 3, origin: monotonicNanos())
                client.received(seq: target + 1)
                client.received(seq: target + 2)
            }
            #expect(try await rig.snapshot().backAt == nil)
            try await rig.onLoop { $0.received(seq: target + 3) }
            let stats = try await rig.snapshot()
            #expect(stats.backAt != nil)
            #expect(stats.gaps == 0 && stats.catchUps == 0)
        }
    }

    @Test func aFailedCatchUpIsCountedAndLeavesTheAppliedSeqWhereItWas() async throws {
        // A server that is not there: every catch-up fails.
        let port = try freeLoopbackPort()
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            let socket = SocketSpec(
                index: 0, group: 0, host: "127.0.0.1", port: port, path: "/api/v1/ws", token: "t",
                conversationId: EntityID().description, isSender: false)
            let client = StormClient(
                spec: StormSpec(socket: socket, baseURL: URL(string: "http://127.0.0.1:\(port)")!), loop: loops.next(),
                backoff: ConnectionStateMachine(), session: URLSession(configuration: .ephemeral))
            @Sendable func snapshot() async throws -> StormClient.Snapshot { try await client.loop.submit { client.snapshot() }.get() }
            // Not connected: the catch-up a gap starts fails, and is counted as failed.
            try await client.loop.submit { client.received(seq: 5) }.get()
            try await waitFor("the catch-up to fail", timeout: .seconds(10)) { try await snapshot().failedCatchUps == 1 }
            var stats = try await snapshot()
            #expect(stats.gaps == 1 && stats.catchUps == 1)
            // Nothing was applied: seq 1 is still the next one, and seq 1 again is a redelivery.
            try await client.loop.submit {
                client.received(seq: 1)
                client.received(seq: 1)
            }.get()
            stats = try await snapshot()
            #expect(stats.redelivered == 1)
            #expect(stats.gaps == 1 && stats.catchUps == 1)
        } catch {
            try? await loops.shutdownGracefully()
            throw error
        }
        try? await loops.shutdownGracefully()
    }
}
