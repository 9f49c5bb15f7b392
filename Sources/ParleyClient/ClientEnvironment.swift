import Foundation

/// The edges of the SDK that tests control: time, ids, waiting and randomness.
public struct ClientEnvironment: Sendable {
    /// Wall-clock time, for timestamps.
    public var now: @Sendable () -> Date
    /// Monotonic time since an arbitrary start, for the connection's heartbeat.
    public var uptime: @Sendable () -> Duration
    /// A new client message id.
    public var newID: @Sendable () -> String
    /// Waits (backoff, polling, heartbeats); throws when cancelled.
    public var sleep: @Sendable (Duration) async throws -> Void
    /// A number in 0...1 for backoff jitter.
    public var random: @Sendable () -> Double

    /// An environment of these functions (tests pass their own; ``live`` is the default).
    public init(
        now: @escaping @Sendable () -> Date, uptime: @escaping @Sendable () -> Duration,
        newID: @escaping @Sendable () -> String, sleep: @escaping @Sendable (Duration) async throws -> Void,
        random: @escaping @Sendable () -> Double
    ) {
        self.now = now
        self.uptime = uptime
        self.newID = newID
        self.sleep = sleep
        self.random = random
    }

    /// The real world.
    public static var live: ClientEnvironment {
        let start = ContinuousClock.now
        return ClientEnvironment(
            now: Date.init, uptime: { ContinuousClock.now - start }, newID: { UUID().uuidString.lowercased() },
            sleep: { try await Task.sleep(for: $0) }, random: { Double.random(in: 0...1) })
    }
}

/// A read counter: how often screens were served from the cache or the network.
public struct ReadCounts: Sendable, Equatable {
    /// Reads answered from the local database alone.
    public var cacheHits = 0
    /// Reads that needed the server.
    public var cacheMisses = 0
    /// HTTP requests made for reads (history and catch-up pages).
    public var networkReads = 0
    /// Catch-ups started (after a reconnect, a sync, or a live event that skipped a seq).
    /// Without faults a live conversation needs none: events arrive in seq order.
    public var catchUps = 0
    /// Of those, the ones a live event started because its seq was not the next one.
    public var gapCatchUps = 0
    /// Times the cache started again because the server's data was another copy (restored
    /// from a backup; see `HelloEvent.storeId`).
    public var storeChanges = 0

    /// Hits over all reads (1 when nothing was read yet).
    public var hitRate: Double {
        let total = cacheHits + cacheMisses
        return total == 0 ? 1 : Double(cacheHits) / Double(total)
    }
}
