import Foundation
import ParleyProtocol
@testable import ParleyStorage
import Synchronization
import Testing

/// Two small pieces the group commit leans on. `PlainSends` picks the sends of a batch a store
/// may write in one statement: one wrong pick lets a receipt or a retry take a seq out of turn
/// (a gap, a duplicate). `FirstOutcome` answers a wait with whichever outcome came first
/// (result, deadline, lost connection), exactly once, whatever the order.
@Suite struct PlainSendsAndFirstOutcomeTests {
    static let alice = EntityID(), bob = EntityID()

    static func send(_ conversation: EntityID, _ sender: EntityID = alice, _ clientId: String = UUID().uuidString, _ edit: (inout MessageDraft) -> Void = { _ in })
        -> QueuedWrite
    {
        var draft = MessageDraft(conversationId: conversation, senderId: sender, clientMessageId: clientId, type: .text, text: "hi", now: Date())
        edit(&draft)
        return QueuedWrite(conversationId: conversation, sending: draft) { _ in 0 }
    }

    static func receipt(_ conversation: EntityID) -> QueuedWrite {
        QueuedWrite(conversationId: conversation) { _ in 0 }
    }

    static func picked(_ jobs: [QueuedWrite], order: [Int]? = nil) -> [String] {
        PlainSends.drafts(of: jobs, in: order ?? Array(jobs.indices)).map(\.clientMessageId)
    }

    // MARK: PlainSends

    @Test func onlyTextLikeSendsWithNothingToCheckArePlain() {
        let conversation = EntityID()
        func plain(_ edit: (inout MessageDraft) -> Void) -> Bool { PlainSends.isPlain(Self.send(conversation, Self.alice, "c", edit).sending!) }
        #expect(plain { _ in })
        #expect(plain { $0.type = .location; $0.metadata = ["lat": "1", "lon": "2"] })
        #expect(plain { $0.text = "" })
        #expect(!plain { $0.replyToId = EntityID() })
        #expect(!plain { $0.forwardedFromId = EntityID() })
        #expect(!plain { $0.attachmentId = EntityID() })
        #expect(!plain { $0.type = .system })
        #expect(!plain { $0.threadRootId = EntityID() })
        #expect(!plain { $0.mentions = [Self.bob] })
    }

    @Test func aConversationWithAnyOtherWriteInTheBatchIsLeftOutWhole() {
        let quiet = EntityID(), withReceipt = EntityID(), withReply = EntityID()
        let jobs = [
            Self.send(quiet, Self.alice, "q1"),
            Self.send(withReceipt, Self.alice, "r1"),
            Self.send(quiet, Self.bob, "q2"),
            Self.receipt(withReceipt),
            Self.send(withReply, Self.bob, "p1"),
            Self.send(withReply, Self.alice, "p2") { $0.replyToId = EntityID() },
            Self.send(withReceipt, Self.bob, "r2"),
            Self.send(quiet, Self.alice, "q3"),
        ]
        // Only the conversation whose every write is a plain send; its sends in queue order.
        #expect(Self.picked(jobs) == ["q1", "q2", "q3"])
    }

    @Test func aRetryQueuedInTheSameBatchGoesTheUsualWay() {
        let first = EntityID(), second = EntityID(), other = EntityID()
        let jobs = [
            Self.send(first, Self.alice, "same"),
            Self.send(first, Self.alice, "same"),  // the retry behind its original
            Self.send(first, Self.bob, "b1"),
            Self.send(other, Self.bob, "same"),  // another sender's id is another send
        ]
        #expect(Self.picked(jobs) == ["same"])
        #expect(PlainSends.drafts(of: jobs, in: Array(jobs.indices)).map(\.senderId) == [Self.bob])
        // One sender's id reused in another conversation: both conversations go the usual way
        // (the rules answer the conflict), so neither is written in bulk.
        let reused = [Self.send(first, Self.alice, "dup"), Self.send(second, Self.alice, "dup"), Self.send(other, Self.bob, "x")]
        #expect(Self.picked(reused) == ["x"])
    }

    @Test func theOrderGivenIsTheOrderAnswered() {
        let a = EntityID(), b = EntityID()
        let jobs = [Self.send(a, Self.alice, "a1"), Self.send(b, Self.alice, "b1"), Self.send(a, Self.bob, "a2"), Self.receipt(b)]
        // PostgreSQL orders a batch by conversation; the picks follow that order, not the queue's.
        #expect(Self.picked(jobs, order: [2, 0, 3, 1]) == ["a2", "a1"])
        #expect(Self.picked(jobs, order: []) == [])
        #expect(Self.picked([]) == [])
    }

    // MARK: FirstOutcome

    struct Deadline: Error, Equatable {}

    /// A count shared with other tasks.
    final class Count: Sendable {
        private let value = Atomic<Int>(0)
        func add(_ amount: Int = 1) { value.add(amount, ordering: .relaxed) }
        var total: Int { value.load(ordering: .relaxed) }
    }

    @Test func aWaiterBeforeTheOutcomeGetsTheFirstOneOnly() async throws {
        let outcome = FirstOutcome<Int>()
        let ran = Count()
        outcome.onFinish { ran.add() }
        let value = try await withCheckedThrowingContinuation { continuation in
            outcome.wait(continuation)
            outcome.finish(.success(1))
            outcome.finish(.failure(Deadline()))
            outcome.finish(.success(2))
        }
        #expect(value == 1)
        #expect(ran.total == 1)
        // An action registered after the outcome runs at once, once.
        outcome.onFinish { ran.add(10) }
        #expect(ran.total == 11)
    }

    @Test func aWaiterAfterTheOutcomeGetsItAtOnceErrorsIncluded() async throws {
        let outcome = FirstOutcome<String>()
        outcome.finish(.failure(Deadline()))
        outcome.finish(.success("too late"))
        await #expect(throws: Deadline.self) {
            try await withCheckedThrowingContinuation { continuation in outcome.wait(continuation) }
        }
    }

    @Test func ofManyRacingOutcomesExactlyOneIsAnsweredAndEachActionRunsOnce() async throws {
        for _ in 0..<50 {
            let outcome = FirstOutcome<Int>()
            let actions = Count()
            for _ in 0..<4 { outcome.onFinish { actions.add() } }
            async let answer = withCheckedThrowingContinuation { continuation in outcome.wait(continuation) }
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        if index == 3 { outcome.onFinish { actions.add() } }
                        outcome.finish(.success(index))
                    }
                }
            }
            let value = try await answer
            #expect((0..<8).contains(value))
            #expect(actions.total == 5)
        }
    }
}
