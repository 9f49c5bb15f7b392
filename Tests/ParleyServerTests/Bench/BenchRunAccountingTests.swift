import Foundation
import ParleyBench
import Testing

/// Whole generator runs against the bare floor, as `bench fanout --floor` does them, read the
/// way an operator reads the report: a member that never connected shows up as missing
/// messages (not as a smaller, perfect run), senders stop at their share, and each group's
/// messages stay in the group.
@Suite struct BenchRunAccountingTests {
    /// Floor sockets for `groups` groups of `size`, the first `senders` of each sending (all by
    /// default); the members listed in `dead` dial a port nothing listens on.
    static func specs(groups: Int, size: Int, senders: Int? = nil, floor: Int, dead: Set<Int> = [], deadPort: Int = 0) -> [SocketSpec] {
        let members = (0..<groups * size).map { index in
            (group: index / size, conversationId: "g\(index / size)", token: String?.none)
        }
        return LoadRun.specs(members: members, size: size, sendersPerGroup: senders ?? size) { index, _ in
            BenchEndpoint(host: "127.0.0.1", port: dead.contains(index) ? deadPort : floor, path: "/ws")
        }
    }

    static func policy(perSender: Int) -> SendPolicy {
        var policy = SendPolicy()
        policy.messagesPerSender = perSender
        policy.verify = true
        policy.inFlight = 2
        return policy
    }

    /// Runs `specs` against a floor started here; `specs` gets the floor's port.
    static func run(perSender: Int, _ specs: (Int) throws -> [SocketSpec]) async throws -> RunResult {
        let floor = try await BareServer.start()
        do {
            let result = try await LoadRun.run(
                specs: try specs(floor.port), policy: policy(perSender: perSender), threads: 2, warmup: 0, duration: 30,
                drainTimeout: .seconds(5))
            await floor.stop()
            return result
        } catch {
            await floor.stop()
            throw error
        }
    }

    /// A sender whose socket never opened sends nothing: the run ends once the connected
    /// senders have sent their share, instead of waiting out its whole duration (30 s here)
    /// for messages that cannot come, which padded the measured time and understated the rate.
    @Test func aDeadSenderDoesNotHoldTheRunToItsFullDuration() async throws {
        let deadPort = try freeLoopbackPort()
        let result = try await Self.run(perSender: 4) { floor in
            // Member 0 is group 0's first sender.
            Self.specs(groups: 2, size: 3, senders: 2, floor: floor, dead: [0], deadPort: deadPort)
        }
        #expect(result.connectFailures == 1)
        #expect(result.stats.totalAcked == 12, "three live senders, four messages each")
        #expect(result.seconds < 20, "the run waited \(result.seconds) s of its 30 for a sender that never connected")
    }

    @Test func aMemberThatNeverConnectedIsReportedAsMissingWhatItWasOwed() async throws {
        let deadPort = try freeLoopbackPort()
        let result = try await Self.run(perSender: 4) { floor in
            // Member 2 is group 0's receiver (a dead sender would hold the run to its full duration).
            Self.specs(groups: 2, size: 3, senders: 2, floor: floor, dead: [2], deadPort: deadPort)
        }
        #expect(result.connectFailures == 1)
        #expect(result.connectError != nil)
        #expect(result.members.count == 6, "every planned member is known to the check")
        // Four senders, four messages each.
        #expect(result.stats.totalAcked == 16)
        #expect(result.stats.totalErrors == 0)
        let check = LoadRun.verify(result)
        // In each group the two senders owe each other 4 and the receiver all 8; group 0's
        // receiver is the dead member.
        #expect(check.expected == 2 * (4 + 4 + 8))
        #expect(check.missing == 8, "exactly what the dead member should have received")
        #expect(check.delivered == check.expected - 8)
        #expect(check.duplicates == 0 && check.strays == 0)
    }

    @Test func sendersStopAtTheirShareAndEveryOtherMemberGetsEachOnce() async throws {
        let result = try await Self.run(perSender: 3) { floor in Self.specs(groups: 3, size: 2, floor: floor) }
        #expect(result.connectFailures == 0)
        #expect(result.stats.totalSent == 18 && result.stats.totalAcked == 18)
        // Each message reaches the one other member of its pair, and comes back to its sender.
        #expect(result.stats.totalDeliveries == 18)
        #expect(result.stats.totalEchoes == 18)
        let check = LoadRun.verify(result)
        #expect(check.expected == 18 && check.delivered == 18)
        #expect(check.missing == 0 && check.duplicates == 0 && check.strays == 0)
        // Each log holds only the other member's numbers 0, 1, 2.
        for log in result.logs {
            let partner = log.socket % 2 == 0 ? log.socket + 1 : log.socket - 1
            let keys = log.counts.keys.sorted()
            #expect(keys == (0..<3).map { UInt64(partner) << 32 | UInt64($0) }, "socket \(log.socket): \(keys)")
            #expect(log.counts.values.allSatisfy { $0 == 1 })
            #expect(log.acked == 3)
        }
    }

    @Test func theReportsRatesAreTheWindowsCountsOverItsLength() async throws {
        let result = try await Self.run(perSender: 50) { floor in Self.specs(groups: 1, size: 2, floor: floor) }
        #expect(result.seconds > 0 && result.seconds < 30, "the run ended when the senders were done: \(result.seconds)")
        // The window opens once sending has started: it holds at most the run's sends, and the
        // rates and latencies are of what it holds, over its own length.
        #expect(result.stats.totalAcked == 100 && result.stats.totalDeliveries == 100)
        #expect(result.stats.acked > 0 && result.stats.acked <= 100)
        #expect(result.stats.deliveries > 0 && result.stats.deliveries <= 100)
        #expect(abs(result.messagesPerSecond - Double(result.stats.acked) / result.seconds) < 1e-9)
        #expect(abs(result.deliveriesPerSecond - Double(result.stats.deliveries) / result.seconds) < 1e-9)
        let ack = LatencySummary(result.stats.ack)
        #expect(ack.count == UInt64(result.stats.acked), "one ack latency per ack in the window")
        #expect(LatencySummary(result.stats.delivery).count == UInt64(result.stats.deliveries))
        #expect(ack.p50 > 0 && ack.p50 <= ack.p90 && ack.p90 <= ack.p99 && ack.p99 <= ack.p999 && ack.p999 <= ack.max)
    }
}
