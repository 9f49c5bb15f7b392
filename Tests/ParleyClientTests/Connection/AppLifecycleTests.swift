import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Synchronization
import Testing

/// What a phone does to a chat app: it sends it to the background and freezes it, brings it
/// back minutes later, and moves it from Wi-Fi to cellular. The rules (pure), then the client
/// against a real server with time that moves only when the test says so.
@Suite struct AppLifecycleTests {
    typealias Machine = AppLifecycleMachine

    // MARK: The rules

    /// Leaving the screen sends the outbox at once and starts the grace period; its end closes
    /// the socket; coming back after that connects again (and the connect catches up).
    @Test func backgroundGraceSuspendAndResume() {
        var machine = Machine(policy: .init(backgroundGrace: .seconds(25), quickReturn: .seconds(5)))
        #expect(machine.phase == .foreground && machine.wantsConnection)
        #expect(machine.handle(.enteredBackground(at: .seconds(100))) == [.flushOutbox, .startGrace(.seconds(25))])
        #expect(machine.phase == .background && machine.wantsConnection, "the grace period keeps the socket")
        #expect(machine.handle(.enteredBackground(at: .seconds(101))) == [], "a second report changes nothing")
        #expect(machine.handle(.graceElapsed) == [.suspend])
        #expect(machine.phase == .suspended && !machine.wantsConnection)
        #expect(machine.handle(.graceElapsed) == [], "a late timer changes nothing")
        #expect(machine.handle(.enteredForeground(at: .seconds(900))) == [.resume])
        #expect(machine.phase == .foreground)
        #expect(machine.handle(.enteredForeground(at: .seconds(901))) == [], "already on screen")
    }

    /// A glance at another app keeps the socket as it is; a longer absence within the grace
    /// period reconnects at once (the app may have been frozen, its socket dead).
    @Test func aQuickReturnKeepsTheSocketALongerOneReconnects() {
        var machine = Machine(policy: .init(backgroundGrace: .seconds(25), quickReturn: .seconds(5)))
        _ = machine.handle(.enteredBackground(at: .seconds(10)))
        #expect(machine.handle(.enteredForeground(at: .seconds(14))) == [.cancelGrace])
        _ = machine.handle(.enteredBackground(at: .seconds(20)))
        #expect(machine.handle(.enteredForeground(at: .seconds(40))) == [.cancelGrace, .reconnectNow])
        #expect(machine.handle(.graceElapsed) == [], "the cancelled timer's late firing does not suspend a foreground app")
        #expect(machine.phase == .foreground)
    }

    /// The network: its return or a new interface reconnects at once, in the foreground and
    /// within the grace period; a suspended app stays closed until it comes back; the same
    /// path reported again does nothing.
    @Test func theNetworkReturningOrChangingReconnectsAtOnce() {
        var machine = Machine()
        #expect(machine.handle(.networkChanged(available: true, interfaceChanged: false)) == [], "nothing changed")
        #expect(machine.handle(.networkChanged(available: false, interfaceChanged: false)) == [])
        #expect(!machine.networkAvailable && !machine.wantsConnection)
        #expect(machine.handle(.networkChanged(available: true, interfaceChanged: false)) == [.reconnectNow])
        #expect(machine.handle(.networkChanged(available: true, interfaceChanged: true)) == [.reconnectNow], "Wi-Fi to cellular")
        _ = machine.handle(.enteredBackground(at: .zero))
        #expect(machine.handle(.networkChanged(available: true, interfaceChanged: true)) == [.reconnectNow], "within the grace period")
        _ = machine.handle(.graceElapsed)
        _ = machine.handle(.networkChanged(available: false, interfaceChanged: false))
        #expect(machine.handle(.networkChanged(available: true, interfaceChanged: false)) == [], "suspended: it connects when it comes back")
        // Back on screen without a network: nothing to do until the network returns.
        _ = machine.handle(.networkChanged(available: false, interfaceChanged: false))
        #expect(machine.handle(.enteredForeground(at: .seconds(600))) == [])
        #expect(machine.handle(.networkChanged(available: true, interfaceChanged: false)) == [.reconnectNow])
        // A long absence without a network does not reconnect into nothing.
        _ = machine.handle(.networkChanged(available: false, interfaceChanged: false))
        _ = machine.handle(.enteredBackground(at: .seconds(700)))
        #expect(machine.handle(.enteredForeground(at: .seconds(720))) == [.cancelGrace])
    }

