import Foundation
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// Unread counts come from counters kept in the same transactions as sends, deletes and reads
/// (no COUNT over the backlog on the view, list or `conversation.updated` paths). They must
/// equal the contract's definition exactly: other senders' messages above the member's
/// `readSeq`, not deleted, not system.
@Suite struct UnreadCounterTests {
    static let t0 = Date(timeIntervalSince1970: 1_760_000_000)

    /// The contract's definition, counted the slow way from the whole history.
    static func expectedUnread(
        _ store: any ParleyStore, _ conversationId: EntityID, for member: EntityID, blocking: Set<EntityID> = []
    ) async throws -> Int {
        var all: [Message] = []
        var after: Int64 = 0
        while true {
            let page = try await store.messages(conversationId: conversationId, viewer: member, before: nil, after: after, limit: 200)
            all += page.messages
            guard let last = page.messages.last?.seq, page.hasMore else { break }
            after = last
        }
        let readSeq = try await store.conversation(id: conversationId, viewer: member)?.readSeq ?? 0
        // A sender the member blocks counts for nothing.
        return all.filter {
            $0.seq > readSeq && $0.senderId != member && $0.deletedAt == nil && $0.type != .system && !blocking.contains($0.senderId)
        }.count
    }

    static func check(
        _ store: any ParleyStore, _ conversationId: EntityID, _ members: [EntityID], step: String,
        blocks: [EntityID: Set<EntityID>] = [:]
    ) async throws {
        let views = try await store.conversationViews(id: conversationId, viewers: members, listingMembersUpTo: .max)
        // The same as a large group's views (no member lists; read another way on SQLite).
        let large = try await store.conversationViews(id: conversationId, viewers: members, listingMembersUpTo: 1)
        for member in members {
            #expect(large[member]?.unreadCount == views[member]?.unreadCount && large[member]?.readSeq == views[member]?.readSeq,
                    "\(step): large-group view of member \(members.firstIndex(of: member)!)")
            #expect(large[member]?.members.isEmpty == true && large[member]?.memberCount == views[member]?.memberCount)
            #expect(large[member]?.lastMessage == views[member]?.lastMessage && large[member]?.lastSeq == views[member]?.lastSeq)
        }
        for member in members {
            let expected = try await expectedUnread(store, conversationId, for: member, blocking: blocks[member] ?? [])
            let single = try await store.conversation(id: conversationId, viewer: member)?.unreadCount
            let all = try await store.conversations(viewer: member)
            let listed = all.first { $0.id == conversationId }?.unreadCount
            // A push's badge: every conversation's count at once, from the counters.
            let total = try await store.totalUnread(userId: member)
            #expect(total == all.reduce(0) { $0 + $1.unreadCount }, "\(step): member \(members.firstIndex(of: member)!)'s badge")
            #expect(single == expected && views[member]?.unreadCount == expected && listed == expected,
                    "\(step): member \(members.firstIndex(of: member)!) expected \(expected), view \(single ?? -1), views \(views[member]?.unreadCount ?? -1), list \(listed ?? -1)")
        }
    }

    /// A seeded random run of sends (own and others'), reads, deletes of read and unread
    /// messages, members joining with history behind them, checked after every step.
    @Test(arguments: StoreKind.available)
    func countsStayExactThroughSendsReadsDeletesAndJoins(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            var users: [User] = []
            for index in 0..<5 {
                users.append(try await store.register(
                    organization: "acme", email: "u\(index)@x.io", displayName: "U\(index)", passwordHash: "h", now: Self.t0))
            }
            let created = try await store.createConversation(NewConversation(
                organizationId: users[0].organizationId, creatorId: users[0].id, type: .group, name: "g",
                participantIds: [users[1].id, users[2].id], now: Self.t0))
            let id = created.conversation.id
            var members = [users[0].id, users[1].id, users[2].id]
            var sent: [Message] = []
            var generator = SeededGenerator(seed: kind == .sqlite ? 11 : 12)
            for step in 0..<120 {
                let actor = members[Int.random(in: 0..<members.count, using: &generator)]
                switch Int.random(in: 0..<10, using: &generator) {
                case 0..<5:
                    let result = try await store.send(MessageDraft(
                        conversationId: id, senderId: actor, clientMessageId: "s\(step)", type: .text, text: "m\(step)", now: Self.t0))
                    sent.append(result.message)
                case 5..<8:
                    let last = try await store.conversation(id: id, viewer: actor)?.lastSeq ?? 0
                    _ = try await store.markRead(conversationId: id, userId: actor, upToSeq: Int64.random(in: 0...last, using: &generator), messageIds: nil)
                case 8:
                    if let victim = sent.filter({ $0.senderId == actor && $0.deletedAt == nil }).randomElement(using: &generator) {
                        let changed = try await store.change(.delete, messageId: victim.id, in: id, by: actor, now: Self.t0)
                        sent[sent.firstIndex { $0.id == victim.id }!] = changed.message
                    }
                default:
                    if members.count < users.count {
                        // A newcomer: the whole history is unread to them (and a system message is written).
                        let newcomer = users[members.count].id
                        _ = try await store.addParticipants(conversationId: id, by: users[0].id, userIds: [newcomer], now: Self.t0)
                        members.append(newcomer)
                    }
                }
                try await Self.check(store, id, members, step: "step \(step)")
            }
            // Concurrent sends and reads: the counters are kept in the writes' own transactions.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (index, member) in members.enumerated() {
                    group.addTask {
                        for n in 0..<15 {
                            _ = try await store.send(MessageDraft(
                                conversationId: id, senderId: member, clientMessageId: "c\(index)-\(n)", type: .text, text: "c", now: Self.t0))
                            if n.isMultiple(of: 4) {
                                let last = try await store.conversation(id: id, viewer: member)?.lastSeq ?? 0
                                _ = try await store.markRead(conversationId: id, userId: member, upToSeq: max(0, last - 2), messageIds: nil)
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            try await Self.check(store, id, members, step: "after concurrent sends and reads")
        }
    }

    /// The same with blocks: members block and unblock each other at random between
    /// sends, reads and deletes; a blocked sender's messages never count for the blocker, what
    /// they sent before the block stops counting at once and counts again after it.
    @Test(arguments: StoreKind.available)
    func countsStayExactThroughBlocksAndUnblocks(_ kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            var users: [User] = []
            for index in 0..<4 {
                users.append(try await store.register(
                    organization: "acme", email: "b\(index)@x.io", displayName: "B\(index)", passwordHash: "h", now: Self.t0))
            }
            let members = users.map(\.id)
            let id = try await store.createConversation(NewConversation(
                organizationId: users[0].organizationId, creatorId: members[0], type: .group, name: "g",
                participantIds: Array(members.dropFirst()), now: Self.t0)).conversation.id
            var blocks: [EntityID: Set<EntityID>] = [:]
            var sent: [Message] = []
            var generator = SeededGenerator(seed: kind == .sqlite ? 21 : 22)
            for step in 0..<150 {
                let actor = members[Int.random(in: 0..<members.count, using: &generator)]
                let other = members.filter { $0 != actor }[Int.random(in: 0..<(members.count - 1), using: &generator)]
                switch Int.random(in: 0..<12, using: &generator) {
                case 0..<5:
                    let mentions = Bool.random(using: &generator) ? [other] : []
                    sent.append(try await store.send(MessageDraft(
                        conversationId: id, senderId: actor, clientMessageId: "s\(step)", type: .text, text: "m\(step)",
                        mentions: mentions, now: Self.t0)).message)
                case 5..<7:
                    let last = try await store.conversation(id: id, viewer: actor)?.lastSeq ?? 0
                    _ = try await store.markRead(conversationId: id, userId: actor, upToSeq: Int64.random(in: 0...last, using: &generator), messageIds: nil)
                case 7:
                    if let victim = sent.filter({ $0.senderId == actor && $0.deletedAt == nil }).randomElement(using: &generator) {
                        let changed = try await store.change(.delete, messageId: victim.id, in: id, by: actor, now: Self.t0)
                        sent[sent.firstIndex { $0.id == victim.id }!] = changed.message
                    }
                default:
                    let identity = Identity(userId: actor, organizationId: users[0].organizationId)
                    let block = !(blocks[actor]?.contains(other) ?? false)
                    _ = try await store.writing { tx in try await BlockRules.setBlocked(block, user: other, by: identity, now: Self.t0, in: tx) }
                    if block { blocks[actor, default: []].insert(other) } else { blocks[actor]?.remove(other) }
                }
                try await Self.check(store, id, members, step: "step \(step)", blocks: blocks)
            }
        }
    }
}
