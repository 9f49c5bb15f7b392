import Foundation
import GRDB
import ParleyProtocol

extension LocalDatabase {
    /// Stores the server's conversation list; with `replacingAll`, conversations missing from it
    /// (the user left or was removed) are dropped with their messages.
    public func store(conversations: [Conversation], replacingAll: Bool) async throws {
        try await writer.write { db in
            for conversation in conversations { try Self.upsert(db, conversation) }
            if replacingAll {
                let keep = Set(conversations.map(\.id.description))
                for id in try String.fetchAll(db, sql: "SELECT id FROM conversations") where !keep.contains(id) {
                    try Self.delete(db, conversation: id)
                }
            }
        }
    }

    /// Stores one conversation view. A view with a higher `lastSeq` replaces the row; one at the
    /// row's seq replaces it when its read is not older. The read state (`readSeq`,
    /// `unreadCount`) is weighed apart, since views are not ordered with the events: a view
    /// behind the row whose watermark is newer (a read on another device) still gives it, with
    /// the count the row applied after the view added (see ``ReadState``); an older read is
    /// ignored. `stale`: the view's read could not be taken exactly; read the conversation again.
    @discardableResult
    static func upsert(_ db: Database, _ conversation: Conversation) throws -> ListRowOutcome {
        let id = conversation.id.description
        guard let state = try readState(db, id), let stored = try storedConversation(db, conversation.id) else {
            try write(db, conversation, .fresh(conversation))
            return .applied
        }
        let merge = try merge(readSeq: conversation.readSeq, unread: conversation.unreadCount, at: conversation.lastSeq, into: state, db, id)
        var next = stored
        var nextState = state
        var tookView = false
        if conversation.lastSeq > state.lastSeq {
            // Newer: the row jumps to it. Nothing the row applied lies after it.
            next = conversation
            tookView = true
            nextState.lastSeq = conversation.lastSeq
            nextState.logFrom = conversation.lastSeq
            try db.execute(sql: "DELETE FROM list_changes WHERE conversation_id = ?", arguments: [id])
        } else if conversation.lastSeq == state.lastSeq, merge != .older {
            next = conversation
            tookView = true
        }
        // Members' watermarks only move up, whichever side is older.
        for member in (tookView ? stored : conversation).members {
            next.raiseWatermarks(of: member.userId, read: member.readSeq, delivered: member.deliveredSeq)
        }
        if case .exact(let unread) = merge {
            next.readSeq = conversation.readSeq
            next.unreadCount = unread
            try accept(&nextState, readSeq: conversation.readSeq, at: conversation.lastSeq, db, id)
        } else {
            next.readSeq = stored.readSeq
            next.unreadCount = stored.unreadCount
        }
        try write(db, next, nextState)
        return merge == .unknown ? .stale : .applied
    }

    /// Forgets conversations the user is no longer in (their confirmed messages with them).
    public func forget(conversations ids: [EntityID]) async throws {
        guard !ids.isEmpty else { return }
        try await writer.write { db in
            for id in ids.map(\.description) { try Self.delete(db, conversation: id) }
        }
    }

    /// Drops one conversation's row, what its row remembered applying, and its confirmed messages.
    private static func delete(_ db: Database, conversation id: String) throws {
        try db.execute(sql: "DELETE FROM messages WHERE conversation_id = ? AND state = 'confirmed'", arguments: [id])
        try db.execute(sql: "DELETE FROM list_changes WHERE conversation_id = ?", arguments: [id])
        try db.execute(sql: "DELETE FROM conversations WHERE id = ?", arguments: [id])
    }

    /// Stores a conversation view (from an event or a fetch). `stale` when the view carried a
    /// read the row could not take exactly (it is too far behind the row): read it again.
    @discardableResult
    public func store(conversation: Conversation) async throws -> ListRowOutcome {
        try await writer.write { db in try Self.upsert(db, conversation) }
    }

