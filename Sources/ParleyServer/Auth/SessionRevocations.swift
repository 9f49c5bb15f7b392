import Foundation
import ParleyProtocol
import Synchronization
import ParleyStorage

/// The sign-in sessions ended by logout whose tokens could still be presented, kept in memory
/// so checking a request or a WebSocket frame reads no database.
///
/// A logout on this node is known here at once; one on another node is read from the store
/// with the next reload (every ``refreshInterval``, driven by the session sweep), and the
/// sweep then closes that session's WebSockets. Entries go once their tokens have expired.
public final class SessionRevocations: Sendable {
    /// How often the revocations are read again from the store.
    public static let refreshInterval: Duration = .seconds(5)

    private struct State {
        var revoked: [String: Date] = [:]
        var loadedAt: ContinuousClock.Instant?
        var loading = false
    }

    private let state = Mutex(State())
    private let store: (any ParleyStore)?

    /// Revocations read from `store` (nil: this node's own only, for tests of the token service).
    public init(store: (any ParleyStore)?) { self.store = store }

    /// Whether tokens of this session are refused.
    public func isRevoked(_ sessionId: String) -> Bool {
        state.withLock { $0.revoked[sessionId] != nil }
    }

    /// Ends a session: stored for every node, and refused here at once.
    public func revoke(_ sessionId: String, userId: EntityID, expiresAt: Date, now: Date = Date()) async throws {
        try await store?.revokeSession(sessionId, userId: userId, expiresAt: expiresAt, at: now)
        state.withLock { $0.revoked[sessionId] = expiresAt }
    }

    /// Reads the revocations again when the last read is older than ``refreshInterval``
    /// (in the background; the sweep calls this every second).
    func refreshIfStale(now: Date = Date()) {
        guard let store else { return }
        let start = state.withLock { state -> Bool in
            guard !state.loading, state.loadedAt.map({ ContinuousClock.now - $0 >= Self.refreshInterval }) ?? true else { return false }
            state.loading = true
            return true
        }
        guard start else { return }
        Task {
            let loaded = try? await store.revokedSessions(now: now)
            self.state.withLock { state in
                if let loaded {
                    // Ours that the read may not have seen yet stay; expired ones go.
                    state.revoked = loaded.merging(state.revoked.filter { $0.value > now }) { stored, _ in stored }
                    state.loadedAt = .now
                }
                state.loading = false
            }
        }
    }

    /// Reads the revocations now (start, tests).
    public func reload(now: Date = Date()) async throws {
        guard let store else { return }
        let loaded = try await store.revokedSessions(now: now)
        state.withLock { state in
            state.revoked = loaded.merging(state.revoked.filter { $0.value > now }) { stored, _ in stored }
            state.loadedAt = .now
        }
    }
}
