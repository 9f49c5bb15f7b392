import Foundation
import Observation
import ParleyProtocol

/// Pins, mute and "@" completion on the chat screen.
extension ChatModel {
    /// Pins or unpins a message for everyone; the pinned bar follows.
    public func setPinned(_ pinned: Bool, _ message: LocalMessage) async {
        do {
            try await client.setPinned(pinned, message)
            await reload()
        } catch {
            lastError = ClientError.readable(error)
        }
    }

    /// Mutes (until `until`, or until turned off) or unmutes this conversation on every device.
    public func setMuted(_ muted: Bool, until: Date? = nil) async {
        do {
            try await client.setMuted(muted, until: until, in: conversationId)
        } catch {
            lastError = ClientError.readable(error)
        }
    }

    /// Who the "@" word at the end of `draft` may mean (empty when the draft does not end in one).
    public func mentionCandidates(for draft: String) async -> [(id: EntityID, name: String)] {
        guard let query = ChatPresentation.mentionQuery(in: draft),
            let conversation = try? await client.database.conversation(conversationId)
        else { return [] }
        return ChatPresentation.mentionCandidates(query, participants: conversation.participantIds, me: client.userId, names: names)
    }

    /// The participants `text` mentions by "@Full Name", to send with it.
    public func mentions(in text: String) async -> [EntityID] {
        guard let conversation = try? await client.database.conversation(conversationId) else { return [] }
        return ChatPresentation.mentions(in: text, participants: conversation.participantIds, names: names)
    }
}

/// A thread's screen: its root and replies from the cache, then the server's newest
/// page; replies go through the outbox like any message.
@MainActor @Observable
public final class ThreadModel {
    /// The conversation the thread is in.
    public let conversationId: EntityID
    /// The root's server id.
    public let rootId: EntityID
    /// The root as cached (its `thread` has the count), when the cache has it.
    public private(set) var root: LocalMessage?
    /// The replies, oldest first; temporary ones last, in send order.
    public private(set) var replies: [LocalMessage] = []
    /// The last error to show, if any.
    public private(set) var lastError: String?

    private let client: ChatClient
    @ObservationIgnored private var observation: Task<Void, Never>?

    /// A model for the thread of `rootId` in a conversation.
    public init(client: ChatClient, conversationId: EntityID, rootId: EntityID) {
        self.client = client
        self.conversationId = conversationId
        self.rootId = rootId
    }

    /// Shows the cached thread at once, asks the server for its newest page, and follows changes.
    public func start() async {
        let changes = await client.changes()
        do {
            replies = try await client.openThread(rootId, in: conversationId)
        } catch {
            lastError = ClientError.readable(error)
        }
        await reload()
        observation = Task { [weak self] in
            for await change in changes {
                guard let self else { return }
                if case .messages(let id) = change, id == self.conversationId { await self.reload() }
            }
        }
    }

    /// Stops following changes.
    public func stop() {
        observation?.cancel()
        observation = nil
    }

    /// Sends a reply in the thread (with the participants it mentions); shown at once.
    public func send(_ text: String, mentions: [EntityID] = []) async {
        do {
            _ = try await client.send(text: text, in: conversationId, threadRootId: rootId, mentions: mentions)
            lastError = nil
            await reload()
        } catch {
            lastError = ClientError.readable(error)
        }
    }

    /// Reads the thread from the cache.
    public func reload() async {
        if let fresh = try? await client.threadMessages(rootId, in: conversationId), fresh != replies { replies = fresh }
        if let found = try? await client.database.message(serverId: rootId, viewer: client.userId), found != root { root = found }
    }
}

extension ChatModel {
    /// Reports a message to the organization's admins with the person's reason; true
    /// when the report was made (otherwise ``lastError`` says why).
    @discardableResult
    public func report(_ message: LocalMessage, reason: String) async -> Bool {
        do {
            try await client.report(message: message, reason: reason)
            return true
        } catch {
            lastError = ClientError.readable(error)
            return false
        }
    }

    /// Blocks (or unblocks) a message's sender: their messages here fold away and stop
    /// counting, and they can no longer message the person directly.
    public func setBlocked(_ blocked: Bool, senderOf message: LocalMessage) async {
        do {
            if blocked { try await client.block(message.senderId) } else { try await client.unblock(message.senderId) }
            await reload()
        } catch {
            lastError = ClientError.readable(error)
        }
    }
}
