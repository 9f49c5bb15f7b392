import Foundation
import ParleyBench
import ParleyClient
import Synchronization
import Testing

/// The `bench fanout` scenario, tiny and in-process, through the same generator and setup:
/// every message reaches every other member of its group exactly once (counts, no timings).
@Suite struct BenchFanoutTests {
    static var options: FanoutOptions {
        var options = FanoutOptions()
        options.groups = 2
        options.size = 3
        options.warmup = 0
        options.duration = 60  // an upper bound: the run ends once every sender's 5 messages are answered
        options.inFlight = 2
        options.messagesPerSender = 5
        options.verify = true
        return options
    }

    /// `--history`: every member but a group's first starts with that many unread messages, and
    /// the run on top of them still delivers everything once, in order.
    @Test func aSeededHistoryIsUnreadForEveryReaderAndTheRunStillDeliversOnceInOrder() async throws {
        let server = try await ParleySetup.startApp()
        let seeded = Mutex<[BenchMember]>([])
        let result = try await FanoutScenario.runParley(servers: [server.url], options: Self.options) { members in
            try await ParleySetup.seedHistory(store: server.app.store, members: members, count: 300)
            seeded.withLock { $0 = members }
        }
        let members = seeded.withLock { $0 }
        #expect(members.count == 6)
        for member in members where member.userId != members.first(where: { $0.group == member.group })?.userId {
            let conversation = try await ParleyAPI(baseURL: server.url, token: member.token).conversation(member.conversationId)
            // 300 seeded, plus what the run's other senders sent (each sender sends 5).
            #expect(conversation.unreadCount == 300 + 2 * 5, "member of group \(member.group)")
        }
        await server.stop()
        let check = LoadRun.verify(result)
        #expect(check.delivered == check.expected && check.missing == 0 && check.duplicates == 0)
        #expect(result.stats.catchUps == 0 && result.stats.outOfOrder == 0)
    }

    @Test func parleyDeliversEveryMessageToEveryOtherMemberOnce() async throws {
        let server = try await ParleySetup.startServer()
        let result = try await FanoutScenario.runParley(servers: [server.url], options: Self.options)
        await server.stop()
        #expect(result.connectFailures == 0)
        #expect(result.stats.totalErrors == 0)
        #expect(result.stats.totalAcked == 2 * 3 * 5)
        let check = LoadRun.verify(result)
        #expect(check.expected == 2 * 3 * 5 * 2)
        #expect(check.delivered == check.expected)
        #expect(check.missing == 0)
        #expect(check.duplicates == 0)
        #expect(check.strays == 0)
        #expect(result.stats.totalEchoes == 2 * 3 * 5)
    }

    @Test func bareFloorDeliversEveryMessageToEveryOtherMemberOnce() async throws {
        let result = try await FanoutScenario.runFloor(options: Self.options)
        #expect(result.connectFailures == 0)
        #expect(result.stats.totalAcked == 2 * 3 * 5)
        let check = LoadRun.verify(result)
        #expect(check.expected == 2 * 3 * 5 * 2)
        #expect(check.delivered == check.expected)
        #expect(check.missing == 0)
        #expect(check.duplicates == 0)
        #expect(check.strays == 0)
    }

    @Test func twoURLsOfOneServerActAsTwoNodes() async throws {
        let server = try await ParleySetup.startServer()
        var options = Self.options
        options.sendersPerGroup = 1
        options.cross = true
        let alias = URL(string: server.url.absoluteString.replacingOccurrences(of: "127.0.0.1", with: "localhost"))!
        let result = try await FanoutScenario.runParley(servers: [server.url, alias], options: options)
        await server.stop()
        let check = LoadRun.verify(result)
        #expect(result.stats.totalAcked == 2 * 5)
        #expect(check.expected == 2 * 5 * 2)
        #expect(check.missing == 0)
        #expect(check.duplicates == 0)
    }

    /// `parley bench list` runs end to end (a small list) and reports
    /// the first page, every page, and a sync with nothing new under 1 KB, beside its floor.
    @Test(.heavy) func theListScenarioReportsPagesAndAnIdleSyncUnderAKilobyte() async throws {
        let run = try await runToEndOffPool(ServeProcess.binary, ["bench", "list", "--conversations", "230", "--runs", "3"])
        #expect(run.status == 0, "\(run.output)")
        let line = try #require(run.output.split(separator: "\n").last { $0.hasPrefix("{") })
        let json = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let idle = try #require(json["sync_nothing_new"] as? [String: Any])
        let all = try #require(json["all_pages"] as? [String: Any])
        #expect((idle["bytes"] as? Int ?? .max) < 1024 && all["pages"] as? Int == 2 && json["floor_ms"] != nil, "\(line)")
    }
}
