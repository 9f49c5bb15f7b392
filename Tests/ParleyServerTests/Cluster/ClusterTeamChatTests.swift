import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// Threads, pins and mute across two nodes of one PostgreSQL: a thread reply, its root's new
/// count, a pin and a mute reach the users on the other node, in seq order, and catch-up agrees.
@Suite(.needsPostgres) struct ClusterTeamChatTests {
    @Test func threadsPinsAndMuteCrossNodes() async throws {
        let (a, b) = try await ClusterTests.twoNodes()
        do {
            let alice = try await a.register("alice@x.io")
            let bob = try await b.register("bob@x.io")
            let carol = try await b.register("carol@x.io")
            let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id, carol.id], name: "Ops"))
            let bobEvents = EventRecorder(try await bob.connect())
            let root = try await alice.api.send(.init(clientMessageId: "root", text: "Deploy at 5?"), to: group.id)
            // Sent through node A; bob and carol are on B.
            let reply = try await alice.api.send(
                .init(clientMessageId: "r1", text: "@Carol can you?", threadRootId: root.id, mentions: [carol.id]), to: group.id)
            try await bobEvents.wait("the reply, then the root's count") { events in
                events.contains { if case .messageUpdated(let e) = $0 { e.message.id == root.id && e.message.thread?.replyCount == 1 } else { false } }
            }
            // In seq order on B: the reply's seq before the root's new updatedSeq.
            let seqs = bobEvents.events.compactMap { event -> Int64? in
                switch event {
                case .messageCreated(let e) where e.message.conversationId == group.id: e.message.seq
                case .messageUpdated(let e) where e.message.conversationId == group.id: e.message.updatedSeq
                default: nil
                }
            }
            #expect(seqs == seqs.sorted() && seqs.contains(reply.seq) && seqs.contains(reply.seq + 1))
            let carolView = try await carol.api.conversation(group.id)
            #expect(carolView.mentionCount == 1 && carolView.unreadCount == 2)  // the root and the reply (mentioned: a member)
            #expect(try await bob.api.conversation(group.id).unreadCount == 1)  // the root only

            // A pin on B reaches alice on A.
            let aliceEvents = EventRecorder(try await alice.connect())
            _ = try await bob.api.pin(root.id, in: group.id)
            try await aliceEvents.wait("the pin") { events in
                events.contains { if case .messageUpdated(let e) = $0 { e.message.id == root.id && e.message.pinnedBy == bob.id } else { false } }
            }
            // Bob's mute, set through A, reaches his connection on B.
            let bobOnA = TestUser(server: a, auth: bob.auth)
            _ = try await bobOnA.api.setMuted(true, in: group.id)
            try await bobEvents.wait("bob's own view, muted") { events in
                events.contains { if case .conversationUpdated(let e) = $0 { e.conversation.id == group.id && e.conversation.muted } else { false } }
            }
            // Both nodes answer the same catch-up.
            #expect(try await bob.api.changes(group.id, since: 0) == (try await bobOnA.api.changes(group.id, since: 0)))
        } catch {
            await b.stop()
            await a.stop()
            throw error
        }
        await b.stop()
        await a.stop()
    }
}

/// Blocks across two nodes: a block stored through one node applies on the other at once (its
/// send refusal is the store's) and within the cluster record's trip to the signals there.
@Suite(.needsPostgres) struct ClusterTrustAndSafetyTests {
    @Test func aBlockMadeOnOneNodeHoldsOnTheOther() async throws {
        let (a, b) = try await ClusterTests.twoNodes()
        do {
            let alice = try await a.register("alice@x.io")
            let bob = try await b.register("bob@x.io")
            let carol = try await b.register("carol@x.io")
            let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id, carol.id], name: "Ops"))
            let direct = try await carol.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
            // Node B knows bob's relations (none) before the block: it must forget them.
            let bobEvents = EventRecorder(try await bob.connect())
            let before = try await carol.api.send(.init(clientMessageId: "before", text: "hi"), to: group.id)
            try await bobEvents.wait("the first message") { events in
                events.contains { if case .messageCreated(let e) = $0 { e.message.id == before.id } else { false } }
            }
            // Bob blocks carol through node A.
            let bobOnA = TestUser(server: a, auth: bob.auth)
            try await bobOnA.api.block(carol.id)
            // The store refuses carol's direct send on B at once.
            do {
                _ = try await carol.api.send(.init(clientMessageId: "d1", text: "hello?"), to: direct.id)
                Issue.record("a blocked direct send was accepted on the other node")
            } catch let error as ClientError {
                #expect(error.code == .forbidden)
            }
            // Once node B has the record, carol's group messages reach bob there marked.
            try await waitFor("node B to mark carol's messages for bob") {
                let probe = try await carol.api.send(.init(clientMessageId: "p\(UUID())", text: "probe"), to: group.id)
                try await bobEvents.wait("the probe") { events in
                    events.contains { if case .messageCreated(let e) = $0 { e.message.id == probe.id } else { false } }
                }
                return bobEvents.events.contains { if case .messageCreated(let e) = $0 { e.message.id == probe.id && e.message.senderBlocked == true } else { false } }
            }
            // Counted on either node as the store says: none of carol's messages for bob.
            #expect(try await bob.api.conversation(group.id).unreadCount == 0)
            #expect(try await bobOnA.api.conversation(group.id).unreadCount == 0)
        } catch {
            await b.stop()
            await a.stop()
            throw error
        }
        await b.stop()
        await a.stop()
    }
}
