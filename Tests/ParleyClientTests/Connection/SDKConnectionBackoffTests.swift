import ParleyClient
import ParleyTestSupport
import Synchronization
import Testing

/// The reconnect rules users feel as "it never comes back", "it hammers the server" or "it took
/// ages after the Wi-Fi returned": backoff bounds and jitter, when the count resets, how many
/// attempts are made, the heartbeat, and late events. Pure: events in, actions out.
@Suite struct SDKConnectionBackoffTests {
    /// A jitter source that replays seeded values (each call takes the next one).
    final class Jitter: Sendable {
        private let state: Mutex<SeededGenerator>
        private let lastValue = Mutex(0.0)
        init(seed: UInt64) { state = Mutex(SeededGenerator(seed: seed)) }
        func next() -> Double {
            let value = state.withLock { Double.random(in: 0...1, using: &$0) }
            lastValue.withLock { $0 = value }
            return value
        }
        var last: Double { lastValue.withLock { $0 } }
    }

    static func machine(
        jitter: Double = 1, maxAttempts: Int = 8, maxDelay: Duration = .seconds(30), heartbeat: Duration = .seconds(30)
    ) -> ConnectionStateMachine {
        ConnectionStateMachine(policy: .init(maxAttempts: maxAttempts, maxDelay: maxDelay, heartbeat: heartbeat), jitter: { jitter })
    }

