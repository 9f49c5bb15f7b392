import Foundation
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Synchronization
import Testing

/// The timers behind live signals, on a clock moved by hand: typing indicators that lapse
/// (`TypingTracker`), activity folded into one announcement per window (`ActivityAnnouncer`),
/// and push notifications merged per window (`PushCoalescer`), the last as a seeded
/// simulation where flushes run late, as they do behind a busy queue.
@Suite struct ServerSignalsTests {
    static let start = Date(timeIntervalSince1970: 1_760_000_000)

    final class Recorder<T: Sendable>: Sendable {
        private let items = Mutex<[T]>([])
        func append(_ item: T) { items.withLock { $0.append(item) } }
        var all: [T] { items.withLock { $0 } }
    }

    // MARK: Typing

    typealias Key = TypingTracker.Key

    /// An indicator lapses exactly `timeout` after the last "typing", not a moment before, and
    /// is announced once.
    @Test func typingLapsesAfterTheTimeoutAndIsAnnouncedOnce() async throws {
        let clock = ManualClock(start: Self.start)
        let expired = Recorder<[Key]>()
        let tracker = TypingTracker(timeout: .seconds(5), clock: clock.serverClock) { expired.append($0) }
        let alice = Key(userId: EntityID(), conversationId: EntityID())
        await tracker.started(alice)
        #expect(await tracker.typists(in: alice.conversationId) == 1)
        try await waitFor("the sweeper asleep") { clock.sleepers == 1 }
        clock.advance(by: 4.75)
        #expect(clock.sleepers == 1 && expired.all.isEmpty, "still typing")
        clock.advance(by: 0.25)
        try await waitFor("the lapse announced") { expired.all.count == 1 }
        #expect(expired.all == [[alice]])
        #expect(await tracker.activeCount == 0)
        #expect(await tracker.typists(in: alice.conversationId) == 0)
        #expect(await !tracker.stopped(alice), "already lapsed: stopping it announces nothing")
    }

    /// Typing again pushes the lapse back; the sweeper wakes at the old deadline, finds
    /// nothing due and sleeps again.
    @Test func typingAgainPushesTheLapseBack() async throws {
        let clock = ManualClock(start: Self.start)
        let expired = Recorder<[Key]>()
        let tracker = TypingTracker(timeout: .seconds(5), clock: clock.serverClock) { expired.append($0) }
        let alice = Key(userId: EntityID(), conversationId: EntityID())
        await tracker.started(alice)
        try await waitFor("the sweeper asleep") { clock.sleepers == 1 }
        clock.advance(by: 3)
        await tracker.started(alice)
        clock.advance(by: 2)  // the first deadline: nothing due
        try await waitFor("the sweeper asleep again") { clock.sleepers == 1 }
        #expect(expired.all.isEmpty)
        #expect(await tracker.activeCount == 1)
        clock.advance(by: 2.75)
        #expect(expired.all.isEmpty)
        clock.advance(by: 0.25)
        try await waitFor("the lapse") { expired.all.count == 1 }
        #expect(expired.all == [[alice]])
    }

    /// "Stopped" ends an indicator at once and says whether there was one; a stopped
    /// indicator never lapses later; the sweeper starts again for the next one.
    @Test func stoppingEndsAnIndicatorWithoutALaterLapse() async throws {
        let clock = ManualClock(start: Self.start)
        let expired = Recorder<[Key]>()
        let tracker = TypingTracker(timeout: .seconds(5), clock: clock.serverClock) { expired.append($0) }
        let alice = Key(userId: EntityID(), conversationId: EntityID())
        #expect(await !tracker.stopped(alice))
        await tracker.started(alice)
        try await waitFor("the sweeper asleep") { clock.sleepers == 1 }
        #expect(await tracker.stopped(alice))
        #expect(await !tracker.stopped(alice), "only once")
        clock.advance(by: 5)
        try await waitFor("the sweeper done") { clock.sleepers == 0 }
        #expect(expired.all.isEmpty)
        await tracker.started(alice)
        try await waitFor("a new sweeper asleep") { clock.sleepers == 1 }
        clock.advance(by: 5)
        try await waitFor("the lapse") { expired.all.count == 1 }
        #expect(expired.all == [[alice]])
    }

