import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

/// Whether the server is draining: after SIGTERM, `/ready` answers 503 for
/// ``ServerConfiguration/drainDelay`` while everything keeps working, so a load balancer stops
/// sending new clients before the sockets close.
public final class DrainState: Sendable {
    private let draining = Atomic<Bool>(false)

    /// A state that is not draining.
    public init() {}

    /// True from SIGTERM until the process ends.
    public var isDraining: Bool { draining.load(ordering: .relaxed) }

    func start() { draining.store(true, ordering: .relaxed) }
}

/// Turns the shutdown signals into a graceful shutdown: SIGTERM first drains (``DrainState``)
/// for the configured delay, SIGINT (Ctrl-C in a terminal) stops at once.
struct SignalDrainer: Service {
    /// The group to shut down, set once it exists.
    final class GroupBox: Sendable {
        let group = Mutex<ServiceGroup?>(nil)
    }

    let signals: [UnixSignal]
    let delay: Duration
    let state: DrainState
    let box: GroupBox
    let logger: Logger

    func run() async throws {
        for await signal in await UnixSignalsSequence(trapping: signals).cancelOnGracefulShutdown() {
            if signal == .sigterm, delay > .zero {
                state.start()
                logger.notice("SIGTERM: draining, /ready answers 503 for \(delay) before connections close")
                try? await Task.sleep(for: delay)
            }
            logger.notice("Shutting down (\(signal))")
            if let group = box.group.withLock({ $0 }) { await group.triggerGracefulShutdown() }
            return
        }
    }
}
