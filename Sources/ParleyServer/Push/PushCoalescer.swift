import Foundation
import ParleyProtocol

/// Decides when a new message becomes a notification, so a burst into one conversation
/// does not buzz a phone once per message.
///
/// The first message for a (user, conversation) goes out at once and opens a window; messages
/// inside the window are merged into one follow-up at its end (the latest message and how many
/// were merged), which opens the next window. A pure value: time is passed in.
struct PushCoalescer: Sendable {
    /// Whose notifications for which conversation are merged together.
    struct Key: Hashable, Sendable {
        var userId: EntityID
        var conversationId: EntityID
    }

    /// A notification to send: the message it shows and how many messages it stands for.
    struct Notice: Sendable, Equatable {
        var message: Message
        var count: Int
    }

    /// What to do with an offered message.
    enum Action: Sendable, Equatable {
        /// Send this now.
        case sendNow(Notice)
        /// Merged into a follow-up; call `flush` at this time.
        case scheduleFlush(at: Date)
        /// Merged into a follow-up whose flush is already scheduled.
        case merged
    }

    private struct Window {
        var endsAt: Date
        var pending: Notice?
    }

    let window: TimeInterval
    private var windows: [Key: Window] = [:]
    private var offersSincePrune = 0

    init(window: TimeInterval) {
        self.window = window
    }

    /// Windows still remembered (bounded by pruning closed, empty windows).
    var openWindows: Int { windows.count }

    /// A new message for a user in a conversation.
    mutating func offer(_ message: Message, for key: Key, now: Date) -> Action {
        prune(now: now)
        if var current = windows[key], now < current.endsAt {
            let first = current.pending == nil
            current.pending = Notice(message: message, count: (current.pending?.count ?? 0) + 1)
            windows[key] = current
            return first ? .scheduleFlush(at: current.endsAt) : .merged
        }
        // A window that ended with messages still merged (its flush not yet run): they go
        // with this one, so none is dropped from the count.
        let carried = windows[key]?.pending?.count ?? 0
        windows[key] = Window(endsAt: now.addingTimeInterval(window), pending: nil)
        return .sendNow(Notice(message: message, count: carried + 1))
    }

    /// The merged follow-up for a window that has ended, if anything was merged; opens the next window.
    mutating func flush(_ key: Key, now: Date) -> Notice? {
        // A flush that ran so late that a new window has begun since (opened by a message that
        // took the merged ones along) is not that window's: it would buzz again at once.
        guard var current = windows[key], let pending = current.pending, now >= current.endsAt.addingTimeInterval(-window / 2) else {
            return nil
        }
        current.pending = nil
        current.endsAt = now.addingTimeInterval(window)
        windows[key] = current
        return pending
    }

    private mutating func prune(now: Date) {
        offersSincePrune += 1
        guard offersSincePrune >= 256 else { return }
        offersSincePrune = 0
        windows = windows.filter { $0.value.pending != nil || $0.value.endsAt > now }
    }
}
