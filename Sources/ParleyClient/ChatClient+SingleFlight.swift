import Foundation
import Logging
import ParleyProtocol

// MARK: One run at a time

/// The kinds of background work that run one at a time (``SingleFlight``).
enum Flight: Hashable, Sendable {
    /// Sending the outbox.
    case outbox
    /// Sending the pending edits and reactions.
    case changes
    /// Sending the deletes of messages that were on their way.
    case revokes
    /// A conversation's catch-up.
    case catchUp(EntityID)
    /// Reading a list row again.
    case listRow(EntityID)
}

extension ChatClient {
    /// Runs `round` as `flight` unless that is running already. A call during a run makes it
    /// run one round more (and, with `waiting`, returns when the run is over); `round` returns
    /// false to stop without that round. `then` runs at the end of the run, before waiters
    /// resume. Returns whether this call ran it.
    @discardableResult
    func inSingleFlight(
        _ flight: Flight, waiting: Bool, _ round: () async -> Bool, then: () async -> Void = {}
    ) async -> Bool {
        guard flights.start(flight) else {
            if waiting { await withCheckedContinuation { flights.wait(flight, $0) } }
            return false
        }
        // A call during `then` asks for a run too: it gets one.
        repeat {
            while await round(), flights.another(flight) {}
            await then()
        } while flights.another(flight)
        for waiter in flights.finish(flight) { waiter.resume() }
        return true
    }
}
