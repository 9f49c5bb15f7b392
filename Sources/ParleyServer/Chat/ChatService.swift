import Foundation
import ParleyProtocol
import ParleyStorage
import ParleyRules
import Tracing

/// The rules of chat in one place, shared by the HTTP routes and the WebSocket gateway:
/// validate, commit to the store, and only then fan out.
public struct ChatService: Sendable {
    let store: any ParleyStore
    let fanOut: FanOut
    let push: PushService?
    /// Reads link previews of stored messages (nil: previews off).
    let previews: LinkPreviewWorker?
    let now: @Sendable () -> Date
    /// Above this many members a group is large (see ``ServerConfiguration/largeGroupSize``).
    public let largeGroupSize: Int
    /// Per-user limits on sends, typing and receipts (nil: none).
    let limits: RateLimiter?
    /// Send durations and fan-out lag (nil: not measured).
    let metrics: Metrics?
    /// Who blocks whom: blocked senders' messages are marked for their blockers and
    /// push them nothing.
    public let blocks: BlockDirectory
    /// Where admin actions are recorded.
    public let audit: AuditLog
    private let activity: ActivityAnnouncer<NewActivity>
    /// Thread replies' members get their views (their unread counts moved), folded like activity.
    private let threadActivity: ActivityAnnouncer<ThreadActivity>

    /// Threads that had replies in a conversation, and its participants then.
    struct ThreadActivity: Sendable {
        var roots: Set<EntityID>
        var participants: Set<EntityID>
    }

    /// What a folded announcement of new messages tells: who is in the conversation, and its newest message.
    struct NewActivity: Sendable {
        var participants: [EntityID]
        var newest: Message
    }

    /// A service over a store and this node's connections; `now` is injectable for tests.
    public init(
        store: any ParleyStore, fanOut: FanOut, push: PushService? = nil, previews: LinkPreviewWorker? = nil,
        now: @escaping @Sendable () -> Date = Date.init,
        clock: ServerClock = .system, activityWindow: Duration = .milliseconds(200), largeGroupSize: Int = 100,
        rateLimits: RateLimitSettings = .off, metrics: Metrics? = nil, blocks: BlockDirectory? = nil
    ) {
        let blocks = blocks ?? BlockDirectory(store: store)
        self.blocks = blocks
        audit = AuditLog(store: store, now: now)
        self.store = store
        self.previews = previews
        self.metrics = metrics
        limits = rateLimits.enabled ? RateLimiter(settings: rateLimits, now: clock.now, metrics: metrics) : nil
        self.largeGroupSize = largeGroupSize
        self.fanOut = fanOut
        self.push = push
        self.now = now
        activity = ActivityAnnouncer(
            window: activityWindow, clock: clock,
            // Sends commit in seq order but finish their fan-out in parallel: keep the newest.
            merge: { earlier, later in later.newest.seq >= earlier.newest.seq ? later : NewActivity(participants: later.participants, newest: earlier.newest) }
        ) { [store, fanOut] conversationId, activity in
            if activity.participants.count > largeGroupSize {
                // A large group: one frame for all, nothing read or encoded per member.
                await Self.announceActivity(activity, in: conversationId, fanOut: fanOut, blocks: blocks)
            } else {
                await Self.announceConversation(
                    conversationId, to: activity.participants, store: store, fanOut: fanOut, largeGroupSize: largeGroupSize,
                    blocks: blocks)
            }
        }
        threadActivity = ActivityAnnouncer(
            window: activityWindow, clock: clock,
            merge: { earlier, later in ThreadActivity(roots: earlier.roots.union(later.roots), participants: later.participants) }
        ) { [store, fanOut] conversationId, activity in
            // Read off the replies' path: who is in those threads, then each one's own view.
            var members = Set<EntityID>()
            for root in activity.roots {
                members.formUnion((try? await store.reading { tx in try await tx.threadMemberIds(of: root) }) ?? [])
            }
            await Self.announceConversation(
                conversationId, to: Array(members.intersection(activity.participants)), store: store, fanOut: fanOut,
                largeGroupSize: largeGroupSize, blocks: blocks)
        }
    }

    /// Sends a message; a repeated clientMessageId returns the original and tells nobody again.
    public func send(_ request: SendMessageRequest, in conversationId: EntityID, by identity: Identity) async throws -> SendResult {
        try await beginSend(request, in: conversationId, by: identity)()
    }

