import Foundation
import ParleyProtocol
import ParleyStorage
import ParleyRules

/// The organization's record of admin actions: roles, deactivation, erasure, invites,
/// domains, retention, reports handled, messages deleted and participants removed by an admin.
///
/// An entry is written after the action it records and before the action is answered: a
/// failure to write it fails the request (the admin sees an error and may look again), so an
/// answered action is always on record.
public struct AuditLog: Sendable {
    let store: any ParleyStore
    let now: @Sendable () -> Date

    /// The audit log over `store`, stamping entries with `now`.
    public init(store: any ParleyStore, now: @escaping @Sendable () -> Date = Date.init) {
        self.store = store
        self.now = now
    }

    /// Records that `actor` did `action` to `target`, with short facts in `detail`.
    public func record(_ action: Action, by actor: Identity, target: String? = nil, detail: String? = nil) async throws {
        let at = now()
        try await store.recordAudit(
            AuditEntry(id: .timeOrdered(at: at), actorId: actor.userId, action: action.rawValue, targetId: target, at: at.wholeMilliseconds, detail: detail),
            organizationId: actor.organizationId)
    }

    /// The actions the log records.
    public enum Action: String, Sendable, CaseIterable {
        /// A member's role changed (detail: the new role).
        case roleChanged = "role.changed"
        /// A member was deactivated.
        case userDeactivated = "user.deactivated"
        /// A member was erased (GDPR article 17).
        case userErased = "user.erased"
        /// Every sign-in of a member was ended.
        case userSignedOut = "user.signed_out"
        /// An invite was made (target: its code).
        case inviteCreated = "invite.created"
        /// An invite was withdrawn (target: its code).
        case inviteDeleted = "invite.deleted"
        /// The allowed email domains changed (detail: the new list).
        case domainsChanged = "domains.changed"
        /// The message retention changed (detail: days, or `off`).
        case retentionChanged = "retention.changed"
        /// A report was resolved.
        case reportResolved = "report.resolved"
        /// A report was dismissed.
        case reportDismissed = "report.dismissed"
        /// A handled report was opened again.
        case reportReopened = "report.reopened"
        /// An admin deleted someone else's message (detail: its conversation).
        case messageDeleted = "message.deleted"
        /// An admin removed someone else from a group (detail: the conversation).
        case participantRemoved = "participant.removed"
    }
}