    /// A machine that has connected at `at` and is live.
    static func connected(_ machine: inout ConnectionStateMachine, at: Duration = .zero) {
        #expect(machine.handle(.start) == [.open])
        #expect(machine.handle(.opened(at: at)) == [.synchronize])
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// Backoff that grew without bound (or dropped below half its step) would hammer the server
    /// or leave users waiting minutes: every wait, for any attempt and jitter, lies in
    /// [full/2, full] with full = min(2^n, maxDelay).
    @Test(arguments: [UInt64(1), 2, 3, 42, 2026])
    func everyBackoffLiesWithinItsJitterBounds(seed: UInt64) {
        let jitter = Jitter(seed: seed)
        for maxDelay in [1, 5, 30, 120] {
            let machine = ConnectionStateMachine(policy: .init(maxDelay: .seconds(maxDelay)), jitter: { jitter.next() })
            for n in 0..<80 {
                let wait = Self.seconds(machine.backoff(n))
                let full = min(Double(1 << min(n, 20)), Double(maxDelay))
                #expect(wait >= full / 2 - 1e-9 && wait <= full + 1e-9, "attempt \(n), maxDelay \(maxDelay): \(wait) s not in [\(full / 2), \(full)]")
                #expect(abs(wait - full * (0.5 + 0.5 * jitter.last)) < 1e-6, "equal jitter: half fixed, half random")
            }
        }
    }

    /// Jitter values outside 0...1 (a bad injected source) are clamped, never a negative or
    /// doubled wait.
    @Test(arguments: [(-5.0, 4.0), (-0.01, 4.0), (0.0, 4.0), (0.5, 6.0), (1.0, 8.0), (1.5, 8.0), (1e9, 8.0)])
    func jitterIsClampedToItsRange(jitter: Double, expectedSeconds: Double) {
        #expect(Self.seconds(Self.machine(jitter: jitter).backoff(3)) == expectedSeconds)
    }

    /// A huge attempt number (an app left failing for days with a large maxAttempts) must not
    /// overflow the shift: it stays at the cap.
    @Test func hugeAttemptNumbersStayAtTheCap() {
        let machine = Self.machine(jitter: 1, maxDelay: .seconds(30))
        for n in [20, 21, 63, 64, 1000, Int.max / 2] {
            #expect(machine.backoff(n) == .seconds(30), "attempt \(n)")
        }
        let uncapped = Self.machine(jitter: 1, maxDelay: .seconds(10_000_000))
        #expect(uncapped.backoff(200) == .seconds(1 << 20), "the exponent stops at 2^20 s")
    }

    /// A smaller cap than the default is honoured from the step that reaches it.
    @Test func aCustomCapStopsTheDoubling() {
        let machine = Self.machine(jitter: 1, maxDelay: .seconds(5))
        #expect((0..<6).map(machine.backoff) == [1, 2, 4, 5, 5, 5].map { Duration.seconds($0) })
        let subSecond = Self.machine(jitter: 0, maxDelay: .milliseconds(500))
        #expect(subSecond.backoff(0) == .milliseconds(250))
        #expect(subSecond.backoff(9) == .milliseconds(250))
    }

    /// The waits the machine actually schedules follow attempts 1...maxAttempts exactly, each
    /// reported in the banner state, and the machine gives up after exactly maxAttempts retries.
    @Test(arguments: [0, 1, 2, 5, 8])
    func attemptsAreCountedExactlyThenItGivesUp(maxAttempts: Int) {
        var machine = Self.machine(jitter: 1, maxAttempts: maxAttempts, maxDelay: .seconds(30))
        Self.connected(&machine)
        var opens = 0
        var waits: [Duration] = []
        var actions = machine.handle(.closed)
        while case .wait(let delay) = actions.first {
            waits.append(delay)
            #expect(machine.state == .reconnecting(attempt: waits.count, retryIn: delay))
            #expect(machine.handle(.backoffElapsed) == [.open])
            opens += 1
            actions = machine.handle(.openFailed(permanent: false))
        }
        #expect(actions == [])
        #expect(machine.state == .failed)
        #expect(opens == maxAttempts)
        let expected = (0..<maxAttempts).map { min(Duration.seconds(1 << $0), .seconds(30)) }
        #expect(waits == expected)
        // Failed is terminal until the user or the network says otherwise.
        #expect(machine.handle(.backoffElapsed) == [])
        #expect(machine.handle(.closed) == [])
        #expect(machine.handle(.tick(at: .seconds(1000))) == [])
        #expect(machine.state == .failed)
    }

    /// After giving up, each way back (start, retry, network) begins a fresh count: the next
    /// failure waits 1 s, not the 30 s of the last attempt.
    @Test(arguments: [ConnectionStateMachine.Event.start, .retry, .networkAvailable])
    func everyWayOutOfFailedResetsTheCount(way: ConnectionStateMachine.Event) {
        var machine = Self.machine(jitter: 1, maxAttempts: 3)
        _ = machine.handle(.start)
        for _ in 0..<3 {
            _ = machine.handle(.openFailed(permanent: false))
            _ = machine.handle(.backoffElapsed)
        }
        #expect(machine.handle(.openFailed(permanent: false)) == [])
        #expect(machine.state == .failed)
        let actions = machine.handle(way)
        #expect(actions.last == .open)
        #expect(machine.state == .connecting)
        #expect(machine.handle(.openFailed(permanent: false)) == [.wait(.seconds(1))])
        #expect(machine.state == .reconnecting(attempt: 1, retryIn: .seconds(1)))
    }

    /// The network coming back mid-backoff skips the wait and restarts the count; a later failure
    /// starts from 1 s again.
    @Test func networkBackMidBackoffRestartsTheCount() {
        var machine = Self.machine(jitter: 1)
        _ = machine.handle(.start)
        for expected in [1, 2, 4, 8] {
            #expect(machine.handle(.openFailed(permanent: false)) == [.wait(.seconds(expected))])
            if expected < 8 { _ = machine.handle(.backoffElapsed) }
        }
        #expect(machine.handle(.networkAvailable) == [.cancelWait, .open])
        #expect(machine.handle(.openFailed(permanent: false)) == [.wait(.seconds(1))])
    }

    /// A connection that opens then drops over and over (flaky proxy) is not treated as one long
    /// failure: each successful open resets the backoff, so the wait stays at the first step and
    /// the client never gives up.
    @Test func flappingConnectionsNeverEscalateOrGiveUp() {
        var machine = Self.machine(jitter: 1, maxAttempts: 2)
        Self.connected(&machine)
        for round in 0..<10 {
            #expect(machine.handle(.closed) == [.wait(.seconds(1))], "round \(round)")
            #expect(machine.handle(.backoffElapsed) == [.open])
            #expect(machine.handle(.opened(at: .seconds(Int64(round)))) == [.synchronize])
        }
        #expect(machine.state == .connected)
    }

    /// A refused token mid-reconnect gives up at once: retrying a refused token only spams the
    /// server, and the banner must say so now, not after 8 attempts.
    @Test func aRefusedTokenDuringReconnectFailsAtOnce() {
        var machine = Self.machine()
        Self.connected(&machine)
        _ = machine.handle(.closed)
        _ = machine.handle(.backoffElapsed)
        #expect(machine.handle(.openFailed(permanent: true)) == [])
        #expect(machine.state == .failed)
    }

    /// Events that arrive in the wrong state (a late close, a stale backoff timer, a second
    /// start) must change nothing: each would otherwise open a second socket or reset a live
    /// connection.
    @Test func lateAndIrrelevantEventsAreIgnored() {
        var connecting = Self.machine()
        _ = connecting.handle(.start)
        for event: ConnectionStateMachine.Event in [.start, .backoffElapsed, .retry, .networkAvailable, .frameReceived(at: .seconds(1)), .tick(at: .seconds(500))] {
            #expect(connecting.handle(event) == [], "\(event) while connecting")
            #expect(connecting.state == .connecting)
        }

        var live = Self.machine()
        Self.connected(&live, at: .seconds(10))
        for event: ConnectionStateMachine.Event in [.start, .backoffElapsed, .retry, .networkAvailable, .opened(at: .seconds(11)), .openFailed(permanent: false)] {
            #expect(live.handle(event) == [], "\(event) while connected")
            #expect(live.state == .connected)
        }

        var waiting = Self.machine(jitter: 1)
        Self.connected(&waiting)
        _ = waiting.handle(.closed)
        for event: ConnectionStateMachine.Event in [.start, .closed, .opened(at: .seconds(2)), .openFailed(permanent: true), .tick(at: .seconds(90)), .frameReceived(at: .seconds(3))] {
            #expect(waiting.handle(event) == [], "\(event) while reconnecting")
            #expect(waiting.state == .reconnecting(attempt: 1, retryIn: .seconds(1)))
        }

        var idle = Self.machine()
        for event: ConnectionStateMachine.Event in [.closed, .backoffElapsed, .retry, .networkAvailable, .opened(at: .zero), .tick(at: .seconds(100)), .stop] {
            #expect(idle.handle(event) == [], "\(event) while disconnected")
            #expect(idle.state == .disconnected)
        }
    }

    /// Stopping and starting again begins with a clean count (a user who signs out and back in
    /// must not inherit a 30 s backoff).
    @Test func stopThenStartBeginsAfresh() {
        var machine = Self.machine(jitter: 1)
        _ = machine.handle(.start)
        for _ in 0..<5 {
            _ = machine.handle(.openFailed(permanent: false))
            _ = machine.handle(.backoffElapsed)
        }
        #expect(machine.handle(.stop) == [.cancelWait, .close])
        #expect(machine.handle(.start) == [.open])
        #expect(machine.handle(.openFailed(permanent: false)) == [.wait(.seconds(1))])
        // Stop while connected also closes the socket, once.
        var live = Self.machine()
        Self.connected(&live)
        #expect(live.handle(.stop) == [.cancelWait, .close])
        #expect(live.handle(.stop) == [])
    }

    /// A frame timestamp older than one already seen (frames handled out of order) must not
    /// move the liveness clock back and kill a healthy connection.
    @Test func anOlderFrameTimeDoesNotMakeALiveConnectionLookDead() {
        var machine = Self.machine(heartbeat: .seconds(30))
        Self.connected(&machine, at: .seconds(0))
        _ = machine.handle(.frameReceived(at: .seconds(50)))
        _ = machine.handle(.frameReceived(at: .seconds(5)))
        #expect(machine.handle(.tick(at: .seconds(79))) == [], "29 s since the newest frame")
        #expect(machine.handle(.tick(at: .seconds(80))) == [.ping])
        #expect(machine.handle(.tick(at: .seconds(109))) == [.ping])
        #expect(machine.state == .connected)
        #expect(machine.handle(.tick(at: .seconds(110))) == [.close, .wait(.seconds(1))])
    }

    /// Exactly at the boundaries: one heartbeat of silence pings, two declare the connection
    /// dead; a frame at the last moment saves it. Checked for several heartbeat lengths.
    @Test(arguments: [1, 10, 30, 45])
    func heartbeatBoundariesAreExact(heartbeatSeconds: Int64) {
        let beat = Duration.seconds(heartbeatSeconds)
        var machine = Self.machine(jitter: 0, heartbeat: beat)
        Self.connected(&machine, at: .seconds(1000))
        let start = Duration.seconds(1000)
        #expect(machine.handle(.tick(at: start + beat - .milliseconds(1))) == [])
        #expect(machine.handle(.tick(at: start + beat)) == [.ping])
        #expect(machine.handle(.tick(at: start + beat * 2 - .milliseconds(1))) == [.ping])
        _ = machine.handle(.frameReceived(at: start + beat * 2 - .milliseconds(1)))
        #expect(machine.handle(.tick(at: start + beat * 2)) == [])
        #expect(machine.state == .connected)
        let last = start + beat * 2 - .milliseconds(1)
        #expect(machine.handle(.tick(at: last + beat * 2)) == [.close, .wait(.milliseconds(500))])
        #expect(machine.state == .reconnecting(attempt: 1, retryIn: .milliseconds(500)))
    }

    /// A connection declared dead by the heartbeat counts as a failure like a close: if the
    /// reopen also fails, the wait grows to the second step.
    @Test func aDeadConnectionThenAFailedReopenGrowsTheWait() {
        var machine = Self.machine(jitter: 1, heartbeat: .seconds(10))
        Self.connected(&machine, at: .zero)
        #expect(machine.handle(.tick(at: .seconds(20))) == [.close, .wait(.seconds(1))])
        #expect(machine.handle(.backoffElapsed) == [.open])
        #expect(machine.handle(.openFailed(permanent: false)) == [.wait(.seconds(2))])
        #expect(machine.state == .reconnecting(attempt: 2, retryIn: .seconds(2)))
    }

    /// Seeded random walks over every event: whatever happens, the machine never asks to wait
    /// longer than maxDelay, never reports an attempt above maxAttempts, and every `.open` comes
    /// only when it is (or just became) `.connecting`.
    @Test(arguments: [UInt64(7), 11, 99, 1234])
    func randomEventSequencesKeepTheInvariants(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let jitter = Jitter(seed: seed &+ 1)
        let policy = ConnectionStateMachine.Policy(maxAttempts: 4, maxDelay: .seconds(8), heartbeat: .seconds(10))
        var machine = ConnectionStateMachine(policy: policy, jitter: { jitter.next() })
        var now = Duration.zero
        for step in 0..<3000 {
            now += .milliseconds(Int64.random(in: 0...5000, using: &random))
            let events: [ConnectionStateMachine.Event] = [
                .start, .opened(at: now), .openFailed(permanent: Int.random(in: 0..<20, using: &random) == 0), .closed,
                .frameReceived(at: now), .tick(at: now), .backoffElapsed, .networkAvailable, .retry,
            ]
            let event = Int.random(in: 0..<50, using: &random) == 0 ? .stop : events.randomElement(using: &random)!
            let actions = machine.handle(event)
            for action in actions {
                if case .wait(let delay) = action {
                    #expect(delay <= policy.maxDelay && delay > .zero, "step \(step): wait \(delay)")
                }
                if action == .open { #expect(machine.state == .connecting, "step \(step): open while \(machine.state)") }
                if action == .synchronize { #expect(machine.state == .connected) }
            }
            if case .reconnecting(let attempt, let retryIn) = machine.state {
                #expect((1...policy.maxAttempts).contains(attempt))
                #expect(actions.isEmpty || actions.contains(.wait(retryIn)))
            }
        }
    }
}
