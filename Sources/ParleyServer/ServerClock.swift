import Foundation

/// Where the server's timers take their time (push coalescing, activity folding): the wall
/// clock in production, a manual clock in tests.
public struct ServerClock: Sendable {
    /// The current time.
    public var now: @Sendable () -> Date
    /// Suspends until `date` (returns early when the task is cancelled).
    public var sleepUntil: @Sendable (Date) async -> Void

    /// A clock from two functions.
    public init(now: @escaping @Sendable () -> Date, sleepUntil: @escaping @Sendable (Date) async -> Void) {
        self.now = now
        self.sleepUntil = sleepUntil
    }

    /// The system clock.
    public static let system = ServerClock(now: Date.init) { date in
        let interval = date.timeIntervalSinceNow
        if interval > 0 { try? await Task.sleep(for: .seconds(interval)) }
    }
}
