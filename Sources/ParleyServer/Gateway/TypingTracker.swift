import Foundation
import ParleyProtocol

/// Who is typing where, and when each indicator lapses.
///
/// One entry per (user, conversation) with a deadline; a single sweeper task sleeps until the
/// earliest deadline and expires what is due, then ends when nothing is left. Idle users cost
/// nothing: no timer or task per user or per conversation.
actor TypingTracker {
    struct Key: Hashable, Sendable {
        var userId: EntityID
        var conversationId: EntityID
    }

    private let timeout: TimeInterval
    private let clock: ServerClock
    private let onExpire: @Sendable ([Key]) async -> Void
    private var deadlines: [Key: Date] = [:]
    private var sweeper: Task<Void, Never>?

    /// A tracker whose indicators lapse `timeout` after the last `true`; `onExpire` announces it.
    init(timeout: Duration, clock: ServerClock = .system, onExpire: @escaping @Sendable ([Key]) async -> Void) {
        self.timeout = timeout.timeInterval
        self.clock = clock
        self.onExpire = onExpire
    }

    /// Records a `true`, pushing the deadline back.
    func started(_ key: Key) {
        deadlines[key] = clock.now().addingTimeInterval(timeout)
        if sweeper == nil {
            sweeper = Task { await self.sweep() }
        }
    }

    /// Records a `false`; returns whether the user was typing there.
    func stopped(_ key: Key) -> Bool {
        deadlines.removeValue(forKey: key) != nil
    }

    /// Forgets every indicator of a user (their last connection closed); returns them.
    func stopAll(userId: EntityID) -> [Key] {
        let keys = deadlines.keys.filter { $0.userId == userId }
        for key in keys { deadlines[key] = nil }
        return keys
    }

    /// How many members are typing in a conversation.
    func typists(in conversationId: EntityID) -> Int {
        deadlines.keys.reduce(0) { $0 + ($1.conversationId == conversationId ? 1 : 0) }
    }

    /// How many indicators are live (for tests and metrics).
    var activeCount: Int { deadlines.count }

    private func sweep() async {
        while let next = deadlines.values.min() {
            await clock.sleepUntil(next)
            let now = clock.now()
            let due = deadlines.filter { $0.value <= now }.map(\.key)
            for key in due { deadlines[key] = nil }
            if !due.isEmpty { await onExpire(due) }
        }
        sweeper = nil
    }
}
