import Foundation
import GRDB
import ParleyProtocol

/// One message waiting to be sent.
public struct OutboxEntry: Sendable, Equatable {
    /// FIFO order across the outbox.
    public var position: Int64
    /// The send request, with its client message id.
    public var request: SendMessageRequest
    /// The conversation it goes to.
    public var conversationId: EntityID
    /// Failed attempts so far.
    public var attempts: Int
    /// Not before this time.
    public var nextAttemptAt: Date
    /// Preparations still to run, by name, in order (they survive restarts).
    public var preparations: [String]
    /// Durable scratch for the preparations (a local file to upload, an uploaded id).
    public var context: [String: String]
}

extension LocalDatabase {
    /// The entries to send now: the oldest queued entry of each conversation (FIFO per
    /// conversation: a message is sent only after the one before it), if it is due.
    public func dueOutboxEntries(now: Date) async throws -> [OutboxEntry] {
        try await heads().filter { $0.nextAttemptAt <= now }
    }

    /// When the next queued head becomes due, if any is waiting.
    public func nextOutboxAttempt() async throws -> Date? {
        try await heads().map(\.nextAttemptAt).min()
    }

    /// How many messages are queued, and how many the server refused.
    public func outboxCounts() async throws -> (queued: Int, failed: Int) {
        try await writer.read { db in
            let queued = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox WHERE state = 'queued'") ?? 0
            let failed = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox WHERE state = 'failed'") ?? 0
            return (queued, failed)
        }
    }

    /// How many messages are queued or failed.
    public func outboxCount() async throws -> Int {
        try await writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM outbox") ?? 0 }
    }

    /// The oldest queued entry of each conversation, oldest first, due or not.
    package func outboxHeads() async throws -> [OutboxEntry] { try await heads() }

    /// The oldest queued entry of each conversation, oldest first. The conversations with
    /// something queued are found by one index seek each (a skip scan of `outbox_queued`), then
    /// each one's oldest queued entry: a few seeks however long the outbox is, where a scan of
    /// every entry per entry grew with its square (82 % of a client's CPU with 25,000 queued).
    static let outboxHeadsSQL = """
        WITH RECURSIVE queued(id) AS (
            SELECT MIN(conversation_id) FROM outbox WHERE state = 'queued'
            UNION ALL
            SELECT (SELECT MIN(conversation_id) FROM outbox WHERE state = 'queued' AND conversation_id > queued.id)
            FROM queued WHERE queued.id IS NOT NULL
        )
        SELECT o.* FROM queued JOIN outbox o ON o.position = (
            SELECT position FROM outbox WHERE state = 'queued' AND conversation_id = queued.id ORDER BY position LIMIT 1)
        ORDER BY o.position
        """

    private func heads() async throws -> [OutboxEntry] {
        try await writer.read { db in
            let rows = try Row.fetchAll(db, sql: Self.outboxHeadsSQL)
            let decoder = WireCoding.makeDecoder()
            return try rows.map { row in
                OutboxEntry(
                    position: row["position"],
                    request: try decoder.decode(SendMessageRequest.self, from: Data((row["request"] as String).utf8)),
                    conversationId: try Self.id(row["conversation_id"]), attempts: row["attempts"],
                    nextAttemptAt: Date(millisecondsSince1970: row["next_attempt_at"]),
                    preparations: try JSONDecoder().decode([String].self, from: Data((row["preparations"] as String).utf8)),
                    context: try JSONDecoder().decode([String: String].self, from: Data((row["context"] as String).utf8)))
            }
        }
    }

    /// Records a failed attempt that may succeed later (no answer, 5xx): try again at `retryAt`.
    public func outboxAttemptFailed(clientMessageId: String, retryAt: Date) async throws {
        try await writer.write { db in
            try db.execute(
                sql: "UPDATE outbox SET attempts = attempts + 1, next_attempt_at = ? WHERE client_message_id = ?",
                arguments: [retryAt.millisecondsSince1970, clientMessageId])
        }
    }

    /// Records a finished preparation: the request as it changed, the scratch, what is left.
    public func outboxPrepared(clientMessageId: String, request: SendMessageRequest, context: [String: String], remaining: [String]) async throws {
        let requestJSON = String(decoding: try WireCoding.makeEncoder().encode(request), as: UTF8.self)
        let contextJSON = String(decoding: try JSONEncoder().encode(context), as: UTF8.self)
        let remainingJSON = String(decoding: try JSONEncoder().encode(remaining), as: UTF8.self)
        try await writer.write { db in
            try db.execute(
                sql: "UPDATE outbox SET request = ?, context = ?, preparations = ? WHERE client_message_id = ?",
                arguments: [requestJSON, contextJSON, remainingJSON, clientMessageId])
        }
    }

    /// Makes every queued entry due now (the connection came back: the waits were for it).
    public func outboxRetryNow() async throws {
        try await writer.write { db in
            try db.execute(sql: "UPDATE outbox SET next_attempt_at = 0 WHERE state = 'queued' AND next_attempt_at > 0")
        }
    }

    /// The server refused the message: it shows as failed with the reason until resent or discarded.
    public func outboxRejected(clientMessageId: String, reason: String) async throws {
        try await writer.write { db in
            try db.execute(
                sql: "UPDATE outbox SET state = 'failed', failure = ? WHERE client_message_id = ?",
                arguments: [reason, clientMessageId])
            try db.execute(
                sql: "UPDATE messages SET state = 'failed', failure = ? WHERE client_message_id = ? AND state = 'sending'",
                arguments: [reason, clientMessageId])
        }
    }

    /// Queues a failed message again, at the end of its conversation's queue.
    public func resend(clientMessageId: String) async throws -> Bool {
        try await writer.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM outbox WHERE client_message_id = ? AND state = 'failed'", arguments: [clientMessageId]) else {
                return false
            }
            try db.execute(sql: "DELETE FROM outbox WHERE client_message_id = ?", arguments: [clientMessageId])
            try db.execute(
                sql: """
                    INSERT INTO outbox (client_message_id, conversation_id, sender_id, request, queued_at, preparations, context)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    clientMessageId, row["conversation_id"], row["sender_id"], row["request"], row["queued_at"],
                    row["preparations"], row["context"],
                ])
            try db.execute(
                sql: "UPDATE messages SET state = 'sending', failure = NULL, local_order = ? WHERE client_message_id = ? AND state = 'failed'",
                arguments: [db.lastInsertedRowID, clientMessageId])
            return true
        }
    }

    /// The client message ids of every queued or failed message.
    public func outboxClientMessageIds() async throws -> Set<String> {
        try await writer.read { db in Set(try String.fetchAll(db, sql: "SELECT client_message_id FROM outbox")) }
    }

    /// Drops a failed (or still queued) message that the server never stored.
    public func discard(clientMessageId: String) async throws -> Bool {
        try await writer.write { db in
            try db.execute(sql: "DELETE FROM outbox WHERE client_message_id = ?", arguments: [clientMessageId])
            let removed = db.changesCount > 0
            try db.execute(
                sql: "DELETE FROM messages WHERE client_message_id = ? AND state != 'confirmed'", arguments: [clientMessageId])
            return removed
        }
    }
}

extension LocalDatabase {
    /// Hides a message on this device only ("delete for me"); catch-up never brings it back.
    public func hide(senderId: EntityID, clientMessageId: String) async throws {
        try await writer.write { db in
            try db.execute(
                sql: "INSERT OR IGNORE INTO hidden_messages (sender_id, client_message_id) VALUES (?, ?)",
                arguments: [senderId.description, clientMessageId])
        }
    }
}
