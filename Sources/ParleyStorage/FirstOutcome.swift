import Synchronization

/// The first of several outcomes, handed to one waiting continuation; the later ones are dropped.
/// For a wait that ends with whichever comes first: a body's result, a deadline, a connection
/// lost under it. The waiter may come before or after the outcome.
package final class FirstOutcome<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var result: Result<T, any Error>?
        var finished: [@Sendable () -> Void] = []
    }
    private let state = Mutex(State())

    package init() {}

    /// Hands the outcome to `continuation`, at once if it is known.
    package func wait(_ continuation: CheckedContinuation<T, any Error>) {
        let ready = state.withLock { state -> Result<T, any Error>? in
            if let result = state.result { return result }
            state.continuation = continuation
            return nil
        }
        if let ready { continuation.resume(with: ready) }
    }

    /// Runs `action` once the outcome is known (at once if it is).
    package func onFinish(_ action: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.result != nil { return true }
            state.finished.append(action)
            return false
        }
        if now { action() }
    }

    /// The outcome, if it is the first; a later one is dropped.
    package func finish(_ result: Result<T, any Error>) {
        let (continuation, actions) = state.withLock { state -> (CheckedContinuation<T, any Error>?, [@Sendable () -> Void]) in
            guard state.result == nil else { return (nil, []) }
            state.result = result
            defer { state.continuation = nil; state.finished = [] }
            return (state.continuation, state.finished)
        }
        continuation?.resume(with: result)
        for action in actions { action() }
    }
}