    /// The connection's side: "reconnect now" drops a live socket and opens at once, and skips
    /// a backoff wait or a given-up state, with the failure count reset.
    @Test func reconnectNowSkipsTheBackoff() {
        var connection = ConnectionStateMachine(policy: .init(maxAttempts: 2), jitter: { 1 })
        #expect(connection.handle(.reconnectNow) == [], "not started: nothing")
        _ = connection.handle(.start)
        #expect(connection.handle(.reconnectNow) == [], "already connecting")
        _ = connection.handle(.opened(at: .zero))
        #expect(connection.handle(.reconnectNow) == [.close, .open])
        #expect(connection.state == .connecting)
        #expect(connection.handle(.openFailed(permanent: false)) == [.wait(.seconds(1))])
        #expect(connection.handle(.reconnectNow) == [.cancelWait, .open])
        _ = connection.handle(.openFailed(permanent: false))
        _ = connection.handle(.backoffElapsed)
        _ = connection.handle(.openFailed(permanent: false))
        _ = connection.handle(.backoffElapsed)
        _ = connection.handle(.openFailed(permanent: false))
        #expect(connection.state == .failed)
        #expect(connection.handle(.reconnectNow) == [.cancelWait, .open])
        #expect(connection.handle(.openFailed(permanent: false)) == [.wait(.seconds(1))], "the count started again")
    }

    /// What a path monitor's reports become: the first one says whether there is a network;
    /// a change of reachability says so; Wi-Fi to cellular (still reachable) is an interface
    /// change; reports that change nothing the SDK acts on (DNS, cost) are dropped.
    @Test func pathReportsBecomeNetworkChanges() {
        let wifi = NetworkPath(isAvailable: true, interfaces: [.wifi])
        let cellular = NetworkPath(isAvailable: true, interfaces: [.cellular])
        let none = NetworkPath(isAvailable: false, interfaces: [])
        #expect(wifi.change(from: nil)! == (true, false))
        #expect(none.change(from: nil)! == (false, false))
        #expect(none.change(from: wifi)! == (false, false))
        #expect(wifi.change(from: none)! == (true, false))
        #expect(cellular.change(from: wifi)! == (true, true))
        #expect(wifi.change(from: wifi) == nil)
        #expect(NetworkPath(isAvailable: false, interfaces: [.wifi]).change(from: none) == nil, "still nothing reachable")
        // Fed into the rules: only the real changes reconnect.
        var machine = Machine()
        var actions: [Machine.Action] = []
        var last: NetworkPath?
        for path in [wifi, wifi, none, none, wifi, cellular, cellular] {
            if let change = path.change(from: last) {
                actions += machine.handle(.networkChanged(available: change.available, interfaceChanged: change.interfaceChanged))
            }
            last = path
        }
        #expect(actions == [.reconnectNow, .reconnectNow])
    }

    // MARK: The client against a server

    /// Time that moves when the test says: both the wall clock and the monotonic one.
    static func environment(_ clock: ManualClock) -> ClientEnvironment {
        var environment = ClientRecoveryTests.manualEnvironment(clock)
        let start = clock.now()
        environment.uptime = { .milliseconds(Int64(clock.now().timeIntervalSince(start) * 1000)) }
        return environment
    }

    static func client(_ user: TestUser, clock: ManualClock) -> ChatClient {
        ChatClient(
            transport: LiveTransport(serverURL: user.server.baseURL, token: user.token), database: try! LocalDatabase.inMemory(),
            userId: user.id, environment: environment(clock), policy: .init(maxAttempts: 1000, heartbeat: .seconds(30)),
            pollInterval: .seconds(3600))
    }

    /// Each connection state the client announced, in order, and how many syncs it announced
    /// as ended (a marker: what it announced before one is in ``all`` by the time it counts).
    final class States: Sendable {
        private let seen = Mutex<[ConnectionState]>([])
        private let ended = Mutex(0)
        private let task = Mutex<Task<Void, Never>?>(nil)

        static func following(_ client: ChatClient) async -> States {
            let states = States()
            let stream = await client.changes()
            states.task.withLock {
                $0 = Task {
                    for await change in stream {
                        if case .connection(let state) = change { states.seen.withLock { $0.append(state) } }
                        if case .syncing(false) = change { states.ended.withLock { $0 += 1 } }
                    }
                }
            }
            return states
        }

        var all: [ConnectionState] { seen.withLock { $0 } }
        var syncsEnded: Int { ended.withLock { $0 } }
        func stop() { task.withLock { $0?.cancel() } }
    }

    /// Background: the queued message goes at once (despite its backoff), the socket closes
    /// after the grace period, a message sent meanwhile does not arrive (nothing is polled);
    /// foreground: connected again and caught up without the clock moving, so no heartbeat
    /// and no backoff step was waited for.
    @Test func backgroundSendsThenClosesAndTheReturnCatchesUpAtOnce() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let clock = ManualClock()
        let client = Self.client(alice, clock: clock)
        _ = try await client.openConversation(direct.id)
        await client.start()
        try await waitFor("connected") { await client.connectionState == .connected }

