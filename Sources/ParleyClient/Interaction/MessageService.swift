import Foundation
import ParleyProtocol

/// The interaction service: what a user can do to messages. The view models call it
/// through this protocol, so an app can replace or wrap any action (dependency injection).
public protocol MessageServicing: Sendable {
    /// Sends a message (prechecks, then the outbox with its preparations).
    func send(_ request: SendMessageRequest, in conversationId: EntityID, context: [String: String]) async throws -> LocalMessage
    /// Queues a failed message again.
    func resend(_ message: LocalMessage) async throws
    /// Copies a stored message into another conversation.
    func forward(_ message: LocalMessage, to conversationId: EntityID) async throws -> LocalMessage
    /// Deletes one's own message for everyone (a tombstone stays in the sequence).
    func revoke(_ message: LocalMessage) async throws
    /// Writes a message's attachment (or its text) to a local file.
    func save(_ message: LocalMessage, to file: URL) async throws
    /// Hides a message on this device only.
    func deleteForMe(_ message: LocalMessage) async throws
    /// Changes the text of one's own sent message (everyone sees it edited).
    func edit(_ message: LocalMessage, text: String) async throws
    /// Adds one's reaction to a sent message.
    func react(_ message: LocalMessage, emoji: String) async throws
    /// Takes one's reaction back.
    func unreact(_ message: LocalMessage, emoji: String) async throws
    /// Full-text search over the user's conversations (or one of them), newest first.
    func search(_ query: String, in conversationId: EntityID?) async throws -> [SearchResult]
}

/// The standard implementation over a ``ChatClient``.
public struct MessageService: MessageServicing {
    let client: ChatClient

    /// A service over `client`.
    public init(client: ChatClient) { self.client = client }

    /// Sends through ``ChatClient/send(_:in:context:)`` (see ``MessageServicing``).
    public func send(_ request: SendMessageRequest, in conversationId: EntityID, context: [String: String] = [:]) async throws -> LocalMessage {
        try await client.send(request, in: conversationId, context: context)
    }

    /// Queues the message again by its client message id (see ``MessageServicing``).
    public func resend(_ message: LocalMessage) async throws {
        try await client.resend(clientMessageId: message.clientMessageId, in: message.conversationId)
    }

    /// Sends a forward of the message by its server id; a message not yet stored is refused.
    public func forward(_ message: LocalMessage, to conversationId: EntityID) async throws -> LocalMessage {
        guard let source = message.serverId else {
            throw ClientError(kind: .server, code: .invalidRequest, message: "Only a sent message can be forwarded")
        }
        return try await client.send(SendMessageRequest(clientMessageId: "", text: "", forwardOf: source), in: conversationId)
    }

    /// Deletes one's own message on the server and stores the tombstone. One not confirmed yet
    /// is dropped if it never went, else deleted on the server once it is stored there
    /// (``ChatClient/revokeUnsent(clientMessageId:in:)``).
    public func revoke(_ message: LocalMessage) async throws {
        guard message.senderId == client.userId else {
            throw ClientError(kind: .server, code: .forbidden, message: "Only the sender can revoke a message")
        }
        guard let id = message.serverId else {
            try await client.revokeUnsent(clientMessageId: message.clientMessageId, in: message.conversationId)
            return
        }
        let tombstone = try await client.transport.deleteMessage(id, in: message.conversationId)
        try await client.database.apply([tombstone])
        await client.notify(.messages(message.conversationId))
    }

    /// Writes the attachment's data (from the media cache), or else the text, to `file` atomically.
    public func save(_ message: LocalMessage, to file: URL) async throws {
        let data: Data
        if let attachment = message.attachment {
            data = try await client.media.data(for: attachment)
        } else {
            data = Data(message.text.utf8)
        }
        try data.write(to: file, options: .atomic)
    }

    /// Hides the message in the local database only.
    public func deleteForMe(_ message: LocalMessage) async throws {
        try await client.deleteForMe(message)
    }

