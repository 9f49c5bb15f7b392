import Foundation
import Logging
import ParleyProtocol
import PostgresNIO
import ParleyStorage

extension PostgresRows {
    /// Stores a batch's plain sends in one statement: for each, whether the sender is a
    /// participant and whether its clientMessageId was used; the new ones take their
    /// conversations' next seqs in the given order, with one counter update per conversation,
    /// and the conversations' participants come back for the fan-out. What each rule's
    /// ``StoreTransaction/insertMessageUnlessSent(_:checkOnly:)`` would have found, by draft.
    ///
    /// The conversations must be locked by the caller. A send that met its own retry
    /// committing meanwhile (another node) throws ``SendRaceLost``: the batch runs again the
    /// usual way.
    static func insertPlainSends(_ c: PostgresConnection, _ drafts: [MessageDraft], _ logger: Logger) async throws -> [PlainSendKey: SendProbe] {
        let ids = drafts.map { EntityID.timeOrdered(at: $0.now).uuid }  // in index order (see EntityID.timeOrdered)
        let metadata = try drafts.map { draft in
            try draft.metadata.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) } ?? ""
        }
        let rows = try await c.all(
            """
            WITH input AS (
                SELECT * FROM unnest(
                    \(drafts.map(\.conversationId.uuid))::uuid[], \(drafts.map(\.senderId.uuid))::uuid[],
                    \(drafts.map(\.clientMessageId))::text[], \(ids)::uuid[], \(drafts.map(\.type.rawValue))::text[],
                    \(drafts.map(\.text))::text[], \(metadata)::text[], \(drafts.map(\.now.millisecondsSince1970))::int8[]
                ) WITH ORDINALITY AS i(conversation_id, sender_id, client_message_id, id, type, text, metadata_json, created_at, ord)
            ),
            checked AS (
                SELECT i.*,
                    EXISTS (SELECT 1 FROM participants p WHERE p.conversation_id = i.conversation_id AND p.user_id = i.sender_id) AS member,
                    (SELECT m.id FROM messages m WHERE m.sender_id = i.sender_id AND m.client_message_id = i.client_message_id) AS existing_id,
                    -- From the sender's blockers (usually none: one index probe).
                    EXISTS (
                        SELECT 1 FROM blocks b
                        JOIN participants p ON p.user_id = b.blocker_id AND p.conversation_id = i.conversation_id
                        WHERE b.blocked_id = i.sender_id
                        AND EXISTS (SELECT 1 FROM conversations cv WHERE cv.id = i.conversation_id AND cv.type = 'direct')
                    ) AS blocked
                FROM input i
            ),
            accepted AS (
                SELECT c.*, row_number() OVER (PARTITION BY c.conversation_id ORDER BY c.ord) AS k
                FROM checked c WHERE c.member AND c.existing_id IS NULL AND NOT c.blocked
            ),
            totals AS (
                SELECT conversation_id, count(*) AS n, max(created_at) AS last_at FROM accepted GROUP BY conversation_id
            ),
            bumped AS (
                UPDATE conversations c SET last_seq = c.last_seq + t.n, countable = c.countable + t.n,
                    last_activity_at = t.last_at, changed_at = \(unescaped: nowMilliseconds)
                FROM totals t WHERE c.id = t.conversation_id
                RETURNING c.id, c.last_seq - t.n AS base
            ),
            inserted AS (
                INSERT INTO messages (id, conversation_id, seq, updated_seq, sender_id, client_message_id, type, text,
                                      metadata_json, created_at)
                SELECT a.id, a.conversation_id, b.base + a.k, b.base + a.k, a.sender_id, a.client_message_id, a.type, a.text,
                       NULLIF(a.metadata_json, ''), a.created_at
                FROM accepted a JOIN bumped b ON b.id = a.conversation_id
                ON CONFLICT (sender_id, client_message_id) DO NOTHING
                RETURNING id, seq
            ),
            own AS (
                UPDATE participants p SET own_countable = p.own_countable + o.n
                FROM (SELECT conversation_id, sender_id, count(*) AS n FROM accepted GROUP BY conversation_id, sender_id) o
                WHERE p.conversation_id = o.conversation_id AND p.user_id = o.sender_id
            ),
            blockers_own AS (
                -- Those who block a sender count the message as their own (v1.4). Apart from
                -- the sender's update (other rows): one union of both made PostgreSQL hash-join
                -- a scan of every participant.
                UPDATE participants p SET own_countable = p.own_countable + o.n
                FROM (
                    SELECT a.conversation_id, b.blocker_id, count(*) AS n FROM accepted a JOIN blocks b ON b.blocked_id = a.sender_id
                    GROUP BY a.conversation_id, b.blocker_id
                ) o
                WHERE p.conversation_id = o.conversation_id AND p.user_id = o.blocker_id
            ),
            members AS (
                SELECT conversation_id, array_agg(user_id ORDER BY joined_at, user_id) AS ids FROM participants
                WHERE conversation_id IN (SELECT conversation_id FROM input) GROUP BY conversation_id
            )
            SELECT c.ord, c.member, c.existing_id, ins.seq, m.ids, c.blocked
            FROM checked c LEFT JOIN inserted ins ON ins.id = c.id LEFT JOIN members m ON m.conversation_id = c.conversation_id
            ORDER BY c.ord
            """, logger)
        guard rows.count == drafts.count else { throw ChatError(.internal, "The batch send statement returned \(rows.count) rows for \(drafts.count)") }
        var probes: [PlainSendKey: SendProbe] = [:]
        for row in rows {
            let (ord, member, existingId, seq, members, blocked) = try row.decode((Int64, Bool, UUID?, Int64?, [UUID]?, Bool).self)
            let index = Int(ord) - 1
            let draft = drafts[index]
            // A new send whose insert met a racing commit of the same pair: roll back, redo.
            if member, existingId == nil, !blocked, seq == nil { throw SendRaceLost() }
            let message = seq.map { seq in
                Message(
                    id: EntityID(ids[index]), conversationId: draft.conversationId, seq: seq, updatedSeq: seq,
                    senderId: draft.senderId, clientMessageId: draft.clientMessageId, type: draft.type,
                    text: draft.text, metadata: draft.metadata, createdAt: draft.now.wholeMilliseconds)
            }
            probes[PlainSendKey(draft)] = SendProbe(
                participantIds: (members ?? []).map(EntityID.init), existingId: existingId.map(EntityID.init), message: message,
                blocked: blocked)
        }
        return probes
    }
}
