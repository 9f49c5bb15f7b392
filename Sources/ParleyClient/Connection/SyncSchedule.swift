import Foundation
import ParleyProtocol

/// What the client's sync decides, apart from doing it: how a list answer changes the cache,
/// which conversations are behind and need a catch-up, when a failed catch-up tries again,
/// and whether opening a cached chat catches it up. A value with no sockets, database or
/// clock, so each decision is tested on its own; ``ChatClient`` reads and writes around it.
struct SyncSchedule: Sendable {
    /// How many syncs are running (a reconnect's and one the app asked for can overlap).
    private(set) var running = 0
    /// Failed catch-ups in a row, by conversation (cleared by one that succeeds).
    private var catchUpFailures: [EntityID: Int] = [:]

    /// How often a failed catch-up is tried again while connected before it is left to the
    /// next reconnect's sync.
    static let catchUpRetries = 8
    /// The first retry's wait; each one after doubles it (250 ms to 32 s).
    static let firstCatchUpRetry: Duration = .milliseconds(250)

    /// A sync begins; true when no other was running (the app is told a sync started).
    mutating func began() -> Bool {
        running += 1
        return running == 1
    }

    /// A sync ended; true when none is left running (the app is told syncing stopped).
    mutating func ended() -> Bool {
        running = max(0, running - 1)
        return running == 0
    }

    /// What one answer of the list sync does to the cached list.
    struct ListUpdate: Equatable {
        /// The conversations to store.
        var conversations: [Conversation]
        /// Whether they are the whole list (cached ones not among them are dropped).
        var replacingAll: Bool
        /// Conversations the user left or was removed from.
        var removed: [EntityID]
        /// The token the next sync asks from.
        var syncToken: String?
        /// What becomes of the stored cursor of the next older page.
        var olderPage: OlderPage
    }

    /// The stored cursor of the list's next older page, after a list answer.
    enum OlderPage: Equatable {
        /// Left as it is (changes do not move the pages behind).
        case kept
        /// Set to this cursor; nil when nothing older remains.
        case set(String?)
    }

    /// How an answer of the list sync changes the cache. A whole list forgets any older page
    /// cursor; a first page keeps the cursor of the pages behind it; changes touch neither.
    static func listUpdate(for sync: ConversationListSync) -> ListUpdate {
        switch sync {
        case .all(let all, let token):
            ListUpdate(conversations: all, replacingAll: true, removed: [], syncToken: token, olderPage: .set(nil))
        case .firstPage(let page, let token, let older):
            ListUpdate(conversations: page, replacingAll: true, removed: [], syncToken: token, olderPage: .set(older))
        case .changes(let changed, let removed, let token):
            ListUpdate(conversations: changed, replacingAll: false, removed: removed, syncToken: token, olderPage: .kept)
        }
    }

    /// The kept conversations (those with a synced seq) the list says are past what the cache
    /// holds: each needs a catch-up. A conversation the answer does not mention is current.
    static func behind(list: [Conversation], synced: [(id: EntityID, syncedSeq: Int64)]) -> [EntityID] {
        let latest = Dictionary(list.map { ($0.id, $0.lastSeq) }, uniquingKeysWith: max)
        return synced.filter { (latest[$0.id] ?? 0) > $0.syncedSeq }.map(\.id)
    }

    /// A catch-up brought the conversation current: the next failure starts its backoff again.
    mutating func caughtUp(_ conversationId: EntityID) {
        catchUpFailures[conversationId] = nil
    }

    /// A catch-up failed. While connected nothing else may come to trigger it again (the missed
    /// message may have been the last one), so it is retried after the returned wait, doubling
    /// each time; nil leaves it to the next reconnect's sync (not connected, or out of retries).
    mutating func catchUpFailed(_ conversationId: EntityID, connected: Bool) -> Duration? {
        let failures = (catchUpFailures[conversationId] ?? 0) + 1
        catchUpFailures[conversationId] = failures
        guard connected, failures <= Self.catchUpRetries else { return nil }
        return Self.firstCatchUpRetry * (1 << (failures - 1))
    }

    /// Failed catch-ups in a row for the conversation (for logs).
    func failures(of conversationId: EntityID) -> Int { catchUpFailures[conversationId] ?? 0 }

    /// Whether opening a chat whose messages are cached up to `synced` catches it up behind the
    /// screen: when the list knows of a later seq, or when no live connection keeps it current.
    static func catchesUpOnOpen(synced: Int64, listLastSeq: Int64?, connected: Bool) -> Bool {
        !connected || (listLastSeq ?? .max) > synced
    }
}
