import Foundation
import ParleyProtocol
import Synchronization
import ParleyStorage

/// Whether each user may act, kept in memory so authenticating a request reads no database:
/// a user is read from the store once, and a deactivation updates the entry on the node that
/// did it and, through the cluster link, on every other node.
public final class AccountStates: Sendable {
    private let states = Mutex<[EntityID: UserState]>([:])
    private let store: any ParleyStore

    /// States read from `store` on first use.
    public init(store: any ParleyStore) { self.store = store }

    /// The user's organization and whether they are active; nil when there is no such user.
    public func state(of userId: EntityID) async throws -> UserState? {
        if let known = states.withLock({ $0[userId] }) { return known }
        guard let loaded = try await store.userState(id: userId) else { return nil }
        // A deactivation that raced this read wins: never turn an inactive entry active.
        return states.withLock { states in
            if let known = states[userId] { return known }
            states[userId] = loaded
            return loaded
        }
    }

    /// Whether the user is known here to be deactivated (memory only: for checks on every frame).
    public func isKnownInactive(_ userId: EntityID) -> Bool {
        states.withLock { $0[userId].map { !$0.isActive } ?? false }
    }

    /// Records a deactivation (from this node's route or another node's record).
    public func deactivated(_ userId: EntityID, organizationId: EntityID) {
        states.withLock { $0[userId] = UserState(organizationId: organizationId, isActive: false) }
    }
}
