import Foundation
@testable import ParleyBench
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// What `bench fanout --variant` adds to every send (thread roots, mentions), and the storm
/// fleet's report over real clients of an in-process server: every client back, and messages
/// sent in order afterwards reaching each client live, with no gap, catch-up or redelivery counted.
@Suite struct BenchSetupAndFleetTests {
    /// Members of `groups` groups of `size`, with ids but tokens no server knows.
    static func fakeMembers(groups: Int, size: Int) -> [BenchMember] {
        (0..<groups).flatMap { group in
            let conversation = EntityID()
            return (0..<size).map { _ in BenchMember(token: "t", userId: EntityID(), group: group, conversationId: conversation) }
        }
    }

    /// `extra` embedded in a `message.send`'s data as the generator writes it, parsed back.
    /// `member` of a group's extra data, or nil when the group has none or the data lacks it.
    static func field(_ extra: [Int: String], group: Int, _ member: String) throws -> Any? {
        guard let extra = extra[group] else { return nil }
        let json = #"{"clientMessageId":"pb|1|2","text":"x""# + extra + "}"
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
        return object?[member]
    }

    static let nowhere = URL(string: "http://127.0.0.1:9")!

    /// Runs `body` against an in-process server, stopping it afterwards whatever happens.
    static func withServer(_ body: (URL) async throws -> Void) async throws {
        let server = try await ParleySetup.startServer()
        do {
            try await body(server.url)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// Runs `body` with a fleet of one client per member of `groups` groups of `size`, every
    /// client connected and caught up.
    static func withFleet(groups: Int, size: Int, _ body: (StormFleet, [BenchMember], URL) async throws -> Void) async throws {
        try await withServer { url in
            let members = try await ParleySetup.groups(baseURL: url, groups: groups, size: size)
            let specs = members.enumerated().map { index, member in
                StormSpec(
                    socket: SocketSpec(
                        index: index, group: member.group, host: "127.0.0.1", port: url.port ?? 0, path: "/api/v1/ws",
                        token: member.token, conversationId: member.conversationId.description, isSender: false),
                    baseURL: url)
            }
            let fleet = StormFleet(threads: 1)
            let failed = await fleet.connect(specs)
            do {
                #expect(failed == 0)
                try await body(fleet, members, url)
            } catch {
                await fleet.shutdown()
                throw error
            }
            await fleet.shutdown()
        }
    }

    @Test func aPlainRunAddsNothingToAnySend() async throws {
        let extra = try await ParleySetup.variantData(.plain, baseURL: Self.nowhere, members: Self.fakeMembers(groups: 3, size: 4), size: 4)
        #expect(extra.isEmpty)
    }

    @Test func mentionsNameTheThreeMembersAfterEachGroupsFirst() async throws {
        let members = Self.fakeMembers(groups: 2, size: 6)
        let extra = try await ParleySetup.variantData(.mention, baseURL: Self.nowhere, members: members, size: 6)
        #expect(extra.keys.sorted() == [0, 1])
        for group in 0..<2 {
            let people = members.filter { $0.group == group }
            let named = try #require(try Self.field(extra, group: group, "mentions") as? [String])
            #expect(named == people[1...3].map(\.userId.description), "group \(group): not the first, not past the fourth")
            // Never someone from the other group.
            let others = Set(members.filter { $0.group != group }.map(\.userId.description))
            #expect(others.isDisjoint(with: named))
        }
    }

    @Test(arguments: [1, 2, 3])
    func aSmallGroupMentionsOnlyTheMembersItHas(size: Int) async throws {
        let members = Self.fakeMembers(groups: 1, size: size)
        let extra = try await ParleySetup.variantData(.mention, baseURL: Self.nowhere, members: members, size: size)
        let named = try #require(try Self.field(extra, group: 0, "mentions") as? [String])
        #expect(named == members.dropFirst().map(\.userId.description))
    }

    @Test func aThreadRunRepliesUnderARootInTheGroupsOwnConversation() async throws {
        try await Self.withServer { url in
            let members = try await ParleySetup.groups(baseURL: url, groups: 2, size: 2)
            let extra = try await ParleySetup.variantData(.thread, baseURL: url, members: members, size: 2)
            #expect(extra.keys.sorted() == [0, 1])
            var roots: Set<String> = []
            for group in 0..<2 {
                let first = try #require(members.first { $0.group == group })
                let root = try #require(try Self.field(extra, group: group, "threadRootId") as? String)
                roots.insert(root)
                let stored = try await ParleyAPI(baseURL: url, token: first.token).messages(first.conversationId).messages
                #expect(stored.map(\.id.description) == [root], "group \(group): the root is its conversation's one message")
                #expect(stored.first?.senderId == first.userId)
            }
            #expect(roots.count == 2, "each group has its own root")
            // A send with that data is accepted by the server as a reply in that thread.
            let first = try #require(members.first { $0.group == 0 })
            let rootText = try #require(try Self.field(extra, group: 0, "threadRootId") as? String)
            let rootId = try #require(EntityID(rootText))
            let reply = try await ParleyAPI(baseURL: url, token: members[1].token).send(
                .init(clientMessageId: "reply-1", text: "in thread", threadRootId: rootId), to: first.conversationId)
            #expect(reply.threadRootId == rootId)
        }
    }

    // MARK: The fleet

    @Test func aFleetComesBackAndThenFollowsLiveMessagesWithoutGapsOrCatchUps() async throws {
        try await Self.withFleet(groups: 1, size: 3) { fleet, members, url in
            let owner = ParleyAPI(baseURL: url, token: members[0].token)
            let conversation = members[0].conversationId
            for n in 0..<3 { _ = try await owner.send(.init(clientMessageId: "before-\(n)", text: "before \(n)"), to: conversation) }
            let stored = try await owner.changes(conversation, since: 0).lastSeq
            await fleet.expect([conversation.description: stored], origin: monotonicNanos())
            var report = await fleet.waitUntilBack(timeout: .seconds(10))
            #expect(report.clients == 3 && report.back == 3)
            #expect(report.dials == 3 && report.refusedDials == 0 && report.gaveUp == 0)
            #expect(report.catchUps >= 3, "each hello catches up once")
            #expect(report.backMillis.count == 3 && report.helloMillis.count == 3)

            // The storm proper: counts from zero, then messages while every client is live.
            await fleet.resetStats()
            for n in 0..<4 { _ = try await owner.send(.init(clientMessageId: "after-\(n)", text: "after \(n)"), to: conversation) }
            let newest = try await owner.changes(conversation, since: 0).lastSeq
            #expect(newest >= stored + 4)
            await fleet.expect([conversation.description: newest], origin: monotonicNanos())
            report = await fleet.waitUntilBack(timeout: .seconds(10))
            #expect(report.back == 3, "every client reached seq \(newest)")
            #expect(report.gaps == 0 && report.redelivered == 0)
            #expect(report.catchUps == 0 && report.failedCatchUps == 0, "in-order live frames need no catch-up")
            #expect(report.dials == 0, "nobody was disconnected")
            #expect(report.backMillis.allSatisfy { $0 >= 0 })
        }
    }

    @Test func aClientExpectedAtASeqNoMessageReachedIsNotCountedBack() async throws {
        try await Self.withFleet(groups: 2, size: 1) { fleet, members, url in
            let reached = try await ParleyAPI(baseURL: url, token: members[0].token).changes(members[0].conversationId, since: 0)
            // The first group's target is where it is; the second's is beyond anything sent.
            await fleet.expect(
                [members[0].conversationId.description: reached.lastSeq, members[1].conversationId.description: 1_000],
                origin: monotonicNanos())
            let report = await fleet.waitUntilBack(timeout: .milliseconds(300))
            #expect(report.clients == 2)
            #expect(report.back == 1)
            #expect(report.backMillis.count == 1)
        }
    }
}
