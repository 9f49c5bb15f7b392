import Foundation
import NIOCore
import ParleyProtocol
import Synchronization
import ParleyStorage

/// Hands each conversation's events to the connections in `seq` order, on this node.
///
/// Every change in a conversation takes the next number of its sequence (a new message its
/// `seq`, an edit, delete or reaction its `updatedSeq`), and every number is announced by
/// exactly one event. Commits of one conversation are serialized, but their events reach this
/// point from different tasks, and from other nodes through the cluster link, so they can
/// arrive out of order. Each conversation has a lane that remembers the highest number handed
/// on: the next one goes at once, a later one is held until the ones before it arrive. The
/// hold waits only for commits already made (the store answered the later one, so the earlier
/// ones are committed): past ``holdBound`` the lane reads the missing changes from the store
/// and hands them on itself, so a lost notification costs one read, never a client's gap.
///
/// Delivery happens while the lane's shard is locked, so two events of one conversation are
/// never handed on concurrently; the work done there is queueing bytes on connections.
public final class ConversationOrder: Sendable {
    /// One event of a conversation's sequence, encoded once.
    public struct Event: Sendable {
        /// Its number in the conversation's sequence (`seq` or `updatedSeq`).
        public var seq: Int64
        /// The encoded frame.
        public var frame: ByteBuffer
        /// Who gets it (on this node).
        public var recipients: [EntityID]
        /// Other encodings of the same change for some users, handed on with it (a
        /// blocked sender's message, marked for those who block them).
        public var variants: [Variant]

        /// An event with its number, encoded frame and recipients.
        public init(seq: Int64, frame: ByteBuffer, recipients: [EntityID], variants: [Variant] = []) {
            self.seq = seq
            self.frame = frame
            self.recipients = recipients
            self.variants = variants
        }
    }

    /// The same change encoded for some users apart.
    public struct Variant: Sendable {
        /// Their frame.
        public var frame: ByteBuffer
        /// Who gets it instead of the event's frame.
        public var recipients: [EntityID]

        /// A variant for `recipients`.
        public init(frame: ByteBuffer, recipients: [EntityID]) {
            self.frame = frame
            self.recipients = recipients
        }
    }

    /// Reads the events numbered after `after` and below `before` from the store, as
    /// `viewer` may see them, in order.
    public typealias MissingEvents = @Sendable (_ conversationId: EntityID, _ viewer: EntityID, _ after: Int64, _ before: Int64) async -> [Event]

    private struct Lane {
        var delivered: Int64
        var held: [Int64: Event] = [:]
        var waiting = false
        var lastUsed: Date
        /// Started by another node's event: for ``settleWindow`` the starting point may still
        /// move down (an earlier event of the same conversation can be a moment behind).
        var settling = false
    }

    private final class Shard: Sendable {
        let lanes = Mutex<[EntityID: Lane]>([:])
    }

    /// How long a later event waits for an earlier one before the store is asked.
    public let holdBound: Duration
    /// How long a lane started by another node's event collects before it hands on: nothing
    /// tells this node which seq came before it (this node's own commits tell it through
    /// ``expect(_:seq:)``), so the first events of a conversation seen here are put in order
    /// among themselves first. Costs that much latency once per conversation after a quiet
    /// minute, nothing after.
    ///
    /// A lane started by this node's own commit does not wait: its message goes at once, before
    /// the list-row frames that announce it (which do not pass through here). In a cluster,
    /// another node may have committed the seqs just below a moment earlier; if their events
    /// are still on the link, they find the lane past them and are dropped, and the clients
    /// catch them up from the store when they see the gap (once per conversation and node
    /// after a quiet minute or a restart). A settle here was tried: its wait let the row frame
    /// overtake the message it announces.
    public static let settleWindow: Duration = .milliseconds(30)
    private let shards: [Shard]
    private let clock: ServerClock
    private let deliver: @Sendable (Event) -> Void
    private let missing = HandlerSlot<MissingEvents>()
    private let heldCount = Atomic<Int>(0)
    private let fetchedCount = Atomic<Int>(0)
    private let lateCount = Atomic<Int>(0)
    /// Lanes idle this long with nothing held are forgotten (when there are many).
    private static let idleLane: TimeInterval = 60
    private static let lanesBeforeSweep = 4096

    /// An orderer that hands events to `deliver` (the connections of this node); its hold
    /// timers run on `clock`.
    public init(holdBound: Duration = .milliseconds(200), clock: ServerClock = .system, deliver: @escaping @Sendable (Event) -> Void) {
        self.holdBound = holdBound
        self.clock = clock
        self.deliver = deliver
        shards = (0..<16).map { _ in Shard() }
    }

    /// Where missing events are read from when a hold runs out (the store).
    public func attach(missingEvents: @escaping MissingEvents) {
        missing.set(missingEvents)
    }

    /// Events held for an earlier one, events read from the store after a hold ran out, and
    /// events that came after a later one had been handed on (dropped: the store read or the
    /// client's catch-up covers them).
    public var stats: (held: Int, fetched: Int, late: Int) {
        (heldCount.load(ordering: .relaxed), fetchedCount.load(ordering: .relaxed), lateCount.load(ordering: .relaxed))
    }

    /// Tells the lane of a conversation that `seq` was committed, before its event is on its
    /// way: called in commit order (by group commit), so a lane that starts here starts at the
    /// right place even when the events themselves then arrive from parallel tasks.
    public func expect(_ conversationId: EntityID, seq: Int64) {
        let now = clock.now()
        shard(conversationId).lanes.withLock { lanes in
            if lanes[conversationId] == nil {
                lanes[conversationId] = Lane(delivered: seq - 1, lastUsed: now)
            } else {
                lanes[conversationId]?.lastUsed = now
            }
        }
    }

