import Foundation
import Logging
import ParleyProtocol

extension ChatClient {
    // MARK: App lifecycle

    /// Where the app is, as last reported by ``appEnteredBackground()`` and
    /// ``appEnteredForeground()``.
    public var appPhase: AppLifecycleMachine.Phase { lifecycle.phase }

    /// The app left the screen (`scenePhase` became `.background`): the outbox is sent at once,
    /// and the socket is closed cleanly after the grace period (``AppLifecycleMachine``).
    public func appEnteredBackground() { lifecycleEvent(.enteredBackground(at: environment.uptime())) }

    /// The app is on screen again (`scenePhase` became `.active`): after more than a moment
    /// away it reconnects at once and catches up, without waiting for a heartbeat or a backoff.
    public func appEnteredForeground() { lifecycleEvent(.enteredForeground(at: environment.uptime())) }

    /// The network path changed (a path monitor's update): a network that returns, or a new
    /// interface, reconnects at once; while there is none, no attempt is spent.
    public func networkChanged(available: Bool, interfaceChanged: Bool = false) {
        lifecycleEvent(.networkChanged(available: available, interfaceChanged: interfaceChanged))
    }

    private func lifecycleEvent(_ event: AppLifecycleMachine.Event) {
        for action in lifecycle.handle(event) {
            switch action {
            case .flushOutbox:
                // Everything queued goes now, backoff or not: the app may be frozen any moment.
                Task {
                    await self.makeOutboxDue()
                    await self.flushOutbox()
                }
            case .startGrace(let grace):
                graceTask?.cancel()
                graceTask = Task { [environment] in
                    do { try await environment.sleep(grace) } catch { return }
                    self.lifecycleEvent(.graceElapsed)
                }
            case .cancelGrace:
                graceTask?.cancel()
                graceTask = nil
            case .suspend:
                guard started else { continue }
                // A clean close (the stop's `close` also ends the heartbeat).
                run(machine.handle(.stop))
            case .resume:
                guard started else { continue }
                run(machine.handle(.start))
            case .reconnectNow:
                guard started else { continue }
                run(machine.handle(machine.state == .disconnected ? .start : .reconnectNow))
            }
        }
    }
}
