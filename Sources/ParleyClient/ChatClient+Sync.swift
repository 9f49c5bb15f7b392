import Foundation
import Logging
import ParleyProtocol

/// Sync and reading: the conversation list, catch-up from each conversation's synced seq,
/// token renewal and cache trimming, and the pages a screen reads (cache first).
extension ChatClient {
    // MARK: Sync

    /// Brings everything up to date: the conversation list, then every kept conversation from
    /// its synced seq, then the outbox.
    ///
    /// When the server answers, every queued message is sent at once, in order, whatever
    /// backoff its last failed attempt left: backoff applies only while the server stays
    /// unreachable. Returns whether the server was reached and what the outbox holds after.
    @discardableResult
    public func synchronize() async -> SyncReport {
        if sync.began() { notify(.syncing(true)) }
        defer { if sync.ended() { notify(.syncing(false)) } }
        var reached = false
        do {
            // Only what changed since the last sync (a reconnect with nothing new moves
            // almost nothing), the whole list the first time.
            let token = try await database.setting(Self.listSyncTokenKey)
            let answer = try await transport.conversationList(changedSince: token)
            reached = true
            signInRequired = false
            await renewTokenIfDue()
            // The server is back: what waited for it goes now, not when its backoff ends.
            await makeOutboxDue()
            let update = SyncSchedule.listUpdate(for: answer)
            try await database.store(conversations: update.conversations, replacingAll: update.replacingAll)
            if !update.removed.isEmpty { try await database.forget(conversations: update.removed) }
            try await database.setSetting(Self.listSyncTokenKey, to: update.syncToken)
            if case .set(let older) = update.olderPage { try await database.setSetting(Self.listNextPageKey, to: older) }
            notify(.conversations)
            for id in SyncSchedule.behind(list: update.conversations, synced: try await database.syncedConversations()) {
                await catchUp(id)
            }
        } catch let error as ClientError where error.code == .unauthorized {
            reached = true
            requireSignIn()
        } catch {
            logger.debug("Sync failed; will retry", metadata: ["error": "\(error)"])
        }
        await flushOutbox()
        await flushReceipts()
        await registerPushTokenIfNeeded()
        await trimCacheIfDue()
        resumeFirstSyncWaiters()
        let counts = (try? await database.outboxCounts()) ?? (queued: 0, failed: 0)
        return SyncReport(reachedServer: reached, queued: counts.queued, failed: counts.failed, signInRequired: signInRequired)
    }

    /// Whether a sync is running (catching up after a connect, or one the app asked for).
    public var isSyncing: Bool { sync.running > 0 }

    /// Where the conversation list's sync token is kept.
    static let listSyncTokenKey = "conversations_sync_token"
    /// Where the cursor of the list's next older page is kept (none: every page is here).
    static let listNextPageKey = "conversations_next_page"

    /// Whether the server has older conversations than the ones stored (a new device's first
    /// sync brings the newest page only).
    public func hasMoreConversations() async -> Bool {
        ((try? await database.setting(Self.listNextPageKey)) ?? nil) != nil
    }

    /// Fetches the next older page of the conversation list (as the user scrolls to the end)
    /// and stores it; returns whether still older ones remain. Conversations that changed
    /// meanwhile come with syncs, whichever page they were on.
    @discardableResult
    public func loadMoreConversations(limit: Int = 50) async throws -> Bool {
        guard let cursor = try await database.setting(Self.listNextPageKey) else { return false }
        let page = try await transport.conversationPage(before: cursor, limit: limit)
        try await database.store(conversations: page.conversations, replacingAll: false)
        let next = page.hasMore == true ? page.nextBefore : nil
        try await database.setSetting(Self.listNextPageKey, to: next)
        notify(.conversations)
        return next != nil
    }

    /// Renews the token when it is within its ``SessionTokens/renewalWindow`` (a third of its
    /// lifetime; a week when it does not say); a refusal means the user must sign in again
    /// (``ChatChange/signInRequired``).
    func renewTokenIfDue() async {
        guard !signInRequired, let expiry = transport.tokenExpiresAt else { return }
        let window = transport.credentials?.tokens.renewalWindow ?? SessionTokens.longestRenewalWindow
        guard expiry.timeIntervalSince(environment.now()) < window else { return }
        do {
            let token = try await transport.renewToken()
            // Credentials tell ``renewed(_:)`` themselves; a transport without them is told here.
            if transport.credentials == nil { await renewed(SessionTokens(token: token)) }
        } catch let error as ClientError where error.code == .unauthorized {
            requireSignIn()
        } catch {
            logger.debug("Token renewal failed; will retry", metadata: ["error": "\(error)"])
        }
    }

    /// After a renewal: the open connection carries on under the new token (`auth`), and the
    /// app is told to keep the tokens.
    func renewed(_ tokens: SessionTokens) async {
        notify(.tokenRenewed(tokens))
        guard let channel else { return }
        do {
            try await channel.perform(.auth(AuthCommand(token: tokens.token)))
        } catch {
            // A server before `auth`, or a connection going away: the next connection opens with
            // the new token.
            logger.debug("The connection did not take the renewed token", metadata: ["error": "\(error)"])
        }
    }

    /// How often the cache is trimmed to ``LocalDatabase/Retention`` (at the first sync, then
    /// at most this often).
    public static let trimInterval: TimeInterval = 6 * 3600

    /// Trims the cache to its retention limits when due, sparing the conversation on screen.
    func trimCacheIfDue() async {
        let now = environment.now()
        if let lastTrim, now.timeIntervalSince(lastTrim) < Self.trimInterval { return }
        lastTrim = now
        do {
            try await database.trim(now: now, sparing: Set([focusedConversation].compactMap { $0 }))
            notify(.conversations)
        } catch {
            logger.debug("Cache trim failed; will retry", metadata: ["error": "\(error)"])
        }
    }

