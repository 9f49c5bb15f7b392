import Foundation
@testable import ParleyClient
import ParleyProtocol
import Testing

/// The sync's decisions on their own: what a list answer does to the cache, who is behind,
/// when a failed catch-up tries again, and when opening a cached chat catches it up.
@Suite struct SyncScheduleTests {
    static func conversation(_ id: EntityID = EntityID(), lastSeq: Int64) -> Conversation {
        Conversation(
            id: id, type: .direct, participantIds: [], createdAt: Date(timeIntervalSince1970: 0),
            lastActivityAt: Date(timeIntervalSince1970: 0), lastSeq: lastSeq, unreadCount: 0, readSeq: 0, members: [])
    }

    @Test func overlappingSyncsAnnounceOneStartAndOneEnd() {
        var schedule = SyncSchedule()
        let first = schedule.began(), second = schedule.began()
        #expect(first && !second, "the first announces the start, a second one meanwhile does not")
        let oneLeft = schedule.ended()
        #expect(!oneLeft && schedule.running == 1, "one still runs")
        let lastEnded = schedule.ended()
        #expect(lastEnded && schedule.running == 0, "the last one's end is announced")
        _ = schedule.ended()
        #expect(schedule.running == 0, "an extra end does not go below zero")
    }

    @Test func eachListAnswerChangesTheCacheAsItShould() {
        let a = Self.conversation(lastSeq: 3), gone = EntityID()
        let all = SyncSchedule.listUpdate(for: .all([a], token: "t1"))
        #expect(all == .init(conversations: [a], replacingAll: true, removed: [], syncToken: "t1", olderPage: .set(nil)),
                "the whole list drops what it lacks and forgets older pages")
        let first = SyncSchedule.listUpdate(for: .firstPage([a], token: "t2", nextBefore: "c"))
        #expect(first == .init(conversations: [a], replacingAll: true, removed: [], syncToken: "t2", olderPage: .set("c")),
                "a first page keeps the cursor of the pages behind it")
        let last = SyncSchedule.listUpdate(for: .firstPage([a], token: "t2", nextBefore: nil))
        #expect(last.olderPage == .set(nil), "a first page with nothing behind it says so")
        let changes = SyncSchedule.listUpdate(for: .changes([a], removed: [gone], token: "t3"))
        #expect(changes == .init(conversations: [a], replacingAll: false, removed: [gone], syncToken: "t3", olderPage: .kept),
                "changes merge, drop the ones left, and leave the page cursor alone")
    }

    @Test func onlyKeptConversationsThatTheListShowsAheadAreBehind() {
        let ahead = EntityID(), current = EntityID(), unmentioned = EntityID(), notKept = EntityID()
        let list = [
            Self.conversation(ahead, lastSeq: 9), Self.conversation(current, lastSeq: 4), Self.conversation(notKept, lastSeq: 7),
        ]
        let synced: [(id: EntityID, syncedSeq: Int64)] = [(ahead, 5), (current, 4), (unmentioned, 2)]
        #expect(SyncSchedule.behind(list: list, synced: synced) == [ahead])
        #expect(SyncSchedule.behind(list: [], synced: synced).isEmpty, "a list of changes that names none: none behind")
    }

    @Test func aFailedCatchUpRetriesDoublingWhileConnectedThenWaitsForTheNextSync() {
        var schedule = SyncSchedule()
        let id = EntityID(), other = EntityID()
        var waits: [Duration] = []
        while let wait = schedule.catchUpFailed(id, connected: true) { waits.append(wait) }
        #expect(waits == (0..<8).map { Duration.milliseconds(250 << $0) }, "250 ms doubling to 32 s, eight times")
        #expect(schedule.failures(of: id) == 9)
        let otherWait = schedule.catchUpFailed(other, connected: true)
        #expect(otherWait == .milliseconds(250), "each conversation has its own count")
        schedule.caughtUp(id)
        #expect(schedule.failures(of: id) == 0)
        let again = schedule.catchUpFailed(id, connected: true)
        #expect(again == .milliseconds(250), "a success starts the backoff again")
        let offline = schedule.catchUpFailed(id, connected: false)
        #expect(offline == nil, "not connected: the reconnect's sync catches it up")
        #expect(schedule.failures(of: id) == 2, "a failure while disconnected still counts")
    }

    @Test(arguments: [
        (synced: Int64(5), listLastSeq: Int64?(5), connected: true, catchesUp: false),
        (synced: 5, listLastSeq: 7, connected: true, catchesUp: true),
        (synced: 5, listLastSeq: 5, connected: false, catchesUp: true),
        (synced: 5, listLastSeq: nil, connected: true, catchesUp: true),
    ])
    func openingACachedChatCatchesItUpWhenItMayBeBehind(
        _ case: (synced: Int64, listLastSeq: Int64?, connected: Bool, catchesUp: Bool)
    ) {
        #expect(SyncSchedule.catchesUpOnOpen(synced: `case`.synced, listLastSeq: `case`.listLastSeq, connected: `case`.connected) == `case`.catchesUp)
    }
}
