import Foundation
import ParleyProtocol
@testable import ParleyServer
import Testing

/// The coalescer's timing edges (`Push/PushCoalescer.swift`), time passed in: a flush that runs
/// late never buzzes twice nor loses a merged message from the count, a window ends exactly
/// when it says, pruning never forgets a merge still waiting, and the server's encoding of a
/// notice keeps URLs as written.
@Suite struct PushCoalescerEdgeTests {
    static let t0 = Date(timeIntervalSince1970: 10_000)
    static let conversation = EntityID()
    static let key = PushCoalescer.Key(userId: EntityID(), conversationId: conversation)

    static func message(_ n: Int) -> Message { PushCoalescerTests.message(n, in: conversation) }

    /// A message at the very end of a window opens the next one: it goes at once.
    @Test func aWindowEndsExactlyWhenItSays() {
        var coalescer = PushCoalescer(window: 2)
        let m = (1...3).map { Self.message($0) }
        _ = coalescer.offer(m[0], for: Self.key, now: Self.t0)
        #expect(coalescer.offer(m[1], for: Self.key, now: Self.t0 + 1.999) == .scheduleFlush(at: Self.t0 + 2))
        var fresh = PushCoalescer(window: 2)
        _ = fresh.offer(m[0], for: Self.key, now: Self.t0)
        #expect(fresh.offer(m[2], for: Self.key, now: Self.t0 + 2) == .sendNow(.init(message: m[2], count: 1)))
    }

    /// The flush was due but had not run when the next message came: that message goes at once
    /// and counts the merged one too; the late flush then finds nothing to send.
    @Test func aMessageBeforeALateFlushTakesTheMergedOnesAlong() {
        var coalescer = PushCoalescer(window: 2)
        let m = (1...3).map { Self.message($0) }
        _ = coalescer.offer(m[0], for: Self.key, now: Self.t0)
        #expect(coalescer.offer(m[1], for: Self.key, now: Self.t0 + 1) == .scheduleFlush(at: Self.t0 + 2))
        #expect(coalescer.offer(m[2], for: Self.key, now: Self.t0 + 2.5) == .sendNow(.init(message: m[2], count: 2)))
        #expect(coalescer.flush(Self.key, now: Self.t0 + 2.6) == nil, "no second buzz")
    }

    /// A flush so late that a newer window has opened and merged its own message belongs to
    /// the old window: it sends nothing, and the newer window's own flush sends its message.
    @Test func aStaleFlushDoesNotSendTheNextWindowsMergeEarly() {
        var coalescer = PushCoalescer(window: 2)
        let m = (1...4).map { Self.message($0) }
        _ = coalescer.offer(m[0], for: Self.key, now: Self.t0)
        _ = coalescer.offer(m[1], for: Self.key, now: Self.t0 + 1)  // flush due at t0 + 2, but late
        #expect(coalescer.offer(m[2], for: Self.key, now: Self.t0 + 2.5) == .sendNow(.init(message: m[2], count: 2)))
        #expect(coalescer.offer(m[3], for: Self.key, now: Self.t0 + 3) == .scheduleFlush(at: Self.t0 + 4.5))
        #expect(coalescer.flush(Self.key, now: Self.t0 + 3.2) == nil, "the old window's flush, 1.3 s early for this one")
        #expect(coalescer.flush(Self.key, now: Self.t0 + 4.5) == .init(message: m[3], count: 1))
    }

    /// A flush of a key that never had a message, or whose window merged nothing, sends nothing.
    @Test func aFlushWithNothingMergedSendsNothing() {
        var coalescer = PushCoalescer(window: 2)
        #expect(coalescer.flush(Self.key, now: Self.t0) == nil)
        _ = coalescer.offer(Self.message(1), for: Self.key, now: Self.t0)
        #expect(coalescer.flush(Self.key, now: Self.t0 + 2) == nil)
        let next = Self.message(2)
        #expect(coalescer.offer(next, for: Self.key, now: Self.t0 + 2.1) == .sendNow(.init(message: next, count: 1)))
    }

    /// A merge keeps the newest message and counts every one: ten in a window are one
    /// follow-up showing the tenth, "10 new messages".
    @Test func aBurstBecomesOneFollowUpWithTheNewestAndTheCount() {
        var coalescer = PushCoalescer(window: 5)
        let m = (0...10).map { Self.message($0) }
        #expect(coalescer.offer(m[0], for: Self.key, now: Self.t0) == .sendNow(.init(message: m[0], count: 1)))
        var actions: [PushCoalescer.Action] = []
        for n in 1...10 { actions.append(coalescer.offer(m[n], for: Self.key, now: Self.t0 + Double(n) * 0.1)) }
        #expect(actions.first == .scheduleFlush(at: Self.t0 + 5))
        #expect(actions.dropFirst().allSatisfy { $0 == .merged }, "one flush scheduled, not ten")
        #expect(coalescer.flush(Self.key, now: Self.t0 + 5) == .init(message: m[10], count: 10))
    }

    /// No window: every message is a notification of its own.
    @Test func aZeroWindowSendsEveryMessage() {
        var coalescer = PushCoalescer(window: 0)
        for n in 1...5 {
            let message = Self.message(n)
            #expect(coalescer.offer(message, for: Self.key, now: Self.t0) == .sendNow(.init(message: message, count: 1)))
        }
    }

    /// Pruning (every 256 offers) drops closed, empty windows but never one whose merged
    /// messages still wait for their flush.
    @Test func pruningKeepsAWindowWithAMergeWaiting() {
        var coalescer = PushCoalescer(window: 2)
        let waiting = Self.message(2)
        _ = coalescer.offer(Self.message(1), for: Self.key, now: Self.t0)
        _ = coalescer.offer(waiting, for: Self.key, now: Self.t0 + 1)
        let other = Self.message(99)
        for n in 0..<600 {
            _ = coalescer.offer(other, for: .init(userId: EntityID(), conversationId: Self.conversation), now: Self.t0 + 100 + Double(n) * 0.01)
        }
        #expect(coalescer.openWindows < 400, "closed windows are forgotten")
        #expect(coalescer.flush(Self.key, now: Self.t0 + 200) == .init(message: waiting, count: 1), "the waiting merge is not")
    }

    // MARK: The notice on the wire

    /// The server's JSON keeps a link's slashes as written (a notification shows the text, and
    /// `\/` costs bytes of APNs' 4 KB) and carries the merged count.
    @Test func theEncodedNoticeKeepsSlashesAndTheCount() throws {
        var message = Self.message(1)
        message.text = "see https://example.com/a/b"
        let bytes = try PushPayload.encode(.init(message: message, count: 4), senderName: "Ada/Bob", badge: 2)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains("https://example.com/a/b") && !text.contains("\\/"))
        let json = try #require(JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(json["messageCount"] as? Int == 4)
        let alert = try #require((json["aps"] as? [String: Any])?["alert"] as? [String: Any])
        #expect(alert["title"] as? String == "Ada/Bob" && alert["subtitle"] as? String == "4 new messages")
    }
}
