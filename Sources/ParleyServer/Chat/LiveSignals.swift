import Foundation
import ParleyProtocol
import Synchronization
import ParleyStorage
import ParleyRules

/// Typing, presence and receipts: the signals around messages.
///
/// Typing lapses by itself (``TypingTracker``) and when the typer's last connection closes;
/// presence goes to the user's organization only; receipts move watermarks up only and are
/// announced to the conversation, with the reader's own devices told their new unread count.
///
/// In a large group (more members than ``ChatService/largeGroupSize``) each member's
/// receipt would go to every member (300 members reading a message: 90,000 events), so there
/// the reader's own devices get their receipt and everyone gets a `receipt.summary` at most
/// every ``summaryInterval``; and beyond three typists, typing is a `typing.summary` count.
public final class LiveSignals: Sendable {
    let store: any ParleyStore
    let fanOut: FanOut
    let chat: ChatService
    private let typing: TypingTracker
    /// Folds a large group's receipts and typing into summaries, one per interval.
    private let receiptSummaries: ActivityAnnouncer<[EntityID]>
    private let typingSummaries: ActivityAnnouncer<[EntityID]>
    /// Typists named in `typing` events of a large group; more are only counted.
    static let namedTypists = 3
    /// The conversation each online user is looking at (`focus`).
    private let focused = Mutex<[EntityID: EntityID]>([:])

    /// Signals over a store and this node's connections; typing lapses after `typingTimeout`.
    public init(
        store: any ParleyStore, fanOut: FanOut, chat: ChatService, typingTimeout: Duration = .seconds(3), clock: ServerClock = .system,
        summaryInterval: Duration = .seconds(2)
    ) {
        self.store = store
        self.fanOut = fanOut
        self.chat = chat
        // The lapse announcer and the typing summaries need each other: the summary counts
        // the tracker's typists, and a lapse in a large group updates the summary.
        let summaries = SummaryLink()
        let largeGroupSize = chat.largeGroupSize
        let blocks = chat.blocks
        let typing = TypingTracker(timeout: typingTimeout, clock: clock) { [store, fanOut] expired in
            for key in expired {
                await Self.announceTyping(
                    key, isTyping: false, store: store, fanOut: fanOut, largeGroupSize: largeGroupSize, summaries: summaries.announcer,
                    blocks: blocks)
            }
        }
        self.typing = typing
        receiptSummaries = ActivityAnnouncer<[EntityID]>(window: summaryInterval, clock: clock) { [store, fanOut] conversationId, participants in
            guard let summary = try? await store.receiptSummary(conversationId: conversationId) else { return }
            fanOut.deliver(.receiptSummary(summary), to: participants)
        }
        let typingSummaries = ActivityAnnouncer<[EntityID]>(window: summaryInterval, clock: clock) { [fanOut] conversationId, participants in
            let count = await typing.typists(in: conversationId)
            fanOut.deliver(.typingSummary(TypingSummaryEvent(conversationId: conversationId, count: count)), to: participants)
        }
        self.typingSummaries = typingSummaries
        summaries.announcer = typingSummaries
    }

    // MARK: Typing

    /// A `typing` command: announce to the other participants and arm (or clear) the lapse.
    public func typing(_ command: TypingCommand, by identity: Identity) async throws {
        try chat.limits?.enforce(.typing, identity.userId.description)
        let participants = try await requireParticipant(command.conversationId, identity)
        let key = TypingTracker.Key(userId: identity.userId, conversationId: command.conversationId)
        if command.isTyping {
            await typing.started(key)
        } else if await !typing.stopped(key) {
            return
        }
        // Those who block the typist never see them type.
        let blockers = await chat.blocks.blockers(of: identity.userId)
        let others = participants.filter { $0 != identity.userId && !blockers.contains($0) }
        if participants.count > chat.largeGroupSize {
            // A large group: a few typists named, the count for everyone at most every interval.
            let typists = await typing.typists(in: command.conversationId)
            if typists >= Self.namedTypists { typingSummaries.touch(command.conversationId, others) }
            if command.isTyping, typists > Self.namedTypists { return }
        }
        let event = ServerEvent.typing(TypingEvent(
            conversationId: command.conversationId, userId: identity.userId, isTyping: command.isTyping))
        fanOut.deliver(event, to: others)
    }

    /// Live typing indicators (for tests and metrics).
    public var activeTypingCount: Int {
        get async { await typing.activeCount }
    }

    private static func announceTyping(
        _ key: TypingTracker.Key, isTyping: Bool, store: any ParleyStore, fanOut: FanOut, largeGroupSize: Int, summaries: ActivityAnnouncer<[EntityID]>?,
        blocks: BlockDirectory
    ) async {
        guard let participants = try? await store.participantIds(conversationId: key.conversationId) else { return }
        let blockers = await blocks.blockers(of: key.userId)
        let others = participants.filter { $0 != key.userId && !blockers.contains($0) }
        let event = ServerEvent.typing(TypingEvent(conversationId: key.conversationId, userId: key.userId, isTyping: isTyping))
        fanOut.deliver(event, to: others)
        if participants.count > largeGroupSize { summaries?.touch(key.conversationId, others) }
    }

    // MARK: Presence