    /// Validates and queues a send now (sends queued one after another into a conversation
    /// take their seqs in that order); the returned function waits for the commit, then fans
    /// out. A WebSocket connection pipelines its sends with it.
    public func beginSend(
        _ request: SendMessageRequest, in conversationId: EntityID, by identity: Identity
    ) throws -> @Sendable () async throws -> SendResult {
        // Spans (nil while tracing is off): the send under the caller's command, its checks,
        // its commit and its fan-out.
        let span = ServerTracing.start("chat.send")
        let checks = ServerTracing.start("rules.validate", context: span?.context)
        let draft: MessageDraft
        do {
            draft = try MessageValidation.draft(
                request, conversationId: conversationId, senderId: identity.userId, now: now())
            // Throttled before anything is queued: nothing stored, the client retries after.
            try limits?.enforce(.send, identity.userId.description)
        } catch {
            ServerTracing.fail(checks, error)
            ServerTracing.fail(span, error)
            throw error
        }
        checks?.end()
        let commit = ServerTracing.start("store.commit", context: span?.context)
        // At commit, in commit order, the orderer learns which seq comes (cheap: the commit
        // path does no more); the event itself is encoded and handed on by this send's own
        // task, in parallel with the others, and the orderer puts them back in seq order.
        let pending = store.enqueueSend(draft) { [fanOut] result in
            if result.created { fanOut.order.expect(result.message.conversationId, seq: result.message.seq) }
        }
        let queuedAt = ContinuousClock.now
        return { [self] in
            let result: SendResult
            do {
                result = try await pending.result()
            } catch {
                ServerTracing.fail(commit, error)
                ServerTracing.fail(span, error)
                throw error
            }
            ServerTracing.recordCommit(commit, of: pending.trace, rule: "rules.send")
            let committedAt = ContinuousClock.now
            metrics?.observe("parley_send_commit_seconds", duration: committedAt - queuedAt)
            if result.created {
                let fanning = ServerTracing.start("fanout", context: span?.context)
                fanning?.attributes["parley.recipients"] = result.participantIds.count
                await ServerTracing.within(fanning) { await fanOut(result, in: conversationId) }
                fanning?.end()
                metrics?.observe("parley_send_fanout_seconds", duration: ContinuousClock.now - committedAt)
            }
            if let span {
                span.attributes["parley.conversation"] = conversationId.description
                span.attributes["parley.seq"] = Int(result.message.seq)
                span.attributes["parley.created"] = result.created
                span.end()
            }
            return result
        }
    }

    /// A committed new message to its conversation's participants (here and on other nodes),
    /// to push for those offline, to the link previewer and to the list screens.
    private func fanOut(_ result: SendResult, in conversationId: EntityID) async {
        // Those who block the sender get the message marked, and no push.
        let blockers = await blocks.blockers(of: result.message.senderId)
        deliver(result.message, created: true, to: result.participantIds, blockers: blockers)
        if let root = result.rootUpdate {
            // The thread's root took the next seq for its new count: after the reply.
            deliver(root, created: false, to: result.participantIds, blockers: await blocks.blockers(of: root.senderId))
        }
        // Offline recipients: queued for APNs, never awaited.
        push?.messageCommitted(
            result.message,
            participants: blockers.isEmpty ? result.participantIds : result.participantIds.filter { !blockers.contains($0) })
        // A link in the text: previewed in the background, never awaited.
        previews?.messageStored(result.message)
        // List screens get the new activity too, off the send's path (the reply does not
        // wait), folded per conversation under load. A thread reply is no activity of the
        // conversation's, but its members' unread counts moved: they get their rows.
        if let root = result.message.threadRootId {
            threadActivity.touch(conversationId, ThreadActivity(roots: [root], participants: Set(result.participantIds)))
        } else {
            activity.touch(conversationId, NewActivity(participants: result.participantIds, newest: result.message))
        }
    }

    /// Edits, deletes or reacts to a message; a change goes to every participant as `message.updated`.
    public func change(_ edit: MessageEdit, messageId: EntityID, in conversationId: EntityID, by identity: Identity) async throws -> Message {
        let checked: MessageEdit = switch edit {
        case .text(let text): .text(try MessageValidation.editedText(text))
        case .delete: .delete
        case .reaction(let emoji, let add): .reaction(try MessageValidation.emoji(emoji), add: add)
        }
        let result = try await store.change(checked, messageId: messageId, in: conversationId, by: identity.userId, now: now())
        await announceUpdate(result)
        return result.message
    }

    /// Deletes a message: the sender's own, or as an admin of the conversation's organization
    /// (moderation, recorded in the audit log) anyone's.
    public func delete(_ messageId: EntityID, in conversationId: EntityID, by identity: Identity) async throws -> Message {
        do {
            return try await change(.delete, messageId: messageId, in: conversationId, by: identity)
        } catch let error as ChatError where error.code == .forbidden || error.code == .notFound {
            guard try await store.user(id: identity.userId)?.role == .admin else { throw error }
            let result = try await moderatorDelete(messageId, in: conversationId, by: identity)
            if result.changed {
                try await audit.record(.messageDeleted, by: identity, target: messageId.description, detail: "conversation \(conversationId)")
            }
            return result.message
        }
    }

