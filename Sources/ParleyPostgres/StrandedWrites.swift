import Foundation
import PostgresNIO
import Synchronization
import ParleyStorage

/// Stops waiting for a write whose connection has closed under it.
///
/// PostgresNIO (1.33) loses a statement written to a connection whose channel closed a moment
/// before: the write never reaches the connection's handler, so nothing ever answers it. Every
/// statement checks that its connection is open first (``PostgresConnection/checkedQuery(_:_:)``),
/// which leaves only a race of microseconds between that check and the write. This covers the
/// race: a write transaction still running `grace` after its connection closed is answered
/// with ``ConnectionClosed`` (storage trouble: nothing of it committed, as PostgreSQL rolls
/// back a transaction whose connection is gone), and its lane goes on with a new connection.
/// The abandoned task stays parked on the lost statement; the pool has already dropped its
/// closed connection.
///
/// A write still running `deadline` after it began (a database behind a silent partition: its
/// statement waits in TCP's retransmissions, whose timer doubles at every try, for minutes)
/// has its connection closed, and is given up on the same way; the lane's next attempt takes a
/// new connection, which connects as soon as the network heals. PostgreSQL ends the abandoned
/// transaction on its side once it has sat idle for `idle_in_transaction_session_timeout`
/// (``PostgresStore/configuration(url:)``), releasing its locks.
///
/// One check every quarter second, only while writes are in flight.
final class StrandedWrites: Sendable {
    private struct Watched {
        let connection: PostgresConnection
        let started: ContinuousClock.Instant
        var closedSince: ContinuousClock.Instant?
        let abandon: @Sendable () -> Void
    }

    private struct State {
        var watched: [Int: Watched] = [:]
        var next = 0
        var checking = false
    }

    private let state = Mutex(State())
    private let grace: Duration
    private let deadline: Duration
    private let interval: Duration

    init(grace: Duration = .seconds(2), deadline: Duration = .seconds(10), interval: Duration = .milliseconds(250)) {
        self.grace = grace
        self.deadline = deadline
        self.interval = interval
    }

    /// Runs `body` on `connection`, and answers ``ConnectionClosed`` if the connection closes
    /// and `body` has not ended `grace` later.
    func run<T: Sendable>(on connection: PostgresConnection, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let answer = FirstOutcome<T>()
        return try await withCheckedThrowingContinuation { continuation in
            answer.wait(continuation)
            let (key, startChecking) = state.withLock { state -> (Int, Bool) in
                state.next += 1
                state.watched[state.next] = Watched(connection: connection, started: .now, closedSince: nil) {
                    answer.finish(.failure(ConnectionClosed()))
                }
                defer { state.checking = true }
                return (state.next, !state.checking)
            }
            if startChecking { Task { await self.check() } }
            Task {
                let result: Result<T, any Error>
                do { result = .success(try await body()) } catch { result = .failure(error) }
                _ = self.state.withLock { $0.watched.removeValue(forKey: key) }
                answer.finish(result)
            }
        }
    }

    /// Looks at the watched writes until none is left.
    private func check() async {
        while true {
            try? await Task.sleep(for: interval)
            let now = ContinuousClock.now
            let (given, overdue, done) = state.withLock { state -> ([Watched], [PostgresConnection], Bool) in
                var given: [Watched] = [], overdue: [PostgresConnection] = []
                for (key, var watched) in state.watched {
                    if let since = watched.closedSince {
                        if now - since >= grace { given.append(watched); state.watched[key] = nil }
                    } else if watched.connection.isClosed || now - watched.started >= deadline {
                        if !watched.connection.isClosed { overdue.append(watched.connection) }
                        watched.closedSince = now
                        state.watched[key] = watched
                    }
                }
                if state.watched.isEmpty { state.checking = false }
                return (given, overdue, !state.checking)
            }
            // Closing fails the statement the connection still holds, if it holds one.
            for connection in overdue { connection.close().whenComplete { _ in } }
            // Each is answered ConnectionClosed, counted with every other storage failure
            // (parley_storage_failures_total) where the server reports it.
            for watched in given { watched.abandon() }
            if done { return }
        }
    }
}
