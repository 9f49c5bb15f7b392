import Foundation
import ParleyProtocol
import Synchronization

/// Sends `conversation.updated` for new activity without one store read per message.
///
/// The first message of a quiet conversation is announced at once; messages within the next
/// `window` are folded into one more announcement at its end (reading the views fresh then).
/// A busy group costs one view read per window instead of one per message: list screens
/// still converge within `window`, and `message.created` itself is never delayed.
final class ActivityAnnouncer: Sendable {
    private struct Window {
        var endsAt: Date
        var pending: [EntityID]?
    }

    private let windows = Mutex<[EntityID: Window]>([:])
    private let window: TimeInterval
    private let clock: ServerClock
    private let announce: @Sendable (EntityID, [EntityID]) async -> Void

    init(window: Duration, clock: ServerClock, announce: @escaping @Sendable (EntityID, [EntityID]) async -> Void) {
        self.window = window.timeInterval
        self.clock = clock
        self.announce = announce
    }

    /// New activity in a conversation with these participants.
    func touch(_ conversationId: EntityID, participants: [EntityID]) {
        let now = clock.now()
        enum Step { case now, later(Date), merged }
        let step = windows.withLock { windows -> Step in
            if var current = windows[conversationId], now < current.endsAt {
                let first = current.pending == nil
                current.pending = participants
                windows[conversationId] = current
                return first ? .later(current.endsAt) : .merged
            }
            windows[conversationId] = Window(endsAt: now.addingTimeInterval(window), pending: nil)
            return .now
        }
        switch step {
        case .now:
            Task { await announce(conversationId, participants) }
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
        let participants = windows.withLock { windows -> [EntityID]? in
            guard var current = windows[conversationId], let pending = current.pending else {
                windows[conversationId] = nil
                return nil
            }
            current.pending = nil
            current.endsAt = now.addingTimeInterval(window)
            windows[conversationId] = current
            return pending
        }
        guard let participants else { return }
        await announce(conversationId, participants)
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
