import Foundation
@testable import ParleyClient
import ParleyProtocol

/// Builders shared by the SDK* suites: one direct conversation between `me` and `other` (or a
/// group with more members), server messages with chosen seqs, and database files in a temporary
/// folder that can be copied mid-run to simulate a crash.
struct SDKWorld {
    let me = EntityID()
    let other = EntityID()
    let third = EntityID()
    let conversationId = EntityID()
    let start = Date(millisecondsSince1970: 1_795_000_000_000)

    func conversation(
        _ id: EntityID? = nil, type: ConversationType = .direct, lastSeq: Int64, unread: Int = 0, readSeq: Int64 = 0,
        members: [Member]? = nil, lastMessage: Message? = nil
    ) -> Conversation {
        let people = type == .direct ? [me, other] : [me, other, third]
        return Conversation(
            id: id ?? conversationId, type: type, participantIds: people, createdAt: start, lastActivityAt: start,
            lastSeq: lastSeq, lastMessage: lastMessage, unreadCount: unread, readSeq: readSeq,
            members: members ?? people.map { Member(userId: $0, readSeq: 0, deliveredSeq: 0) })
    }

    func message(
        _ seq: Int64, in conversation: EntityID? = nil, from sender: EntityID? = nil, cmid: String? = nil, text: String? = nil,
        updatedSeq: Int64? = nil, type: MessageType = .text, deleted: Bool = false, id: EntityID? = nil
    ) -> Message {
        Message(
            id: id ?? EntityID(), conversationId: conversation ?? conversationId, seq: seq, updatedSeq: updatedSeq ?? seq,
            senderId: sender ?? other, clientMessageId: cmid ?? "c\(seq)", type: type, text: deleted ? "" : text ?? "m\(seq)",
            createdAt: start.addingTimeInterval(Double(seq)), deletedAt: deleted ? start.addingTimeInterval(Double(updatedSeq ?? seq)) : nil)
    }

    /// Makes the conversation tracked (its messages kept) with the synced seq at `lastSeq`.
    func track(_ database: LocalDatabase, _ id: EntityID? = nil, lastSeq: Int64 = 0) async throws {
        try await database.applyInitialPage(MessagesPage(messages: [], hasMore: false), conversation: conversation(id, lastSeq: lastSeq))
    }

    /// The server's stored copy of one of my temporary messages.
    func stored(_ pending: LocalMessage, seq: Int64, updatedSeq: Int64? = nil, text: String? = nil) -> Message {
        Message(
            id: EntityID(), conversationId: pending.conversationId, seq: seq, updatedSeq: updatedSeq ?? seq, senderId: pending.senderId,
            clientMessageId: pending.clientMessageId, type: pending.type, text: text ?? pending.text,
            createdAt: start.addingTimeInterval(Double(seq)))
    }
}

/// A folder for database files, removed by `remove()`.
struct SDKTempFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("parley-sdk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Copies a live database's files (the main file and its write-ahead log) as they are on disk
    /// now, as if the process had been killed at this instant: nothing is closed or checkpointed.
    func crashCopy(of name: String, to copy: String) throws {
        let manager = FileManager.default
        for suffix in ["", "-wal"] {
            let source = path(name + suffix)
            guard manager.fileExists(atPath: source) else { continue }
            try manager.copyItem(atPath: source, toPath: path(copy + suffix))
        }
    }

    func remove() { try? FileManager.default.removeItem(at: url) }
}