    /// A user's first connection on this node opened: the organization learns it, unless the
    /// user was already online on another node.
    func cameOnline(_ identity: Identity) async {
        if let relay = fanOut.relay, await relay.userCameOnline(identity) { return }
        // Those who block the user get no presence of theirs.
        let blockers = await chat.blocks.blockers(of: identity.userId)
        fanOut.deliver(
            .presence(PresenceEvent(userId: identity.userId, isOnline: true)), toOrganization: identity.organizationId,
            excluding: blockers.union([identity.userId]))
    }

    /// A user's last connection on this node closed: their typing stops, they are seen now.
    func wentOffline(_ identity: Identity) async {
        for key in await typing.stopAll(userId: identity.userId) {
            await Self.announceTyping(
                key, isTyping: false, store: store, fanOut: fanOut, largeGroupSize: chat.largeGroupSize, summaries: typingSummaries,
                blocks: chat.blocks)
        }
        _ = focused.withLock { $0.removeValue(forKey: identity.userId) }
        if let relay = fanOut.relay, await relay.userWentOffline(identity) { return }
        await announceOffline(identity)
    }

    /// Tells the organization a user is offline (everywhere) and records when they were last seen.
    public func announceOffline(_ identity: Identity) async {
        let seen = chat.now().wholeMilliseconds
        try? await store.setLastSeen(userId: identity.userId, at: seen)
        let blockers = await chat.blocks.blockers(of: identity.userId)
        fanOut.deliver(
            .presence(PresenceEvent(userId: identity.userId, isOnline: false, lastSeenAt: seen)),
            toOrganization: identity.organizationId, excluding: blockers.union([identity.userId]))
    }

    /// A `focus` command: participants of the focused conversation learn where the user is;
    /// the rest of the organization only that they are online.
    public func focus(_ command: FocusCommand, by identity: Identity) async throws {
        var participants: [EntityID] = []
        if let conversationId = command.conversationId {
            participants = try await requireParticipant(conversationId, identity)
        }
        focused.withLock { $0[identity.userId] = command.conversationId }
        let plain = PresenceEvent(userId: identity.userId, isOnline: true)
        var located = plain
        located.conversationId = command.conversationId
        let blockers = await chat.blocks.blockers(of: identity.userId)
        let insiders = Set(participants).subtracting([identity.userId]).subtracting(blockers)
        fanOut.deliver(.presence(located), to: insiders)
        fanOut.deliver(
            .presence(plain), toOrganization: identity.organizationId, excluding: insiders.union([identity.userId]).union(blockers))
    }

    // MARK: Receipts

    /// A read receipt; returns the caller's watermark and unread count after it.
    public func markRead(_ request: ReadRequest, in conversationId: EntityID, by identity: Identity) async throws -> ReadResponse {
        try chat.limits?.enforce(.receipt, identity.userId.description)
        if let ids = request.messageIds, ids.count > Limits.maxReadBatch {
            throw ChatError.invalid("messageIds has more than \(Limits.maxReadBatch) ids")
        }
        if request.upToSeq != nil, request.messageIds != nil {
            throw ChatError.invalid("Give upToSeq or messageIds, not both")
        }
        let change = try await store.markRead(
            conversationId: conversationId, userId: identity.userId, upToSeq: request.upToSeq, messageIds: request.messageIds)
        if change.changed {
            announceReceipt(change, conversationId: conversationId)
            // The reader's other devices clear their badge.
            await chat.announceConversation(conversationId, to: [identity.userId])
        }
        return ReadResponse(readSeq: change.member.readSeq, unreadCount: change.unreadCount, lastSeq: change.lastSeq)
    }

    /// A delivery receipt; returns the caller's watermarks after it.
    public func markDelivered(_ command: DeliveredCommand, by identity: Identity) async throws -> Member {
        try chat.limits?.enforce(.receipt, identity.userId.description)
        let change = try await store.markDelivered(
            conversationId: command.conversationId, userId: identity.userId, upToSeq: command.upToSeq)
        if change.changed { announceReceipt(change, conversationId: command.conversationId) }
        return change.member
    }

    private func announceReceipt(_ change: WatermarkChange, conversationId: EntityID) {
        let event = ServerEvent.receipt(ReceiptEvent(
            conversationId: conversationId, userId: change.member.userId, readSeq: change.member.readSeq,
            deliveredSeq: change.member.deliveredSeq))
        guard change.participantIds.count > chat.largeGroupSize else {
            return fanOut.deliver(event, to: change.participantIds)
        }
        // A large group: the reader's own devices learn their watermarks; everyone else a count.
        fanOut.deliver(event, to: [change.member.userId])
        receiptSummaries.touch(conversationId, change.participantIds)
    }

    private func requireParticipant(_ conversationId: EntityID, _ identity: Identity) async throws -> [EntityID] {
        let participants = try await store.participantIds(conversationId: conversationId)
        guard participants.contains(identity.userId) else { throw ChatError.notFound("Conversation") }
        return participants
    }
}

/// The typing-summary announcer, handed to the typing tracker's lapse callback after both exist.
private final class SummaryLink: Sendable {
    private let value = Mutex<ActivityAnnouncer<[EntityID]>?>(nil)

    var announcer: ActivityAnnouncer<[EntityID]>? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
