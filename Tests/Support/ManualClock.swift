import Foundation
import ParleyServer
import Synchronization

/// Time that moves only when a test says so: `now` stands still, sleepers wake on `advance`.
public final class ManualClock: Sendable {
    private struct State {
        var now: Date
        var nextId = 0
        var sleepers: [Int: (until: Date, continuation: CheckedContinuation<Void, Never>)] = [:]
        var cancelled: Set<Int> = []
    }

    private let state: Mutex<State>

    /// A clock standing at `start`.
    public init(start: Date = Date()) {
        state = Mutex(State(now: start))
    }

    /// The current (manual) time.
    public func now() -> Date { state.withLock { $0.now } }

    /// How many tasks are asleep on this clock.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }

    /// Suspends until the clock reaches `date` or the task is cancelled.
    public func sleep(until date: Date) async {
        let id = state.withLock { state -> Int in
            state.nextId += 1
            return state.nextId
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let wakeNow = state.withLock { state -> Bool in
                    if state.now >= date || state.cancelled.remove(id) != nil { return true }
                    state.sleepers[id] = (date, continuation)
                    return false
                }
                if wakeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { state in
                let sleeper = state.sleepers.removeValue(forKey: id)
                if sleeper == nil { state.cancelled.insert(id) }
                return sleeper
            }
            sleeper?.continuation.resume()
        }
    }

    /// Moves time forward and wakes every sleeper whose time has come.
    public func advance(by seconds: TimeInterval) {
        let due = state.withLock { state in
            state.now = state.now.addingTimeInterval(seconds)
            let now = state.now
            let due = state.sleepers.filter { $0.value.until <= now }
            for id in due.keys { state.sleepers.removeValue(forKey: id) }
            return due.values.map(\.continuation)
        }
        due.forEach { $0.resume() }
    }

    /// This clock as the server's clock.
    public var serverClock: ServerClock {
        ServerClock(now: { self.now() }, sleepUntil: { await self.sleep(until: $0) })
    }
}
