import Foundation
@testable import ParleyBench
import Testing

/// `LoadRun.verify`, the exactly-once check `bench fanout --verify` reports, on receipt logs
/// written by hand: each way a run can go wrong (a message missed, delivered twice, delivered
/// to the wrong group, or never acknowledged) must show in its own figure, and only there.
@Suite struct BenchVerificationTests {
    /// A receipt key: message `number` of the sender socket `sender`.
    static func key(_ sender: Int, _ number: Int) -> UInt64 { UInt64(sender) << 32 | UInt64(number) }

    /// One group's logs where every member got every other member's acked messages once.
    /// Members are sockets `first..<first+size`; each acked `acked[i]` messages.
    static func perfectGroup(_ group: Int, first: Int, acked: [Int]) -> [ReceiptLog] {
        let members = Array(first..<first + acked.count)
        return members.enumerated().map { position, socket in
            var counts: [UInt64: Int] = [:]
            for (senderPosition, sender) in members.enumerated() where sender != socket {
                for n in 0..<acked[senderPosition] { counts[key(sender, n)] = 1 }
            }
            return ReceiptLog(socket: socket, group: group, counts: counts, acked: acked[position])
        }
    }

    static func check(_ logs: [ReceiptLog]) -> (expected: Int, delivered: Int, missing: Int, duplicates: Int, strays: Int) {
        LoadRun.verify(RunResult(stats: LoadStats(), seconds: 1, connectFailures: 0, connectError: nil, logs: logs))
    }

    @Test func aPerfectRunIsAllDeliveredAndNothingElse() {
        // Group 0: three senders of 4, 2 and 0 messages; group 1: two senders of 5 each.
        let logs = Self.perfectGroup(0, first: 0, acked: [4, 2, 0]) + Self.perfectGroup(1, first: 3, acked: [5, 5])
        let check = Self.check(logs)
        // Group 0: socket 0 expects 2, socket 1 expects 4, socket 2 expects 6; group 1: 5 each.
        #expect(check.expected == 2 + 4 + 6 + 5 + 5)
        #expect(check.delivered == check.expected)
        #expect(check.missing == 0 && check.duplicates == 0 && check.strays == 0)
    }

    /// A member whose socket never connected has no log, but it was to receive its group's
    /// messages: they are all missing (not "missing 0", as a count over its empty log would say).
    @Test func aMemberThatNeverConnectedMissesEverythingItWasSent() {
        let logs = Self.perfectGroup(0, first: 0, acked: [3, 2]) + Self.perfectGroup(1, first: 2, acked: [4, 0])
        let members = [0: 0, 1: 0, 4: 0, 2: 1, 3: 1]
        let check = LoadRun.verify(RunResult(stats: LoadStats(), seconds: 1, connectFailures: 1, connectError: nil, logs: logs, members: members))
        // Connected: 2 + 3 in group 0, 4 + 0 in group 1; socket 4 of group 0 missed all 3 + 2.
        #expect(check.expected == 2 + 3 + 4 + 0 + 5)
        #expect(check.missing == 5)
        #expect(check.delivered == 9)
        #expect(check.duplicates == 0 && check.strays == 0)
        // Every member connected: the members change nothing.
        let complete = LoadRun.verify(RunResult(
            stats: LoadStats(), seconds: 1, connectFailures: 0, connectError: nil, logs: logs, members: [0: 0, 1: 0, 2: 1, 3: 1]))
        #expect(complete.expected == 9 && complete.missing == 0 && complete.delivered == 9)
    }

    @Test func noLogsExpectNothing() {
        let check = Self.check([])
        let figures: [Int] = [check.expected, check.delivered, check.missing, check.duplicates, check.strays]
        #expect(figures == [0, 0, 0, 0, 0])
    }

    @Test func aMessageOneReceiverMissedIsMissingOnce() {
        var logs = Self.perfectGroup(0, first: 0, acked: [3, 3, 3])
        logs[2].counts[Self.key(0, 1)] = nil
        let check = Self.check(logs)
        #expect(check.expected == 18)
        #expect(check.missing == 1 && check.delivered == 17)
        #expect(check.duplicates == 0 && check.strays == 0)
    }

