import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Synchronization
import Testing

/// A new device's first screen: the list model's `start()` returns with the server's
/// conversations, whatever the connection does meanwhile.
@Suite struct FirstSyncTests {
    /// The WebSocket opens (so a sync starts) and drops before that sync has come back, as a
    /// heartbeat or a flaky network does on a loaded phone. The connection is then
    /// "reconnecting", not "trying to connect", but the sync is still on its way over HTTP:
    /// the first screen waits for it instead of showing an empty list with loading over.
    /// (Seen in CI: the list was empty when `start()` returned.)
    @MainActor @Test func aConnectionThatDropsDuringTheFirstSyncStillLetsItFillTheList() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, _, direct) = try await server.directPair()
        _ = try await alice.api.send(.init(clientMessageId: "x1", text: "first"), to: direct.id)

        var odds = FaultPlan.Odds.none
        odds.cutAtOpen = 1
        let box = Mutex<ChatClient?>(nil)
        let listRequests = Atomic<Int>(0)
        // Every list request waits until the connection has opened and dropped.
        let transport = FaultyTransport(
            serverURL: server.baseURL, token: alice.token, plan: FaultPlan(seed: 7, odds: odds),
            beforeList: {
                listRequests.add(1, ordering: .relaxed)
                try? await waitFor("the connection opened and dropped", timeout: .seconds(60)) {
                    if let client = box.withLock({ $0 }), case .reconnecting = await client.connectionState { true } else { false }
                }
            })
        let client = try ChatClientTests.client(alice, transport: transport, clock: ManualClock())
        box.withLock { $0 = client }
        await client.start()
        let list = ConversationListModel(client: client)
        await list.start()
        #expect(listRequests.load(ordering: .relaxed) >= 1)
        #expect(list.rows.map(\.id) == [direct.id])
        #expect(list.isLoading == false)
        #expect(await client.hasSynchronizedList())
        await list.stop()
        await client.stop()
    }
}