    /// The cached conversations, newest activity first.
    public func conversations() async throws -> [Conversation] {
        try await writer.read { db in
            let decoder = WireCoding.makeDecoder()
            return try String.fetchAll(db, sql: "SELECT body FROM conversations ORDER BY last_activity_at DESC, id")
                .map { try decoder.decode(Conversation.self, from: Data($0.utf8)) }
        }
    }

    /// One cached conversation.
    public func conversation(_ id: EntityID) async throws -> Conversation? {
        try await writer.read { db in try Self.storedConversation(db, id) }
    }

    static func storedConversation(_ db: Database, _ id: EntityID) throws -> Conversation? {
        guard let body = try String.fetchOne(db, sql: "SELECT body FROM conversations WHERE id = ?", arguments: [id.description]) else {
            return nil
        }
        return try WireCoding.makeDecoder().decode(Conversation.self, from: Data(body.utf8))
    }

    /// Up to where this device holds every change of a conversation; nil until its messages were first loaded.
    public func syncedSeq(_ id: EntityID) async throws -> Int64? {
        try await writer.read { db in
            try Int64.fetchOne(db, sql: "SELECT synced_seq FROM conversations WHERE id = ?", arguments: [id.description])
        }
    }

    /// The conversations whose messages this device keeps (it has loaded them at least once).
    public func syncedConversations() async throws -> [(id: EntityID, syncedSeq: Int64)] {
        try await writer.read { db in
            try Row.fetchAll(db, sql: "SELECT id, synced_seq FROM conversations WHERE synced_seq IS NOT NULL").map {
                (try Self.id($0["id"]), $0["synced_seq"])
            }
        }
    }

    /// Applies a catch-up page and moves the synced seq in one transaction. On the last page
    /// (`hasMore == false`) the synced seq becomes the page's `lastSeq`; otherwise the last
    /// `updatedSeq` returned (the next `since`).
    public func apply(changes page: ChangesPage, in conversationId: EntityID, since: Int64) async throws -> Int64 {
        try await writer.write { db in
            for message in page.messages { try Self.upsert(db, message) }
            let next = page.hasMore ? (page.messages.last?.updatedSeq ?? since) : max(page.lastSeq, since)
            try db.execute(
                sql: "UPDATE conversations SET synced_seq = MAX(COALESCE(synced_seq, 0), ?) WHERE id = ?",
                arguments: [next, conversationId.description])
            return next
        }
    }

    /// What became of a live event.
    public enum LiveOutcome: Sendable, Equatable {
        /// Applied (or already known): the cache is current up to it.
        case applied
        /// Its seq is past `syncedSeq + 1`: nothing applied; catch up instead.
        case gap
        /// This device keeps no messages of that conversation yet.
        case untracked
    }

    /// Applies one live message event only if its change seq is at most `syncedSeq + 1`, so the
    /// cache never holds a change after a missing one.
    public func applyLive(_ message: Message, changeSeq: Int64) async throws -> LiveOutcome {
        try await writer.write { db in
            let synced = try Int64.fetchOne(
                db, sql: "SELECT synced_seq FROM conversations WHERE id = ?", arguments: [message.conversationId.description])
            guard let synced else { return .untracked }
            guard changeSeq <= synced + 1 else { return .gap }
            try Self.upsert(db, message)
            if changeSeq == synced + 1 {
                try db.execute(
                    sql: "UPDATE conversations SET synced_seq = ? WHERE id = ?", arguments: [changeSeq, message.conversationId.description])
            }
            return .applied
        }
    }

    /// First load of a conversation: its newest page, with the synced seq set to the counter
    /// read before the page (a catch-up from there picks up anything in between).
    public func applyInitialPage(_ page: MessagesPage, conversation: Conversation) async throws {
        try await writer.write { db in
            try Self.upsert(db, conversation)
            for message in page.messages { try Self.upsert(db, message) }
            try db.execute(
                sql: "UPDATE conversations SET synced_seq = MAX(COALESCE(synced_seq, 0), ?), has_older = ? WHERE id = ?",
                arguments: [conversation.lastSeq, page.hasMore, conversation.id.description])
        }
    }

