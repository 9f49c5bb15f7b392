import Foundation
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// Blocks, reports and the audit log at the store: who blocks whom both ways, unread counts
/// taken again when a block starts or ends, and the admin lists paged without a gap or a
/// repeat and never across organizations.
@Suite struct SafetyStoreTests {
    static func setBlocked(_ store: any ParleyStore, _ blocked: Bool, _ user: User, by blocker: User, at: Date = t0) async throws -> [EntityID]? {
        try await store.writing { tx in
            try await BlockRules.setBlocked(
                blocked, user: user.id, by: Identity(userId: blocker.id, organizationId: blocker.organizationId), now: at, in: tx)
        }
    }

    // MARK: Blocks

    @Test(arguments: StoreKind.available)
    func blockRelationsAreSeenFromBothEnds(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let carol = try await register(store, "carol@x.io")
            #expect(try await store.blockRelations(of: alice.id) == BlockRelations())
            #expect(try await Self.setBlocked(store, true, bob, by: alice) == [])
            #expect(try await Self.setBlocked(store, true, alice, by: carol) == [])
            #expect(try await Self.setBlocked(store, true, alice, by: bob) == [])
            #expect(try await store.blockRelations(of: alice.id) == BlockRelations(blocks: [bob.id], blockedBy: [carol.id, bob.id]))
            #expect(try await store.blockRelations(of: bob.id) == BlockRelations(blocks: [alice.id], blockedBy: [alice.id]))
            #expect(try await store.blockRelations(of: carol.id) == BlockRelations(blocks: [alice.id]))
            // Blocking again changes nothing and says so; so does unblocking someone not blocked.
            #expect(try await Self.setBlocked(store, true, bob, by: alice) == nil)
            #expect(try await Self.setBlocked(store, false, carol, by: alice) == nil)
            #expect(try await Self.setBlocked(store, false, bob, by: alice) == [])
            #expect(try await store.blockRelations(of: alice.id) == BlockRelations(blockedBy: [carol.id, bob.id]))
            #expect(try await store.blockRelations(of: bob.id) == BlockRelations(blocks: [alice.id]))
        }
    }

    @Test(arguments: StoreKind.available)
    func aRefusedBlockWritesNothing(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let mallory = try await register(store, "mallory@y.io", organization: "evil")
            for (target, code) in [(mallory, ErrorCode.notFound), (alice, .invalidRequest)] {
                let error = await #expect(throws: ChatError.self) { try await Self.setBlocked(store, true, target, by: alice) }
                #expect(error?.code == code)
            }
            let ghost = User(
                id: EntityID(), organizationId: alice.organizationId, email: "g@x.io", displayName: "G")
            let missing = await #expect(throws: ChatError.self) { try await Self.setBlocked(store, true, ghost, by: alice) }
            #expect(missing?.code == .notFound)
            #expect(try await store.blockRelations(of: alice.id) == BlockRelations())
            #expect(try await store.blockRelations(of: mallory.id) == BlockRelations())
            #expect(try await store.blockedUsers(by: alice.id).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func theBlockedListIsByNameWithoutCase(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            var blocked: [User] = []
            for name in ["zed", "Bob", "bob", "Émile", "adam"] {
                let user = try await store.register(
                    organization: "acme", email: "\(UUID().uuidString.prefix(6))@x.io", displayName: name, passwordHash: "h", now: t0)
                blocked.append(user)
                _ = try await Self.setBlocked(store, true, user, by: alice)
            }
            let listed = try await store.blockedUsers(by: alice.id)
            #expect(listed.count == 5)
            #expect(listed.first?.displayName == "adam")
            #expect(Array(listed.map(\.displayName).prefix(4)).map { $0.lowercased() } == ["adam", "bob", "bob", "zed"])
            #expect(listed.last?.displayName == "Émile")
            // Names equal without case come in id order, as a stable page needs.
            let bobs = listed.filter { $0.displayName.lowercased() == "bob" }.map(\.id)
            #expect(bobs == bobs.sorted())
            // Whom others block is theirs alone.
            #expect(try await store.blockedUsers(by: blocked[0].id).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func aBlockTakesTheBlockersCountsAgainInEverySharedConversation(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let carol = try await register(store, "carol@x.io")
            let direct = try await createDirect(store, bob, alice)
            let group = try await store.createConversation(NewConversation(
                organizationId: alice.organizationId, creatorId: carol.id, type: .group, name: "g", participantIds: [alice.id, bob.id],
                now: t0)).conversation
            let apart = try await createDirect(store, carol, alice)
            for index in 0..<3 { _ = try await send(store, direct.id, bob, "d\(index)") }
            for index in 0..<2 { _ = try await send(store, group.id, bob, "g\(index)") }
            _ = try await send(store, group.id, carol, "from carol")
            _ = try await send(store, apart.id, carol, "apart")
            #expect(try await store.totalUnread(userId: alice.id) == 7)

            let shared = try #require(try await Self.setBlocked(store, true, bob, by: alice))
            #expect(Set(shared) == [direct.id, group.id])
            #expect(try await store.conversation(id: direct.id, viewer: alice.id)?.unreadCount == 0)
            #expect(try await store.conversation(id: group.id, viewer: alice.id)?.unreadCount == 1)
            #expect(try await store.totalUnread(userId: alice.id) == 2)
            // Bob's own counts and Carol's are not the blocker's business.
            #expect(try await store.conversation(id: group.id, viewer: carol.id)?.unreadCount == 2)

            // A group message from Bob while blocked never counts for Alice.
            _ = try await send(store, group.id, bob, "while blocked")
            #expect(try await store.totalUnread(userId: alice.id) == 2)

            // Unblocking brings his unread messages back into her counts, the one sent meanwhile too.
            _ = try await Self.setBlocked(store, false, bob, by: alice)
            #expect(try await store.conversation(id: direct.id, viewer: alice.id)?.unreadCount == 3)
            #expect(try await store.conversation(id: group.id, viewer: alice.id)?.unreadCount == 4)
            #expect(try await store.totalUnread(userId: alice.id) == 8)
        }
    }

    // MARK: Reports

    static func report(_ index: Int, by reporter: User, status: ReportStatus = .open, message: Message? = nil) -> Report {
        Report(
            id: .timeOrdered(at: t0.addingTimeInterval(Double(index))), reporterId: reporter.id, messageId: message?.id,
            conversationId: message?.conversationId, userId: message == nil ? reporter.id : nil, reason: "reason \(index) — ✋",
            status: status, createdAt: t0.addingTimeInterval(Double(index)))
    }

    @Test(arguments: StoreKind.available)
    func reportsPageNewestFirstWithoutGapsOrRepeats(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let bob = try await register(store, "bob@x.io")
            let direct = try await createDirect(store, alice, bob)
            let message = try await send(store, direct.id, bob, "bad words")
            var created: [Report] = []
            for index in 0..<11 {
                let report = Self.report(index, by: alice, status: index.isMultiple(of: 3) ? .resolved : .open, message: index == 4 ? message : nil)
                try await store.createReport(report, organizationId: alice.organizationId)
                created.append(report)
            }
            var seen: [Report] = []
            var before: EntityID?
            var pages = 0
            while true {
                let page = try await store.reports(organizationId: alice.organizationId, status: nil, before: before, limit: 4)
                seen += page.reports
                pages += 1
                guard page.hasMore else { break }
                before = try #require(page.reports.last?.id)
            }
            #expect(pages == 3)
            #expect(seen == created.reversed())
            #expect(seen.first(where: { $0.messageId != nil })?.conversationId == direct.id)

            // A status and a cursor together: open ones older than the 8th.
            let open = try await store.reports(organizationId: alice.organizationId, status: .open, before: created[8].id, limit: 10)
            #expect(open.reports.map(\.id) == [7, 5, 4, 2, 1].map { created[$0].id })
            #expect(!open.hasMore)
            // Exactly `limit` left: no phantom next page.
            let resolved = try await store.reports(organizationId: alice.organizationId, status: .resolved, before: nil, limit: 4)
            #expect(resolved.reports.count == 4 && !resolved.hasMore)
            #expect(try await store.reports(organizationId: alice.organizationId, status: .dismissed, before: nil, limit: 4).reports.isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func handlingAReportIsForItsOrganizationOnly(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let alice = try await register(store, "alice@x.io")
            let admin = try await register(store, "admin@x.io")
            let mallory = try await register(store, "mallory@y.io", organization: "evil")
            let report = Self.report(1, by: alice)
            try await store.createReport(report, organizationId: alice.organizationId)
            #expect(try await store.reports(organizationId: mallory.organizationId, status: nil, before: nil, limit: 10).reports.isEmpty)

            // Another organization's admin cannot close it: nil, and it stays open.
            #expect(try await store.setReportStatus(
                .dismissed, reportId: report.id, organizationId: mallory.organizationId, by: mallory.id, at: t0) == nil)
            #expect(try await store.setReportStatus(
                .dismissed, reportId: EntityID(), organizationId: alice.organizationId, by: admin.id, at: t0) == nil)
            #expect(try await store.reports(organizationId: alice.organizationId, status: .open, before: nil, limit: 10).reports == [report])

            let resolved = try #require(try await store.setReportStatus(
                .resolved, reportId: report.id, organizationId: alice.organizationId, by: admin.id, at: t0.addingTimeInterval(9)))
            var expected = report
            expected.status = .resolved
            #expect(resolved == expected)
            #expect(try await store.reports(organizationId: alice.organizationId, status: .open, before: nil, limit: 10).reports.isEmpty)
            // Reopening is allowed (a status is a field, not a one-way door).
            #expect(try await store.setReportStatus(
                .open, reportId: report.id, organizationId: alice.organizationId, by: admin.id, at: t0)?.status == .open)
        }
    }

    // MARK: Audit log

    @Test(arguments: StoreKind.available)
    func theAuditLogPagesNewestFirstPerOrganization(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let admin = try await register(store, "admin@x.io")
            let mallory = try await register(store, "mallory@y.io", organization: "evil")
            var entries: [AuditEntry] = []
            for index in 0..<7 {
                let entry = AuditEntry(
                    id: .timeOrdered(at: t0.addingTimeInterval(Double(index))), actorId: admin.id, action: "user.role",
                    targetId: index.isMultiple(of: 2) ? nil : "target-\(index)", at: t0.addingTimeInterval(Double(index)),
                    detail: index == 3 ? "{\"role\":\"admin\",\"note\":\"ünïcødé\"}" : nil)
                try await store.recordAudit(entry, organizationId: admin.organizationId)
                entries.append(entry)
            }
            try await store.recordAudit(
                AuditEntry(id: .timeOrdered(at: t0), actorId: mallory.id, action: "evil", at: t0), organizationId: mallory.organizationId)

            let first = try await store.auditEntries(organizationId: admin.organizationId, before: nil, limit: 3)
            #expect(first.entries == Array(entries.reversed().prefix(3)) && first.hasMore)
            let second = try await store.auditEntries(organizationId: admin.organizationId, before: first.entries.last?.id, limit: 3)
            #expect(second.entries == Array(entries.reversed().dropFirst(3).prefix(3)) && second.hasMore)
            let last = try await store.auditEntries(organizationId: admin.organizationId, before: second.entries.last?.id, limit: 3)
            #expect(last.entries == [entries[0]] && !last.hasMore)
            #expect(try await store.auditEntries(organizationId: mallory.organizationId, before: nil, limit: 10).entries.map(\.action) == ["evil"])
            // A cursor from another organization's entry leaks nothing of it.
            let crossed = try await store.auditEntries(organizationId: mallory.organizationId, before: entries[6].id, limit: 10)
            #expect(crossed.entries.map(\.action) == ["evil"])
        }
    }
}
