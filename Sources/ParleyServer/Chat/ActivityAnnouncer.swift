import Foundation
import ParleyProtocol
import Synchronization

/// Announces activity in a conversation (`conversation.updated` views or a large group's
/// `conversation.activity` after new messages; receipt and typing summaries) without one
/// announcement per change.
///
/// The first message of a quiet conversation is announced at once; messages within the next
/// `window` are folded into one more announcement at its end (reading the views fresh then).
/// A busy group costs one view read per window instead of one per message: list screens
/// still converge within `window`, and `message.created` itself is never delayed.
/// `Payload` is what one announcement needs (who to tell, what happened); the changes folded
/// into one are merged by `merge` (by default the later one stands).
final class ActivityAnnouncer<Payload: Sendable>: Sendable {
    private enum Step { case now, later(Date), merged }

    private struct Window {
        var endsAt: Date
        var pending: Payload?
    }

    private let windows = Mutex<[EntityID: Window]>([:])
    private let window: TimeInterval
    private let clock: ServerClock
    private let announce: @Sendable (EntityID, Payload) async -> Void
    private let merge: @Sendable (Payload, Payload) -> Payload

    init(
        window: Duration, clock: ServerClock, merge: @escaping @Sendable (_ earlier: Payload, _ later: Payload) -> Payload = { $1 },
        announce: @escaping @Sendable (EntityID, Payload) async -> Void
    ) {
        self.window = window.timeInterval
        self.clock = clock
        self.merge = merge
        self.announce = announce
    }

    /// New activity in a conversation.
    func touch(_ conversationId: EntityID, _ payload: Payload) {
        let now = clock.now()
        let step = windows.withLock { windows -> Step in
            if var current = windows[conversationId], now < current.endsAt {
                let first = current.pending == nil
                current.pending = current.pending.map { merge($0, payload) } ?? payload
                windows[conversationId] = current
                return first ? .later(current.endsAt) : .merged
            }
            windows[conversationId] = Window(endsAt: now.addingTimeInterval(window), pending: nil)
            return .now
        }
        switch step {
        case .now:
            Task { await announce(conversationId, payload) }
        case .later(let deadline):
            Task {
                await clock.sleepUntil(deadline)
                await flush(conversationId)
            }
        case .merged:
            break
        }
    }

    private func flush(_ conversationId: EntityID) async {
        let now = clock.now()
        let pending = windows.withLock { windows -> Payload? in
            guard var current = windows[conversationId], let pending = current.pending else {
                windows[conversationId] = nil
                return nil
            }
            current.pending = nil
            current.endsAt = now.addingTimeInterval(window)
            windows[conversationId] = current
            return pending
        }
        guard let pending else { return }
        await announce(conversationId, pending)
        // Forget the window once it has passed with nothing new, so memory stays bounded.
        await clock.sleepUntil(now.addingTimeInterval(window))
        let later = clock.now()
        windows.withLock { windows in
            if let current = windows[conversationId], current.pending == nil, current.endsAt <= later {
                windows[conversationId] = nil
            }
        }
    }
}