    /// Checks the caller sent the message, then edits it through ``ChatClient/change(_:of:)``.
    public func edit(_ message: LocalMessage, text: String) async throws {
        guard message.senderId == client.userId else {
            throw ClientError(kind: .server, code: .forbidden, message: "Only the sender can edit a message")
        }
        try await change(.edit(text), of: message)
    }

    /// Adds the reaction through ``ChatClient/change(_:of:)``.
    public func react(_ message: LocalMessage, emoji: String) async throws {
        try await change(.react(emoji), of: message)
    }

    /// Takes the reaction back through ``ChatClient/change(_:of:)``.
    public func unreact(_ message: LocalMessage, emoji: String) async throws {
        try await change(.unreact(emoji), of: message)
    }

    /// Searches on the server and returns its first page of results.
    public func search(_ query: String, in conversationId: EntityID? = nil) async throws -> [SearchResult] {
        try await client.transport.search(query, in: conversationId, limit: nil, offset: nil).results
    }

    /// Shows the change at once and sends it; offline it waits in the database and goes when
    /// the server answers (``ChatClient/change(_:of:)``).
    private func change(_ edit: MessageChange, of message: LocalMessage) async throws {
        try await client.change(edit, of: message)
    }
}

/// A message provider: where a conversation's messages come from, paged by an
/// anchor and a limit. Apps can plug in another source.
public protocol MessageProvider: Sendable {
    /// The `limit` messages before `anchor` (the newest when nil), ascending.
    func messages(in conversationId: EntityID, before anchor: LocalMessage?, limit: Int) async throws -> [LocalMessage]
}

/// The default provider: the local database first, the server when the cache runs out.
public struct CachedMessageProvider: MessageProvider {
    let client: ChatClient

    /// A provider over `client`.
    public init(client: ChatClient) { self.client = client }

    /// Without an anchor, ``ChatClient/openConversation(_:limit:)``; else ``ChatClient/loadOlder(_:before:limit:)`` (nothing before an anchor not yet stored).
    public func messages(in conversationId: EntityID, before anchor: LocalMessage?, limit: Int) async throws -> [LocalMessage] {
        guard let anchor else { return try await client.openConversation(conversationId, limit: limit) }
        guard let seq = anchor.seq else { return [] }
        return try await client.loadOlder(conversationId, before: seq, limit: limit)
    }
}

/// A preparation that uploads the file named by the context's `file` (with `contentType` and
/// optional `name`) and puts the attachment's id into the message. Already-uploaded files (the
/// context holds `attachmentId` after a restart) are not uploaded again, and an upload cut off
/// by a restart (the context holds its `uploadId`) goes on from the bytes the server has.
public struct AttachmentUpload: MessagePreparation {
    /// The name the outbox records this preparation by.
    public let name = "parley.upload-attachment"
    let api: ParleyAPI

    /// An upload preparation using `api`.
    public init(api: ParleyAPI) { self.api = api }

    /// Uploads the context's `file` (unless already uploaded) and sets the request's `attachmentId`; without a `file` it changes nothing.
    public func prepare(_ message: PreparedMessage) async throws -> PreparedMessage {
        var message = message
        if let uploaded = message.context["attachmentId"].flatMap(EntityID.init) {
            message.request.attachmentId = uploaded
            return message
        }
        guard let path = message.context["file"] else { return message }
        guard FileManager.default.fileExists(atPath: path) else {
            throw PreparationFailed("the file to send is gone: \(path)")
        }
        let contentType = message.context["contentType"] ?? "application/octet-stream"
        let context = message.context, save = message.saveContext
        let attachment = try await api.uploadInChunks(
            file: URL(fileURLWithPath: path), name: message.context["name"] ?? (path as NSString).lastPathComponent,
            contentType: contentType, resuming: message.context["uploadId"].flatMap(EntityID.init),
            onOpened: { uploadId in
                // Remembered at once: after a restart the upload resumes at the server's offset.
                var saved = context
                saved["uploadId"] = uploadId.description
                await save(saved)
            },
            progress: message.reportProgress)
        message.context["attachmentId"] = attachment.id.description
        message.request.attachmentId = attachment.id
        return message
    }
}
