import ParleyClient
import ParleyProtocol
import Testing

/// Typing debounce, local typing expiry and receipt batching: pure rules, driven by time values.
@Suite struct SignalRulesTests {
    @Test func typingSendsTrueAtOnceThenEveryTwoSecondsAndFalseAfterAPause() {
        var debouncer = TypingDebouncer()
        #expect(debouncer.input(at: .seconds(10)) == [.send(isTyping: true), .checkIdle(at: .seconds(12))])
        #expect(debouncer.input(at: .milliseconds(10_500)) == [.checkIdle(at: .milliseconds(12_500))])
        #expect(debouncer.input(at: .milliseconds(11_900)) == [.checkIdle(at: .milliseconds(13_900))])
        #expect(debouncer.input(at: .seconds(12)) == [.send(isTyping: true), .checkIdle(at: .seconds(14))])
        // The timer armed at the first keystroke fires while typing goes on: check again later.
        #expect(debouncer.idle(at: .seconds(13)) == [.checkIdle(at: .seconds(14))])
        #expect(debouncer.idle(at: .seconds(14)) == [.send(isTyping: false)])
        #expect(!debouncer.isTyping)
        #expect(debouncer.idle(at: .seconds(20)) == [])
    }

    @Test func sendingEndsTypingAtOnce() {
        var debouncer = TypingDebouncer()
        _ = debouncer.input(at: .seconds(1))
        #expect(debouncer.sent() == [.send(isTyping: false)])
        #expect(debouncer.sent() == [])
        #expect(debouncer.input(at: .milliseconds(1500)).first == .send(isTyping: true))
    }

    @Test func incomingTypingLapsesAfterFiveSecondsWithoutAFalse() {
        let conversation = EntityID(), alice = EntityID(), bob = EntityID()
        var indicators = TypingIndicators()
        indicators.apply(conversation: conversation, user: alice, isTyping: true, at: .seconds(100))
        indicators.apply(conversation: conversation, user: bob, isTyping: true, at: .seconds(102))
        #expect(indicators.typing(in: conversation, at: .seconds(104)).count == 2)
        #expect(indicators.typing(in: conversation, at: .seconds(105)) == [bob], "alice's true was 5 s ago")
        indicators.apply(conversation: conversation, user: bob, isTyping: false, at: .seconds(105))
        #expect(indicators.typing(in: conversation, at: .seconds(105)).isEmpty)
        #expect(indicators.typing(in: EntityID(), at: .seconds(101)).isEmpty)
    }

    @Test func typingLinesReadNaturally() {
        #expect(TypingIndicators.line(for: []) == nil)
        #expect(TypingIndicators.line(for: ["Alice"]) == "Alice is typing…")
        #expect(TypingIndicators.line(for: ["Alice", "Bob"]) == "Alice and Bob are typing…")
        #expect(TypingIndicators.line(for: ["A", "B", "C", "D", "E"]) == "A, B and 3 others are typing…")
    }

    @Test func receiptsCollapseToTheHighestAndAreNotSentTwice() {
        let one = EntityID(), two = EntityID()
        var queue = ReceiptQueue()
        queue.markRead(one, upTo: 3)
        queue.markRead(one, upTo: 7)
        queue.markRead(one, upTo: 5)
        queue.markDelivered(one, upTo: 6)
        queue.markDelivered(two, upTo: 4)
        let batch = queue.drain()
        #expect(batch.read == [one: 7])
        #expect(batch.delivered == [two: 4], "a read of 7 covers delivered 6")
        #expect(queue.isEmpty)
        // Offline: the send failed; marks made meanwhile collapse with the requeued ones.
        queue.markRead(two, upTo: 2)
        queue.requeue(read: batch.read, delivered: batch.delivered)
        queue.acknowledged(read: [:], delivered: [:])
        let retry = queue.drain()
        #expect(retry.read == [one: 7, two: 2] && retry.delivered == [two: 4])
        queue.acknowledged(read: retry.read, delivered: retry.delivered)
        queue.markRead(one, upTo: 7)
        queue.markDelivered(two, upTo: 4)
        #expect(queue.isEmpty, "nothing at or below what the server has")
    }
}
