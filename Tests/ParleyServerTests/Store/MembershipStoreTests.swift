import Foundation
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// Joining and leaving an organization at the store: a refused registration writes nothing
/// (not even the organization it would have created), an invite's uses are counted once per
/// admitted person even when many use its last place at once, and role changes and
/// deactivations never leave an organization without an active admin, however they race.
@Suite struct MembershipStoreTests {
    struct Refused: Error {}

    static func registration(_ email: String, organization: String = "acme", invite: String? = nil) -> Registration {
        Registration(organization: organization, email: email, displayName: email, passwordHash: "h", inviteCode: invite, now: t0)
    }

    /// The invite rule in small: a live invite with a place left admits a member and uses a place.
    static let byInvite: @Sendable (Organization?, Invite?) throws -> Admission = { organization, invite in
        guard organization != nil, let invite, invite.uses < invite.maxUses else { throw Refused() }
        return Admission(role: .member, usesInvite: true)
    }

    /// Refuses the change when it would leave no active admin.
    static let keepsAnAdmin: @Sendable (Int) throws -> Void = { admins in
        if admins < 1 { throw Refused() }
    }

    static func invite(_ code: String, of admin: User, places: Int) -> Invite {
        Invite(code: code, organizationId: admin.organizationId, email: nil, maxUses: places, uses: 0, expiresAt: t0.addingTimeInterval(86_400), createdBy: admin.id)
    }

