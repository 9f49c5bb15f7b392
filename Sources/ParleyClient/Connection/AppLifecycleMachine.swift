import Foundation

/// What the app and the network tell the SDK, as a pure state machine: events in, actions out.
/// No timers, no sockets: ``ChatClient`` performs the actions and feeds back the grace timer.
///
/// The rules a phone needs:
/// - Going to the background sends what is in the outbox at once (the app may be suspended any
///   moment), keeps the socket for a grace period (a quick look at another app costs nothing),
///   then closes it cleanly: a suspended app holds no socket the server must time out.
/// - Coming back after more than a moment, or the network returning or changing interface,
///   reconnects at once and catches up: no waiting for two silent heartbeats or a backoff step.
/// - While there is no network, nothing is attempted; the connection's retries are not spent.
///
/// On Apple platforms the app shell feeds it from `scenePhase` and a network path monitor
/// (ParleyUI's `ParleyChat` does); elsewhere the app calls the ``ChatClient`` methods itself.
public struct AppLifecycleMachine: Sendable {
    /// Where the app is.
    public enum Phase: Sendable, Equatable {
        /// On screen: connected (or trying to be).
        case foreground
        /// Just left the screen: still connected until the grace period ends.
        case background
        /// In the background past the grace period: the socket is closed.
        case suspended
    }

    /// Tunables.
    public struct Policy: Sendable, Equatable {
        /// How long the socket stays open in the background (iOS grants about 30 s of
        /// background time to an app that asks for it).
        public var backgroundGrace: Duration
        /// A return from the background within this long keeps the socket as it is; a longer
        /// absence reconnects at once (the socket may have died while the app was frozen).
        public var quickReturn: Duration

        /// A policy; the defaults are 25 s of grace and 5 s for a quick return.
        public init(backgroundGrace: Duration = .seconds(25), quickReturn: Duration = .seconds(5)) {
            self.backgroundGrace = backgroundGrace
            self.quickReturn = quickReturn
        }
    }

    /// What happened.
    public enum Event: Sendable, Equatable {
        /// The app left the screen (`scenePhase` became `.background`).
        case enteredBackground(at: Duration)
        /// The app is on screen again (`scenePhase` became `.active`).
        case enteredForeground(at: Duration)
        /// The grace timer started by ``Action/startGrace(_:)`` fired.
        case graceElapsed
        /// The network path changed: whether it can reach anything, and whether it now goes
        /// through another interface (Wi-Fi to cellular: the old socket is dead).
        case networkChanged(available: Bool, interfaceChanged: Bool)
    }

    /// What to do.
    public enum Action: Sendable, Equatable {
        /// Send the outbox now.
        case flushOutbox
        /// Start (or restart) the grace timer; feed ``Event/graceElapsed`` when it fires.
        case startGrace(Duration)
        /// Cancel the grace timer.
        case cancelGrace
        /// Close the socket cleanly and stop polling until resumed.
        case suspend
        /// Connect again from a suspension (catch-up follows the connect).
        case resume
        /// Drop the socket if there is one and connect at once, without a backoff step.
        case reconnectNow
    }

    /// Where the app is now.
    public private(set) var phase: Phase = .foreground
    /// Whether the network can reach anything, as last reported (true until told otherwise).
    public private(set) var networkAvailable = true
    /// The tunables.
    public let policy: Policy
    private var leftAt: Duration?

    /// A machine in the foreground with the network up.
    public init(policy: Policy = Policy()) { self.policy = policy }

    /// Whether the connection should be trying to connect (foreground or within the grace
    /// period, with a network).
    public var wantsConnection: Bool { phase != .suspended && networkAvailable }

    /// Feeds one event; returns the actions to perform, in order.
    public mutating func handle(_ event: Event) -> [Action] {
        switch (phase, event) {
        case (.foreground, .enteredBackground(let at)):
            phase = .background
            leftAt = at
            return [.flushOutbox, .startGrace(policy.backgroundGrace)]
        case (.background, .graceElapsed):
            phase = .suspended
            return [.suspend]
        case (.background, .enteredForeground(let at)):
            phase = .foreground
            let away = leftAt.map { at - $0 } ?? .zero
            leftAt = nil
            return away > policy.quickReturn && networkAvailable ? [.cancelGrace, .reconnectNow] : [.cancelGrace]
        case (.suspended, .enteredForeground):
            phase = .foreground
            leftAt = nil
            return networkAvailable ? [.resume] : []
        case (_, .networkChanged(let available, let interfaceChanged)):
            let returned = available && (!networkAvailable || interfaceChanged)
            networkAvailable = available
            guard returned else { return [] }
            switch phase {
            case .foreground, .background: return [.reconnectNow]
            // Stays closed until the app comes back; it connects then.
            case .suspended: return []
            }
        default:
            // A second background, a late grace timer after coming back, a foreground while on
            // screen: nothing changes.
            return []
        }
    }
}
