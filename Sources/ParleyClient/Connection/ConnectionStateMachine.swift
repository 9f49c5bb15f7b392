import Foundation

/// What the app shows in its connection banner.
public enum ConnectionState: Sendable, Equatable {
    /// Not started, or stopped by the app.
    case disconnected
    /// Opening the WebSocket.
    case connecting
    /// Live: events arrive as they happen.
    case connected
    /// Lost; the next attempt is `attempt` (1-based) after `retryIn`.
    case reconnecting(attempt: Int, retryIn: Duration)
    /// Gave up after too many attempts (or the token was refused); `retry()` starts again.
    case failed
}

/// The connection's rules as a pure state machine: events in, actions out. No sockets, no
/// clocks, no sleeps; the ``ChatClient`` shell performs the actions and feeds back events.
///
/// Backoff before attempt n (0-based) is `min(2^n, maxDelay)` seconds with equal jitter
/// (between half and all of it). A connection that sends nothing for two heartbeats is dead.
public struct ConnectionStateMachine: Sendable {
    /// Tunables.
    public struct Policy: Sendable, Equatable {
        /// Attempts in a row before giving up.
        public var maxAttempts: Int = 8
        /// Longest wait between attempts.
        public var maxDelay: Duration = .seconds(30)
        /// How often to ping a live connection; two of these in silence declare it dead.
        public var heartbeat: Duration = .seconds(30)

        /// A policy with these tunables; the defaults are 8 attempts, 30 s and 30 s.
        public init(maxAttempts: Int = 8, maxDelay: Duration = .seconds(30), heartbeat: Duration = .seconds(30)) {
            self.maxAttempts = maxAttempts
            self.maxDelay = maxDelay
            self.heartbeat = heartbeat
        }
    }

    /// What happened.
    public enum Event: Sendable, Equatable {
        /// The app wants to be connected.
        case start
        /// The WebSocket opened (hello received).
        case opened(at: Duration)
        /// Opening failed; `permanent` when retrying cannot help (the token was refused).
        case openFailed(permanent: Bool)
        /// The open connection ended.
        case closed
        /// Any frame arrived.
        case frameReceived(at: Duration)
        /// The heartbeat timer fired.
        case tick(at: Duration)
        /// The backoff wait is over.
        case backoffElapsed
        /// The OS says the network is back: try now.
        case networkAvailable
        /// The user asked to try again.
        case retry
        /// The app came back or the network changed: drop the socket if there is one and
        /// connect at once, without a backoff step (``AppLifecycleMachine``).
        case reconnectNow
        /// The app wants to be disconnected.
        case stop
    }

    /// What to do.
    public enum Action: Sendable, Equatable {
        /// Open a WebSocket.
        case open
        /// Close the WebSocket.
        case close
        /// Wait, then feed `.backoffElapsed`.
        case wait(Duration)
        /// Cancel a pending wait.
        case cancelWait
        /// Send a ping to keep the connection and detect a dead one.
        case ping
        /// Catch up on everything missed and flush the outbox.
        case synchronize
    }

    /// The current state, for the banner.
    public private(set) var state: ConnectionState = .disconnected
    /// The tunables this machine runs with.
    public let policy: Policy
    private var failures = 0
    private var lastFrame: Duration = .zero
    private let jitter: @Sendable () -> Double

    /// A machine with a policy; `jitter` returns a number in 0...1 (injected for tests).
    public init(policy: Policy = Policy(), jitter: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }) {
        self.policy = policy
        self.jitter = jitter
    }

    /// The wait before attempt `n` (0-based): `min(2^n, maxDelay)` with equal jitter.
    public func backoff(_ n: Int) -> Duration {
        let full = min(Duration.seconds(1 << min(n, 20)), policy.maxDelay)
        return full * (0.5 + 0.5 * min(max(jitter(), 0), 1))
    }

    /// Feeds one event; returns the actions to perform, in order.
    public mutating func handle(_ event: Event) -> [Action] {
        switch (state, event) {
        case (_, .stop):
            let wasActive = state != .disconnected
            state = .disconnected
            failures = 0
            return wasActive ? [.cancelWait, .close] : []
        case (.disconnected, .start), (.failed, .start):
            failures = 0
            state = .connecting
            return [.open]
        case (.connecting, .opened(let at)):
            failures = 0
            lastFrame = at
            state = .connected
            return [.synchronize]
        case (.connecting, .openFailed(let permanent)):
            return permanent ? giveUp() : scheduleRetry()
        case (.connected, .closed):
            return scheduleRetry()
        case (.connected, .frameReceived(let at)):
            lastFrame = max(lastFrame, at)
            return []
        case (.connected, .tick(let now)):
            if now - lastFrame >= policy.heartbeat * 2 {
                return [.close] + scheduleRetry()
            }
            return now - lastFrame >= policy.heartbeat ? [.ping] : []
        case (.reconnecting, .backoffElapsed):
            state = .connecting
            return [.open]
        case (.connected, .reconnectNow):
            failures = 0
            state = .connecting
            return [.close, .open]
        case (.reconnecting, .networkAvailable), (.reconnecting, .retry), (.failed, .retry), (.failed, .networkAvailable),
            (.reconnecting, .reconnectNow), (.failed, .reconnectNow):
            failures = 0
            state = .connecting
            return [.cancelWait, .open]
        default:
            // Late or irrelevant events (a close after we already moved on, a tick while
            // reconnecting) change nothing.
            return []
        }
    }

    private mutating func scheduleRetry() -> [Action] {
        failures += 1
        guard failures <= policy.maxAttempts else { return giveUp() }
        let delay = backoff(failures - 1)
        state = .reconnecting(attempt: failures, retryIn: delay)
        return [.wait(delay)]
    }

    private mutating func giveUp() -> [Action] {
        state = .failed
        return []
    }
}
