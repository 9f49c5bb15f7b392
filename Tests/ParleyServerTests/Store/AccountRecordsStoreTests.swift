import Foundation
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// The small records beside the chat: signing keys, revoked sessions, registrations waiting
/// for their emailed link, and the store's identity. Each is state every node shares, so a
/// mistake here signs people out, lets a revoked token back in, or lets one link work twice.
@Suite struct AccountRecordsStoreTests {
    // MARK: Signing keys

    @Test(arguments: StoreKind.available)
    func aKeysSecretAndTimesSurviveTheStoreExactly(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            // A configured secret is arbitrary text; it must come back byte for byte.
            let secret = Array("päss/+= 🔑 with \"quotes\" and 'apostrophes' and \\ backslash ~32 bytes+".utf8)
            let key = SigningKey.derived(from: secret, now: t0)
            let stored = try await store.ensureSigningKey(key)
            #expect(stored == [key])
            #expect(try await store.signingKeys().first?.secret == secret)
            // Derived kids are stable: the same secret on another node names the same key.
            #expect(SigningKey.derived(from: secret, now: t0.addingTimeInterval(99)).kid == key.kid)
        }
    }

    @Test(arguments: StoreKind.available)
    func retiringTheOnlyLiveKeyLetsTheNextStartMakeANewOne(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let first = SigningKey.generate(now: t0)
            #expect(try await store.ensureSigningKey(first).map(\.kid) == [first.kid])
            let retiredAt = t0.addingTimeInterval(60)
            #expect(try await store.retireSigningKey(kid: first.kid, at: retiredAt))
            // No live key now: ensure adds the candidate, and the retired key is kept (oldest first).
            let second = SigningKey.generate(now: t0.addingTimeInterval(120))
            let keys = try await store.ensureSigningKey(second)
            #expect(keys.map(\.kid) == [first.kid, second.kid])
            #expect(keys[0].retiredAt == retiredAt && !keys[0].isLive)
            #expect(keys[1].isLive)
            // A key added with an earlier creation time still lists by creation time.
            let backdated = SigningKey(kid: "backdated", secret: Array(repeating: 7, count: 32), createdAt: t0.addingTimeInterval(-5))
            try await store.addSigningKey(backdated)
            #expect(try await store.signingKeys().map(\.kid) == ["backdated", first.kid, second.kid])
            // Adding a kid that exists is refused and changes nothing.
            await #expect(throws: (any Error).self) {
                try await store.addSigningKey(SigningKey(kid: second.kid, secret: Array(repeating: 1, count: 32), createdAt: t0))
            }
            #expect(try await store.signingKeys().last == second)
        }
    }

    // MARK: Revoked sessions

    @Test(arguments: StoreKind.available)
    func aRevokedSessionIsListedUntilItsTokensExpire(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            #expect(try await store.revokedSessions(now: t0).isEmpty)
            let expires = t0.addingTimeInterval(900)
            try await store.revokeSession("sid-1", userId: alice.id, expiresAt: expires, at: t0)
            #expect(try await store.revokedSessions(now: t0) == ["sid-1": expires])
            #expect(try await store.revokedSessions(now: expires.addingTimeInterval(-0.001)) == ["sid-1": expires])
            // At its expiry the token is refused anyway: no longer listed.
            #expect(try await store.revokedSessions(now: expires).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func revokingTwiceKeepsTheFirstExpiryAndOldRowsGo(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            try await store.revokeSession("sid", userId: alice.id, expiresAt: t0.addingTimeInterval(900), at: t0)
            // A second logout of the same session (another node, a retry) is no error.
            try await store.revokeSession("sid", userId: alice.id, expiresAt: t0.addingTimeInterval(5000), at: t0.addingTimeInterval(1))
            #expect(try await store.revokedSessions(now: t0) == ["sid": t0.addingTimeInterval(900)])
            try await store.revokeSession("short", userId: alice.id, expiresAt: t0.addingTimeInterval(10), at: t0)
            #expect(try await store.revokedSessions(now: t0).count == 2)
            // A revocation after both expired drops their rows, so the same id can be revoked anew.
            let later = t0.addingTimeInterval(1000)
            try await store.revokeSession("sid", userId: alice.id, expiresAt: later.addingTimeInterval(900), at: later)
            #expect(try await store.revokedSessions(now: later) == ["sid": later.addingTimeInterval(900)])
            #expect(try await store.revokedSessions(now: t0) == ["sid": later.addingTimeInterval(900)])
        }
    }

    // MARK: Pending registrations

    static func pending(_ hash: String, _ organization: EntityID, email: String = "new@x.io", created: Date = t0, expiresIn: TimeInterval = 3600)
        -> PendingRegistration
    {
        PendingRegistration(
            tokenHash: hash, organizationId: organization, organizationName: "Acme", email: email, displayName: "Zoë Ünicode",
            passwordHash: "argon:\(hash)", createdAt: created, expiresAt: created.addingTimeInterval(expiresIn))
    }

    @Test(arguments: StoreKind.available)
    func aLinkWorksOnceAndNotAfterItExpires(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let admin = try await register(store, "admin@x.io")
            let waiting = Self.pending("link-1", admin.organizationId)
            try await store.savePendingRegistration(waiting)
            #expect(try await store.takePendingRegistration(tokenHash: "other", now: t0) == nil)
            #expect(try await store.takePendingRegistration(tokenHash: "link-1", now: t0.addingTimeInterval(10)) == waiting)
            #expect(try await store.takePendingRegistration(tokenHash: "link-1", now: t0.addingTimeInterval(10)) == nil)

            // An expired link answers nothing, and is gone after (it cannot be retried later either).
            let expiring = Self.pending("link-2", admin.organizationId, email: "late@x.io", expiresIn: 60)
            try await store.savePendingRegistration(expiring)
            #expect(try await store.takePendingRegistration(tokenHash: "link-2", now: expiring.expiresAt) == nil)
            #expect(try await store.takePendingRegistration(tokenHash: "link-2", now: t0) == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func aNewRequestReplacesTheOldLinkForThatEmailOnly(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let acme = try await register(store, "admin@x.io").organizationId
            let other = try await register(store, "admin@y.io", organization: "Other").organizationId
            try await store.savePendingRegistration(Self.pending("old", acme))
            try await store.savePendingRegistration(Self.pending("same-email-other-org", other))
            try await store.savePendingRegistration(Self.pending("another-email", acme, email: "else@x.io"))
            try await store.savePendingRegistration(Self.pending("new", acme, created: t0.addingTimeInterval(5)))
            let now = t0.addingTimeInterval(10)
            // The first link stopped working when the second was asked for.
            #expect(try await store.takePendingRegistration(tokenHash: "old", now: now) == nil)
            #expect(try await store.takePendingRegistration(tokenHash: "new", now: now)?.createdAt == t0.addingTimeInterval(5))
            #expect(try await store.takePendingRegistration(tokenHash: "same-email-other-org", now: now)?.organizationId == other)
            #expect(try await store.takePendingRegistration(tokenHash: "another-email", now: now)?.email == "else@x.io")
        }
    }

    @Test(arguments: StoreKind.available)
    func savingDropsExpiredRegistrationsOfEveryone(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let acme = try await register(store, "admin@x.io").organizationId
            try await store.savePendingRegistration(Self.pending("stale", acme, email: "a@x.io", expiresIn: 60))
            try await store.savePendingRegistration(Self.pending("fresh", acme, email: "b@x.io", expiresIn: 7200))
            // A save an hour later sweeps the stale one out of the table.
            try await store.savePendingRegistration(Self.pending("later", acme, email: "c@x.io", created: t0.addingTimeInterval(3600)))
            // "stale" is gone even for a clock that would still accept it.
            #expect(try await store.takePendingRegistration(tokenHash: "stale", now: t0) == nil)
            #expect(try await store.takePendingRegistration(tokenHash: "fresh", now: t0.addingTimeInterval(3600)) != nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func tenClicksOnOneLinkRegisterOnce(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let acme = try await register(store, "admin@x.io").organizationId
            try await store.savePendingRegistration(Self.pending("clicked", acme))
            let taken = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<10 {
                    group.addTask { try await store.takePendingRegistration(tokenHash: "clicked", now: t0) != nil }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(taken == 1)
        }
    }

    // MARK: Store identity

    @Test(arguments: StoreKind.available)
    func theIdentityIsStableAcrossReopeningAndChangesOnlyWhenRenewed(kind: StoreKind) async throws {
        let fixture = try await StoreFixture.make(kind)
        do {
            let first = try await fixture.open()
            let identity = try await first.storeIdentity()
            #expect(identity.count == 32 && identity.allSatisfy { $0.isHexDigit && !$0.isUppercase })
            #expect(try await first.storeIdentity() == identity)
            try await first.close()

            let second = try await fixture.open()
            #expect(try await second.storeIdentity() == identity)
            let renewed = try await second.renewStoreIdentity()
            #expect(renewed != identity && renewed.count == 32)
            #expect(try await second.storeIdentity() == renewed)
            try await second.close()

            let third = try await fixture.open()
            #expect(try await third.storeIdentity() == renewed)
            try await third.close()
        } catch {
            await fixture.destroy()
            throw error
        }
        await fixture.destroy()
    }
}
