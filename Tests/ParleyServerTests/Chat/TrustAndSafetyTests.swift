import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// Trust and safety from outside, on every available store: blocks, reports, moderation and the
/// audit log through the REST API and real WebSockets, as a third-party client would see them.
@Suite struct TrustAndSafetyTests {
    /// Alice, bob and carol in alice's group.
    private func threeInAGroup(_ server: TestServer) async throws -> (TestUser, TestUser, TestUser, Conversation) {
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let carol = try await server.register("carol@x.io")
        let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id, carol.id], name: "g"))
        return (alice, bob, carol, group)
    }

    /// The error a call fails with (nil when it succeeds).
    private func failure(_ call: () async throws -> some Any) async -> ClientError? {
        do {
            _ = try await call()
            return nil
        } catch {
            return error as? ClientError
        }
    }

    private func typing(_ recorder: EventRecorder, from userId: EntityID) -> [TypingEvent] {
        recorder.events.compactMap { if case .typing(let event) = $0, event.userId == userId { event } else { nil } }
    }

    private func presence(_ recorder: EventRecorder, of userId: EntityID) -> [PresenceEvent] {
        recorder.events.compactMap { if case .presence(let event) = $0, event.userId == userId { event } else { nil } }
    }

    private func created(_ recorder: EventRecorder, _ messageId: EntityID) -> Message? {
        recorder.events.lazy.compactMap { if case .messageCreated(let event) = $0, event.message.id == messageId { event.message } else { nil } }.first
    }

    // MARK: Blocks

    @Test(arguments: StoreKind.available)
    func aBlockedUserCannotMessageTheBlockerDirectlyAndNeverLearnsOfTheBlock(kind: StoreKind) async throws {
        try await TestServer.with(store: kind) { server in
            let (alice, bob, direct) = try await server.directPair()
            let early = try await alice.api.send(.init(clientMessageId: "before", text: "hi"), to: direct.id)
            try await bob.api.block(alice.id)
            // Blocking twice changes nothing.
            try await bob.api.block(alice.id)
            let refused = await failure { try await alice.api.send(.init(clientMessageId: "after", text: "hello?"), to: direct.id) }
            #expect(refused?.httpStatus == 403 && refused?.code == .forbidden)
            // The same refusal over the WebSocket, and nothing stored either way.
            let socket = try await alice.connect()
            do {
                _ = try await socket.sendMessage(.init(conversationId: direct.id, clientMessageId: "ws", text: "hello?"))
                Issue.record("a blocked send over the WebSocket was accepted")
            } catch let error as ClientError {
                #expect(error.code == .forbidden)
            }
            await socket.close()
            // A retry of what was sent before the block is still answered with the original.
            #expect(try await alice.api.send(.init(clientMessageId: "before", text: "hi"), to: direct.id) == early)
            #expect(try await alice.api.conversation(direct.id).lastSeq == early.seq)
            // Opening the direct conversation again is refused to the blocked user only.
            let reopen = await failure { try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id])) }
            #expect(reopen?.httpStatus == 403)
            #expect(try await bob.api.createConversation(.init(type: .direct, participantIds: [alice.id])).id == direct.id)
            // The blocker may still write; the block shows on the blocker's side only.
            _ = try await bob.api.send(.init(clientMessageId: "b1", text: "I can still write"), to: direct.id)
            #expect(try await bob.api.blockedUsers().map(\.id) == [alice.id])
            #expect(try await alice.api.blockedUsers().isEmpty)
            // Blocking yourself, or someone of another organization, is refused.
            #expect(await failure { try await bob.api.block(bob.id) }?.httpStatus == 400)
            let stranger = try await server.register("eve@y.io", organization: "elsewhere")
            #expect(await failure { try await bob.api.block(stranger.id) }?.httpStatus == 404)
            // Unblocked, the conversation works again.
            try await bob.api.unblock(alice.id)
            try await bob.api.unblock(alice.id)
            _ = try await alice.api.send(.init(clientMessageId: "after", text: "hello again"), to: direct.id)
            #expect(try await bob.api.blockedUsers().isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func aBlockedSendersGroupMessagesComeMarkedAndNeverCountForTheBlocker(kind: StoreKind) async throws {
        try await TestServer.with(store: kind) { server in
            let (alice, bob, carol, group) = try await threeInAGroup(server)
            let old = try await carol.api.send(.init(clientMessageId: "c0", text: "before the block"), to: group.id)
            #expect(try await bob.api.conversation(group.id).unreadCount == 1)
            try await bob.api.block(carol.id)
            // Taken again at once: what carol sent before no longer counts for bob.
            #expect(try await bob.api.conversation(group.id).unreadCount == 0)
            let bobEvents = EventRecorder(try await bob.connect())
            let aliceEvents = EventRecorder(try await alice.connect())
            let c1 = try await carol.api.send(.init(clientMessageId: "c1", text: "one", mentions: [bob.id]), to: group.id)
            let c2 = try await carol.api.send(.init(clientMessageId: "c2", text: "two"), to: group.id)
            let a1 = try await alice.api.send(.init(clientMessageId: "a1", text: "from alice"), to: group.id)
            try await bobEvents.wait("alice's message") { _ in self.created(bobEvents, a1.id) != nil }
            try await aliceEvents.wait("alice's echo") { _ in self.created(aliceEvents, a1.id) != nil }
            #expect(created(bobEvents, c1.id)?.senderBlocked == true && created(bobEvents, c2.id)?.senderBlocked == true)
            #expect(created(bobEvents, a1.id)?.senderBlocked == nil)
            #expect(created(aliceEvents, c1.id)?.senderBlocked == nil, "only the blocker sees the mark")
            // Counts: bob counts alice's only (and no mention); alice counts carol's three.
            var bobView = try await bob.api.conversation(group.id)
            #expect(bobView.unreadCount == 1 && bobView.mentionCount == 0)
            #expect(try await alice.api.conversation(group.id).unreadCount == 3)
            // History, the changes feed and the list carry the mark for bob.
            let history = try await bob.api.messages(group.id).messages
            #expect(history.filter { $0.senderId == carol.id }.allSatisfy { $0.senderBlocked == true })
            #expect(history.filter { $0.senderId != carol.id }.allSatisfy { $0.senderBlocked == nil })
            #expect(try await bob.api.changes(group.id, since: 0).messages.first { $0.id == c2.id }?.senderBlocked == true)
            #expect(try await alice.api.messages(group.id).messages.allSatisfy { $0.senderBlocked == nil })
            let c3 = try await carol.api.send(.init(clientMessageId: "c3", text: "last"), to: group.id)
            #expect(try await bob.api.conversations().first { $0.id == group.id }?.lastMessage?.id == c3.id)
            #expect(try await bob.api.conversations().first { $0.id == group.id }?.lastMessage?.senderBlocked == true)
            // Deleting a blocked sender's message moves nobody's count the wrong way.
            _ = try await carol.api.deleteMessage(c1.id, in: group.id)
            bobView = try await bob.api.conversation(group.id)
            #expect(bobView.unreadCount == 1 && bobView.mentionCount == 0)
            // Alice had carol's four (old, c1, c2, c3): one is gone.
            #expect(try await alice.api.conversation(group.id).unreadCount == 3)
            // Unblocked, carol's remaining messages count again: old, c2, c3 and alice's.
            try await bob.api.unblock(carol.id)
            #expect(try await bob.api.conversation(group.id).unreadCount == 4)
            #expect(try await bob.api.messages(group.id).messages.allSatisfy { $0.senderBlocked == nil })
            _ = old
            // Blocked again after reading: only new messages of others count.
            _ = try await bob.api.markRead(group.id, upToSeq: c3.seq)
            try await bob.api.block(carol.id)
            _ = try await carol.api.send(.init(clientMessageId: "c4", text: "again"), to: group.id)
            let reply = try await carol.api.send(.init(clientMessageId: "t1", text: "in a thread", threadRootId: a1.id), to: group.id)
            _ = try await alice.api.send(.init(clientMessageId: "a2", text: "hello", mentions: [bob.id]), to: group.id)
            bobView = try await bob.api.conversation(group.id)
            #expect(bobView.unreadCount == 1 && bobView.mentionCount == 1, "\(bobView.unreadCount) \(bobView.mentionCount)")
            #expect(reply.threadRootId == a1.id)
        }
    }

    @Test(arguments: StoreKind.available)
    func theBlockerGetsNoTypingPresenceOrPushFromTheBlocked(kind: StoreKind) async throws {
        try await TestServer.with(store: kind) { server in
            let (alice, bob, carol, group) = try await threeInAGroup(server)
            try await bob.api.block(carol.id)
            let bobEvents = EventRecorder(try await bob.connect())
            let aliceEvents = EventRecorder(try await alice.connect())
            let carolSocket = try await carol.connect()
            let _: EmptyPayload = try await carolSocket.send(.typing(.init(conversationId: group.id, isTyping: true)))
            let _: EmptyPayload = try await carolSocket.send(.focus(.init(conversationId: group.id)))
            try await aliceEvents.wait("carol's typing and presence") { _ in
                !self.typing(aliceEvents, from: carol.id).isEmpty && !self.presence(aliceEvents, of: carol.id).isEmpty
            }
            // A message after them is the barrier: whatever carol's signals brought bob came before it.
            let barrier = try await carol.api.send(.init(clientMessageId: "barrier", text: "after typing"), to: group.id)
            try await bobEvents.wait("the barrier") { _ in self.created(bobEvents, barrier.id) != nil }
            await carolSocket.close()
            try await aliceEvents.wait("carol offline") { _ in self.presence(aliceEvents, of: carol.id).contains { !$0.isOnline } }
            let barrier2 = try await alice.api.send(.init(clientMessageId: "barrier2", text: "after offline"), to: group.id)
            try await bobEvents.wait("the second barrier") { _ in self.created(bobEvents, barrier2.id) != nil }
            #expect(typing(bobEvents, from: carol.id).isEmpty)
            #expect(presence(bobEvents, of: carol.id).isEmpty)
            // Bob's user list shows no presence of carol's; alice's does.
            let seenByBob = try #require(try await bob.api.users().first { $0.id == carol.id })
            #expect(!seenByBob.isOnline && seenByBob.lastSeenAt == nil)
            #expect(try await alice.api.users().first { $0.id == carol.id }?.lastSeenAt != nil)
        }
    }

    // MARK: Reports

    @Test(arguments: StoreKind.available)
    func reportsReachTheOrganizationsAdminsOnly(kind: StoreKind) async throws {
        try await TestServer.with(store: kind) { server in
            let admin = try await server.register("admin@x.io")
            let bob = try await server.register("bob@x.io")
            let carol = try await server.register("carol@x.io")
            let direct = try await bob.api.createConversation(.init(type: .direct, participantIds: [carol.id]))
            let rude = try await carol.api.send(.init(clientMessageId: "rude", text: "something rude"), to: direct.id)
            let reportId = try await bob.api.report(messageId: rude.id, reason: "  insulting  ")
            let userReport = try await bob.api.report(userId: carol.id, reason: "keeps messaging me")
            // What a report may not name: a message the reporter cannot read, an outsider, nothing.
            #expect(await failure { try await admin.api.report(messageId: rude.id, reason: "not mine") }?.httpStatus == 404)
            let other = try await server.register("boss@y.io", organization: "other")
            #expect(await failure { try await bob.api.report(userId: other.id, reason: "x") }?.httpStatus == 404)
            #expect(await failure { try await bob.api.report(messageId: rude.id, reason: "   ") }?.httpStatus == 400)
            #expect(await failure { try await bob.api.report(reason: "nothing named") }?.httpStatus == 400)
            #expect(await failure { try await bob.api.report(userId: carol.id, reason: String(repeating: "x", count: 1001)) }?.httpStatus == 400)
            // Members are refused the admin routes; another organization sees nothing.
            #expect(await failure { try await bob.api.reports() }?.httpStatus == 403)
            #expect(await failure { try await bob.api.setReportStatus(.dismissed, of: reportId) }?.httpStatus == 403)
            #expect(await failure { try await bob.api.auditLog() }?.httpStatus == 403)
            #expect(try await other.api.reports().reports.isEmpty)
            #expect(await failure { try await other.api.setReportStatus(.resolved, of: reportId) }?.httpStatus == 404)
            // The admin sees both, newest first, with the message though not a participant.
            let open = try await admin.api.reports(status: .open)
            #expect(open.reports.map(\.id) == [userReport, reportId] && !open.hasMore)
            let first = try #require(open.reports.last)
            #expect(first.reason == "insulting" && first.reporterId == bob.id && first.userId == carol.id)
            #expect(first.conversationId == direct.id && first.message?.text == "something rude")
            // Pages.
            let page = try await admin.api.reports(limit: 1)
            #expect(page.reports.map(\.id) == [userReport] && page.hasMore)
            #expect(try await admin.api.reports(before: userReport, limit: 1).reports.map(\.id) == [reportId])
            // Handled, on record.
            #expect(try await admin.api.setReportStatus(.resolved, of: reportId).status == .resolved)
            #expect(try await admin.api.reports(status: .open).reports.map(\.id) == [userReport])
            #expect(try await admin.api.reports(status: .resolved).reports.map(\.id) == [reportId])
            let audit = try await admin.api.auditLog().entries
            #expect(audit.first?.action == "report.resolved" && audit.first?.targetId == reportId.description)
            #expect(audit.first?.actorId == admin.id)
            let raw = try await server.raw("GET", "organization/reports?status=closed", token: admin.token)
            #expect(raw.status == 400)
        }
    }

    // MARK: Moderation and audit

    @Test(arguments: StoreKind.available)
    func adminsDeleteAndRemoveAnywhereInTheirOrganizationOnRecord(kind: StoreKind) async throws {
        try await TestServer.with(store: kind) { server in
            let admin = try await server.register("admin@x.io")
            let bob = try await server.register("bob@x.io")
            let carol = try await server.register("carol@x.io")
            let group = try await bob.api.createConversation(.init(type: .group, participantIds: [carol.id], name: "no admin here"))
            let bad = try await carol.api.send(.init(clientMessageId: "bad", text: "spam spam"), to: group.id)
            // A member may not delete another's message; another organization's admin finds nothing.
            #expect(await failure { try await bob.api.deleteMessage(bad.id, in: group.id) }?.httpStatus == 403)
            let outsider = try await server.register("root@y.io", organization: "other")
            #expect(await failure { try await outsider.api.deleteMessage(bad.id, in: group.id) }?.httpStatus == 404)
            let bobEvents = EventRecorder(try await bob.connect())
            let deleted = try await admin.api.deleteMessage(bad.id, in: group.id)
            #expect(deleted.deletedAt != nil && deleted.deletedBy == admin.id && deleted.text.isEmpty)
            #expect(deleted.updatedSeq > bad.seq)
            try await bobEvents.wait("the tombstone") { events in
                events.contains { if case .messageUpdated(let e) = $0 { e.message.id == bad.id && e.message.deletedBy == admin.id } else { false } }
            }
            // Deleting again changes nothing and is not recorded twice.
            #expect(try await admin.api.deleteMessage(bad.id, in: group.id).updatedSeq == deleted.updatedSeq)
            // A sender's own delete says who deleted it too.
            let own = try await carol.api.send(.init(clientMessageId: "own", text: "oops"), to: group.id)
            #expect(try await carol.api.deleteMessage(own.id, in: group.id).deletedBy == carol.id)
            // The admin removes carol from a group they are not in.
            let after = try await admin.api.removeParticipant(group.id, userId: carol.id)
            #expect(!after.participantIds.contains(carol.id))
            #expect(try await bob.api.conversation(group.id).participantIds == [bob.id])
            #expect(await failure { try await outsider.api.removeParticipant(group.id, userId: bob.id) }?.httpStatus == 404)
            // Invites, roles, email domains and deactivations are recorded too.
            let invite = try await admin.api.createInvite(.init(email: "new@x.io"))
            try await admin.api.deleteInvite(invite.code)
            _ = try await admin.api.setRole(.admin, of: bob.id)
            _ = try await admin.api.setAllowedEmailDomains(["x.io"])
            try await admin.api.deactivate(carol.id)
            let entries = try await admin.api.auditLog().entries
            #expect(entries.map(\.action) == [
                "user.deactivated", "domains.changed", "role.changed", "invite.deleted", "invite.created",
                "participant.removed", "message.deleted",
            ])
            #expect(entries.first { $0.action == "message.deleted" }?.targetId == bad.id.description)
            #expect(entries.first { $0.action == "role.changed" }?.detail == "admin")
            #expect(entries.allSatisfy { $0.actorId == admin.id })
            // Pages, and nothing of it for another organization.
            let firstPage = try await admin.api.auditLog(limit: 3)
            #expect(firstPage.entries.count == 3 && firstPage.hasMore)
            #expect(try await admin.api.auditLog(before: firstPage.entries.last?.id).entries.count == 4)
            #expect(try await outsider.api.auditLog().entries.isEmpty)
        }
    }
}
