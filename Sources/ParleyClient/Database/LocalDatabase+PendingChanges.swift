import Foundation
import GRDB
import ParleyProtocol

/// An edit or a reaction the server has not confirmed yet (made offline, or on its way).
public struct PendingChange: Sendable, Equatable {
    /// Order across all pending changes: they are sent in this order.
    public var position: Int64
    /// The conversation of the message.
    public var conversationId: EntityID
    /// The server's id of the message changed.
    public var messageId: EntityID
    /// The edit, reaction or removed reaction.
    public var change: MessageChange
    /// Failed attempts so far.
    public var attempts: Int
}

extension MessageChange {
    var kind: String {
        switch self {
        case .edit: "edit"
        case .react: "react"
        case .unreact: "unreact"
        }
    }

    var value: String {
        switch self {
        case .edit(let text): text
        case .react(let emoji), .unreact(let emoji): emoji
        }
    }

    init?(kind: String, value: String) {
        switch kind {
        case "edit": self = .edit(value)
        case "react": self = .react(value)
        case "unreact": self = .unreact(value)
        default: return nil
        }
    }
}

extension LocalDatabase {
    /// Keeps a change until the server confirms or refuses it (it survives restarts).
    public func enqueue(_ change: MessageChange, of messageId: EntityID, in conversationId: EntityID) async throws -> PendingChange {
        try await writer.write { db in
            try db.execute(
                sql: "INSERT INTO pending_changes (conversation_id, message_id, kind, value) VALUES (?, ?, ?, ?)",
                arguments: [conversationId.description, messageId.description, change.kind, change.value])
            return PendingChange(
                position: db.lastInsertedRowID, conversationId: conversationId, messageId: messageId, change: change, attempts: 0)
        }
    }

    /// Every change not yet confirmed, oldest first.
    public func pendingChanges() async throws -> [PendingChange] {
        try await writer.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM pending_changes ORDER BY position").compactMap { row in
                guard let change = MessageChange(kind: row["kind"], value: row["value"]) else { return nil }
                return PendingChange(
                    position: row["position"], conversationId: try Self.id(row["conversation_id"]),
                    messageId: try Self.id(row["message_id"]), change: change, attempts: row["attempts"])
            }
        }
    }

    /// The server answered (confirmed, or refused for good): the change is done, and its
    /// answer, if any, is applied in the same transaction.
    public func finish(_ change: PendingChange, applying answer: Message?) async throws {
        try await writer.write { db in
            if let answer { try Self.upsert(db, answer) }
            try db.execute(sql: "DELETE FROM pending_changes WHERE position = ?", arguments: [change.position])
        }
    }

    /// No answer this time: counted, kept for the next attempt.
    public func changeAttemptFailed(_ change: PendingChange) async throws {
        try await writer.write { db in
            try db.execute(sql: "UPDATE pending_changes SET attempts = attempts + 1 WHERE position = ?", arguments: [change.position])
        }
    }
}
