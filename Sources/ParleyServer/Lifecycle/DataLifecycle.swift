import Foundation
import Hummingbird
import Logging
import NIOCore
import ParleyProtocol
import ServiceLifecycle
import ParleyStorage
import ParleyRules

/// Where data ends: the retention sweep, the attachment collector, erasure, and the
/// export a user takes their data out with.
///
/// Deletions are a sender's delete (``MessageRules/expire(_:now:in:)``): each message keeps its
/// seq, takes the next as `updatedSeq` and is announced as `message.updated`, so every client
/// drops its copy. They go in bounded batches, each its own short transaction, so a sweep over
/// a year of messages never holds the writer long enough to stall sends.
public struct DataLifecycle: Sendable {
    let store: any ParleyStore
    let chat: ChatService
    let blobs: any AttachmentBlobs
    let logger: Logger
    /// Messages deleted per transaction.
    static let batch = 50

    /// One retention pass over every organization with a retention: messages older than its
    /// days are deleted, then attachments no message refers to any more. Returns how many
    /// messages it deleted.
    @discardableResult
    public func sweepRetention(now: Date) async throws -> Int {
        var total = 0
        for (organization, days) in try await store.retentionPolicies() {
            let cutoff = now.addingTimeInterval(-Double(days) * 86_400)
            while true {
                let refs = try await store.expiredMessages(organizationId: organization, before: cutoff, limit: Self.batch)
                let deleted = try await expire(refs, now: now)
                total += deleted
                if refs.count < Self.batch || deleted == 0 { break }
            }
        }
        try await collectAttachments()
        if total > 0 {
            try await store.purgeDeletedText()
            logger.notice("Retention deleted messages", metadata: ["count": "\(total)"])
        }
        return total
    }

    /// Deletes these messages, each conversation taken in id order (the order every batch of
    /// PostgreSQL takes them in), in one transaction; announces each; returns how many it deleted.
    func expire(_ refs: [MessageRef], now: Date) async throws -> Int {
        guard !refs.isEmpty else { return 0 }
        let ordered = refs.sorted { ($0.conversationId.description, $0.id.description) < ($1.conversationId.description, $1.id.description) }
        let changes = try await store.writing { tx in
            var changes: [MessageChange] = []
            for ref in ordered {
                if let change = try await MessageRules.expire(ref, now: now, in: tx) { changes.append(change) }
            }
            return changes
        }
        for change in changes { await chat.announceUpdate(change) }
        return changes.count
    }

    /// Removes the attachments deleted messages left that no message refers to any more: the
    /// record, and the bytes unless another record has the same. Returns how many went.
    @discardableResult
    public func collectAttachments() async throws -> Int {
        var removed = 0
        while true {
            let orphans = try await store.orphanedAttachments(limit: 100)
            for attachment in orphans { removed += try await remove(attachment) ? 1 : 0 }
            if orphans.count < 100 { return removed }
        }
    }

    private func remove(_ attachment: StoredAttachment) async throws -> Bool {
        let (deleted, shared) = try await store.deleteAttachmentIfUnused(attachment.id)
        if deleted, !shared { try await blobs.remove(BlobName.content(attachment.sha256)) }
        return deleted
    }

    /// Erases a user's words and files (after ``ParleyStore/eraseProfile``): every message of
    /// theirs and every forward of one becomes a tombstone, and their uploads go. Returns how
    /// many messages it deleted.
    @discardableResult
    public func eraseContent(of userId: EntityID, now: Date) async throws -> Int {
        var total = 0
        while true {
            let refs = try await store.undeletedMessages(of: userId, limit: Self.batch)
            let deleted = try await expire(refs, now: now)
            total += deleted
            if refs.count < Self.batch || deleted == 0 { break }
        }
        for attachment in try await store.attachments(uploadedBy: userId) { _ = try await remove(attachment) }
        try await collectAttachments()
        try await store.purgeDeletedText()
        return total
    }

    // MARK: Export