        // A message waiting out a backoff a minute long.
        let request = SendMessageRequest(clientMessageId: "queued-1", text: "sent on the way out")
        _ = try await client.database.enqueue(request, in: direct.id, senderId: alice.id, now: clock.now(), preparations: [], context: [:])
        try await client.database.outboxAttemptFailed(clientMessageId: "queued-1", retryAt: clock.now().addingTimeInterval(60))

        await client.appEnteredBackground()
        try await waitFor("the queued message at the server, the clock standing still") {
            try await bob.api.messages(direct.id).messages.map(\.text) == ["sent on the way out"]
        }
        #expect(await client.connectionState == .connected, "the grace period keeps the socket")

        clock.advance(by: 25)
        try await waitFor("closed after the grace period") { await client.connectionState == .disconnected }
        _ = try await bob.api.send(.init(clientMessageId: "b-away", text: "while you were away"), to: direct.id)
        clock.advance(by: 600)
        try await Task.sleep(for: .milliseconds(200))
        #expect(await client.connectionState == .disconnected, "a suspended app does not reconnect by itself")
        #expect(try await client.database.messages(in: direct.id, viewer: alice.id).map(\.text) == ["sent on the way out"])

        let states = await States.following(client)
        await client.appEnteredForeground()
        try await waitFor("caught up after coming back") {
            try await client.database.messages(in: direct.id, viewer: alice.id).map(\.text) == ["sent on the way out", "while you were away"]
        }
        #expect(await client.connectionState == .connected)
        #expect(states.all.first == .connecting, "\(states.all)")
        #expect(!states.all.contains { if case .reconnecting = $0 { true } else { false } }, "no backoff step: \(states.all)")
        states.stop()
        await client.stop()
    }

    /// Without a network no attempt is spent, however long the wait; its return connects at
    /// once. The same wait with the network up does spend attempts (the control).
    @Test func noAttemptIsSpentWithoutANetworkAndItsReturnConnectsAtOnce() async throws {
        let outage = try await ClientRecoveryTests.Outage.start()
        let (alice, _, _) = try await outage.server.directPair()
        let clock = ManualClock()
        let client = Self.client(alice, clock: clock)
        await client.start()
        try await waitFor("connected") { await client.connectionState == .connected }
        await outage.server.stop()
        try await waitFor("lost") {
            if case .reconnecting = await client.connectionState { true } else { false }
        }

        @Sendable func attempts() async -> Int {
            if case .reconnecting(let attempt, _) = await client.connectionState { attempt } else { 0 }
        }
        // The control: with a network, the waits end in attempts that fail. (Time moves until
        // it shows: on a loaded machine a move can come before the client's next wait begins.)
        try await waitFor("a second attempt") {
            if await attempts() > 1 { return true }
            clock.advance(by: 40)
            return false
        }
        let spent = await attempts()
        #expect(spent > 1, "with a network the client keeps trying")

        await client.networkChanged(available: false)
        // An attempt already on its way may still fail and count; then nothing moves, however
        // long the clock runs.
        var held = await attempts()
        var steady = 0
        for _ in 0..<200 where steady < 10 {
            clock.advance(by: 40)
            try await Task.sleep(for: .milliseconds(20))
            let now = await attempts()
            steady = now == held ? steady + 1 : 0
            held = now
        }
        #expect(steady == 10 && held <= spent + 1, "no network: the waits end without attempts (\(spent) → \(held))")

        let again = try await outage.restart()
        defer { Task { await again.stop() } }
        await client.networkChanged(available: true)
        try await waitFor("connected as soon as the network returned") { await client.connectionState == .connected }
        await client.stop()
    }

    /// Wi-Fi to cellular while connected: the old socket is dropped and a new one opened at
    /// once; a return within a few seconds keeps the socket.
    @Test func aNewInterfaceReconnectsAQuickReturnDoesNot() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, _, _) = try await server.directPair()
        let clock = ManualClock()
        let client = Self.client(alice, clock: clock)
        await client.start()
        // Connected, and the sync the connect started is over (its announcements made).
        try await waitFor("connected, its sync over") {
            let connected = await client.connectionState == .connected
            let pending = await client.connectSyncsPending
            return connected && pending == 0
        }

        let states = await States.following(client)
        await client.appEnteredBackground()
        clock.advance(by: 3)
        await client.appEnteredForeground()
        // A reconnect on the return would be announced before the end of a sync started after
        // it (one stream, in order).
        await client.synchronize()
        try await waitFor("the sync's end announced") { states.syncsEnded > 0 }
        #expect(!states.all.contains(.connecting), "a glance at another app keeps the socket: \(states.all)")

        await client.networkChanged(available: true, interfaceChanged: true)
        try await waitFor("reconnected") {
            let seen = states.all
            guard let dropped = seen.firstIndex(of: .connecting) else { return false }
            return seen[dropped...].contains(.connected)
        }
        states.stop()
        await client.stop()
    }
}
