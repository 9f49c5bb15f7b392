import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

// MARK: - The model

/// The people and builders of these tests: a group of me, `other` and `third`.
struct RaceWorld: Sendable {
    let me = EntityID()
    let other = EntityID()
    let third = EntityID()
    let conversationId = EntityID()
    let start = Date(millisecondsSince1970: 1_796_000_000_000)

    var people: [EntityID] { [me, other, third] }

    func conversation(lastSeq: Int64, unread: Int, readSeq: Int64, lastMessage: Message? = nil) -> Conversation {
        Conversation(
            id: conversationId, type: .group, name: "race", participantIds: people, createdAt: start,
            lastActivityAt: lastMessage?.createdAt ?? start, lastSeq: lastSeq, lastMessage: lastMessage, unreadCount: unread,
            readSeq: readSeq, members: people.map { Member(userId: $0, readSeq: 0, deliveredSeq: 0) })
    }

    func message(_ seq: Int64, from sender: EntityID? = nil, type: MessageType = .text) -> Message {
        Message(
            id: EntityID(), conversationId: conversationId, seq: seq, updatedSeq: seq, senderId: sender ?? other,
            clientMessageId: "race-\(seq)", type: type, text: "m\(seq)", createdAt: start.addingTimeInterval(Double(seq)))
    }
}

/// Who sends a message in a script.
enum RaceSender: Sendable, CustomStringConvertible {
    case me, other, third, system
    var description: String {
        switch self {
        case .me: "me"
        case .other: "other"
        case .third: "third"
        case .system: "system"
        }
    }
}

/// One thing happening on the server.
enum RaceStep: Sendable, CustomStringConvertible {
    case send(RaceSender)
    case edit(Int64)
    case delete(Int64)
    /// A read on this device: its answer comes back.
    case readHere(Int64)
    /// A read on another device: this device gets the view.
    case readElsewhere(Int64)
    /// A view with no read (a list sync, a rename's view).
    case view
    case none

    var description: String {
        switch self {
        case .send(let sender): "send(\(sender))"
        case .edit(let seq): "edit(\(seq))"
        case .delete(let seq): "delete(\(seq))"
        case .readHere(let seq): "readHere(\(seq))"
        case .readElsewhere(let seq): "readElsewhere(\(seq))"
        case .view: "view"
        case .none: "none"
        }
    }
}

/// What the server sends about reads: a read's answer or a conversation view.
enum RaceSnapshot: Sendable, CustomStringConvertible {
    case answer(ReadResponse)
    case view(Conversation)

    var lastSeq: Int64 {
        switch self {
        case .answer(let answer): answer.lastSeq ?? 0
        case .view(let view): view.lastSeq
        }
    }

    var readSeq: Int64 {
        switch self {
        case .answer(let answer): answer.readSeq
        case .view(let view): view.readSeq
        }
    }

    var description: String {
        switch self {
        case .answer(let answer): "answer(read \(answer.readSeq) at \(answer.lastSeq ?? -1): \(answer.unreadCount))"
        case .view(let view): "view(read \(view.readSeq) at \(view.lastSeq): \(view.unreadCount))"
        }
    }
}

/// The server's side, brute force: every change as the message it left, and my watermark.
struct RaceServer {
    let world: RaceWorld
    /// `changes[k - 1]` is the message as change `k` left it.
    var changes: [Message] = []
    var readSeq: Int64 = 0

    init(world: RaceWorld) { self.world = world }

    var lastSeq: Int64 { Int64(changes.count) }

    /// Every message as it was right after change `seq`, in seq order (a seed replays the same).
    func state(at seq: Int64) -> [Message] {
        var latest: [EntityID: Message] = [:]
        for message in changes.prefix(Int(seq)) { latest[message.id] = message }
        return latest.values.sorted { $0.seq < $1.seq }
    }

    /// The contract's count: others' messages, not system, not deleted, above the watermark.
    func unread(at seq: Int64, readSeq: Int64) -> Int {
        state(at: seq).filter { $0.seq > readSeq && $0.senderId != world.me && $0.type != .system && $0.deletedAt == nil }.count
    }

