import Foundation
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import Testing

/// Who may join an organization and what keeps it governable (`ParleyRules/Membership.swift`), the
/// pure rules alone: invites at their edges (expiry to the millisecond, the last use, the
/// named email, another organization's code), allowed domains matched whole, the domain list
/// an admin gives, the last admin, and the invites an admin may create.
@Suite struct ServerMembershipRulesTests {
    static let now = Date(timeIntervalSince1970: 1_760_000_000)
    static let acme = Organization(id: EntityID(), name: "acme", allowedEmailDomains: ["corp.test"], createdAt: now)
    static let globex = Organization(id: EntityID(), name: "globex", allowedEmailDomains: [], createdAt: now)

    static func invite(
        organization: Organization = acme, email: String? = nil, maxUses: Int = 5, uses: Int = 0, expiresAt: Date = now.addingTimeInterval(3600)
    ) -> Invite {
        Invite(code: "code", organizationId: organization.id, email: email, maxUses: maxUses, uses: uses, expiresAt: expiresAt, createdBy: EntityID())
    }

    /// The admission of one registration, or nil when refused with `forbidden`.
    static func admission(_ email: String, to organization: Organization?, invite: Invite? = nil, open: Bool = false) -> Admission? {
        do {
            return try Membership.admit(email: email, to: organization, invite: invite, open: open, now: now)
        } catch let error as ChatError {
            #expect(error.code == .forbidden)
            return nil
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test func theFounderOfANewOrganizationIsItsAdmin() {
        #expect(Self.admission("anyone@anywhere.test", to: nil) == Admission(role: .admin))
        #expect(Self.admission("anyone@anywhere.test", to: nil, invite: Self.invite()) == Admission(role: .admin), "no invite is used")
    }

    /// A valid invite admits as a member and counts a use; each way of being invalid refuses.
    @Test func invitesAdmitOnlyWhileValidForThisOrganization() {
        let member = Admission(role: .member, usesInvite: true)
        #expect(Self.admission("x@elsewhere.test", to: Self.globex, invite: Self.invite(organization: Self.globex)) == member)
        #expect(Self.admission("x@elsewhere.test", to: Self.globex, invite: Self.invite(organization: Self.globex, maxUses: 1, uses: 0)) == member)
        let refused: [(String, Invite)] = [
            ("another organization's invite", Self.invite(organization: Self.acme)),
            ("used up", Self.invite(organization: Self.globex, maxUses: 3, uses: 3)),
            ("over-used", Self.invite(organization: Self.globex, maxUses: 3, uses: 4)),
            ("expired a second ago", Self.invite(organization: Self.globex, expiresAt: Self.now.addingTimeInterval(-1))),
            ("expiring right now", Self.invite(organization: Self.globex, expiresAt: Self.now)),
            ("for someone else", Self.invite(organization: Self.globex, email: "y@elsewhere.test")),
        ]
        for (what, invite) in refused {
            #expect(Self.admission("x@elsewhere.test", to: Self.globex, invite: invite) == nil, "\(what)")
        }
        #expect(Self.admission("x@elsewhere.test", to: Self.globex, invite: Self.invite(organization: Self.globex, expiresAt: Self.now.addingTimeInterval(0.001))) == member,
                "a millisecond left is still valid")
        #expect(Self.admission("y@elsewhere.test", to: Self.globex, invite: Self.invite(organization: Self.globex, email: "y@elsewhere.test")) == member)
    }

    /// An invalid invite does not stop another way in: the organization's own domain, or open
    /// registration; those use no invite.
    @Test func domainsAndOpenRegistrationAdmitWithoutUsingAnInvite() {
        let member = Admission(role: .member)
        #expect(Self.admission("kim@corp.test", to: Self.acme) == member)
        #expect(Self.admission("Kim@CORP.test", to: Self.acme) == member, "the domain is matched case-insensitively")
        #expect(Self.admission("kim@corp.test", to: Self.acme, invite: Self.invite(uses: 5)) == member, "a used-up invite does not block the domain")
        #expect(Self.admission("kim@elsewhere.test", to: Self.globex, open: true) == member)
        #expect(Self.admission("kim@elsewhere.test", to: Self.globex, invite: Self.invite(organization: Self.globex), open: true)
            == Admission(role: .member, usesInvite: true), "a valid invite is counted even when open")
    }

    /// Only the whole domain: lookalikes, subdomains and parents are strangers.
    @Test(arguments: [
        "kim@corp.test.evil.test", "kim@evilcorp.test", "kim@sub.corp.test", "kim@test", "kim@corp.tes", "kim@corp-test",
        "corp.test@evil.test", "kim@", "kim", "",
    ])
    func lookalikeDomainsAreRefused(email: String) {
        #expect(Self.admission(email, to: Self.acme) == nil)
    }

