import Foundation
import GRDB
import Logging
import ParleyProtocol
import PostgresNIO
import Synchronization
import ParleyStorage
import ParleyPostgres

/// Whether the store can write, as far as the server has seen: the first storage failure
/// (disk full, database read-only or unreachable) is logged once and counted, and a probe
/// writes every few seconds until one succeeds, which is logged and counted as the end.
///
/// Requests that meet storage trouble answer `503 unavailable` with `Retry-After` (see
/// ``StorageTrouble``); `/ready` answers 503 while a probe write fails, so a load balancer
/// sends writes elsewhere.
public final class StoreHealth: Sendable {
    /// Seconds a client is told to wait before trying a write again.
    public static let retryAfterSeconds = ChatError.unavailableRetryAfter

    private struct State {
        var troubleSince: Date?
        var probing = false
        var lastProbe: (at: ContinuousClock.Instant, ok: Bool)?
        /// Since when a probe has been waiting for the store.
        var probeSince: ContinuousClock.Instant?
        /// Probes started so far.
        var probes = 0
        /// Callers waiting for the probe in flight, by number.
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        var nextWaiter = 0
    }

    private let state = Mutex(State())
    private let store: any ParleyStore
    private let metrics: Metrics
    private let logger: Logger
    private let probeInterval: Duration
    /// How long `canWrite` waits for the store before it answers no.
    let probeTimeout: Duration
    /// How long a probe may wait before another one is started beside it.
    static let abandonProbeAfter: Duration = .seconds(30)

    /// Health of `store`, reported to `metrics` and `logger`.
    public init(store: any ParleyStore, metrics: Metrics, logger: Logger, probeInterval: Duration = .seconds(2), probeTimeout: Duration = .seconds(2)) {
        self.probeTimeout = probeTimeout
        self.store = store
        self.metrics = metrics
        self.logger = logger
        self.probeInterval = probeInterval
    }

    /// Probe writes started so far (a caller that finds one waiting past its time starts none).
    var probesStarted: Int { state.withLock { $0.probes } }

    /// Whether storage trouble was seen and has not been followed by a good write yet.
    public var isTroubled: Bool { state.withLock { $0.troubleSince != nil } }

    /// Records storage trouble met by a request; the first of a spell is logged and starts
    /// the probe that notices its end.
    func report(_ error: any Error) {
        let starts = state.withLock { state -> Bool in
            guard state.troubleSince == nil else { return false }
            state.troubleSince = Date()
            return true
        }
        metrics.increment("parley_storage_failures_total")
        guard starts else { return }
        metrics.increment("parley_storage_unavailable_spells_total")
        metrics.set("parley_storage_available", to: 0)
        logger.error("Storage cannot write: answering 503 unavailable until it can", metadata: ["error": "\(error)"])
        startProbing()
    }

    /// Whether the store can write now: one small write (a good answer is shared by callers
    /// within a second), and never more than one probe at a time: callers meanwhile wait for
    /// its answer, each no longer than `probeTimeout` from the probe's start.
    public func canWrite() async -> Bool {
        // A good answer is reused for a second; a bad one is asked again (recovery shows at once).
        if let last = state.withLock({ $0.lastProbe }), last.ok, ContinuousClock.now - last.at < .seconds(1) { return true }
        return await withCheckedContinuation { continuation in
            let (waiter, startProbe, remaining) = state.withLock { state -> (Int, Bool, Duration) in
                let now = ContinuousClock.now
                // A probe still waiting past its time (a database behind a silent partition
                // answers nothing, and the connection waits for TCP to give up): no at once.
                // One that has waited that long is given up on, and another probe tries.
                if let since = state.probeSince, now - since >= probeTimeout, now - since < Self.abandonProbeAfter { return (0, false, .zero) }
                state.nextWaiter += 1
                state.waiters[state.nextWaiter] = continuation
                if let since = state.probeSince, now - since < probeTimeout { return (state.nextWaiter, false, probeTimeout - (now - since)) }
                state.probeSince = now
                state.probes += 1
                return (state.nextWaiter, true, probeTimeout)
            }
            guard remaining > .zero else { return continuation.resume(returning: false) }
            if startProbe {
                // The probe goes on past the callers' time and is heard when it ends.
                Task {
                    let ok = await self.probe()
                    let waiting = self.state.withLock { state in
                        state.probeSince = nil
                        defer { state.waiters = [:] }
                        return Array(state.waiters.values)
                    }
                    for caller in waiting { caller.resume(returning: ok) }
                }
            }
            // Its time runs out first: "cannot write", said in time for a load balancer's check.
            Task {
                try? await Task.sleep(for: remaining)
                self.state.withLock { $0.waiters.removeValue(forKey: waiter) }?.resume(returning: false)
            }
        }
    }

    /// One write probe; its answer is kept for the next caller.
    private func probe() async -> Bool {
        let ok: Bool
        do {
            try await store.probeWrite(now: Date())
            ok = true
        } catch {
            ok = false
            if StorageTrouble.matches(error) { report(error) }
        }
        state.withLock { $0.lastProbe = (.now, ok) }
        if ok { recovered() }
        return ok
    }

    private func recovered() {
        let since = state.withLock { state -> Date? in
            defer { state.troubleSince = nil }
            return state.troubleSince
        }
        guard let since else { return }
        metrics.set("parley_storage_available", to: 1)
        logger.notice("Storage writes again", metadata: ["unavailableSeconds": "\(Int(Date().timeIntervalSince(since)))"])
    }

    private func startProbing() {
        let start = state.withLock { state -> Bool in
            guard !state.probing else { return false }
            state.probing = true
            return true
        }
        guard start else { return }
        Task {
            while isTroubled {
                try? await Task.sleep(for: probeInterval)
                _ = await canWrite()
            }
            state.withLock { $0.probing = false }
        }
    }
}

/// Which errors mean "the store cannot write now" (as opposed to a bug or bad input): the
/// ones a client should meet with `503 unavailable` and try again after `Retry-After`.
public enum StorageTrouble {
    /// Whether `error` is storage trouble: SQLite full, I/O error, read-only, cannot open,
    /// busy past its timeout; PostgreSQL unreachable or gone, out of disk or resources,
    /// shutting down, read-only.
    public static func matches(_ error: any Error) -> Bool {
        if let error = error as? DatabaseError {
            switch error.resultCode.primaryResultCode {
            case .SQLITE_FULL, .SQLITE_IOERR, .SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_NOMEM:
                return true
            default:
                return false
            }
        }
        if error is ConnectionClosed { return true }
        if let error = error as? PSQLError {
            let gone: [PSQLError.Code] = [.serverClosedConnection, .connectionError, .poolClosed, .clientClosedConnection, .uncleanShutdown]
            if gone.contains(error.code) { return true }
            guard error.code == .server, let state = error.serverInfo?[.sqlState] else { return false }
            // 08: connection; 53: insufficient resources (53100 disk full); 57P: shut down;
            // 58: system error; 25006: read-only transaction.
            return state.hasPrefix("08") || state.hasPrefix("53") || state.hasPrefix("57P") || state.hasPrefix("58") || state == "25006"
        }
        return false
    }
}