    func newest(at seq: Int64) -> Message? { state(at: seq).max { $0.seq < $1.seq } }

    /// The event of change `seq`.
    func event(_ seq: Int64) -> Message { changes[Int(seq - 1)] }

    func view() -> Conversation {
        world.conversation(lastSeq: lastSeq, unread: unread(at: lastSeq, readSeq: readSeq), readSeq: readSeq, lastMessage: newest(at: lastSeq))
    }

    func answer() -> ReadResponse {
        ReadResponse(readSeq: readSeq, unreadCount: unread(at: lastSeq, readSeq: readSeq), lastSeq: lastSeq)
    }

    @discardableResult
    mutating func send(from sender: EntityID, type: MessageType = .text) -> Message {
        let message = world.message(lastSeq + 1, from: sender, type: type)
        changes.append(message)
        return message
    }

    /// Reads up to `seq` (clamped; the watermark only rises).
    mutating func read(upTo seq: Int64) { readSeq = max(readSeq, min(seq, lastSeq)) }

    /// An edit or delete of the message with seq `target` (nil: not allowed: gone, a system line,
    /// or no such message); returns the change's seq.
    mutating func change(_ target: Int64, delete: Bool) -> Int64? {
        guard var message = state(at: lastSeq).first(where: { $0.seq == target }), message.deletedAt == nil, message.type != .system else {
            return nil
        }
        let seq = lastSeq + 1
        message.updatedSeq = seq
        if delete {
            message.text = ""
            message.deletedAt = world.start.addingTimeInterval(Double(seq))
        } else {
            message.text = "edited \(seq)"
            message.editedAt = world.start.addingTimeInterval(Double(seq))
        }
        changes.append(message)
        return seq
    }

    /// Applies a send, edit or delete; returns its change seq.
    mutating func apply(_ step: RaceStep) -> Int64? {
        if case .change(let seq) = perform(step) { return seq }
        return nil
    }

    enum Outcome { case change(Int64), snapshot(RaceSnapshot), nothing }

    mutating func perform(_ step: RaceStep) -> Outcome {
        switch step {
        case .send(let who):
            let sender = switch who {
            case .me: world.me
            case .other: world.other
            case .third: world.third
            case .system: world.other
            }
            return .change(send(from: sender, type: who == .system ? .system : .text).seq)
        case .edit(let target):
            return change(target, delete: false).map(Outcome.change) ?? .nothing
        case .delete(let target):
            return change(target, delete: true).map(Outcome.change) ?? .nothing
        case .readHere(let seq):
            read(upTo: seq)
            return .snapshot(.answer(answer()))
        case .readElsewhere(let seq):
            read(upTo: seq)
            return .snapshot(.view(view()))
        case .view:
            return .snapshot(.view(view()))
        case .none:
            return .nothing
        }
    }
}

/// What the row must show after each arrival: the watermark is the highest delivered (answers
/// and views only carry watermarks the server had, which only rise), and the badge is the
/// server's count at the furthest seq the row has seen, its own or an answer's.
struct RaceChecker {
    let world: RaceWorld
    var readSeq: Int64
    var answeredSeq: Int64

    mutating func deliver(_ snapshot: RaceSnapshot, to database: LocalDatabase, conversationId: EntityID) async throws {
        readSeq = max(readSeq, snapshot.readSeq)
        switch snapshot {
        case .answer(let answer):
            answeredSeq = max(answeredSeq, answer.lastSeq ?? 0)
            try await database.apply(ownRead: answer, in: conversationId, userId: world.me)
        case .view(let view):
            try await database.store(conversation: view)
        }
    }

    func check(_ stored: Conversation, against server: RaceServer, _ label: String) {
        let seen = max(stored.lastSeq, answeredSeq)
        #expect(stored.readSeq == readSeq, "\(label): watermark")
        #expect(stored.unreadCount == server.unread(at: seen, readSeq: readSeq), "\(label): badge at \(seen), read \(readSeq)")
        #expect(stored.lastMessage?.id == server.newest(at: stored.lastSeq)?.id, "\(label): last message at \(stored.lastSeq)")
    }
}