    @Test(arguments: StoreKind.available)
    func aRefusedRegistrationCreatesNoOrganization(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            await #expect(throws: Refused.self) {
                try await store.register(Self.registration("first@x.io", organization: "Closed")) { _, _ in throw Refused() }
            }
            // The name is still free: the next registration founds it, as its admin.
            let founder = try await store.register(Self.registration("first@x.io", organization: "CLOSED")) { organization, _ in
                if organization != nil { throw Refused() }
                return Admission(role: .admin)
            }
            #expect(founder.role == .admin)
            #expect(try await store.organization(id: founder.organizationId)?.name == "CLOSED")
            // Matched without case from then on; a refused joiner leaves no user behind.
            await #expect(throws: Refused.self) { try await store.register(Self.registration("second@x.io", organization: "closed"), admit: Self.byInvite) }
            #expect(try await store.credentials(organization: "closed", email: "second@x.io") == nil)
            #expect(try await store.users(organizationId: founder.organizationId, matching: nil, limit: 10).map(\.id) == [founder.id])
        }
    }

    @Test(arguments: StoreKind.available)
    func anInviteIsUsedOnlyByRegistrationsThatSucceed(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let admin = try await register(store, "admin@x.io")
            let other = try await register(store, "admin@y.io", organization: "other")
            try await store.createInvite(Self.invite("JOIN", of: admin, places: 3))
            try await store.createInvite(Self.invite("THEIRS", of: other, places: 3))

            let joined = try await store.register(Self.registration("a@x.io", invite: "JOIN"), admit: Self.byInvite)
            #expect(joined.role == .member && joined.organizationId == admin.organizationId)
            // A taken email is refused after the rule admitted it: the place is not used up.
            let taken = await #expect(throws: ChatError.self) {
                try await store.register(Self.registration("a@x.io", invite: "JOIN"), admit: Self.byInvite)
            }
            #expect(taken?.code == .conflict)
            // Another organization's code is no invite here.
            await #expect(throws: Refused.self) { try await store.register(Self.registration("b@x.io", invite: "THEIRS"), admit: Self.byInvite) }
            // A rule that admits without using the invite leaves its count alone.
            _ = try await store.register(Self.registration("c@x.io", invite: "JOIN")) { _, _ in Admission(role: .member, usesInvite: false) }
            let invites = try await store.invites(organizationId: admin.organizationId)
            #expect(invites.map(\.code) == ["JOIN"] && invites.first?.uses == 1)
            #expect(try await store.invites(organizationId: other.organizationId).first?.uses == 0)
        }
    }

    @Test(arguments: StoreKind.available)
    func manyPeopleOnAnInvitesLastPlacesAreAdmittedUpToItsLimit(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let admin = try await register(store, "admin@x.io")
            try await store.createInvite(Self.invite("LAST", of: admin, places: 2))
            let admitted = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        (try? await store.register(Self.registration("p\(index)@x.io", invite: "LAST"), admit: Self.byInvite)) != nil
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(admitted == 2)
            #expect(try await store.invites(organizationId: admin.organizationId).first?.uses == 2)
            #expect(try await store.users(organizationId: admin.organizationId, matching: nil, limit: 20).count == 3)
        }
    }

    @Test(arguments: StoreKind.available)
    func aRefusedRoleChangeOrDeactivationChangesNothing(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let admin = try await register(store, "admin@x.io")
            let bob = try await register(store, "bob@x.io")
            try await store.registerDevice(token: "admin-phone", userId: admin.id, platform: "ios", environment: .sandbox, now: t0)
            await #expect(throws: Refused.self) {
                try await store.setRole(.member, userId: admin.id, organizationId: admin.organizationId, check: Self.keepsAnAdmin)
            }
            await #expect(throws: Refused.self) {
                try await store.deactivate(userId: admin.id, organizationId: admin.organizationId, now: t0, check: Self.keepsAnAdmin)
            }
            #expect(try await store.user(id: admin.id)?.role == .admin)
            #expect(try await store.userState(id: admin.id)?.isActive == true)
            #expect(try await store.devices(userId: admin.id).count == 1)
            // Not this organization's user, or not active: nil/false, and the check is not asked.
            #expect(try await store.setRole(.admin, userId: bob.id, organizationId: EntityID()) { _ in throw Refused() } == nil)
            #expect(try await store.deactivate(userId: bob.id, organizationId: bob.organizationId, now: t0, check: Self.keepsAnAdmin))
            #expect(try await store.setRole(.admin, userId: bob.id, organizationId: bob.organizationId) { _ in throw Refused() } == nil)
            #expect(try await !store.deactivate(userId: bob.id, organizationId: bob.organizationId, now: t0) { _ in throw Refused() })
        }
    }

    /// Two admins, each removing the other at the same moment: at most one may win.
    static func raceTwoAdmins(
        _ store: any ParleyStore, rounds: Int,
        _ remove: @escaping @Sendable (any ParleyStore, User) async throws -> Void
    ) async throws {
        for round in 0..<rounds {
            let founder = try await register(store, "founder\(round)@x.io", organization: "race-\(round)")
            let second = try await register(store, "second\(round)@x.io", organization: "race-\(round)")
            _ = try await store.setRole(.admin, userId: second.id, organizationId: second.organizationId) { _ in }
            let outcomes = await withTaskGroup(of: Bool.self) { group in
                for target in [founder, second] {
                    group.addTask { (try? await remove(store, target)) != nil }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            let left = try await store.users(organizationId: founder.organizationId, matching: nil, limit: 10).filter { $0.role == .admin }
            #expect(outcomes.filter { $0 }.count == 1, "round \(round): \(outcomes)")
            #expect(left.count == 1, "round \(round): the organization kept \(left.count) active admins")
        }
    }

    @Test(arguments: StoreKind.available)
    func twoAdminsDemotingEachOtherAtOnceLeaveOne(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await Self.raceTwoAdmins(store, rounds: 6) { store, target in
                _ = try await store.setRole(.member, userId: target.id, organizationId: target.organizationId, check: Self.keepsAnAdmin)
            }
        }
    }

    @Test(arguments: StoreKind.available)
    func twoAdminsDeactivatingEachOtherAtOnceLeaveOne(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            try await Self.raceTwoAdmins(store, rounds: 6) { store, target in
                _ = try await store.deactivate(userId: target.id, organizationId: target.organizationId, now: t0, check: Self.keepsAnAdmin)
            }
        }
    }
}
