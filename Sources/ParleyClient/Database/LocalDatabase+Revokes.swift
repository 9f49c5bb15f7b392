import Foundation
import GRDB
import ParleyProtocol

/// A message the user deleted while it was on its way: where it stands now.
public struct PendingRevoke: Sendable, Equatable {
    /// The message's client id (with the user, its key).
    public var clientMessageId: String
    /// Its conversation.
    public var conversationId: EntityID
    /// Its id on the server, once the server's copy is here (nil while still on its way).
    public var serverId: EntityID?
    /// Whether the server's copy is already deleted.
    public var isDeleted: Bool
    /// Whether it is still in the outbox, queued or refused.
    public var outboxState: String?
}

extension LocalDatabase {
    /// Where an outbox entry stands: its state (`queued` or `failed`) and failed attempts; nil
    /// when it is not in the outbox.
    public func outboxState(clientMessageId: String) async throws -> (state: String, attempts: Int)? {
        try await writer.read { db in
            try Row.fetchOne(db, sql: "SELECT state, attempts FROM outbox WHERE client_message_id = ?", arguments: [clientMessageId])
                .map { ($0["state"], $0["attempts"]) }
        }
    }

    /// Drops a queued message that was never sent (no attempt so far), with its local copy;
    /// returns false, changing nothing, when it has been tried (the server may have it), was
    /// refused or is not in the outbox.
    public func discardNeverSent(clientMessageId: String) async throws -> Bool {
        try await writer.write { db in
            try db.execute(
                sql: "DELETE FROM outbox WHERE client_message_id = ? AND state = 'queued' AND attempts = 0",
                arguments: [clientMessageId])
            guard db.changesCount > 0 else { return false }
            try db.execute(
                sql: "DELETE FROM messages WHERE client_message_id = ? AND state != 'confirmed'", arguments: [clientMessageId])
            return true
        }
    }

    /// Remembers, durably, that the user deleted a message still on its way.
    public func enqueueRevoke(clientMessageId: String, senderId: EntityID, conversationId: EntityID) async throws {
        try await writer.write { db in
            try db.execute(
                sql: "INSERT OR IGNORE INTO pending_revokes (sender_id, client_message_id, conversation_id) VALUES (?, ?, ?)",
                arguments: [senderId.description, clientMessageId, conversationId.description])
        }
    }

    /// The user's pending revokes, each with where its message stands.
    public func pendingRevokes(senderId: EntityID) async throws -> [PendingRevoke] {
        try await writer.read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT r.client_message_id, r.conversation_id, m.id AS server_id, m.deleted_at,
                           (SELECT state FROM outbox o WHERE o.client_message_id = r.client_message_id) AS outbox_state
                    FROM pending_revokes r
                    LEFT JOIN messages m ON m.sender_id = r.sender_id AND m.client_message_id = r.client_message_id
                        AND m.state = 'confirmed'
                    WHERE r.sender_id = ?
                    """,
                arguments: [senderId.description]
            ).map { row in
                PendingRevoke(
                    clientMessageId: row["client_message_id"], conversationId: try Self.id(row["conversation_id"]),
                    serverId: (row["server_id"] as String?).flatMap(EntityID.init),
                    isDeleted: (row["deleted_at"] as Int64?) != nil, outboxState: row["outbox_state"])
            }
        }
    }

    /// Forgets a revoke (done, or impossible).
    public func finishRevoke(clientMessageId: String, senderId: EntityID) async throws {
        try await writer.write { db in
            try db.execute(
                sql: "DELETE FROM pending_revokes WHERE sender_id = ? AND client_message_id = ?",
                arguments: [senderId.description, clientMessageId])
        }
    }
}
