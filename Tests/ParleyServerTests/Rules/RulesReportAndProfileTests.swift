import Foundation
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing

/// ReportRules and ProfileRules on both stores, at the rules' level: a report names only what
/// its reporter can see (a message of their conversations, a person of their organization,
/// still active), a system message blames nobody; a picture is one's own image upload, and
/// the picture it replaces is left for the collector while the organization (and only it)
/// can see the new one.
@Suite(.serialized) struct RulesReportAndProfileTests {
    static let later = RulesWorld.now.addingTimeInterval(90)

    static func identity(_ user: User) -> Identity { Identity(userId: user.id, organizationId: user.organizationId) }

    static func report(_ request: CreateReportRequest, by user: User, in store: any ParleyStore) async throws -> Report {
        try await store.reading { tx in try await ReportRules.report(request, by: identity(user), now: later, in: tx) }
    }

    static func upload(_ world: RulesWorld, by user: User, type: String) async throws -> StoredAttachment {
        let attachment = StoredAttachment(
            id: EntityID(), uploaderId: user.id, organizationId: user.organizationId, name: "me", contentType: type, size: 3,
            sha256: String(repeating: "a", count: 64), createdAt: RulesWorld.now)
        try await world.store.createAttachment(attachment)
        return attachment
    }

    static func setProfile(_ change: UpdateProfileRequest, of user: User, in store: any ParleyStore) async throws {
        try await store.writing { tx in try await ProfileRules.update(user.id, change, in: tx) }
    }

    /// The profile as the rules read it: `profile(of:)` locks the row (PostgreSQL `FOR UPDATE`),
    /// so it is read in a write transaction, as `ProfileRules.update` reads it.
    static func profile(of user: User, in store: any ParleyStore) async throws -> (displayName: String, avatarId: EntityID?)? {
        try await store.writing { tx in try await tx.profile(of: user.id) }
    }

    // MARK: Reports

