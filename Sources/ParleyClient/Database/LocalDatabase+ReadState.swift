import Foundation
import GRDB
import ParleyProtocol

/// The list row's badge when read answers and views arrive out of order with the events.
///
/// The server sends a read's answer and its `conversation.updated` views outside the
/// conversation's event order, so each is a snapshot of the viewer's read state (`readSeq`,
/// `unreadCount`) taken at some `lastSeq` that may lie behind or ahead of the row. Snapshots
/// are ordered by that seq (the server's watermark only rises with it), so the row keeps, beside
/// its body:
/// - `counted_seq`: the seq its count covers when an answer ahead of the row gave it (the events
///   up to it are already counted when they come);
/// - `read_at`: the seq of the snapshot its watermark came from (an older one is ignored);
/// - `list_changes` from `log_from` on: the countable changes the row applied (others' messages
///   that are not `system`, and their deletes), so that a snapshot behind the row gets exactly
///   what the row applied after it added to its count.
extension LocalDatabase {
    /// How many change seqs back the row remembers what it applied; a snapshot older than that
    /// (never seen in practice: it would have to be this far behind the events) makes the row stale.
    static let listChangeWindow: Int64 = 512

    /// A conversation row's read bookkeeping.
    struct ReadState: Sendable, Equatable {
        /// The row's `lastSeq`: every change up to it is applied.
        var lastSeq: Int64
        /// The row's (the viewer's) read watermark.
        var readSeq: Int64
        /// The seq the row's count covers when it is past `lastSeq` (an answer ahead of the events).
        var countedSeq: Int64
        /// The seq of the snapshot the watermark and count were last taken from.
        var readAt: Int64
        /// The applied changes after this seq are all in `list_changes`.
        var logFrom: Int64

        /// Up to where the row's count is exact: its own seq, or an answer's ahead of it.
        var countedThrough: Int64 { max(lastSeq, countedSeq) }

        /// A row first stored from a snapshot at `seq`.
        static func fresh(_ conversation: Conversation) -> ReadState {
            ReadState(
                lastSeq: conversation.lastSeq, readSeq: conversation.readSeq, countedSeq: conversation.lastSeq,
                readAt: conversation.lastSeq, logFrom: conversation.lastSeq)
        }
    }

    /// What a snapshot of the read state does to a row.
    enum ReadMerge: Equatable {
        /// Not newer than what the row has: nothing to take.
        case older
        /// Newer: the watermark and this count, exact at the row's `countedThrough`.
        case exact(unread: Int)
        /// Newer, but behind what the row still remembers applying: read the conversation again.
        case unknown
    }

    static func readState(_ db: Database, _ id: String) throws -> ReadState? {
        try Row.fetchOne(
            db, sql: "SELECT last_seq, read_seq, counted_seq, read_at, log_from FROM conversations WHERE id = ?", arguments: [id]
        ).map { ReadState(lastSeq: $0[0], readSeq: $0[1], countedSeq: $0[2], readAt: $0[3], logFrom: $0[4]) }
    }

    /// Weighs a snapshot (`readSeq`, `unread`) taken at `seq` against the row.
    static func merge(readSeq: Int64, unread: Int, at seq: Int64, into state: ReadState, _ db: Database, _ id: String) throws -> ReadMerge {
        // Snapshots are ordered by seq, and at one seq by watermark; the watermark never moves back.
        guard seq >= state.readAt, readSeq >= state.readSeq else { return .older }
        if seq >= state.countedThrough { return .exact(unread: unread) }
        guard seq >= state.logFrom else { return .unknown }
        return .exact(unread: max(0, unread + (try unreadApplied(after: seq, readSeq: readSeq, db, id))))
    }

    /// What the changes the row applied after `seq` add to a count taken there with watermark
    /// `readSeq`: one for each countable message, less one for each delete of a countable
    /// message above the watermark (a message both sent and deleted after `seq` nets zero).
    static func unreadApplied(after seq: Int64, readSeq: Int64, _ db: Database, _ id: String) throws -> Int {
        try Int.fetchOne(
            db,
            sql: """
                SELECT COALESCE(SUM(CASE WHEN message_seq <= ? THEN 0 WHEN is_delete = 0 THEN 1 ELSE -1 END), 0)
                FROM list_changes WHERE conversation_id = ? AND change_seq > ?
                """,
            arguments: [readSeq, id, seq]) ?? 0
    }

    /// Takes a newer snapshot's watermark, taken at `seq`: what the row applied up to it is no
    /// longer needed (an older snapshot is ignored).
    static func accept(_ state: inout ReadState, readSeq: Int64, at seq: Int64, _ db: Database, _ id: String) throws {
        state.readSeq = readSeq
        state.readAt = seq
        state.countedSeq = max(state.countedSeq, seq)
        state.logFrom = max(state.logFrom, seq)
        try db.execute(sql: "DELETE FROM list_changes WHERE conversation_id = ? AND change_seq <= ?", arguments: [id, seq])
    }

    /// Remembers a countable change the row applied (another sender's message that is not
    /// `system`, or its delete), and forgets what lies beyond the window.
    static func remember(_ message: Message, changeSeq: Int64, viewer: EntityID, in state: inout ReadState, _ db: Database) throws {
        let id = message.conversationId.description
        // Thread replies are counted by the server for the thread's members only (their view comes
        // with the count), so they are not in the log the read answers are reconciled with.
        if message.type != .system, message.senderId != viewer, message.threadRootId == nil {
            let isNew = changeSeq == message.seq
            if isNew ? message.deletedAt == nil : message.deletedAt != nil {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO list_changes (conversation_id, change_seq, message_seq, is_delete) VALUES (?, ?, ?, ?)",
                    arguments: [id, changeSeq, message.seq, !isNew])
            }
        }
        let floor = changeSeq - listChangeWindow
        if floor > state.logFrom {
            state.logFrom = floor
            try db.execute(sql: "DELETE FROM list_changes WHERE conversation_id = ? AND change_seq <= ?", arguments: [id, floor])
        }
    }

    /// Writes a row's body and bookkeeping (inserting it when new); `synced_seq` and `has_older` are kept.
    static func write(_ db: Database, _ conversation: Conversation, _ state: ReadState) throws {
        let body = String(decoding: try WireCoding.makeEncoder().encode(conversation), as: UTF8.self)
        try db.execute(
            sql: """
                INSERT INTO conversations (id, body, last_activity_at, last_seq, read_seq, counted_seq, read_at, log_from)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET body = excluded.body, last_activity_at = excluded.last_activity_at,
                    last_seq = excluded.last_seq, read_seq = excluded.read_seq, counted_seq = excluded.counted_seq,
                    read_at = excluded.read_at, log_from = excluded.log_from
                """,
            arguments: [
                conversation.id.description, body, conversation.lastActivityAt.millisecondsSince1970, state.lastSeq, state.readSeq,
                state.countedSeq, state.readAt, state.logFrom,
            ])
    }
}
