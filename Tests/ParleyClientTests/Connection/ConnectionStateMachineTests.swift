import ParleyClient
import Testing

/// The connection rules, driven by events alone: no sockets, no clocks, no sleeps.
@Suite struct ConnectionStateMachineTests {
    func machine(jitter: Double = 1, maxAttempts: Int = 8) -> ConnectionStateMachine {
        ConnectionStateMachine(policy: .init(maxAttempts: maxAttempts, heartbeat: .seconds(30)), jitter: { jitter })
    }

    @Test func connectsAndSynchronizes() {
        var machine = machine()
        #expect(machine.handle(.start) == [.open])
        #expect(machine.state == .connecting)
        #expect(machine.handle(.opened(at: .seconds(1))) == [.synchronize])
        #expect(machine.state == .connected)
    }

    @Test func backoffDoublesUpToThirtySecondsWithJitter() {
        let full = machine(jitter: 1)
        #expect((0..<7).map(full.backoff) == [1, 2, 4, 8, 16, 30, 30].map { .seconds($0) })
        let half = machine(jitter: 0)
        #expect(half.backoff(3) == .seconds(4))
    }

    @Test func reconnectsWithGrowingDelaysThenFails() {
        var machine = machine(maxAttempts: 3)
        _ = machine.handle(.start)
        _ = machine.handle(.opened(at: .zero))
        #expect(machine.handle(.closed) == [.wait(.seconds(1))])
        #expect(machine.state == .reconnecting(attempt: 1, retryIn: .seconds(1)))
        #expect(machine.handle(.backoffElapsed) == [.open])
        #expect(machine.handle(.openFailed(permanent: false)) == [.wait(.seconds(2))])
        #expect(machine.handle(.backoffElapsed) == [.open])
        #expect(machine.handle(.openFailed(permanent: false)) == [.wait(.seconds(4))])
        #expect(machine.handle(.backoffElapsed) == [.open])
        #expect(machine.handle(.openFailed(permanent: false)) == [])
        #expect(machine.state == .failed)
        #expect(machine.handle(.retry) == [.cancelWait, .open])
        #expect(machine.state == .connecting)
    }

    @Test func aSuccessfulConnectResetsTheBackoff() {
        var machine = machine()
        _ = machine.handle(.start)
        _ = machine.handle(.openFailed(permanent: false))
        _ = machine.handle(.backoffElapsed)
        _ = machine.handle(.openFailed(permanent: false))
        _ = machine.handle(.backoffElapsed)
        _ = machine.handle(.opened(at: .zero))
        #expect(machine.handle(.closed) == [.wait(.seconds(1))])
    }

    @Test func networkBackSkipsTheWait() {
        var machine = machine()
        _ = machine.handle(.start)
        _ = machine.handle(.openFailed(permanent: false))
        #expect(machine.handle(.networkAvailable) == [.cancelWait, .open])
        #expect(machine.state == .connecting)
    }

    @Test func aRefusedTokenFailsAtOnce() {
        var machine = machine()
        _ = machine.handle(.start)
        #expect(machine.handle(.openFailed(permanent: true)) == [])
        #expect(machine.state == .failed)
    }

    @Test func heartbeatPingsThenDeclaresASilentConnectionDead() {
        var machine = machine()
        _ = machine.handle(.start)
        _ = machine.handle(.opened(at: .seconds(100)))
        #expect(machine.handle(.tick(at: .seconds(115))) == [])
        #expect(machine.handle(.tick(at: .seconds(130))) == [.ping])
        _ = machine.handle(.frameReceived(at: .seconds(131)))
        #expect(machine.handle(.tick(at: .seconds(160))) == [])
        #expect(machine.handle(.tick(at: .seconds(175))) == [.ping])
        // Silence since 131: at 191 that is two heartbeats.
        #expect(machine.handle(.tick(at: .seconds(191))) == [.close, .wait(.seconds(1))])
        #expect(machine.state == .reconnecting(attempt: 1, retryIn: .seconds(1)))
        // The close that follows is late news: nothing more happens.
        #expect(machine.handle(.closed) == [])
    }

    @Test func stopFromAnywhereDisconnects() {
        var machine = machine()
        #expect(machine.handle(.stop) == [])
        _ = machine.handle(.start)
        _ = machine.handle(.openFailed(permanent: false))
        #expect(machine.handle(.stop) == [.cancelWait, .close])
        #expect(machine.state == .disconnected)
        #expect(machine.handle(.backoffElapsed) == [])
        #expect(machine.handle(.start) == [.open])
    }
}