    /// Blocks (`blocked` true) or unblocks a user for the caller; tells every node.
    public func setBlocked(_ blocked: Bool, user: EntityID, by identity: Identity) async throws {
        let shared = try await store.writing { [now] tx in
            try await BlockRules.setBlocked(blocked, user: user, by: identity, now: now(), in: tx)
        }
        guard let shared else { return }
        blocks.changed(blocker: identity.userId, blocked: user)
        fanOut.relay?.blocksChanged(blocker: identity.userId, blocked: user)
        // The blocker's unread counts changed where the two meet: their devices get the rows.
        for conversationId in shared { await announceConversation(conversationId, to: [identity.userId]) }
    }

    /// Conversations as `viewer` gets them: large groups without member lists, last messages
    /// of senders the viewer blocks marked.
    public func wire(_ conversations: [Conversation], for viewer: EntityID) async -> [Conversation] {
        let blocked = await blocks.blocked(by: viewer)
        return conversations.map { BlockDirectory.marked(wire($0), blocked: blocked) }
    }

    /// An admin deletes a message of their organization (moderation), in a conversation
    /// they need not be in; the tombstone says who. The caller records it in the audit log.
    public func moderatorDelete(_ messageId: EntityID, in conversationId: EntityID, by admin: Identity) async throws -> MessageChange {
        let result = try await store.writing { [now] tx in
            try await MessageRules.moderatorDelete(
                messageId, in: conversationId, by: admin.userId, organizationId: admin.organizationId, now: now(), in: tx)
        }
        await announceUpdate(result)
        return result
    }

    /// Pins or unpins a message; a change goes to every participant as `message.updated`.
    public func setPinned(_ pin: Bool, messageId: EntityID, in conversationId: EntityID, by identity: Identity) async throws -> Message {
        let result = try await store.setPinned(pin, messageId: messageId, in: conversationId, by: identity.userId, now: now())
        await announceUpdate(result)
        return result.message
    }

    /// Sets the caller's mute; their connections everywhere get their new view.
    public func mute(_ settings: ConversationSettings, in conversationId: EntityID, by identity: Identity) async throws -> ConversationSettings {
        let stored = try await store.mute(settings, conversationId: conversationId, by: identity.userId, now: now())
        await announceConversation(conversationId, to: [identity.userId])
        return stored
    }

    /// Writes a link preview read in the background and tells the participants.
    func attachPreview(_ preview: LinkPreview, to message: Message) async throws {
        guard let result = try await store.attachPreview(preview, to: message.id, in: message.conversationId) else { return }
        await announceUpdate(result)
    }

    /// A change that changed something goes to every participant as `message.updated`, in sequence.
    func announceUpdate(_ change: MessageChange) async {
        guard change.changed else { return }
        deliver(change.message, created: false, to: change.participantIds, blockers: await blocks.blockers(of: change.message.senderId))
    }

    /// A message's event (`message.created`, or `message.updated` at its `updatedSeq`) in its
    /// conversation's sequence, marked `senderBlocked` for the recipients among `blockers`.
    private func deliver(_ message: Message, created: Bool, to participants: [EntityID], blockers: Set<EntityID>) {
        let seq = created ? message.seq : message.updatedSeq
        func event(_ message: Message) -> ServerEvent {
            created ? .messageCreated(MessageEvent(message: message)) : .messageUpdated(MessageEvent(message: message))
        }
        guard !blockers.isEmpty, message.type != .system else {
            return fanOut.deliver(event(message), inSequenceOf: message.conversationId, seq: seq, to: participants)
        }
        var marked = message
        marked.senderBlocked = true
        fanOut.deliver(
            event(message), inSequenceOf: message.conversationId, seq: seq, to: participants, variant: event(marked), for: blockers)
    }

    /// Creates a group, or opens (creating at most once) the direct conversation with one user.
    public func createConversation(_ request: CreateConversationRequest, by identity: Identity) async throws -> ConversationChange {
        var name: String?
        switch request.type {
        case .direct:
            guard request.name == nil else { throw ChatError.invalid("A direct conversation has no name") }
        case .group:
            name = try request.name.map(MessageValidation.conversationName)
        }
        // Who may be in it (and how many) is ConversationRules.create's to say.
        let change = try await store.createConversation(NewConversation(
            organizationId: identity.organizationId, creatorId: identity.userId, type: request.type,
            name: name, participantIds: request.participantIds, now: now()))
        await announce(change)
        return change
    }

