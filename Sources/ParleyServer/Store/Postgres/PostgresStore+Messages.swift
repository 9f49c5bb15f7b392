import Foundation
import Synchronization
import Logging
import NIOSSL
import ParleyProtocol
import PostgresNIO

/// Sending (group commit: batches of sends in one transaction each, conversations locked in
/// one statement, a failing write rerun with savepoints), history pages and the `/changes`
/// catch-up feed.
extension PostgresStore {
    // MARK: Messages

    /// Thrown inside a send's transaction when the insert met an existing `(senderId,
    /// clientMessageId)`: the transaction rolls back (returning the seq it took) and the send
    /// answers with the original.
    struct RetryRace: Error {}

    /// Enqueues the draft for group commit and waits for its result.
    public func send(_ draft: MessageDraft) async throws -> SendResult {
        try await enqueueSend(draft).result()
    }

    /// Tells `observer` each send batch's size and transaction time (see ``sendBatchStats``).
    public func observeSendBatches(_ observer: @escaping @Sendable (Int, Duration) -> Void) { sends.observe(observer) }

    /// Queues the draft in its conversation's lane (see ``sendBatch``); a retry that raced its
    /// original is answered with the original.
    public func enqueueSend(_ draft: MessageDraft, onCommit: @escaping @Sendable (SendResult) -> Void) -> PendingSend {
        let ticket = sends.enqueue(draft, key: draft.conversationId.hashValue, onCommit: onCommit)
        return PendingSend { [self] in
            do {
                return try await ticket.value
            } catch is RetryRace {
                return try await original(of: draft)
            }
        }
    }

    /// The original of a retry that raced it (sent to another conversation at the same moment).
    private func original(of draft: MessageDraft) async throws -> SendResult {
        let logger = self.logger
        return try await read { c in
            guard let existing = try await c.first(
                """
                \(unescaped: PostgresRows.messageSelect)
                WHERE m.sender_id = \(draft.senderId.uuid) AND m.client_message_id = \(draft.clientMessageId)
                """, logger
            ).map(PostgresRows.message) else { throw APIError(.internal, "A clientMessageId conflict without its message") }
            guard existing.conversationId == draft.conversationId else {
                throw APIError(.conflict, "clientMessageId was already used in another conversation")
            }
            return SendResult(
                message: existing, created: false,
                participantIds: try await PostgresRows.participantIds(c, draft.conversationId.uuid, logger))
        }
    }

    /// Sends of a group commit in one transaction. Conversations are locked in id order, so two
    /// nodes' batches can never wait on each other in a cycle.
    ///
    /// A refused send (not a participant, a retry, a bad reply or forward) is refused before it
    /// writes anything, so it needs no savepoint: its error is its answer and the batch goes on
    /// (a savepoint each would cost two more round trips per send). Anything else that fails
    /// (a retry that raced its original, a database error) aborts the transaction, and the
    /// batch runs again with a savepoint per send, so one failure cannot undo the others.
    static func sendBatch(_ drafts: [MessageDraft], client: PostgresClient, logger: Logger) async -> [Result<SendResult, any Error>] {
        let order = drafts.indices.sorted {
            (drafts[$0].conversationId.uuid.uuidString, $0) < (drafts[$1].conversationId.uuid.uuidString, $1)
        }
        do {
            return try await client.withConnection { c in
                try await c.inTransaction(logger: logger) { c -> [Result<SendResult, any Error>] in
                    var results = [Result<SendResult, any Error>](repeating: .failure(GroupCommitError()), count: drafts.count)
                    let locked = try await lockAll(drafts, on: c, logger: logger)
                    for index in order {
                        do {
                            results[index] = .success(try await sendInTransaction(drafts[index], locked: locked, on: c, logger: logger))
                        } catch let refused as APIError where drafts.count > 1 {
                            results[index] = .failure(refused)
                        }
                    }
                    return results
                }
            }
        } catch where drafts.count > 1 {
            return await sendWithSavepoints(drafts, order: order, client: client, logger: logger)
        } catch {
            // The transaction itself failed: nothing of the batch was written.
            return drafts.map { _ in .failure(error) }
        }
    }

    /// The slow path of a batch whose transaction failed: each send in a savepoint (a failed
    /// one rolls back alone, its seq included).
    private static func sendWithSavepoints(
        _ drafts: [MessageDraft], order: [Int], client: PostgresClient, logger: Logger
    ) async -> [Result<SendResult, any Error>] {
        do {
            return try await client.withConnection { c in
                try await c.inTransaction(logger: logger) { c -> [Result<SendResult, any Error>] in
                    var results = [Result<SendResult, any Error>](repeating: .failure(GroupCommitError()), count: drafts.count)
                    let locked = try await lockAll(drafts, on: c, logger: logger)
                    for index in order {
                        try await c.run("SAVEPOINT send", logger)
                        do {
                            results[index] = .success(try await sendInTransaction(drafts[index], locked: locked, on: c, logger: logger))
                            try await c.run("RELEASE SAVEPOINT send", logger)
                        } catch {
                            try await c.run("ROLLBACK TO SAVEPOINT send", logger)
                            results[index] = .failure(error)
                        }
                    }
                    return results
                }
            }
        } catch {
            return drafts.map { _ in .failure(error) }
        }
    }

    /// Locks every conversation of a batch, before any of its sends (and outside their
    /// savepoints, so a rolled-back send does not release its conversation's lock).
    private static func lockAll(_ drafts: [MessageDraft], on c: PostgresConnection, logger: Logger) async throws -> Set<UUID> {
        try await PostgresRows.lockConversations(c, Array(Set(drafts.map(\.conversationId.uuid))), logger)
    }