    /// Indicators are per user and conversation; a user's last connection closing ends all of
    /// theirs and nobody else's; those due together lapse in one announcement.
    @Test func indicatorsArePerUserAndConversation() async throws {
        let clock = ManualClock(start: Self.start)
        let expired = Recorder<[Key]>()
        let tracker = TypingTracker(timeout: .seconds(5), clock: clock.serverClock) { expired.append($0) }
        let room = EntityID(), other = EntityID()
        let alice = EntityID(), bob = EntityID(), carol = EntityID()
        for key in [Key(userId: alice, conversationId: room), Key(userId: alice, conversationId: other), Key(userId: bob, conversationId: room),
                    Key(userId: carol, conversationId: room)] {
            await tracker.started(key)
        }
        #expect(await tracker.typists(in: room) == 3)
        #expect(await tracker.typists(in: other) == 1)
        #expect(await tracker.typists(in: EntityID()) == 0)
        let ended = await tracker.stopAll(userId: alice)
        #expect(Set(ended) == [Key(userId: alice, conversationId: room), Key(userId: alice, conversationId: other)])
        #expect(await tracker.typists(in: room) == 2)
        #expect(await tracker.typists(in: other) == 0)
        #expect(await tracker.stopAll(userId: alice).isEmpty)
        try await waitFor("the sweeper asleep") { clock.sleepers == 1 }
        clock.advance(by: 5)
        try await waitFor("the lapse") { expired.all.count == 1 }
        #expect(Set(expired.all[0]) == [Key(userId: bob, conversationId: room), Key(userId: carol, conversationId: room)])
    }

    // MARK: Activity

    /// The first activity is announced at once; what follows within the window is folded
    /// (merged in order) into one announcement at its end; a quiet window later, at once again.
    @Test func activityIsAnnouncedAtOnceThenFoldedPerWindow() async throws {
        let clock = ManualClock(start: Self.start)
        let announced = Recorder<(EntityID, [Int])>()
        let announcer = ActivityAnnouncer<[Int]>(window: .seconds(2), clock: clock.serverClock, merge: { $0 + $1 }) { id, payload in
            announced.append((id, payload))
        }
        let room = EntityID(), other = EntityID()
        announcer.touch(room, [1])
        try await waitFor("the first at once") { announced.all.count == 1 }
        for n in 2...4 {
            clock.advance(by: 0.25)
            announcer.touch(room, [n])
        }
        announcer.touch(other, [100])
        try await waitFor("another conversation at once") { announced.all.count == 2 }
        try await waitFor("the fold waiting") { clock.sleepers == 1 }
        clock.advance(by: 1.25 - 1.0 / 1024)
        #expect(announced.all.count == 2, "not before the window ends")
        clock.advance(by: 1.0 / 1024)
        try await waitFor("the folded announcement") { announced.all.count == 3 }
        #expect(announced.all.map(\.1) == [[1], [100], [2, 3, 4]])
        #expect(announced.all.map(\.0) == [room, other, room])
        // Activity right after a fold waits for the next window's end.
        clock.advance(by: 1)
        announcer.touch(room, [5])
        try await waitFor("the next fold and the forgetting timer") { clock.sleepers == 2 }
        clock.advance(by: 1)
        try await waitFor("the next fold") { announced.all.count == 4 }
        #expect(announced.all[3].1 == [5])
        // A window with nothing in it: the next activity is announced at once.
        try await waitFor("the forgetting timer") { clock.sleepers >= 1 }
        clock.advance(by: 2)
        try await waitFor("quiet") { clock.sleepers == 0 }
        clock.advance(by: 0.5)
        announcer.touch(room, [6])
        try await waitFor("at once after a quiet window") { announced.all.count == 5 }
        #expect(announced.all[4].1 == [6])
    }

    // MARK: Push coalescing

    static func message(_ n: Int, in conversation: EntityID) -> Message {
        Message(
            id: EntityID(), conversationId: conversation, seq: Int64(n), updatedSeq: Int64(n), senderId: EntityID(),
            clientMessageId: "m\(n)", type: .text, text: "text \(n)", createdAt: start)
    }