/// One change the row applies after an older view, and the badge it must then show.
struct RaceWindowCase: Sendable, CustomTestStringConvertible {
    let label: String
    let change: RaceStep
    let expected: Int
    let mineAtFive: Bool

    init(_ label: String, change: RaceStep, expected: Int, mineAtFive: Bool = false) {
        self.label = label
        self.change = change
        self.expected = expected
        self.mineAtFive = mineAtFive
    }

    var testDescription: String { label }
}

/// A small script: what happened before the row was stored, then the steps whose events and
/// snapshots are delivered in every order.
struct RaceScript: Sendable, CustomTestStringConvertible {
    let label: String
    let before: [RaceStep]
    let steps: [RaceStep]

    var testDescription: String { label }

    static let all: [RaceScript] = [
        RaceScript(
            label: "race 1: the answer counted the next message",
            before: [.send(.other), .send(.other), .send(.other), .send(.other), .send(.other), .readElsewhere(5)],
            steps: [.send(.other), .readHere(5)]),
        RaceScript(
            label: "the answer was taken before the next message",
            before: [.send(.other), .send(.other), .send(.other), .send(.other), .send(.other), .readElsewhere(2)],
            steps: [.readHere(5), .send(.other)]),
        RaceScript(
            label: "race 2: another device's read, then a message",
            before: [.send(.other), .send(.other), .send(.other), .send(.other), .send(.other), .readElsewhere(2)],
            steps: [.readElsewhere(5), .send(.other), .send(.third)]),
        RaceScript(
            label: "deletes of read and unread messages around a read",
            before: [.send(.other), .send(.other), .send(.third), .send(.other)],
            steps: [.readElsewhere(2), .delete(3), .delete(1), .send(.other), .readHere(5)]),
        RaceScript(
            label: "my own messages and system lines between reads",
            before: [.send(.other), .send(.other), .send(.other)],
            steps: [.send(.me), .readHere(4), .send(.system), .send(.third), .readElsewhere(5), .send(.other)]),
        RaceScript(
            label: "a message sent and deleted after the view",
            before: [.send(.other), .send(.other)],
            steps: [.readElsewhere(2), .send(.other), .delete(3), .send(.third)]),
        RaceScript(
            label: "two reads here and one elsewhere crossing",
            before: [.send(.other), .send(.other), .send(.other), .send(.other)],
            steps: [.readHere(2), .send(.other), .readElsewhere(4), .send(.other), .readHere(6)]),
        RaceScript(
            label: "edits, a list sync and a partial read",
            before: [.send(.other), .send(.third), .send(.other)],
            steps: [.edit(2), .view, .readHere(2), .send(.other), .edit(4), .readElsewhere(3)]),
        RaceScript(
            label: "a read that does not move, answered with the current count",
            before: [.send(.other), .send(.other), .send(.other), .readElsewhere(3)],
            steps: [.send(.other), .readHere(1), .send(.other), .delete(4)]),
    ]
}

/// Arrivals of a run: the next event, or one of the snapshots.
enum RaceArrival: Sendable, Equatable, CustomStringConvertible {
    case event
    case snapshot(Int)
    var description: String {
        switch self {
        case .event: "e"
        case .snapshot(let index): "s\(index)"
        }
    }
}

enum RaceOrders {
    /// Every sequence of `events` events (in their order) and `snapshots` snapshots (in any order).
    static func interleavings(events: Int, snapshots: Int) -> [[RaceArrival]] {
        var all: [[RaceArrival]] = []
        func extend(_ prefix: [RaceArrival], eventsLeft: Int, unused: Set<Int>) {
            if eventsLeft == 0 && unused.isEmpty { return all.append(prefix) }
            if eventsLeft > 0 { extend(prefix + [.event], eventsLeft: eventsLeft - 1, unused: unused) }
            for index in unused.sorted() { extend(prefix + [.snapshot(index)], eventsLeft: eventsLeft, unused: unused.subtracting([index])) }
        }
        extend([], eventsLeft: events, unused: Set(0..<snapshots))
        return all
    }

    /// (events + snapshots)! / events!, counted independently.
    static func count(events: Int, snapshots: Int) -> Int {
        snapshots == 0 ? 1 : (events + 1...events + snapshots).reduce(1, *)
    }
}
