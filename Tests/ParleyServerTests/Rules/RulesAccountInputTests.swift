import Foundation
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import Testing

/// What people give the server about themselves and others (`ParleyRules`): emails as stored
/// (`Membership.email`), a join by domain that must prove the address, names everyone sees
/// (no terminal escape or direction override in another user's screen), a message's mentions,
/// and the random codes handed out as invites and links.
@Suite struct RulesAccountInputTests {
    static func isInvalid(_ body: () throws -> some Any) -> Bool { ServerMessageValidationTests.isInvalid(body) }

    // MARK: Emails

    /// Trimmed and lowercased: one address is one account however it is typed.
    @Test(arguments: [
        ("Kim@Corp.Test", "kim@corp.test"), ("  kim@corp.test\n", "kim@corp.test"), ("kim+chat@sub.corp.test", "kim+chat@sub.corp.test"),
        ("ZOË@Exämple.test", "zoë@exämple.test"), ("a@b.c", "a@b.c"),
    ])
    func emailsAreStoredInOneForm(text: String, stored: String) throws {
        #expect(try Membership.email(text) == stored)
    }

    /// Not one address: no `@`, two, nothing before it, no dot after it or one at its edge,
    /// spaces, controls or direction overrides anywhere.
    @Test(arguments: [
        "", "kim", "@corp.test", "kim@", "kim@corp", "kim@.corp.test", "kim@corp.test.", "kim@@corp.test", "kim@corp@test.test",
        "kim lee@corp.test", "kim@corp .test", "kim\t@corp.test", "kim\u{0}@corp.test", "kim\u{1B}[2J@corp.test",
        "kim\u{202E}@corp.test", "kim\u{2028}@corp.test", "kim\u{85}@corp.test", "kim\u{A0}x@corp.test",
    ])
    func notAnAddressIsRefused(text: String) {
        #expect(Self.isInvalid { try Membership.email(text) }, "\(text.debugDescription)")
    }

    /// 254 characters at most (SMTP's limit on a path), counted after trimming.
    @Test func anEmailIsAtMost254Characters() throws {
        let domain = "@corp.test"
        let longest = String(repeating: "k", count: 254 - domain.count) + domain
        #expect(try Membership.email("  " + longest + " ") == longest)
        #expect(Self.isInvalid { try Membership.email("k" + longest) })
    }

    // MARK: Joining by domain

    static let now = Date(timeIntervalSince1970: 1_760_000_000)
    static let acme = Organization(id: EntityID(), name: "acme", allowedEmailDomains: ["corp.test"], createdAt: now)

    /// With proof required, a domain join is held until the address is proven, and names the
    /// organization it would join; once proven it admits a member.
    @Test func aDomainJoinMustProveTheAddress() throws {
        do {
            _ = try Membership.admit(email: "kim@corp.test", to: Self.acme, invite: nil, open: false, now: Self.now, provingDomainJoins: true)
            Issue.record("admitted without proof")
        } catch let needed as Membership.ProofNeeded {
            #expect(needed.organization.id == Self.acme.id)
        }
        let proven = try Membership.admit(
            email: "kim@corp.test", to: Self.acme, invite: nil, open: false, now: Self.now, provingDomainJoins: true, addressProven: true)
        #expect(proven == Admission(role: .member))
    }