    /// Takes an event of a conversation: hands it on now if it is the next one (with any held
    /// ones it unblocks), holds it otherwise.
    /// `fromAnotherNode`: the event was committed elsewhere (cluster link).
    public func publish(_ conversationId: EntityID, _ event: Event, fromAnotherNode: Bool = false) {
        let now = clock.now()
        let startHold = shard(conversationId).lanes.withLock { lanes -> (start: Bool, settle: Bool) in
            guard var lane = lanes[conversationId] else {
                // A conversation not seen lately. This node's own sends announced their seq in
                // commit order (`expect`), so a lane starting here is an edit's or another
                // node's: the latter settles a moment for an earlier one that may be close behind.
                var lane = Lane(delivered: event.seq - 1, lastUsed: now)
                if fromAnotherNode {
                    lane.settling = true
                    lane.waiting = true
                    lane.held[event.seq] = event
                    lanes[conversationId] = lane
                    return (false, true)
                }
                lane.delivered = event.seq
                lanes[conversationId] = lane
                deliver(event)
                return (false, false)
            }
            lane.lastUsed = now
            if lane.settling, lane.held[event.seq] == nil {
                lane.delivered = min(lane.delivered, event.seq - 1)
                lane.held[event.seq] = event
                lanes[conversationId] = lane
                return (false, false)
            }
            if event.seq <= lane.delivered || lane.held[event.seq] != nil {
                lanes[conversationId] = lane
                lateCount.add(1, ordering: .relaxed)
                return (false, false)
            }
            lane.held[event.seq] = event
            drain(&lane)
            var startHold = false
            if !lane.held.isEmpty {
                heldCount.add(1, ordering: .relaxed)
                if !lane.waiting {
                    lane.waiting = true
                    startHold = true
                }
            }
            lanes[conversationId] = lane
            if lanes.count > Self.lanesBeforeSweep {
                lanes = lanes.filter { !$0.value.held.isEmpty || now.timeIntervalSince($0.value.lastUsed) < Self.idleLane }
            }
            return (startHold, false)
        }
        if startHold.start { hold(conversationId, since: now) }
        if startHold.settle { settle(conversationId, since: now) }
    }

    /// Ends a new lane's settling: hands on what it collected, in order, from the lowest.
    private func settle(_ conversationId: EntityID, since start: Date) {
        Task {
            await clock.sleepUntil(start.addingTimeInterval(Self.settleWindow.timeInterval))
            let now = clock.now()
            let again = shard(conversationId).lanes.withLock { lanes -> Bool in
                guard var lane = lanes[conversationId] else { return false }
                lane.settling = false
                defer { lanes[conversationId] = lane }
                return resume(&lane, at: now)
            }
            if again { hold(conversationId, since: now) }
        }
    }

    /// After a wait: hands on what follows, and says whether something is still held (then
    /// the lane waits again).
    private func resume(_ lane: inout Lane, at now: Date) -> Bool {
        drain(&lane)
        lane.waiting = !lane.held.isEmpty
        lane.lastUsed = now
        return lane.waiting
    }

    /// Hands on every held event that follows the last one handed on.
    private func drain(_ lane: inout Lane) {
        while let next = lane.held.removeValue(forKey: lane.delivered + 1) {
            lane.delivered = next.seq
            deliver(next)
        }
    }

    /// Waits out the bound, then fills what is still missing from the store.
    private func hold(_ conversationId: EntityID, since start: Date) {
        Task {
            await clock.sleepUntil(start.addingTimeInterval(holdBound.timeInterval))
            await fill(conversationId)
        }
    }

    private func fill(_ conversationId: EntityID) async {
        let gap = shard(conversationId).lanes.withLock { lanes -> (after: Int64, before: Int64, viewer: EntityID?)? in
            guard var lane = lanes[conversationId] else { return nil }
            for seq in lane.held.keys where seq <= lane.delivered { lane.held[seq] = nil }
            drain(&lane)
            guard let first = lane.held.keys.min() else {
                lane.waiting = false
                lanes[conversationId] = lane
                return nil
            }
            lanes[conversationId] = lane
            return (lane.delivered, first, lane.held[first]?.recipients.first)
        }
        guard let gap else { return }
        var fetched: [Event] = []
        if let viewer = gap.viewer, let read = missing.function {
            fetched = await read(conversationId, viewer, gap.after, gap.before)
        }
        let now = clock.now()
        let again = shard(conversationId).lanes.withLock { lanes -> Bool in
            guard var lane = lanes[conversationId] else { return false }
            // The store's events join the held ones (events published during the read may
            // already hold some of those seqs, and more below `gap.before`), then all go on in
            // order as far as they are contiguous.
            for event in fetched where event.seq > lane.delivered && event.seq < gap.before && lane.held[event.seq] == nil {
                lane.held[event.seq] = event
            }
            fetchedCount.add(fetched.count, ordering: .relaxed)
            drain(&lane)
            // Whatever the store could not say below `gap.before` is given up on: the held ones
            // go on in order from the lowest.
            if let first = lane.held.keys.min(), first <= gap.before, first > lane.delivered + 1 {
                lane.delivered = first - 1
            }
            // Nothing stays held at or below what was handed on.
            for seq in lane.held.keys where seq <= lane.delivered { lane.held[seq] = nil }
            defer { lanes[conversationId] = lane }
            return resume(&lane, at: now)
        }
        if again { hold(conversationId, since: now) }
    }

    private func shard(_ conversationId: EntityID) -> Shard {
        shards[Int(UInt(bitPattern: conversationId.hashValue) % UInt(shards.count))]
    }
}
