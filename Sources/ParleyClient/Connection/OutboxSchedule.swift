import Foundation
import ParleyProtocol

/// The outbox's rules as a value: which queued message may go now, what a failed send means,
/// and how long to wait. No database and no sockets: ``ChatClient`` reads the queue's heads
/// from the local database, asks this, sends, and tells it the outcome.
///
/// "Where is a send's failure decided?" Here: ``decide(_:attempts:backoff:)``.
struct OutboxSchedule: Sendable {
    /// What a failed send means for its message.
    enum Decision: Sendable, Equatable {
        /// The token was refused: the message waits, as it is, until the user signs in again.
        case waitForSignIn
        /// The server (or a preparation) refused it for good: it is marked failed with this
        /// reason, for the user to resend or discard.
        case refused(reason: String)
        /// No answer, or the server asked for time: the same send goes again (safe: the server
        /// deduplicates the client message id) after `delay` seconds.
        case retry(after: TimeInterval)
    }

    /// Consecutive failed writes of a failed attempt after which a flush stops: the local
    /// database is in trouble (disk full, locked), and sending on would only repeat the sends.
    static let maxLocalWriteFailures = 3

    /// Messages being sent right now, by client message id (from the moment they go until
    /// their answer is written).
    private(set) var inFlight: Set<String> = []
    /// Retry times kept in memory, by client message id: authoritative even when writing the
    /// failed attempt to the database failed, so such a message is not resent at once.
    private(set) var notBefore: [String: Date] = [:]
    /// Failed attempts whose write failed, in a row.
    private(set) var localWriteFailures = 0

    /// The failure's meaning: a refused token waits for a sign-in; a refusal (4xx, or a
    /// preparation that cannot succeed) is final; anything else is retried after the
    /// connection's backoff for its attempt count, or later if the server asked.
    static func decide(_ error: any Error, attempts: Int, backoff: (Int) -> TimeInterval) -> Decision {
        switch error {
        case let error as ClientError where error.code == .unauthorized:
            return .waitForSignIn
        case let error as ClientError where !error.isTransient:
            return .refused(reason: error.message)
        case let error as PreparationFailed:
            return .refused(reason: error.reason)
        default:
            return .retry(after: max(backoff(min(attempts, 5)), (error as? ClientError)?.retryAfter ?? 0))
        }
    }

    /// Whether `entry` may go at `now`: due in the database and in memory, and not on its way.
    func isDue(_ entry: OutboxEntry, now: Date) -> Bool {
        let id = entry.request.clientMessageId
        return !inFlight.contains(id) && entry.nextAttemptAt <= now && (notBefore[id] ?? .distantPast) <= now
    }

    /// When `entry` is next due (the later of the database's and the memory's time).
    func dueTime(of entry: OutboxEntry) -> Date {
        max(entry.nextAttemptAt, notBefore[entry.request.clientMessageId] ?? .distantPast)
    }

    /// The first of `heads` to send now, oldest first, skipping `excluded` ones.
    func next(of heads: [OutboxEntry], now: Date, excluding excluded: Set<String> = []) -> OutboxEntry? {
        heads.first { isDue($0, now: now) && !excluded.contains($0.request.clientMessageId) }
    }

    /// When the next of `heads` becomes due, if any.
    func nextWake(of heads: [OutboxEntry]) -> Date? {
        heads.filter { !inFlight.contains($0.request.clientMessageId) }.map(dueTime).min()
    }

    /// A send begins.
    mutating func sending(_ clientMessageId: String) { inFlight.insert(clientMessageId) }

    /// A send ended (its answer or failure is written, or could not be).
    mutating func sent(_ clientMessageId: String) { inFlight.remove(clientMessageId) }

    /// The send is settled (stored, refused or dropped): nothing of it stays in memory.
    mutating func settled(_ clientMessageId: String) { notBefore[clientMessageId] = nil }

    /// A failed attempt: not before `retryAt`, whether or not the database took it.
    mutating func failed(_ clientMessageId: String, retryAt: Date) { notBefore[clientMessageId] = retryAt }

    /// "Retry now": every message is due again.
    mutating func retryAll() { notBefore.removeAll() }

    /// The outcome of writing a failed attempt; false when the flush must stop (too many
    /// failed writes in a row).
    mutating func recordedFailure(written: Bool) -> Bool {
        localWriteFailures = written ? 0 : localWriteFailures + 1
        return localWriteFailures < Self.maxLocalWriteFailures
    }
}

/// The one "single flight" rule of the client's background work (sending the outbox, the
/// edits, the deletes, a conversation's catch-up, a list row's refresh): one run at a time per
/// key; a call during a run makes it run once more after (what it asked for may have changed
/// since the run read it), and may wait for that run to end.
struct SingleFlight<Key: Hashable & Sendable>: Sendable {
    private var running: Set<Key> = []
    private var again: Set<Key> = []
    private var waiters: [Key: [CheckedContinuation<Void, Never>]] = [:]

    /// Starts a run: true when the caller runs it; false when one is running (it runs once more).
    mutating func start(_ key: Key) -> Bool {
        guard running.insert(key).inserted else {
            again.insert(key)
            return false
        }
        return true
    }

    /// Whether a run is going for `key`.
    func isRunning(_ key: Key) -> Bool { running.contains(key) }

    /// A caller waits for the running run (and its extra round) to end.
    mutating func wait(_ key: Key, _ continuation: CheckedContinuation<Void, Never>) {
        waiters[key, default: []].append(continuation)
    }

    /// Whether another round was asked for during the last one (and takes the request).
    mutating func another(_ key: Key) -> Bool { again.remove(key) != nil }

    /// The run ended: the waiters to resume.
    mutating func finish(_ key: Key) -> [CheckedContinuation<Void, Never>] {
        running.remove(key)
        again.remove(key)
        return waiters.removeValue(forKey: key) ?? []
    }
}
