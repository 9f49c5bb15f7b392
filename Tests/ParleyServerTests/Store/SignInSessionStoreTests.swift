import Foundation
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// Sign-in sessions as the store keeps them: a refresh token renews a session only while the
/// session is live and only with its current hash (a replayed or raced token must not renew
/// twice), ending is per user and per session, and rows long over are dropped.
@Suite struct SignInSessionStoreTests {
    static let day: TimeInterval = 86_400

    static func session(
        _ id: String, of user: User, hash: String = "h0", created: Date = t0, expiresIn: TimeInterval = 30 * day, label: String? = nil
    ) -> SignInSession {
        SignInSession(
            id: id, userId: user.id, organizationId: user.organizationId, tokenHash: hash, label: label,
            createdAt: created, lastUsedAt: created, expiresAt: created.addingTimeInterval(expiresIn))
    }

    @Test(arguments: StoreKind.available)
    func aSessionRoundTripsEveryFieldToTheMillisecond(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            #expect(try await store.signInSession(id: "missing") == nil)
            let full = SignInSession(
                id: "s-full", userId: alice.id, organizationId: alice.organizationId, tokenHash: "current", previousHash: "before",
                label: "Safari on iPhone — 日本語 ✓", createdAt: t0, lastUsedAt: t0.addingTimeInterval(1.5),
                rotatedAt: t0.addingTimeInterval(1.25), expiresAt: t0.addingTimeInterval(Self.day), endedAt: t0.addingTimeInterval(2))
            try await store.createSignInSession(full)
            #expect(try await store.signInSession(id: "s-full") == full)
            let bare = Self.session("s-bare", of: alice)
            try await store.createSignInSession(bare)
            let stored = try #require(try await store.signInSession(id: "s-bare"))
            #expect(stored == bare)
            #expect(stored.previousHash == nil && stored.rotatedAt == nil && stored.endedAt == nil && stored.label == nil)
            // A second session with a taken id is refused, and the first keeps its token.
            await #expect(throws: (any Error).self) {
                try await store.createSignInSession(Self.session("s-bare", of: alice, hash: "intruder"))
            }
            #expect(try await store.signInSession(id: "s-bare")?.tokenHash == "h0")
        }
    }

    @Test(arguments: StoreKind.available)
    func rotationIsACompareAndSetOnTheCurrentHash(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            try await store.createSignInSession(Self.session("s1", of: alice, hash: "h0"))
            let at = t0.addingTimeInterval(60)
            let later = at.addingTimeInterval(30 * Self.day)
            #expect(try await store.rotateSignInSession(id: "s1", from: "h0", to: "h1", at: at, expiresAt: later))
            let rotated = try #require(try await store.signInSession(id: "s1"))
            #expect(rotated.tokenHash == "h1" && rotated.previousHash == "h0")
            #expect(rotated.rotatedAt == at && rotated.lastUsedAt == at && rotated.expiresAt == later)
            #expect(rotated.createdAt == t0)
            // The old token (a replay) and an unknown one change nothing.
            #expect(try await !store.rotateSignInSession(id: "s1", from: "h0", to: "evil", at: at.addingTimeInterval(1), expiresAt: later))
            #expect(try await !store.rotateSignInSession(id: "s1", from: "nope", to: "evil", at: at.addingTimeInterval(1), expiresAt: later))
            #expect(try await !store.rotateSignInSession(id: "nobody", from: "h1", to: "evil", at: at, expiresAt: later))
            #expect(try await store.signInSession(id: "s1") == rotated)
            // A second rotation moves previousHash along.
            #expect(try await store.rotateSignInSession(id: "s1", from: "h1", to: "h2", at: at.addingTimeInterval(5), expiresAt: later))
            let again = try #require(try await store.signInSession(id: "s1"))
            #expect(again.tokenHash == "h2" && again.previousHash == "h1")
        }
    }

    @Test(arguments: StoreKind.available)
    func anEndedOrExpiredSessionCannotBeRenewed(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let expiring = Self.session("expiring", of: alice, expiresIn: 100)
            try await store.createSignInSession(expiring)
            let far = t0.addingTimeInterval(Self.day)
            // Expiry is exclusive: at the very millisecond it expires, it is over.
            #expect(try await !store.rotateSignInSession(id: "expiring", from: "h0", to: "h1", at: expiring.expiresAt, expiresAt: far))
            #expect(try await store.signInSession(id: "expiring") == expiring)
            #expect(try await store.rotateSignInSession(
                id: "expiring", from: "h0", to: "h1", at: expiring.expiresAt.addingTimeInterval(-0.001), expiresAt: far))

            try await store.createSignInSession(Self.session("ended", of: alice))
            #expect(try await store.endSignInSessions(userId: alice.id, id: "ended", at: t0.addingTimeInterval(1)) == ["ended"])
            #expect(try await !store.rotateSignInSession(id: "ended", from: "h0", to: "h1", at: t0.addingTimeInterval(2), expiresAt: far))
            let ended = try #require(try await store.signInSession(id: "ended"))
            #expect(ended.tokenHash == "h0" && ended.endedAt == t0.addingTimeInterval(1))
            #expect(!ended.isLive(at: t0.addingTimeInterval(2)))
        }
    }

    @Test(arguments: StoreKind.available)
    func ofTenRenewalsWithOneTokenExactlyOneWins(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            try await store.createSignInSession(Self.session("race", of: alice, hash: "shared"))
            let at = t0.addingTimeInterval(10)
            let winners = try await withThrowingTaskGroup(of: String?.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        try await store.rotateSignInSession(
                            id: "race", from: "shared", to: "new-\(index)", at: at, expiresAt: at.addingTimeInterval(Self.day)) ? "new-\(index)" : nil
                    }
                }
                return try await group.reduce(into: [String]()) { if let won = $1 { $0.append(won) } }
            }
            #expect(winners.count == 1)
            let stored = try #require(try await store.signInSession(id: "race"))
            #expect(stored.tokenHash == winners.first && stored.previousHash == "shared")
        }
    }

    @Test(arguments: StoreKind.available)
    func touchOnlyMovesLastUsedForward(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let original = Self.session("s", of: alice)
            try await store.createSignInSession(original)
            try await store.touchSignInSession(id: "s", at: t0.addingTimeInterval(100))
            #expect(try await store.signInSession(id: "s")?.lastUsedAt == t0.addingTimeInterval(100))
            // A late renewal answered out of order does not move it back.
            try await store.touchSignInSession(id: "s", at: t0.addingTimeInterval(50))
            let touched = try #require(try await store.signInSession(id: "s"))
            #expect(touched.lastUsedAt == t0.addingTimeInterval(100))
            // Nothing else changed: the token, its expiry, the rotation.
            #expect(touched.tokenHash == original.tokenHash && touched.expiresAt == original.expiresAt && touched.rotatedAt == nil)
            // Touching an unknown session is no error and creates nothing.
            try await store.touchSignInSession(id: "ghost", at: t0)
            #expect(try await store.signInSession(id: "ghost") == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func theListShowsOnlyTheUsersLiveSessionsNewestFirst(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let mallory = try await register(store, "alice@x.io", organization: "evil")
            try await store.createSignInSession(Self.session("a-old", of: alice, created: t0))
            try await store.createSignInSession(Self.session("a-new", of: alice, created: t0.addingTimeInterval(10)))
            // Two created in the same millisecond come out in id order after the newer ones.
            try await store.createSignInSession(Self.session("a-tie-b", of: alice, created: t0.addingTimeInterval(5)))
            try await store.createSignInSession(Self.session("a-tie-a", of: alice, created: t0.addingTimeInterval(5)))
            try await store.createSignInSession(Self.session("a-short", of: alice, created: t0, expiresIn: 20))
            try await store.createSignInSession(Self.session("a-ended", of: alice, created: t0.addingTimeInterval(20)))
            _ = try await store.endSignInSessions(userId: alice.id, id: "a-ended", at: t0.addingTimeInterval(21))
            try await store.createSignInSession(Self.session("b", of: bob))
            try await store.createSignInSession(Self.session("m", of: mallory))

            let now = t0.addingTimeInterval(30)
            #expect(try await store.signInSessions(userId: alice.id, now: now).map(\.id) == ["a-new", "a-tie-a", "a-tie-b", "a-old"])
            // Before the short one expired, it was listed too.
            #expect(try await store.signInSessions(userId: alice.id, now: t0.addingTimeInterval(19)).map(\.id).contains("a-short"))
            #expect(try await store.signInSessions(userId: bob.id, now: now).map(\.id) == ["b"])
            // Same email, other organization: another user, other sessions.
            #expect(try await store.signInSessions(userId: mallory.id, now: now).map(\.id) == ["m"])
            #expect(try await store.signInSessions(userId: EntityID(), now: now).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func endingTouchesOnlyTheUsersLiveSessions(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            for id in ["a1", "a2", "a3"] { try await store.createSignInSession(Self.session(id, of: alice)) }
            try await store.createSignInSession(Self.session("a-expired", of: alice, expiresIn: 5))
            try await store.createSignInSession(Self.session("b1", of: bob))
            let at = t0.addingTimeInterval(60)

            // One session by id; another user's id is not theirs to end.
            #expect(try await store.endSignInSessions(userId: alice.id, id: "a2", at: at) == ["a2"])
            #expect(try await store.endSignInSessions(userId: alice.id, id: "b1", at: at).isEmpty)
            #expect(try await store.signInSession(id: "b1")?.endedAt == nil)
            // Ending again answers nothing and keeps the first end time.
            #expect(try await store.endSignInSessions(userId: alice.id, id: "a2", at: at.addingTimeInterval(5)).isEmpty)
            #expect(try await store.signInSession(id: "a2")?.endedAt == at)

            // All: the live ones only (the expired one is not "ended" now).
            #expect(Set(try await store.endSignInSessions(userId: alice.id, id: nil, at: at.addingTimeInterval(10))) == ["a1", "a3"])
            #expect(try await store.signInSession(id: "a-expired")?.endedAt == nil)
            #expect(try await store.signInSessions(userId: alice.id, now: at.addingTimeInterval(10)).isEmpty)
            #expect(try await store.signInSessions(userId: bob.id, now: at.addingTimeInterval(10)).map(\.id) == ["b1"])
            #expect(try await store.endSignInSessions(userId: alice.id, id: nil, at: at.addingTimeInterval(20)).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func rowsLongOverAreDroppedOnTheNextEndButNotBefore(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let kept = 30 * Self.day
            try await store.createSignInSession(Self.session("ended-early", of: alice))
            _ = try await store.endSignInSessions(userId: alice.id, id: "ended-early", at: t0)
            try await store.createSignInSession(Self.session("expired-early", of: alice, expiresIn: 1))
            try await store.createSignInSession(Self.session("bob-old", of: bob, expiresIn: 1))
            try await store.createSignInSession(Self.session("live", of: alice, expiresIn: 400 * Self.day))

            // Exactly the kept period after: the rows stay (they still answer "ended" to a replay).
            _ = try await store.endSignInSessions(userId: alice.id, id: "none", at: t0.addingTimeInterval(kept))
            #expect(try await store.signInSession(id: "ended-early") != nil)
            #expect(try await store.signInSession(id: "expired-early") != nil)

            // A little after: alice's old rows go, bob's (another user) and the live one stay.
            _ = try await store.endSignInSessions(userId: alice.id, id: "none", at: t0.addingTimeInterval(kept + 2))
            #expect(try await store.signInSession(id: "ended-early") == nil)
            #expect(try await store.signInSession(id: "expired-early") == nil)
            #expect(try await store.signInSession(id: "bob-old") != nil)
            #expect(try await store.signInSession(id: "live")?.endedAt == nil)
        }
    }
}