    /// A message's report blames its sender unless a person is named; it carries the
    /// conversation, the reason trimmed, and starts open.
    @Test(arguments: StoreKind.available)
    func aReportOfAMessageNamesItsSender(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            let rude = try await world.send("rude", by: world.alice, in: world.group)
            let report = try await Self.report(.init(messageId: rude.id, reason: "  insulting \n"), by: world.bob, in: store)
            #expect(report.userId == world.alice.id && report.conversationId == world.group.id && report.messageId == rude.id)
            #expect(report.reason == "insulting" && report.status == .open && report.reporterId == world.bob.id)
            #expect(report.createdAt == Self.later.wholeMilliseconds)
            let named = try await Self.report(.init(messageId: rude.id, userId: world.carol.id, reason: "she quoted it"), by: world.bob, in: store)
            #expect(named.userId == world.carol.id, "a person named is kept")
        }
    }

    /// A system message ("Alice renamed the group") has no author to blame.
    @Test(arguments: StoreKind.available)
    func aReportOfASystemMessageBlamesNobody(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            let system = try #require(try await store.rename(conversationId: world.group.id, by: world.alice.id, to: "x", now: RulesWorld.now).systemMessage)
            let report = try await Self.report(.init(messageId: system.id, reason: "odd name"), by: world.bob, in: store)
            #expect(report.userId == nil && report.conversationId == world.group.id)
        }
    }

    /// What the reporter cannot see does not exist for them: another conversation's message,
    /// another organization's message or person, an unknown id, a deactivated member.
    @Test(arguments: StoreKind.available)
    func aReportNamesOnlyWhatTheReporterCanSee(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            let direct = try await world.send("private", by: world.alice, in: world.direct)
            let foreign = try await world.send("abroad", by: world.dave, in: world.foreign)
            #expect(try await store.deactivate(userId: world.carol.id, organizationId: world.carol.organizationId, now: RulesWorld.now) { _ in })
            let refused: [(String, User, CreateReportRequest)] = [
                ("a conversation the reporter is not in", world.carol, .init(messageId: direct.id, reason: "r")),
                ("another organization's message", world.alice, .init(messageId: foreign.id, reason: "r")),
                ("an unknown message", world.alice, .init(messageId: EntityID(), reason: "r")),
                ("another organization's person", world.alice, .init(userId: world.dave.id, reason: "r")),
                ("an unknown person", world.alice, .init(userId: EntityID(), reason: "r")),
                ("a deactivated member", world.alice, .init(userId: world.carol.id, reason: "r")),
            ]
            for (what, reporter, request) in refused {
                #expect(await world.code { try await Self.report(request, by: reporter, in: store) } == .notFound, "\(what)")
            }
        }
    }

    /// A reason is 1-1000 characters (as people count them) after trimming, without NUL;
    /// a report names something.
    @Test(arguments: StoreKind.available)
    func aReasonIsOneToAThousandCharacters(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            let person = CreateReportRequest(userId: world.bob.id, reason: String(repeating: "👎🏽", count: 1000))
            #expect(try await Self.report(person, by: world.alice, in: store).reason.count == 1000)
            for reason in ["", "  \n ", String(repeating: "x", count: 1001), "bad\u{0}word"] {
                let request = CreateReportRequest(userId: world.bob.id, reason: reason)
                #expect(await world.code { try await Self.report(request, by: world.alice, in: store) } == .invalidRequest, "\(reason.prefix(8))")
            }
            #expect(await world.code { try await Self.report(.init(reason: "nothing named"), by: world.alice, in: store) } == .invalidRequest)
        }
    }

    // MARK: Pictures

    /// Only one's own image: someone else's upload or an unknown id does not exist, a file
    /// that is not an image is refused; a refusal changes neither name nor picture.
    @Test(arguments: StoreKind.available)
    func aPictureIsOnesOwnImage(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            let bobs = try await Self.upload(world, by: world.bob, type: "image/png")
            let pdf = try await Self.upload(world, by: world.alice, type: "application/pdf")
            let cases: [(UpdateProfileRequest, ErrorCode)] = [
                (.init(displayName: "Alice B", avatar: .set(bobs.id)), .notFound), (.init(avatar: .set(EntityID())), .notFound),
                (.init(displayName: "Alice B", avatar: .set(pdf.id)), .invalidRequest), (.init(), .invalidRequest),
                (.init(displayName: "Alice\u{1B}[2J"), .invalidRequest), (.init(displayName: "   "), .invalidRequest),
            ]
            for (change, code) in cases {
                #expect(await world.code { try await Self.setProfile(change, of: world.alice, in: store) } == code)
            }
            let profile = try await Self.profile(of: world.alice, in: store)
            #expect(profile?.displayName == "alice" && profile?.avatarId == nil, "nothing changed")
            let jpeg = try await Self.upload(world, by: world.alice, type: "IMAGE/JPEG")
            try await Self.setProfile(.init(displayName: "  Alice B  ", avatar: .set(jpeg.id)), of: world.alice, in: store)
            let changed = try await Self.profile(of: world.alice, in: store)
            #expect(changed?.displayName == "Alice B" && changed?.avatarId == jpeg.id)
        }
    }

    /// A picture is seen by its owner's organization only; the one it replaces, and a
    /// removed one, are left to the collector, while one set again is not.
    @Test(arguments: StoreKind.available)
    func aReplacedPictureIsLeftForTheCollector(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            let first = try await Self.upload(world, by: world.alice, type: "image/png")
            let second = try await Self.upload(world, by: world.alice, type: "image/webp")
            func visible(_ id: EntityID, to user: User) async throws -> Bool {
                try await store.reading { tx in try await AttachmentRules.visible(id, to: user.id, in: tx) } != nil
            }
            func orphans() async throws -> Set<EntityID> { Set(try await store.orphanedAttachments(limit: 100).map(\.id)) }

            try await Self.setProfile(.init(avatar: .set(first.id)), of: world.alice, in: store)
            #expect(try await visible(first.id, to: world.bob))
            #expect(try await !visible(first.id, to: world.dave), "another organization does not see it")
            #expect(try await !visible(second.id, to: world.bob), "an upload that is no picture stays private")
            try await Self.setProfile(.init(avatar: .set(first.id)), of: world.alice, in: store)
            #expect(try await orphans().isEmpty, "the same picture again is not replaced")

            try await Self.setProfile(.init(avatar: .set(second.id)), of: world.alice, in: store)
            #expect(try await orphans() == [first.id])
            #expect(try await !visible(first.id, to: world.bob))
            #expect(try await visible(second.id, to: world.carol))

            try await Self.setProfile(.init(avatar: .remove), of: world.alice, in: store)
            #expect(try await orphans() == [first.id, second.id])
            #expect(try await !visible(second.id, to: world.bob))
            #expect(try await visible(second.id, to: world.alice), "the uploader keeps it")
        }
    }
}
