import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// Team chat from outside, on every available store: threads, mentions, mute and pins through the
/// REST API as a third-party client would use them, checked against the contract.
@Suite struct TeamChatTests {
    /// Alice, bob, carol and dave in one group.
    private struct Team {
        let server: TestServer
        let alice: TestUser, bob: TestUser, carol: TestUser, dave: TestUser
        let group: Conversation
    }

    private func withTeam(_ kind: StoreKind, _ body: (Team) async throws -> Void) async throws {
        let server = try await TestServer.start(store: kind)
        do {
            let alice = try await server.register("alice@x.io")
            let bob = try await server.register("bob@x.io")
            let carol = try await server.register("carol@x.io")
            let dave = try await server.register("dave@x.io")
            let group = try await alice.api.createConversation(
                .init(type: .group, participantIds: [bob.id, carol.id, dave.id], name: "Team"))
            try await body(Team(server: server, alice: alice, bob: bob, carol: carol, dave: dave, group: group))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// Each member's unread count in the team's group.
    private func counts(_ team: Team) async throws -> [EntityID: Int] {
        var counts: [EntityID: Int] = [:]
        for user in [team.alice, team.bob, team.carol, team.dave] {
            counts[user.id] = try await user.api.conversation(team.group.id).unreadCount
        }
        return counts
    }

    @Test(arguments: StoreKind.available)
    func threadsTakeSeqsCountForTheirMembersAndPage(kind: StoreKind) async throws {
        try await withTeam(kind) { team in
            let (alice, bob, carol, dave, group) = (team.alice, team.bob, team.carol, team.dave, team.group)
            let root = try await alice.api.send(.init(clientMessageId: "root", text: "Plan for Friday?"), to: group.id)
            let reply1 = try await bob.api.send(.init(clientMessageId: "r1", text: "Pizza", threadRootId: root.id), to: group.id)
            #expect(reply1.threadRootId == root.id && reply1.seq == root.seq + 1)
            // The retry is the original: no seq taken, no second count.
            #expect(try await bob.api.send(.init(clientMessageId: "r1", text: "other", threadRootId: root.id), to: group.id) == reply1)
            let reply2 = try await carol.api.send(.init(clientMessageId: "r2", text: "Sushi", threadRootId: root.id), to: group.id)
            // Each reply also took a seq for the root's new count: 1 root, r1, root, r2, root.
            #expect(reply2.seq == root.seq + 3)
            let after = try await alice.api.conversation(group.id)
            #expect(after.lastSeq == root.seq + 4)
            // A thread reply is not the conversation's last message or activity.
            #expect(after.lastMessage?.id == root.id)

            // The timeline leaves replies out; `threads=include` and /changes have everything, gapless.
            #expect(try await dave.api.messages(group.id).messages.map(\.id).contains(reply1.id) == false)
            let all = try await dave.api.messagesIncludingThreads(group.id)
            #expect(all.messages.map(\.id).suffix(3) == [root.id, reply1.id, reply2.id])
            let changes = try await dave.api.changes(group.id, since: 0)
            let rootNow = try #require(changes.messages.first { $0.id == root.id })
            #expect(rootNow.thread == ThreadSummary(replyCount: 2, lastReplyAt: reply2.createdAt, lastReplySeq: reply2.seq))
            #expect(rootNow.updatedSeq == changes.lastSeq)
            let updated = changes.messages.map(\.updatedSeq)
            #expect(updated == updated.sorted() && Set(updated).count == updated.count && updated.last == changes.lastSeq)

            // Unread: the root's sender and the repliers count the replies of others; dave,
            // in no thread, counts only the root.
            let unread = try await counts(team)
            #expect(unread[alice.id] == 2)  // r1, r2
            #expect(unread[bob.id] == 2)  // root, r2
            #expect(unread[carol.id] == 2)  // root, r1 (carol joined by replying: r1 counts)
            #expect(unread[dave.id] == 1)  // root only

            // Mentioned in a reply, dave joins: the thread's earlier replies count for him too.
            let reply3 = try await alice.api.send(
                .init(clientMessageId: "r3", text: "@Dave?", threadRootId: root.id, mentions: [dave.id]), to: group.id)
            let daveView = try await dave.api.conversation(group.id)
            #expect(daveView.unreadCount == 4 && daveView.mentionCount == 1)

            // The thread page: root as it is now, replies ascending, paged both ways.
            let page = try await dave.api.thread(root.id, in: group.id, limit: 2)
            #expect(page.root.thread?.replyCount == 3 && page.messages.map(\.id) == [reply2.id, reply3.id] && page.hasMore)
            let older = try await dave.api.thread(root.id, in: group.id, before: reply2.seq, limit: 2)
            #expect(older.messages.map(\.id) == [reply1.id] && !older.hasMore)
            let newer = try await dave.api.thread(root.id, in: group.id, after: reply1.seq, limit: 1)
            #expect(newer.messages.map(\.id) == [reply2.id] && newer.hasMore)

            // Reading up to the newest clears the thread's count with the rest.
            _ = try await dave.api.markRead(group.id, upToSeq: daveView.lastSeq)
            let read = try await dave.api.conversation(group.id)
            #expect(read.unreadCount == 0 && read.mentionCount == 0)

            // Refusals, each changing nothing.
            let lastSeq = try await alice.api.conversation(group.id).lastSeq
            for (id, body) in [
                ("a reply as root", SendMessageRequest(clientMessageId: "x1", text: "no", threadRootId: reply1.id)),
                ("an unknown root", SendMessageRequest(clientMessageId: "x2", text: "no", threadRootId: EntityID())),
            ] {
                await #expect(throws: (any Error).self, "\(id)") { _ = try await bob.api.send(body, to: group.id) }
            }
            let other = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
            let elsewhere = try await alice.api.send(.init(clientMessageId: "e1", text: "elsewhere"), to: other.id)
            let crossed = try await team.server.raw(
                "POST", "conversations/\(group.id)/messages", token: bob.token,
                json: #"{"clientMessageId":"x3","text":"no","threadRootId":"\#(elsewhere.id)"}"#)
            #expect(crossed.status == 400 && errorCode(crossed.body) == .invalidRequest)
            _ = try await alice.api.deleteMessage(root.id, in: group.id)
            let deleted = try await team.server.raw(
                "POST", "conversations/\(group.id)/messages", token: bob.token,
                json: #"{"clientMessageId":"x4","text":"no","threadRootId":"\#(root.id)"}"#)
            #expect(deleted.status == 400)
            #expect(try await alice.api.conversation(group.id).lastSeq == lastSeq + 1)  // the delete alone
        }
    }

    @Test(arguments: StoreKind.available)
    func mentionsCountUntilReadAndAreChecked(kind: StoreKind) async throws {
        try await withTeam(kind) { team in
            let (alice, bob, carol, group) = (team.alice, team.bob, team.carol, team.group)
            let first = try await alice.api.send(.init(clientMessageId: "m1", text: "@Bob look", mentions: [bob.id, bob.id]), to: group.id)
            #expect(first.mentions == [bob.id])  // repeats dropped
            let second = try await carol.api.send(.init(clientMessageId: "m2", text: "@Bob @Carol", mentions: [bob.id, carol.id]), to: group.id)
            var bobView = try await bob.api.conversation(group.id)
            #expect(bobView.mentionCount == 2 && bobView.unreadCount == 2)
            // A self-mention counts for nobody.
            #expect(try await carol.api.conversation(group.id).mentionCount == 0)
            // A deleted mention stops counting.
            _ = try await carol.api.deleteMessage(second.id, in: group.id)
            bobView = try await bob.api.conversation(group.id)
            #expect(bobView.mentionCount == 1 && bobView.unreadCount == 1)
            // The tombstone says nothing of whom it mentioned.
            let tombstone = try await bob.api.changes(group.id, since: 0).messages.first { $0.id == second.id }
            #expect(tombstone?.deletedAt != nil && tombstone?.mentions == nil)
            _ = try await bob.api.markRead(group.id, upToSeq: first.seq)
            #expect(try await bob.api.conversation(group.id).mentionCount == 0)

            // Everyone mentioned must be a participant; at most 50.
            let outsider = try await team.server.register("olga@x.io")
            let refused = try await team.server.raw(
                "POST", "conversations/\(group.id)/messages", token: alice.token,
                json: #"{"clientMessageId":"m3","text":"hi","mentions":["\#(outsider.id)"]}"#)
            #expect(refused.status == 400 && errorCode(refused.body) == .invalidRequest)
            let many = (0..<51).map { _ in "\"\(EntityID())\"" }.joined(separator: ",")
            let tooMany = try await team.server.raw(
                "POST", "conversations/\(group.id)/messages", token: alice.token,
                json: #"{"clientMessageId":"m4","text":"hi","mentions":[\#(many)]}"#)
            #expect(tooMany.status == 400)
            #expect(try await alice.api.conversation(group.id).lastSeq == second.seq + 1)
        }
    }

    /// What threads and pins refuse, with the contract's codes, changing nothing: a thread page
    /// of a reply, of another conversation's message or for an outsider is 404; a system message
    /// is no root (400); a deleted message cannot be pinned (400); unpinning what is not pinned
    /// takes no seq.
    @Test(arguments: StoreKind.available)
    func threadsAndPinsRefuseWhatTheyCannotTake(kind: StoreKind) async throws {
        try await withTeam(kind) { team in
            let (alice, bob, group, server) = (team.alice, team.bob, team.group, team.server)
            let root = try await alice.api.send(.init(clientMessageId: "root", text: "Plan"), to: group.id)
            let reply = try await bob.api.send(.init(clientMessageId: "r1", text: "Yes", threadRootId: root.id), to: group.id)
            let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
            let elsewhere = try await alice.api.send(.init(clientMessageId: "d1", text: "Elsewhere"), to: direct.id)
            let outsider = try await server.register("eve@x.io")
            for (rootId, token, why) in [
                (reply.id, alice.token, "a reply is no root"), (elsewhere.id, alice.token, "another conversation's message"),
                (root.id, outsider.token, "an outsider"), (EntityID(), alice.token, "no such message"),
            ] {
                let answer = try await server.raw("GET", "conversations/\(group.id)/threads/\(rootId)", token: token)
                #expect(answer.status == 404 && errorCode(answer.body) == .notFound, "\(why): \(answer.status)")
            }
            let renamed = try await alice.api.rename(group.id, to: "Team two")
            let system = try #require(try await alice.api.messages(group.id).messages.last { $0.type == .system })
            let lastSeq = renamed.lastSeq
            let onSystem = try await server.raw(
                "POST", "conversations/\(group.id)/messages", token: bob.token,
                json: #"{"clientMessageId":"r2","text":"on a system line","threadRootId":"\#(system.id)"}"#)
            #expect(onSystem.status == 400 && errorCode(onSystem.body) == .invalidRequest)
            _ = try await alice.api.deleteMessage(root.id, in: group.id)
            let pinDeleted = try await server.raw("POST", "conversations/\(group.id)/pins", token: bob.token, json: #"{"messageId":"\#(root.id)"}"#)
            #expect(pinDeleted.status == 400 && errorCode(pinDeleted.body) == .invalidRequest)
            let afterDelete = try await alice.api.conversation(group.id).lastSeq
            #expect(afterDelete == lastSeq + 1, "the delete took one seq, the refusals none")
            let unpinned = try await bob.api.unpin(reply.id, in: group.id)
            #expect(unpinned.pinnedAt == nil)
            #expect(try await alice.api.conversation(group.id).lastSeq == afterDelete, "unpinning what is not pinned takes no seq")
        }
    }

    /// A mute with an end stops silencing push once the end has passed (the store is asked
    /// with a time past it: no waiting).
    @Test(arguments: StoreKind.available)
    func aMuteUntilATimeEndsThere(kind: StoreKind) async throws {
        try await withTeam(kind) { team in
            let (alice, bob, group) = (team.alice, team.bob, team.group)
            let until = Date().addingTimeInterval(3600)
            let settings = try await bob.api.setMuted(true, until: until, in: group.id)
            #expect(settings.muted && settings.mutedUntil.map { abs($0.timeIntervalSince(until)) < 0.01 } == true)
            let plain = try await alice.api.send(.init(clientMessageId: "x1", text: "plain"), to: group.id)
            let everyone = [alice.id, bob.id, team.carol.id, team.dave.id]
            let store = team.server.app.store
            #expect(!(try await store.pushRecipients(of: plain, among: everyone, now: Date())).contains(bob.id), "muted for the hour")
            #expect(try await store.pushRecipients(of: plain, among: everyone, now: until.addingTimeInterval(1)).contains(bob.id), "not after it")
            #expect(try await bob.api.conversation(group.id).muted)
        }
    }

    @Test(arguments: StoreKind.available)
    func muteIsPerUserOnEveryDeviceAndLeavesTheBadge(kind: StoreKind) async throws {
        try await withTeam(kind) { team in
            let (alice, bob, group) = (team.alice, team.bob, team.group)
            let bobEvents = EventRecorder(try await bob.connect())
            let settings = try await bob.api.setMuted(true, in: group.id)
            #expect(settings == ConversationSettings(muted: true))
            try await bobEvents.wait { events in
                events.contains { if case .conversationUpdated(let e) = $0 { e.conversation.id == group.id && e.conversation.muted } else { false } }
            }
            _ = try await alice.api.send(.init(clientMessageId: "u1", text: "noise"), to: group.id)
            let view = try await bob.api.conversation(group.id)
            #expect(view.muted && view.unreadCount == 1)  // unread still counts
            #expect(try await alice.api.conversation(group.id).muted == false)  // bob's alone
            #expect(try await team.server.app.store.totalUnread(userId: bob.id) == 0)  // nothing on the badge
            // Mentions and threads reach a muted user's push; plain messages do not.
            let store = team.server.app.store
            let plain = try await alice.api.send(.init(clientMessageId: "u2", text: "plain"), to: group.id)
            let everyone = [alice.id, bob.id, team.carol.id, team.dave.id]
            #expect(Set(try await store.pushRecipients(of: plain, among: everyone, now: Date())) == [team.carol.id, team.dave.id])
            let mention = try await alice.api.send(.init(clientMessageId: "u3", text: "@Bob", mentions: [bob.id]), to: group.id)
            #expect(Set(try await store.pushRecipients(of: mention, among: everyone, now: Date())) == [bob.id, team.carol.id, team.dave.id])
            let reply = try await team.carol.api.send(.init(clientMessageId: "u4", text: "in thread", threadRootId: plain.id), to: group.id)
            #expect(try await store.pushRecipients(of: reply, among: everyone, now: Date()) == [alice.id])  // the root's sender only

            // A mute with an end in the past is refused; one ahead ends by itself; off clears it.
            let past = try await team.server.raw(
                "PUT", "conversations/\(group.id)/settings", token: bob.token, json: #"{"muted":true,"mutedUntil":"2001-01-01T00:00:00.000Z"}"#)
            #expect(past.status == 400)
            let until = Date().addingTimeInterval(3600)
            #expect(try await bob.api.setMuted(true, until: until, in: group.id).mutedUntil == until.wholeMilliseconds)
            #expect(try await bob.api.conversation(group.id).mutedUntil == until.wholeMilliseconds)
            #expect(try await bob.api.setMuted(false, until: until, in: group.id) == ConversationSettings(muted: false))
            #expect(try await team.server.app.store.totalUnread(userId: bob.id) == 3)  // noise, plain, the mention: not carol's reply
            // Not a participant: the conversation does not exist.
            let outsider = try await team.server.register("olga@x.io")
            let hidden = try await team.server.raw("PUT", "conversations/\(group.id)/settings", token: outsider.token, json: #"{"muted":true}"#)
            #expect(hidden.status == 404)
        }
    }

    @Test(arguments: StoreKind.available)
    func pinsTakeSeqsAndAreBounded(kind: StoreKind) async throws {
        try await withTeam(kind) { team in
            let (alice, bob, group) = (team.alice, team.bob, team.group)
            let first = try await alice.api.send(.init(clientMessageId: "p1", text: "rules"), to: group.id)
            let second = try await bob.api.send(.init(clientMessageId: "p2", text: "agenda"), to: group.id)
            let pinned = try await bob.api.pin(first.id, in: group.id)
            #expect(pinned.pinnedBy == bob.id && pinned.pinnedAt != nil && pinned.updatedSeq == second.seq + 1)
            #expect(try await alice.api.pin(first.id, in: group.id) == pinned)  // again: nothing changes
            _ = try await alice.api.pin(second.id, in: group.id)
            #expect(try await bob.api.pins(in: group.id).map(\.id) == [second.id, first.id])
            // Catch-up brings the pins.
            let changes = try await team.carol.api.changes(group.id, since: second.seq)
            #expect(changes.messages.map(\.id) == [first.id, second.id] && changes.messages.allSatisfy { $0.pinnedAt != nil })
            let unpinned = try await alice.api.unpin(first.id, in: group.id)
            #expect(unpinned.pinnedAt == nil && unpinned.updatedSeq == changes.lastSeq + 1)
            // A deleted message loses its pin.
            _ = try await bob.api.deleteMessage(second.id, in: group.id)
            #expect(try await bob.api.pins(in: group.id).isEmpty)
            // At most 50.
            for index in 0..<50 {
                let message = try await alice.api.send(.init(clientMessageId: "q\(index)", text: "n\(index)"), to: group.id)
                _ = try await alice.api.pin(message.id, in: group.id)
            }
            let over = try await team.server.raw(
                "POST", "conversations/\(group.id)/pins", token: alice.token, json: #"{"messageId":"\#(first.id)"}"#)
            #expect(over.status == 409 && errorCode(over.body) == .conflict)
            let outsider = try await team.server.register("olga@x.io")
            let hidden = try await team.server.raw("GET", "conversations/\(group.id)/pins", token: outsider.token)
            #expect(hidden.status == 404)
        }
    }

    /// Replies and mentions from four senders at once: every count equals the contract's
    /// definition recomputed from the full history.
    @Test(arguments: StoreKind.available)
    func countsStayExactUnderConcurrentSenders(kind: StoreKind) async throws {
        try await withTeam(kind) { team in
            let users = [team.alice, team.bob, team.carol, team.dave]
            let roots = try await [
                team.alice.api.send(.init(clientMessageId: "root-a", text: "A"), to: team.group.id),
                team.bob.api.send(.init(clientMessageId: "root-b", text: "B"), to: team.group.id),
            ]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, user) in users.enumerated() {
                    group.addTask {
                        for round in 0..<12 {
                            let other = users[(index + round + 1) % users.count].id
                            let root = round % 3 == 0 ? nil : roots[round % 2].id
                            let mentions = round % 4 == 0 ? [other] : nil
                            _ = try await user.api.send(
                                .init(clientMessageId: "c\(index)-\(round)", text: "m", threadRootId: root, mentions: mentions),
                                to: team.group.id)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let all = try await team.alice.api.messagesIncludingThreads(team.group.id, limit: 200).messages
            for user in users {
                let view = try await user.api.conversation(team.group.id)
                let threads = Set(roots.map(\.id).filter { root in
                    all.contains { $0.id == root && $0.senderId == user.id }
                        || all.contains { $0.threadRootId == root && ($0.senderId == user.id || ($0.mentions ?? []).contains(user.id)) }
                })
                let unread = all.filter {
                    $0.senderId != user.id && $0.type != .system && $0.seq > view.readSeq
                        && ($0.threadRootId.map(threads.contains) ?? true)
                }.count
                let mentions = all.filter { $0.senderId != user.id && ($0.mentions ?? []).contains(user.id) }.count
                #expect(view.unreadCount == unread, "unread of \(user.id)")
                #expect(view.mentionCount == mentions, "mentions of \(user.id)")
                #expect(try await user.api.thread(roots[0].id, in: team.group.id, limit: 200).root.thread?.replyCount
                    == all.filter { $0.threadRootId == roots[0].id }.count)
            }
        }
    }
}