    /// Stores an older page fetched while paging back.
    public func applyOlderPage(_ page: MessagesPage, in conversationId: EntityID) async throws {
        try await writer.write { db in
            for message in page.messages { try Self.upsert(db, message) }
            if !page.hasMore {
                try db.execute(sql: "UPDATE conversations SET has_older = 0 WHERE id = ?", arguments: [conversationId.description])
            }
        }
    }

    /// Whether the server may hold messages older than the cache's oldest.
    public func hasOlder(_ id: EntityID) async throws -> Bool {
        try await writer.read { db in
            try Bool.fetchOne(db, sql: "SELECT has_older FROM conversations WHERE id = ?", arguments: [id.description]) ?? true
        }
    }

    /// Applies the answer to our own read: the badge and our watermark, at once. The answer's
    /// `lastSeq` says what its count covers: events up to it that arrive later are not counted
    /// again, and what the row applied after it is added (see ``ReadState``). An answer without
    /// it (an older server) is taken as it is unless its watermark is below the row's. `stale`:
    /// the answer could not be taken exactly; read the conversation again.
    @discardableResult
    public func apply(ownRead answer: ReadResponse, in conversationId: EntityID, userId: EntityID) async throws -> ListRowOutcome {
        try await writer.write { db in
            let id = conversationId.description
            guard var conversation = try Self.storedConversation(db, conversationId), var state = try Self.readState(db, id) else {
                return .applied
            }
            var outcome = ListRowOutcome.applied
            if let seq = answer.lastSeq {
                switch try Self.merge(readSeq: answer.readSeq, unread: answer.unreadCount, at: seq, into: state, db, id) {
                case .exact(let unread):
                    conversation.readSeq = answer.readSeq
                    conversation.unreadCount = unread
                    try Self.accept(&state, readSeq: answer.readSeq, at: seq, db, id)
                case .older:
                    break
                case .unknown:
                    outcome = .stale
                }
            } else if answer.readSeq >= conversation.readSeq {
                conversation.readSeq = answer.readSeq
                conversation.unreadCount = answer.unreadCount
                state.readSeq = answer.readSeq
            }
            conversation.raiseWatermarks(of: userId, read: answer.readSeq, delivered: answer.readSeq)
            try Self.write(db, conversation, state)
            return outcome
        }
    }

    /// Applies a receipt to the stored members (watermarks only move up).
    public func apply(receipt: ReceiptEvent) async throws {
        try await updateStoredConversation(receipt.conversationId) { conversation in
            conversation.raiseWatermarks(of: receipt.userId, read: receipt.readSeq, delivered: receipt.deliveredSeq)
        }
    }

    /// Rewrites a cached conversation in place (its `read_seq` ordering column follows the body).
    private func updateStoredConversation(_ id: EntityID, _ change: @escaping @Sendable (inout Conversation) -> Void) async throws {
        try await writer.write { db in
            guard var conversation = try Self.storedConversation(db, id) else { return }
            change(&conversation)
            let body = String(decoding: try WireCoding.makeEncoder().encode(conversation), as: UTF8.self)
            try db.execute(
                sql: "UPDATE conversations SET body = ?, read_seq = ? WHERE id = ?",
                arguments: [body, conversation.readSeq, id.description])
        }
    }
}

extension Conversation {
    /// Raises one member's watermarks; they never move back.
    mutating func raiseWatermarks(of userId: EntityID, read: Int64, delivered: Int64) {
        guard let index = members.firstIndex(where: { $0.userId == userId }) else { return }
        members[index].readSeq = max(members[index].readSeq, read)
        members[index].deliveredSeq = max(members[index].deliveredSeq, delivered, members[index].readSeq)
    }
}
