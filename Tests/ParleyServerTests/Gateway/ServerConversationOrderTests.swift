import Foundation
import NIOCore
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Synchronization
import Testing

/// `ConversationOrder` as seeded properties, on a clock moved by hand: whatever order a
/// conversation's events arrive in, with repeats, interleaved with other conversations, and
/// with some never arriving (read from the store past the hold bound), every connection sees
/// each conversation's seqs exactly once and in order.
@Suite struct ServerConversationOrderTests {
    /// What was handed on, per conversation (the event's first recipient names it here).
    final class Delivered: Sendable {
        private let seqs = Mutex<[EntityID: [Int64]]>([:])
        func append(_ event: ConversationOrder.Event) { seqs.withLock { $0[event.recipients[0], default: []].append(event.seq) } }
        func of(_ conversation: EntityID) -> [Int64] { seqs.withLock { $0[conversation] ?? [] } }
        var total: Int { seqs.withLock { $0.values.reduce(0) { $0 + $1.count } } }
    }

    static func event(_ seq: Int64, _ conversation: EntityID) -> ConversationOrder.Event {
        .init(seq: seq, frame: ByteBuffer(string: "\(seq)"), recipients: [conversation])
    }

    /// Every seq of three conversations, shuffled together with repeats; each lane was told
    /// its first seq by its commit (`expect`): all handed on in order, once, with no store read.
    @Test(arguments: [51, 52, 53, 54, 55, 56] as [UInt64])
    func shuffledEventsWithRepeatsAreHandedOnOnceInOrder(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        let clock = ManualClock()
        let delivered = Delivered()
        let order = ConversationOrder(holdBound: .milliseconds(200), clock: clock.serverClock) { delivered.append($0) }
        let reads = Mutex(0)
        order.attach(missingEvents: { _, _, _, _ in
            reads.withLock { $0 += 1 }
            return []
        })
        let conversations = (0..<3).map { _ in EntityID() }
        var counts: [EntityID: Int64] = [:]
        var events: [(EntityID, Int64)] = []
        for conversation in conversations {
            let first = Int64.random(in: 1...50, using: &random)
            let count = Int64.random(in: 5...40, using: &random)
            order.expect(conversation, seq: first)
            counts[conversation] = count
            for seq in first..<(first + count) {
                events.append((conversation, seq))
                if Int.random(in: 0..<5, using: &random) == 0 { events.append((conversation, seq)) }
            }
        }
        events.shuffle(using: &random)
        for (conversation, seq) in events { order.publish(conversation, Self.event(seq, conversation)) }
        for conversation in conversations {
            let seqs = delivered.of(conversation)
            let first = seqs.first ?? 0
            #expect(seqs == Array(first..<(first + counts[conversation]!)), "seed \(seed)")
        }
        let repeats = events.count - Int(counts.values.reduce(0, +))
        #expect(order.stats.late == repeats, "seed \(seed): every repeat dropped")
        #expect(reads.withLock { $0 } == 0, "seed \(seed): no store read")
        clock.advance(by: 1)  // lets the hold timers started along the way end
    }

    /// Some events never arrive (a lost notification): past the bound the lane reads exactly
    /// the missing ones from the store, and the connections still see every seq once, in
    /// order; nothing is delivered before its predecessors.
    @Test(arguments: [61, 62, 63, 64] as [UInt64])
    func lostEventsAreReadFromTheStoreAndEverythingGoesOnInOrder(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        let clock = ManualClock()
        let delivered = Delivered()
        let order = ConversationOrder(holdBound: .milliseconds(200), clock: clock.serverClock) { delivered.append($0) }
        let conversation = EntityID()
        let count: Int64 = 40
        let asked = Mutex<[Int64]>([])
        order.attach(missingEvents: { id, viewer, after, before in
            #expect(id == conversation && viewer == conversation)
            asked.withLock { $0 += Array((after + 1)..<before) }
            return ((after + 1)..<before).map { Self.event($0, id) }
        })
        order.expect(conversation, seq: 1)
        var arriving = (1...count).filter { $0 == count || Int.random(in: 0..<4, using: &random) != 0 }
        let lost = Set(1...count).subtracting(arriving)
        arriving.shuffle(using: &random)
        for seq in arriving { order.publish(conversation, Self.event(seq, conversation)) }
        for _ in 0..<40 where delivered.of(conversation).count < Int(count) {
            try await waitFor("a hold timer", timeout: .seconds(60)) { clock.sleepers >= 1 || delivered.of(conversation).count == Int(count) }
            clock.advance(by: 0.2)
            try await waitFor("the fill", timeout: .seconds(60)) {
                delivered.of(conversation).count == Int(count) || clock.sleepers >= 1
            }
        }
        #expect(delivered.of(conversation) == Array(1...count), "seed \(seed)")
        #expect(Set(asked.withLock { $0 }) == lost, "seed \(seed): exactly the lost ones were read")
        #expect(order.stats.fetched == lost.count)
    }

    /// Another node's events of a conversation new here, shuffled within the settle window:
    /// the lane starts at the lowest of them and hands all on in order once it settles.
    @Test(arguments: [71, 72, 73] as [UInt64])
    func anotherNodesEventsSettleIntoOrder(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        let clock = ManualClock()
        let delivered = Delivered()
        let order = ConversationOrder(holdBound: .milliseconds(200), clock: clock.serverClock) { delivered.append($0) }
        let conversation = EntityID()
        let first = Int64.random(in: 1...100, using: &random)
        let seqs = Array(first..<(first + 12)).shuffled(using: &random)
        for seq in seqs { order.publish(conversation, Self.event(seq, conversation), fromAnotherNode: true) }
        #expect(delivered.total == 0, "nothing before the settle window ends")
        try await waitFor("the settle timer") { clock.sleepers == 1 }
        clock.advance(by: ConversationOrder.settleWindow.timeInterval)
        try await waitFor("the settled lane") { delivered.total == 12 }
        #expect(delivered.of(conversation) == Array(first..<(first + 12)), "seed \(seed)")
        order.publish(conversation, Self.event(first + 12, conversation), fromAnotherNode: true)
        order.publish(conversation, Self.event(first + 3, conversation), fromAnotherNode: true)
        #expect(delivered.of(conversation).last == first + 12 && delivered.total == 13, "settled: the next at once, a repeat dropped")
    }
}
