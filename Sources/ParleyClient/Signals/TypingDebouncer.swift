import Foundation
import ParleyProtocol

/// When to tell the server the user is typing: `true` at the first keystroke and
/// then at most every 2 s while typing goes on; `false` after 2 s without input, or on send.
/// A pure state machine: keystrokes and timer checks in, what to send out.
public struct TypingDebouncer: Sendable {
    /// What to do.
    public enum Action: Sendable, Equatable {
        /// Send a `typing` command.
        case send(isTyping: Bool)
        /// Call `idle(at:)` at this time.
        case checkIdle(at: Duration)
    }

    /// How often `true` is repeated while typing, and how long a pause ends it.
    public let interval: Duration
    private var lastTrueSent: Duration?
    private var lastInput: Duration = .zero
    /// Whether the server currently believes the user is typing.
    public private(set) var isTyping = false

    /// A debouncer with this interval (2 s by default), not typing.
    public init(interval: Duration = .seconds(2)) { self.interval = interval }

    /// A keystroke at `now` (monotonic time).
    public mutating func input(at now: Duration) -> [Action] {
        lastInput = now
        var actions: [Action] = []
        if !isTyping || (lastTrueSent.map { now - $0 >= interval } ?? true) {
            isTyping = true
            lastTrueSent = now
            actions.append(.send(isTyping: true))
        }
        actions.append(.checkIdle(at: now + interval))
        return actions
    }

    /// The timer fired: a pause of `interval` ends the typing.
    public mutating func idle(at now: Duration) -> [Action] {
        guard isTyping else { return [] }
        guard now - lastInput >= interval else { return [.checkIdle(at: lastInput + interval)] }
        return stop()
    }

    /// The message was sent: typing is over.
    public mutating func sent() -> [Action] {
        isTyping ? stop() : []
    }

    private mutating func stop() -> [Action] {
        isTyping = false
        lastTrueSent = nil
        return [.send(isTyping: false)]
    }
}

/// Who is typing in each conversation, as others' indicators arrive. Each lapses locally
/// after `lifetime` even if the server's `false` never comes (a lost frame must not leave
/// "typing…" on screen).
public struct TypingIndicators: Sendable, Equatable {
    private struct Key: Hashable, Sendable {
        var conversation: EntityID
        var user: EntityID
    }

    /// How long an indicator lasts after its last `true`.
    public let lifetime: Duration
    private var until: [Key: Duration] = [:]

    /// Indicators of this lifetime (5 s by default), nobody typing yet.
    public init(lifetime: Duration = .seconds(5)) { self.lifetime = lifetime }

    /// Applies an event received at `now`.
    public mutating func apply(conversation: EntityID, user: EntityID, isTyping: Bool, at now: Duration) {
        let key = Key(conversation: conversation, user: user)
        if isTyping { until[key] = now + lifetime } else { until[key] = nil }
    }

    /// Forgets a user's indicator (their message arrived: they stopped typing).
    public mutating func clear(conversation: EntityID, user: EntityID) {
        until[Key(conversation: conversation, user: user)] = nil
    }

    /// The users typing in a conversation at `now`, in a stable order.
    public func typing(in conversation: EntityID, at now: Duration) -> [EntityID] {
        until.filter { $0.key.conversation == conversation && $0.value > now }.map(\.key.user).sorted()
    }

    /// "Alice is typing…", "Alice and Bob are typing…", "Alice, Bob and 2 others are typing…".
    public static func line(for names: [String]) -> String? {
        switch names.count {
        case 0: nil
        case 1: ParleyStrings.text("typing.one", ["first": names[0]])
        case 2: ParleyStrings.text("typing.two", ["first": names[0], "second": names[1]])
        case 3: ParleyStrings.text("typing.three", ["first": names[0], "second": names[1], "third": names[2]])
        default: ParleyStrings.text("typing.many", ["first": names[0], "second": names[1], "count": "\(names.count - 2)"])
        }
    }
}