    /// Renames a group.
    public func rename(_ conversationId: EntityID, to name: String, by identity: Identity) async throws -> ConversationChange {
        let change = try await store.rename(
            conversationId: conversationId, by: identity.userId, to: try MessageValidation.conversationName(name), now: now())
        await announce(change)
        return change
    }

    /// Adds users of the caller's organization to a group.
    public func addParticipants(_ conversationId: EntityID, userIds: [EntityID], by identity: Identity) async throws -> ConversationChange {
        guard !userIds.isEmpty else { throw ChatError.invalid("userIds must not be empty") }
        let change = try await store.addParticipants(conversationId: conversationId, by: identity.userId, userIds: userIds, now: now())
        await announce(change)
        return change
    }

    /// Removes a participant from a group (removing oneself is leaving); an admin moderating
    /// (`moderating`) removes anyone from any group of their organization.
    public func removeParticipant(
        _ conversationId: EntityID, userId: EntityID, by identity: Identity, moderating: Bool = false
    ) async throws -> ConversationChange {
        let organization = moderating ? identity.organizationId : nil
        let change = try await store.writing { [now] tx in
            try await ConversationRules.remove(userId, from: conversationId, by: identity.userId, moderating: organization, now: now(), in: tx)
        }
        await announce(change)
        return change
    }

    /// Sends each connected user of `userIds` their own view of a conversation.
    func announceConversation(_ conversationId: EntityID, to userIds: [EntityID]) async {
        await Self.announceConversation(
            conversationId, to: userIds, store: store, fanOut: fanOut, largeGroupSize: largeGroupSize, blocks: blocks)
    }

    /// A conversation as the wire carries it: a large group's without its member lists.
    public func wire(_ conversation: Conversation) -> Conversation {
        conversation.listingMembers(upTo: largeGroupSize)
    }

    /// `conversation.activity` to a large group's connected members: the newest message and
    /// the sequence after it (messages take the sequence's next number, so it is the message's).
    private static func announceActivity(_ activity: NewActivity, in conversationId: EntityID, fanOut: FanOut, blocks: BlockDirectory) async {
        let online = activity.participants.filter(fanOut.isOnline)
        guard !online.isEmpty else { return }
        let event = ConversationActivityEvent(
            conversationId: conversationId, lastSeq: activity.newest.seq, lastActivityAt: activity.newest.createdAt,
            lastMessage: activity.newest)
        let blockers = await blocks.blockers(of: activity.newest.senderId)
        guard !blockers.isEmpty, activity.newest.type != .system else { return fanOut.deliver(.conversationActivity(event), to: online) }
        var marked = event
        marked.lastMessage.senderBlocked = true
        fanOut.deliver(.conversationActivity(event), to: online.filter { !blockers.contains($0) })
        fanOut.deliver(.conversationActivity(marked), to: online.filter(blockers.contains))
    }

    private static func announceConversation(
        _ conversationId: EntityID, to userIds: [EntityID], store: any ParleyStore, fanOut: FanOut, largeGroupSize: Int,
        blocks: BlockDirectory
    ) async {
        let online = userIds.filter(fanOut.isOnline)
        guard !online.isEmpty, let views = try? await store.conversationViews(id: conversationId, viewers: online, listingMembersUpTo: largeGroupSize) else { return }
        for (userId, view) in views {
            let view = await blocks.marked(view, for: userId)
            fanOut.deliver(.conversationUpdated(ConversationEvent(conversation: view.listingMembers(upTo: largeGroupSize))), to: [userId])
        }
    }

    /// Tells the change's audience: the system message to participants, and each connected
    /// user their own view of the conversation (unread counts differ per user).
    private func announce(_ change: ConversationChange) async {
        guard !change.audience.isEmpty else { return }
        if let system = change.systemMessage {
            fanOut.deliver(
                .messageCreated(MessageEvent(message: system)), inSequenceOf: change.conversation.id, seq: system.seq,
                to: change.conversation.participantIds)
        }
        let participants = Set(change.conversation.participantIds)
        await announceConversation(change.conversation.id, to: change.audience.filter(participants.contains))
        for userId in change.audience where !participants.contains(userId) && fanOut.isOnline(userId) {
            // Removed by this change: they learn they are out, with nothing of their own left.
            var view = wire(change.conversation)
            view.unreadCount = 0
            view.readSeq = 0
            fanOut.deliver(.conversationUpdated(ConversationEvent(conversation: view)), to: [userId])
        }
    }
}