    /// Fetches `/changes` from the synced seq until current, one transaction per page.
    public func catchUp(_ conversationId: EntityID) async {
        var started = false
        await inSingleFlight(.catchUp(conversationId), waiting: false) {
            // Counted once per catch-up, not per round.
            if !started {
                started = true
                readCounts.catchUps += 1
            }
            do {
                guard var since = try await database.syncedSeq(conversationId) else { return false }
                while true {
                    let page = try await transport.changes(conversationId, since: since, limit: Limits.changesPageMax)
                    readCounts.networkReads += 1
                    since = try await database.apply(changes: page, in: conversationId, since: since)
                    notify(.messages(conversationId))
                    if !page.hasMore { break }
                }
                await markDeliveredUpToSynced(conversationId)
                sync.caughtUp(conversationId)
                return true
            } catch {
                let retry = sync.catchUpFailed(conversationId, connected: machine.state == .connected)
                logger.debug("Catch-up failed", metadata: [
                    "error": "\(error)", "failures": "\(sync.failures(of: conversationId))", "retryIn": "\(retry.map { "\($0)" } ?? "next sync")",
                ])
                if let delay = retry {
                    Task { [environment] in
                        guard (try? await environment.sleep(delay)) != nil else { return }
                        await self.catchUp(conversationId)
                    }
                }
                return false
            }
        }
    }

    // MARK: Reading

    /// The conversation's latest messages: from the cache at once when it has them, otherwise
    /// (first open) from the server; then it catches up in the background.
    public func openConversation(_ id: EntityID, limit: Int = 50) async throws -> [LocalMessage] {
        if let synced = try await database.syncedSeq(id) {
            readCounts.cacheHits += 1
            // Connected and current: live events keep it so. Otherwise catch up behind the screen.
            let known = try await database.conversation(id)?.lastSeq
            if SyncSchedule.catchesUpOnOpen(synced: synced, listLastSeq: known, connected: machine.state == .connected) {
                Task { await self.catchUp(id) }
            }
            return try await database.messages(in: id, viewer: userId, limit: limit)
        }
        readCounts.cacheMisses += 1
        let conversation = try await transport.conversation(id)
        // Two screens' worth, so the first scroll back is already cached.
        let page = try await transport.messages(id, before: nil, limit: min(limit * 2, Limits.messagesPageMax))
        readCounts.networkReads += 2
        try await database.applyInitialPage(page, conversation: conversation)
        await catchUp(id)
        notify(.conversations)
        return try await database.messages(in: id, viewer: userId, limit: limit)
    }

    /// Older messages before `seq`: from the cache when it has a full page, else from the server.
    public func loadOlder(_ id: EntityID, before seq: Int64, limit: Int = 50) async throws -> [LocalMessage] {
        let cached = try await database.messages(in: id, viewer: userId, before: seq, limit: limit)
        let serverHasOlder = try await database.hasOlder(id)
        if cached.count >= limit || !serverHasOlder {
            readCounts.cacheHits += 1
            return cached
        }
        readCounts.cacheMisses += 1
        let edge = cached.first?.seq ?? seq
        let page = try await transport.messages(id, before: edge, limit: limit - cached.count)
        readCounts.networkReads += 1
        try await database.applyOlderPage(page, in: id)
        return try await database.messages(in: id, viewer: userId, before: seq, limit: limit)
    }
}

// MARK: A restored server

extension ChatClient {
    /// Where the `storeId` of the last server this cache synced with is kept.
    static let storeIdKey = "server_store_id"
    /// How many of the chats that had messages cached load them again at once after a store change.
    static let reopenedAfterStoreChange = 20

    /// Called with each connection's `storeId` before it counts as open. A server restored
    /// from a backup has a new one, and may have less than this cache saw: messages past the
    /// backup, at seqs the restored server will give to other messages. Keeping them would
    /// show messages the server no longer has and skip the ones it sends at those seqs, so the
    /// cache starts again (the outbox and the edits waiting to go are kept, and resent: the
    /// server knows each by its client id) and the sync that follows fills it.
    func adoptStore(_ storeId: String?) async {
        guard let storeId else { return }
        do {
            let known = try await database.setting(Self.storeIdKey)
            guard known != storeId else { return }
            var reopen: [EntityID] = []
            if known != nil {
                logger.notice("The server's data is another copy (restored from a backup): starting the cache again")
                let cached = try await database.conversations().map(\.id)
                let opened = Set(try await database.syncedConversations().map(\.id))
                // The chats that had messages cached load them again (the newest first, at most
                // 20 at once); the others load theirs when opened, as after a first sign-in.
                reopen = Array(cached.filter(opened.contains).prefix(Self.reopenedAfterStoreChange))
                try await database.reset()
                try await database.setSetting(Self.listSyncTokenKey, to: nil)
                try await database.setSetting(Self.listNextPageKey, to: nil)
                receiptSummaries = [:]
                typingCounts = [:]
                readCounts.storeChanges += 1
                notify(.conversations)
                for id in cached { notify(.messages(id)) }
            }
            try await database.setSetting(Self.storeIdKey, to: storeId)
            if !reopen.isEmpty {
                Task {
                    for id in reopen {
                        _ = try? await self.openConversation(id)
                        self.notify(.messages(id))
                    }
                }
            }
        } catch {
            logger.warning("Could not compare the server's store identity", metadata: ["error": "\(error)"])
        }
    }
}