    /// Proof is about the domain only: an invite or open registration admits as before, a
    /// founder needs none, and a stranger's domain is still refused, not asked for proof.
    @Test func proofIsAskedOnlyOfDomainJoins() throws {
        let invite = Invite(
            code: "c", organizationId: Self.acme.id, email: nil, maxUses: 1, uses: 0, expiresAt: Self.now.addingTimeInterval(60), createdBy: EntityID())
        #expect(try Membership.admit(email: "kim@corp.test", to: Self.acme, invite: invite, open: false, now: Self.now, provingDomainJoins: true)
            == Admission(role: .member, usesInvite: true))
        #expect(try Membership.admit(email: "kim@corp.test", to: Self.acme, invite: nil, open: true, now: Self.now, provingDomainJoins: true)
            == Admission(role: .member))
        #expect(try Membership.admit(email: "kim@corp.test", to: nil, invite: nil, open: false, now: Self.now, provingDomainJoins: true)
            == Admission(role: .admin))
        let error = #expect(throws: ChatError.self) {
            try Membership.admit(email: "kim@evil.test", to: Self.acme, invite: nil, open: false, now: Self.now, provingDomainJoins: true, addressProven: true)
        }
        #expect(error?.code == .forbidden)
    }

    // MARK: Names everyone sees

    @Test(arguments: [
        ("Ada Lovelace", "Ada Lovelace"), ("  Ada  ", "Ada"), ("李雷", "李雷"), ("👩‍💻 Ada", "👩‍💻 Ada"), ("Zoë", "Zoë"),
        ("عربي", "عربي"), ("O'Brien-Smith", "O'Brien-Smith"),
    ])
    func ordinaryNamesPass(name: String, stored: String) throws {
        #expect(try MessageValidation.shownName(name, field: "displayName", max: 100) == stored)
    }

    /// A name reaches other people's terminals, notifications and file lists: no control
    /// (an escape sequence, a line break inside it, a C1 CSI) and no direction override.
    @Test(arguments: [
        "Ada\u{1B}[2J", "Ada\u{1B}]8;;https://evil.example\u{7}x", "Ada\nLovelace", "Ada\rx", "A\u{9B}31m", "A\u{7F}", "A\u{0}",
        "invoice\u{202E}fdp.exe", "\u{2066}Ada\u{2069}", "Ada\u{2028}Bob", "Ada\u{2029}x", "Ada\tLovelace",
    ])
    func namesWithControlsOrOverridesAreRefused(name: String) {
        let error = #expect(throws: ChatError.self) { try MessageValidation.shownName(name, field: "displayName", max: 100) }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message.contains("displayName") == true, "the refusal names the field")
    }

    /// The limit is the caller's, in characters as people count them.
    @Test func theLimitIsInCharacters() throws {
        #expect(try MessageValidation.shownName(String(repeating: "👍🏽", count: 100), field: "n", max: 100).count == 100)
        #expect(Self.isInvalid { try MessageValidation.shownName(String(repeating: "a", count: 101), field: "n", max: 100) })
        #expect(Self.isInvalid { try MessageValidation.shownName(" \n ", field: "n", max: 100) })
        #expect(try MessageValidation.shownName("ab", field: "n", max: 2) == "ab")
        #expect(Self.isInvalid { try MessageValidation.shownName("abc", field: "n", max: 2) })
    }

    // MARK: Mentions

    static func mentions(_ ids: [EntityID]?) throws -> [EntityID] {
        try MessageValidation.draft(
            SendMessageRequest(clientMessageId: "c", text: "hi", mentions: ids), conversationId: EntityID(), senderId: EntityID(),
            now: now
        ).mentions
    }

    /// Repeats are dropped keeping the first of each, in order; none is an empty list.
    @Test func mentionsAreDeduplicatedInOrder() throws {
        let a = EntityID(), b = EntityID(), c = EntityID()
        #expect(try Self.mentions([b, a, b, c, a]) == [b, a, c])
        #expect(try Self.mentions(nil) == [])
        #expect(try Self.mentions([]) == [])
    }

    /// 50 people may be mentioned; the limit counts people, not how often they are named.
    @Test func atMostFiftyPeopleAreMentioned() throws {
        let fifty = (0..<50).map { _ in EntityID() }
        #expect(try Self.mentions(fifty) == fifty)
        #expect(try Self.mentions(fifty + fifty.reversed()) == fifty, "100 names of 50 people")
        #expect(Self.isInvalid { try Self.mentions(fifty + [EntityID()]) })
    }

    // MARK: Random codes

    /// 43 characters of base64url standing for 32 random bytes; no two alike; none starts with
    /// `-`, which a command line would read as an option (1 code in 64 would, unfiltered).
    @Test func codesAreBase64URLOf32BytesAndNeverStartWithADash() throws {
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var seen = Set<String>()
        for _ in 0..<2_000 {
            let code = RandomCode.make()
            #expect(code.count == 43 && code.allSatisfy { alphabet.contains($0) }, "\(code)")
            #expect(!code.hasPrefix("-"), "\(code)")
            seen.insert(code)
        }
        #expect(seen.count == 2_000)
        let code = RandomCode.make()
        let base64 = code.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") + "="
        #expect(try #require(Data(base64Encoded: base64)).count == 32)
    }

    /// Over many codes every position varies, and both of base64url's extra characters turn
    /// up (a code made from fewer random bytes than it claims would show a fixed tail).
    @Test func everyPositionOfACodeVaries() {
        let codes = (0..<500).map { _ in Array(Membership.newInviteCode()) }
        for position in 0..<43 {
            #expect(Set(codes.map { $0[position] }).count > 8, "position \(position)")
        }
        let all = codes.joined()
        #expect(all.contains("-") && all.contains("_"))
    }
}
