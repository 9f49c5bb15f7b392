import Foundation
import ParleyProtocol

extension ConnectionState {
    /// Connecting, or connected with the first sync under way: a first sync may still come.
    var isTryingToConnect: Bool { self == .connecting || self == .connected }
}

extension ChatClient {
    /// Whether this device's database has had the conversation list from the server at least
    /// once (false on a first run, until the first sync).
    public func hasSynchronizedList() async -> Bool {
        ((try? await database.setting(Self.listSyncTokenKey)) ?? nil) != nil
    }

    /// Waits for the first sync of a new device's database: returns at once when the list was
    /// synchronized before, or when the client is not connecting; otherwise when a sync has
    /// run (whether or not it reached the server), or when the connection attempt failed with
    /// no sync under way (a connection that opened and then dropped still lets the sync it
    /// started finish first: that sync goes over HTTP and may well bring the list). A screen
    /// uses it on a first run to show "Loading…" rather than an empty list that fills a moment
    /// later; an app must not wait for it while offline (it returns then).
    public func waitForFirstSync() async {
        if await hasSynchronizedList() || (!connectionState.isTryingToConnect && connectSyncsPending == 0) { return }
        await withCheckedContinuation { firstSyncWaiters.append($0) }
    }

    /// Wakes ``waitForFirstSync()``'s callers when the client has stopped trying to connect and
    /// no sync that a connect started is still on its way.
    func resumeFirstSyncWaitersIfDone() {
        if !connectionState.isTryingToConnect, connectSyncsPending == 0 { resumeFirstSyncWaiters() }
    }

    /// Wakes ``waitForFirstSync()``'s callers.
    func resumeFirstSyncWaiters() {
        let waiters = firstSyncWaiters
        firstSyncWaiters = []
        for waiter in waiters { waiter.resume() }
    }
}