    @Test func aMessageRecordedZeroTimesIsMissingNotDelivered() {
        var logs = Self.perfectGroup(0, first: 0, acked: [2, 2])
        logs[1].counts[Self.key(0, 0)] = 0
        let check = Self.check(logs)
        #expect(check.missing == 1 && check.delivered == 3)
    }

    @Test func aReceiverThatGotNothingMissesEverythingItWasOwed() {
        var logs = Self.perfectGroup(0, first: 0, acked: [5, 5, 5, 0])
        logs[3].counts = [:]
        let check = Self.check(logs)
        #expect(check.expected == 10 + 10 + 10 + 15)
        #expect(check.missing == 15 && check.delivered == 30)
    }

    @Test func aMessageDeliveredThreeTimesIsDeliveredOnceAndDuplicatedTwice() {
        var logs = Self.perfectGroup(0, first: 0, acked: [2, 2])
        logs[0].counts[Self.key(1, 1)] = 3
        let check = Self.check(logs)
        #expect(check.expected == 4 && check.delivered == 4)
        #expect(check.duplicates == 2)
        #expect(check.missing == 0 && check.strays == 0)
    }

    @Test func duplicatesAddUpOverReceiversAndMessages() {
        var logs = Self.perfectGroup(0, first: 0, acked: [2, 2, 2])
        logs[0].counts[Self.key(1, 0)] = 2
        logs[1].counts[Self.key(2, 1)] = 4
        logs[2].counts[Self.key(0, 0)] = 2
        #expect(Self.check(logs).duplicates == 1 + 3 + 1)
    }

    @Test func anotherGroupsMessageIsAStrayNotADelivery() {
        var logs = Self.perfectGroup(0, first: 0, acked: [2, 2]) + Self.perfectGroup(1, first: 2, acked: [2, 2])
        // Socket 0 (group 0) also got message 0 of socket 2 (group 1).
        logs[0].counts[Self.key(2, 0)] = 1
        let check = Self.check(logs)
        #expect(check.strays == 1)
        #expect(check.expected == 8 && check.delivered == 8 && check.missing == 0)
    }

    @Test func aMessageBeyondWhatTheSenderHadAckedIsAStray() {
        var logs = Self.perfectGroup(0, first: 0, acked: [3, 0])
        // Socket 0's fourth send (number 3) arrived but its ack did not: not expected.
        logs[1].counts[Self.key(0, 3)] = 1
        let check = Self.check(logs)
        #expect(check.expected == 3 && check.delivered == 3)
        #expect(check.strays == 1 && check.missing == 0)
    }

    @Test func aSendersOwnMessageIsNeverExpectedBack() {
        var logs = Self.perfectGroup(0, first: 0, acked: [2, 2])
        // The generator never logs echoes; one logged anyway is a stray, not a delivery.
        logs[0].counts[Self.key(0, 0)] = 1
        let check = Self.check(logs)
        #expect(check.expected == 4 && check.delivered == 4 && check.strays == 1)
    }

    @Test func aSenderWithNoAckIsExpectedNowhere() {
        // Socket 1 sent, but every one of its sends was refused (acked 0).
        let logs = Self.perfectGroup(0, first: 0, acked: [1, 0, 0])
        let check = Self.check(logs)
        #expect(check.expected == 2 && check.delivered == 2 && check.missing == 0)
    }

    @Test func sendersAreMatchedBySocketNotByPositionInTheLogs() {
        // Logs come back per event loop, in no particular order.
        let logs = Array(Self.perfectGroup(0, first: 10, acked: [2, 3, 4]).reversed())
        let check = Self.check(logs)
        #expect(check.expected == (3 + 4) + (2 + 4) + (2 + 3))
        #expect(check.delivered == check.expected && check.missing == 0 && check.strays == 0)
    }

    @Test func keysOfHighSocketIndicesDoNotCollideWithHighMessageNumbers() {
        // Socket 1's message 0 and socket 0's message 2^32 - 1 are different messages.
        var logs = [
            ReceiptLog(socket: 70_000, group: 0, counts: [:], acked: 70_000),
            ReceiptLog(socket: 1, group: 0, counts: [:], acked: 1),
        ]
        for n in 0..<70_000 { logs[1].counts[Self.key(70_000, n)] = 1 }
        logs[0].counts[Self.key(1, 0)] = 1
        let check = Self.check(logs)
        #expect(check.expected == 70_001 && check.delivered == 70_001 && check.missing == 0 && check.strays == 0)
    }
}
