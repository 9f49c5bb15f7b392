import Foundation
import ParleyProtocol
import ParleyStorage

/// Who may join an organization, and what keeps one governable. Every store
/// calls these rules inside its own transactions, so they are written here once.
public enum Membership {
    /// What a registration is told when it may not join.
    package static let notAdmitted = ChatError(.forbidden, "This organization admits new members by invitation only")

    /// The role a new user gets, or `forbidden`: the first user of a new organization is its
    /// admin; an existing organization admits with an open flag (demos and tests), a valid
    /// invite of its own (not expired, uses left, matching email if it names one), or an email
    /// whose whole domain it allows.
    ///
    /// A join by domain proves nothing about who holds the address: with `provingDomainJoins`
    /// it is answered ``ProofNeeded`` (the address gets a link; opening it replays the
    /// registration with `addressProven`).
    public static func admit(
        email: String, to organization: Organization?, invite: Invite?, open: Bool, now: Date, provingDomainJoins: Bool = false,
        addressProven: Bool = false
    ) throws -> Admission {
        guard let organization else { return Admission(role: .admin) }
        if let invite, invite.organizationId == organization.id, invite.expiresAt > now, invite.uses < invite.maxUses,
            invite.email.map({ $0 == email }) ?? true
        {
            return Admission(role: .member, usesInvite: true)
        }
        if open { return Admission(role: .member) }
        if organization.allowedEmailDomains.contains(domain(of: email)) {
            if provingDomainJoins && !addressProven { throw ProofNeeded(organization: organization) }
            return Admission(role: .member)
        }
        throw notAdmitted
    }

    /// A registration that joins by its email's domain and must prove the address first.
    public struct ProofNeeded: Error, Sendable {
        /// The organization it would join.
        public var organization: Organization
    }

    /// The part after the `@`, lowercased: matched whole (`corp.test` never admits
    /// `corp.test.evil.test` or `evilcorp.test`).
    public static func domain(of email: String) -> String {
        String(email.lowercased().split(separator: "@").last ?? "")
    }

    /// Allowed domains as given by an admin: trimmed, lowercased, without a leading `@`, each a
    /// plausible domain; at most 50.
    public static func allowedDomains(_ domains: [String]) throws -> [String] {
        guard domains.count <= 50 else { throw ChatError.invalid("At most 50 allowed domains") }
        var result: [String] = []
        for raw in domains {
            var domain = Limits.trimmed(raw).lowercased()
            if domain.hasPrefix("@") { domain.removeFirst() }
            let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
            guard domain.count <= 253, labels.count >= 2,
                labels.allSatisfy({ !$0.isEmpty && $0.count <= 63 && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" } })
            else { throw ChatError.invalid("\"\(raw.prefix(64))\" is not a domain name") }
            if !result.contains(domain) { result.append(domain) }
        }
        return result
    }

    /// An organization keeps at least one admin: a role change or deactivation that would
    /// leave none is refused (409).
    public static func keepsAnAdmin(adminsAfter: Int) throws {
        if adminsAfter < 1 { throw ChatError(.conflict, "An organization keeps at least one admin") }
    }

    /// Only admins manage the organization.
    public static func requireAdmin(_ user: User?) throws {
        guard user?.role == .admin else { throw ChatError(.forbidden, "Only an admin of this organization may do that") }
    }

    /// A new invite code: 32 random bytes, base64url (43 characters), not to be guessed.
    ///
    /// Never one that starts with `-`: a command line reads `--invite -x…` as another option
    /// (1 code in 64 could not be typed into `parley register`; a flaky README test found it).
    public static func newInviteCode() -> String { RandomCode.make() }

    /// An invite as an admin asks for it: 1–1000 uses (default 1), 1 hour to 90 days (default a week).
    public static func invite(_ request: CreateInviteRequest, organizationId: EntityID, by admin: EntityID, now: Date) throws -> Invite {
        let uses = request.maxUses ?? 1
        guard (1...1000).contains(uses) else { throw ChatError.invalid("maxUses must be 1–1000") }
        let hours = request.expiresInHours ?? 168
        guard (1...2160).contains(hours) else { throw ChatError.invalid("expiresInHours must be 1–2160") }
        let email = try request.email.map { try Membership.email($0) }
        return Invite(
            code: newInviteCode(), organizationId: organizationId, email: email, maxUses: uses, uses: 0,
            expiresAt: now.addingTimeInterval(Double(hours) * 3600).wholeMillisecondsServer, createdBy: admin)
    }
}

extension Date {
    /// This time cut to whole milliseconds, as stores keep it.
    var wholeMillisecondsServer: Date { Date(millisecondsSince1970: millisecondsSince1970) }
}

extension Membership {
    /// An email trimmed and lowercased: unique per organization in that form.
    package static func email(_ text: String) throws -> String {
        let email = Limits.trimmed(text).lowercased()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard email.count <= 254, parts.count == 2, !parts[0].isEmpty, parts[1].contains("."),
            !parts[1].hasPrefix("."), !parts[1].hasSuffix("."),
            !email.contains(where: { $0.isWhitespace || $0.isNewline }), !Limits.containsUnsafeCharacters(email)
        else { throw ChatError.invalid("email is not a valid address") }
        return email
    }
}