    /// A burst whose merged follow-up has not been flushed yet when the window ends: the next
    /// message carries the merged ones in its count (not dropped, which would say "1 new message"
    /// for a burst of four).
    @Test func aLateFlushLosesNoMergedMessage() {
        var coalescer = PushCoalescer(window: 2)
        let room = EntityID()
        let key = PushCoalescer.Key(userId: EntityID(), conversationId: room)
        let t0 = Self.start
        let first = Self.message(1, in: room)
        #expect(coalescer.offer(first, for: key, now: t0) == .sendNow(.init(message: first, count: 1)))
        _ = coalescer.offer(Self.message(2, in: room), for: key, now: t0 + 0.5)
        _ = coalescer.offer(Self.message(3, in: room), for: key, now: t0 + 1)
        let fourth = Self.message(4, in: room)
        // The flush was due at t0 + 2 but runs after the fourth message is offered.
        #expect(coalescer.offer(fourth, for: key, now: t0 + 2.1) == .sendNow(.init(message: fourth, count: 3)))
        #expect(coalescer.flush(key, now: t0 + 2.2) == nil, "nothing left to flush")
    }

    /// A late flush meant for a window that a message has since replaced does not flush the
    /// new window's merged messages early (a second buzz right after the first).
    @Test func aStaleFlushDoesNotBuzzTheNewWindowEarly() {
        var coalescer = PushCoalescer(window: 2)
        let room = EntityID()
        let key = PushCoalescer.Key(userId: EntityID(), conversationId: room)
        let t0 = Self.start
        _ = coalescer.offer(Self.message(1, in: room), for: key, now: t0)
        #expect(coalescer.offer(Self.message(2, in: room), for: key, now: t0 + 1) == .scheduleFlush(at: t0 + 2))
        let third = Self.message(3, in: room), fourth = Self.message(4, in: room)
        #expect(coalescer.offer(third, for: key, now: t0 + 2.1) == .sendNow(.init(message: third, count: 2)))
        #expect(coalescer.offer(fourth, for: key, now: t0 + 2.2) == .scheduleFlush(at: t0 + 4.1))
        #expect(coalescer.flush(key, now: t0 + 2.3) == nil, "the flush due at t0 + 2, run late")
        #expect(coalescer.flush(key, now: t0 + 4.1) == .init(message: fourth, count: 1), "the new window's own flush")
    }

    /// Seeded simulations of several conversations' bursts, each flush run up to 0.3 s after
    /// it was due: every message is counted in exactly one notification, each notification
    /// shows the newest message of its conversation, and a conversation buzzes at most once
    /// per window.
    @Test(arguments: [41, 42, 43, 44, 45] as [UInt64])
    func seededBurstsAreCountedOnceAndBuzzAtMostOncePerWindow(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let window = 2.0
        var coalescer = PushCoalescer(window: window)
        let user = EntityID()
        let rooms = (0..<3).map { _ in EntityID() }
        var now = Self.start
        var flushes: [(at: Date, key: PushCoalescer.Key)] = []
        var newest: [EntityID: Message] = [:]
        var offered = 0, counted = 0
        var buzzes: [EntityID: [Date]] = [:]
        func notify(_ notice: PushCoalescer.Notice, at time: Date) {
            counted += notice.count
            let room = notice.message.conversationId
            #expect(notice.message == newest[room], "seed \(seed): a notification shows the newest message")
            buzzes[room, default: []].append(time)
        }
        func runFlushes(until time: Date) {
            flushes.sort { $0.at < $1.at }
            while let first = flushes.first, first.at <= time {
                flushes.removeFirst()
                if let notice = coalescer.flush(first.key, now: first.at) { notify(notice, at: first.at) }
            }
        }
        for n in 0..<600 {
            now = now.addingTimeInterval(Double(Int.random(in: 0...12, using: &random)) / 20)
            runFlushes(until: now)
            let room = rooms.randomElement(using: &random)!
            let message = Self.message(n, in: room)
            newest[room] = message
            offered += 1
            let key = PushCoalescer.Key(userId: user, conversationId: room)
            switch coalescer.offer(message, for: key, now: now) {
            case .sendNow(let notice): notify(notice, at: now)
            case .scheduleFlush(let at):
                #expect(at > now, "seed \(seed): a flush in the future")
                flushes.append((at.addingTimeInterval(Double(Int.random(in: 0...6, using: &random)) / 20), key))
            case .merged: break
            }
        }
        runFlushes(until: .distantFuture)
        #expect(counted == offered, "seed \(seed): every message counted once")
        for (room, times) in buzzes {
            for (earlier, later) in zip(times, times.dropFirst()) {
                #expect(later.timeIntervalSince(earlier) >= window - 1e-3, "seed \(seed) room \(room): two buzzes \(later.timeIntervalSince(earlier)) s apart")
            }
        }
        #expect(coalescer.openWindows <= 3)
    }
}