    @Test(arguments: [
        ("kim@corp.test", "corp.test"), ("Kim@Corp.Test", "corp.test"), ("a@b@corp.test", "corp.test"), ("nobody", "nobody"), ("", ""),
        ("kim@", "kim"),
    ])
    func theDomainOfAnEmail(email: String, domain: String) {
        #expect(Membership.domain(of: email) == domain)
    }

    /// What an admin writes as allowed domains is cleaned (trimmed, lowercased, no leading
    /// `@`, duplicates once, order kept) or refused as a whole.
    @Test func allowedDomainsAreCleanedOrRefused() throws {
        #expect(try Membership.allowedDomains([" @Corp.Test ", "corp.test", "b.example", "CORP.TEST", "xn--bcher-kva.example"])
            == ["corp.test", "b.example", "xn--bcher-kva.example"])
        #expect(try Membership.allowedDomains([]) == [])
        let label63 = String(repeating: "a", count: 63)
        #expect(try Membership.allowedDomains(["\(label63).test"]) == ["\(label63).test"])
        let fifty = (0..<50).map { "d\($0).test" }
        #expect(try Membership.allowedDomains(fifty).count == 50)
        for bad in [["corp"], ["corp..test"], [".corp.test"], ["corp.test."], ["co rp.test"], ["a_b.test"], ["\(label63)a.test"], [""], ["@"],
                    ["corp.test", "nope"], ["*.corp.test"], ["corp.test/x"], (0..<51).map { "d\($0).test" }] {
            let error = #expect(throws: ChatError.self) { try Membership.allowedDomains(bad) }
            #expect(error?.code == .invalidRequest, "\(bad.prefix(2))")
        }
    }

    /// The last admin cannot go: a change leaving none is a conflict; one left is enough.
    @Test func anOrganizationKeepsAnAdmin() throws {
        let error = #expect(throws: ChatError.self) { try Membership.keepsAnAdmin(adminsAfter: 0) }
        #expect(error?.code == .conflict)
        #expect(throws: ChatError.self) { try Membership.keepsAnAdmin(adminsAfter: -1) }
        try Membership.keepsAnAdmin(adminsAfter: 1)
        try Membership.keepsAnAdmin(adminsAfter: 7)
    }

    @Test func onlyAdminsManage() throws {
        let admin = User(id: EntityID(), organizationId: Self.acme.id, email: "a@corp.test", displayName: "A", role: .admin)
        try Membership.requireAdmin(admin)
        for user in [nil, User(id: EntityID(), organizationId: Self.acme.id, email: "m@corp.test", displayName: "M", role: .member),
                     User(id: EntityID(), organizationId: Self.acme.id, email: "o@corp.test", displayName: "O", role: nil)] as [User?] {
            let error = #expect(throws: ChatError.self) { try Membership.requireAdmin(user) }
            #expect(error?.code == .forbidden)
        }
    }

    /// An invite as asked: 1 use and a week by default, the bounds at their edges, an email
    /// normalized, the expiry in whole milliseconds.
    @Test func invitesAreCreatedWithinTheirBounds() throws {
        let admin = EntityID()
        let now = Date(timeIntervalSince1970: 1_760_000_000.1234)
        let plain = try Membership.invite(CreateInviteRequest(), organizationId: Self.acme.id, by: admin, now: now)
        #expect(plain.maxUses == 1 && plain.uses == 0 && plain.email == nil && plain.createdBy == admin && plain.organizationId == Self.acme.id)
        #expect(plain.expiresAt.millisecondsSince1970 == 1_760_604_800_123 && plain.expiresAt == plain.expiresAt.wholeMillisecondsServer)
        #expect(plain.code.count == 43)
        let edges = try Membership.invite(.init(email: " Kim@Corp.Test ", maxUses: 1000, expiresInHours: 2160), organizationId: Self.acme.id, by: admin, now: now)
        #expect(edges.email == "kim@corp.test" && edges.maxUses == 1000)
        #expect(abs(edges.expiresAt.timeIntervalSince(now) - 2160 * 3600) < 0.001)
        #expect(try Membership.invite(.init(expiresInHours: 1), organizationId: Self.acme.id, by: admin, now: now).expiresAt > now)
        for bad in [CreateInviteRequest(maxUses: 0), .init(maxUses: 1001), .init(maxUses: -1), .init(expiresInHours: 0), .init(expiresInHours: 2161),
                    .init(email: "not an email"), .init(email: "")] {
            let error = #expect(throws: ChatError.self) { try Membership.invite(bad, organizationId: Self.acme.id, by: admin, now: now) }
            #expect(error?.code == .invalidRequest)
        }
        let codes = try (0..<20).map { _ in try Membership.invite(.init(), organizationId: Self.acme.id, by: admin, now: now).code }
        #expect(Set(codes).count == 20, "every invite has its own code")
    }
}