    /// The user's data as a ZIP, streamed (GDPR articles 15 and 20): `profile.json`,
    /// `conversations.json` (those they are in, with names and members), `messages.json` (what
    /// they sent, read a page at a time) and `attachments/` (what they uploaded, read from
    /// storage a block at a time).
    public func export(_ userId: EntityID) async throws -> ResponseBody {
        guard let user = try await store.user(id: userId) else { throw ChatError.notFound("User") }
        let conversations = try await store.conversations(viewer: userId)
        let uploads = try await store.attachments(uploadedBy: userId)
        let (store, blobs, logger) = (self.store, self.blobs, self.logger)
        return ResponseBody { writer in
            var zip = ZipStream()
            func emit(_ bytes: [UInt8]) async throws { try await writer.write(ByteBuffer(bytes: bytes)) }
            func entry(_ name: String, _ bytes: [UInt8]) async throws {
                try await emit(try zip.begin(name))
                try bytes.withUnsafeBytes { try zip.add($0) }
                try await emit(bytes)
                try await emit(try zip.finish())
            }
            let encoder = WireCoding.makeEncoder()
            try await entry("profile.json", Array(try encoder.encode(user)))
            let people = conversations.map { ExportedConversation($0) }
            try await entry("conversations.json", Array(try encoder.encode(people)))
            // messages.json: a JSON array written a page at a time.
            try await emit(try zip.begin("messages.json"))
            func piece(_ bytes: [UInt8]) async throws {
                try bytes.withUnsafeBytes { try zip.add($0) }
                try await emit(bytes)
            }
            try await piece(Array("[".utf8))
            var after: EntityID?
            var first = true
            while true {
                let page = try await store.messagesSent(by: userId, after: after, limit: 500)
                for message in page {
                    try await piece(Array(((first ? "\n" : ",\n") + String(decoding: try encoder.encode(message), as: UTF8.self)).utf8))
                    first = false
                }
                guard page.count == 500, let last = page.last else { break }
                after = last.id
            }
            try await piece(Array("\n]\n".utf8))
            try await emit(try zip.finish())
            for upload in uploads {
                try await emit(try zip.begin("attachments/\(upload.id)-\(Self.safeName(upload.name))"))
                do {
                    try await blobs.read(BlobName.content(upload.sha256), range: nil) { buffer in
                        try buffer.withUnsafeReadableBytes { try zip.add($0) }
                        try await writer.write(buffer)
                    }
                } catch is BlobError {
                    logger.warning("An upload's bytes are missing from the export", metadata: ["attachmentId": "\(upload.id)"])
                }
                try await emit(try zip.finish())
            }
            try await emit(try zip.close())
            try await writer.finish(nil)
        }
    }

    /// A file name safe inside a ZIP on every system: no path, no control characters (C0 and
    /// C1: a terminal's escape introducers), no direction overrides (``Limits/isUnsafe(_:)``).
    static func safeName(_ name: String) -> String {
        let cleaned = String(name.unicodeScalars.map { scalar -> Character in
            Limits.isUnsafe(scalar) || "/\\:*?\"<>|".unicodeScalars.contains(scalar) ? "_" : Character(scalar)
        })
        let trimmed = cleaned.trimmingCharacters(in: CharacterSet(charactersIn: ". "))
        return trimmed.isEmpty ? "file" : String(trimmed.prefix(120))
    }
}

/// A conversation as the export writes it: what it is and who is in it.
struct ExportedConversation: Encodable {
    var id: EntityID
    var type: ConversationType
    var name: String?
    var createdAt: Date
    var participantIds: [EntityID]

    init(_ conversation: Conversation) {
        id = conversation.id
        type = conversation.type
        name = conversation.name
        createdAt = conversation.createdAt
        participantIds = conversation.participantIds
    }
}

/// Runs the retention sweep every `interval` of real time, judging ages by the server's
/// clock (which tests move on by days); a pass that fails (the store down) is logged and tried
/// again at the next.
struct RetentionSweeper: Service {
    let lifecycle: DataLifecycle
    let interval: Duration
    let clock: ServerClock
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard !Task.isCancelled else { return }
                do {
                    try await lifecycle.sweepRetention(now: clock.now())
                } catch {
                    logger.warning("The retention sweep failed; it runs again later", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
