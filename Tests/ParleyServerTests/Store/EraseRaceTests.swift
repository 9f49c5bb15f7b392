import Foundation
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// The last-admin rule under erasure: an erasure deactivates, so it is serialized with the
/// organization's other role changes as ``ParleyStore/deactivate(userId:organizationId:now:check:)``
/// is. On PostgreSQL it did not take the organization's row first, and two admins erased at
/// once (or one erased while the other was demoted) could both succeed, leaving none.
@Suite struct EraseRaceTests {
    @Test(arguments: StoreKind.available)
    func twoAdminsErasedAtOnceLeaveOne(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await MembershipStoreTests.raceTwoAdmins(store, rounds: 6) { store, target in
                guard try await store.eraseProfile(
                    userId: target.id, organizationId: target.organizationId, now: t0, check: MembershipStoreTests.keepsAnAdmin)
                else { throw MembershipStoreTests.Refused() }
            }
        }
    }

    @Test(arguments: StoreKind.available)
    func anErasureRacingADemotionLeavesAnAdmin(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await MembershipStoreTests.raceTwoAdmins(store, rounds: 6) { store, target in
                if target.email.hasPrefix("founder") {
                    guard try await store.eraseProfile(
                        userId: target.id, organizationId: target.organizationId, now: t0, check: MembershipStoreTests.keepsAnAdmin)
                    else { throw MembershipStoreTests.Refused() }
                } else {
                    _ = try await store.setRole(.member, userId: target.id, organizationId: target.organizationId, check: MembershipStoreTests.keepsAnAdmin)
                }
            }
        }
    }
}