    /// One send inside a transaction that holds its conversation's lock (`locked` are the
    /// batch's existing conversations): check, insert with the next seq. Every `APIError` it
    /// throws is thrown before it wrote anything (see ``sendBatch``).
    private static func sendInTransaction(
        _ draft: MessageDraft, locked: Set<UUID>, on c: PostgresConnection, logger: Logger
    ) async throws -> SendResult {
        let conversationId = draft.conversationId.uuid
        // The row lock came first: after it, any earlier send to this conversation has
        // committed, so the check below sees a retry's original.
        guard locked.contains(conversationId) else { throw APIError.notFound("Conversation") }
        let needsChecks = draft.replyToId != nil || draft.forwardedFromId != nil || draft.attachmentId != nil
        // A plain message: check and insert in one statement. Otherwise check, validate
        // the reply, forward or attachment, then insert.
        var insertion = try await PostgresRows.insertMessage(c, draft, guarded: true, checkOnly: needsChecks, logger)
        guard insertion.participantIds.contains(draft.senderId) else { throw APIError.notFound("Conversation") }
        if let existingId = insertion.existingId {
            let existing = try await PostgresRows.message(c, id: existingId, logger)!
            guard existing.conversationId == draft.conversationId else {
                throw APIError(.conflict, "clientMessageId was already used in another conversation")
            }
            return SendResult(message: existing, created: false, participantIds: insertion.participantIds)
        }
        if needsChecks {
            insertion = try await PostgresRows.insertMessage(c, try await Self.checked(c, draft, logger), guarded: false, logger)
        }
        guard let message = insertion.message, !insertion.lostRace else { throw RetryRace() }
        return SendResult(message: message, created: true, participantIds: insertion.participantIds)
    }

    /// Checks a reply's target, and fills a forward from its source or checks an attachment.
    private static func checked(_ c: PostgresConnection, _ draft: MessageDraft, _ logger: Logger) async throws -> MessageDraft {
        var draft = draft
        if let replyToId = draft.replyToId {
            let replyConversation = try await c.first(
                "SELECT conversation_id FROM messages WHERE id = \(replyToId.uuid)", logger)?.decode(UUID.self)
            guard replyConversation == draft.conversationId.uuid else {
                throw APIError.invalid("replyToId is not a message of this conversation")
            }
        }
        if let sourceId = draft.forwardedFromId {
            guard let source = try await PostgresRows.message(c, id: sourceId.uuid, logger),
                try await PostgresRows.isParticipant(c, source.conversationId.uuid, draft.senderId.uuid, logger)
            else { throw APIError.notFound("Message") }
            guard source.deletedAt == nil, source.type != .system else {
                throw APIError.invalid("Deleted and system messages cannot be forwarded")
            }
            draft.type = source.type
            draft.text = source.text
            draft.metadata = source.metadata
            draft.attachmentId = try await c.first(
                "SELECT attachment_id FROM messages WHERE id = \(sourceId.uuid)", logger
            )?.decode(UUID?.self).map(EntityID.init)
        } else if let attachmentId = draft.attachmentId {
            try await PostgresRows.requireAttachment(c, attachmentId, sender: draft.senderId, type: draft.type, logger)
        }
        return draft
    }

    /// The participant check, then up to `limit` messages by seq, on one pooled connection (no
    /// transaction).
    public func messages(conversationId: EntityID, viewer: EntityID, before: Int64?, after: Int64?, limit: Int) async throws -> MessagesPage {
        let logger = self.logger
        return try await single { c in
            let id = conversationId.uuid
            guard try await PostgresRows.isParticipant(c, id, viewer.uuid, logger) else { throw APIError.notFound("Conversation") }
            // Without `after` the page is the newest before the anchor; with it, the oldest after it.
            let ascending = after != nil
            var page = try await c.all(
                """
                \(unescaped: PostgresRows.messageSelect)
                WHERE m.conversation_id = \(id)
                AND (\(after)::bigint IS NULL OR m.seq > \(after)) AND (\(before)::bigint IS NULL OR m.seq < \(before))
                ORDER BY m.seq \(unescaped: ascending ? "ASC" : "DESC") LIMIT \(limit + 1)
                """, logger
            ).map(PostgresRows.message)
            let hasMore = page.count > limit
            page = Array(page.prefix(limit))
            if !ascending { page.reverse() }
            return MessagesPage(messages: page, hasMore: hasMore)
        }
    }

    /// One snapshot: the participant check, the conversation's `last_seq`, then the messages
    /// whose `updated_seq` is after `since`.
    public func changes(conversationId: EntityID, viewer: EntityID, since: Int64, limit: Int) async throws -> ChangesPage {
        let logger = self.logger
        return try await read { c in
            let id = conversationId.uuid
            guard try await PostgresRows.isParticipant(c, id, viewer.uuid, logger) else { throw APIError.notFound("Conversation") }
            let lastSeq = try await c.first("SELECT last_seq FROM conversations WHERE id = \(id)", logger)?.decode(Int64.self) ?? 0
            let page = try await c.all(
                """
                \(unescaped: PostgresRows.messageSelect)
                WHERE m.conversation_id = \(id) AND m.updated_seq > \(since)
                ORDER BY m.updated_seq ASC LIMIT \(limit + 1)
                """, logger
            ).map(PostgresRows.message)
            return ChangesPage(messages: Array(page.prefix(limit)), lastSeq: lastSeq, hasMore: page.count > limit)
        }
    }
}
