import Foundation
import ParleyProtocol

/// The storage primitives the chat rules run on, inside one transaction of a store.
///
/// Each is one small, rule-free operation (a row read, a counter taken, a row written): what
/// may happen, in what order and with which answer is decided by the rules in `ParleyRules`,
/// written once for every store. A store implements these over its own SQL, and
/// `StoreTransactionConformanceTests` runs one suite of them against each store.
///
/// The rules throw an `ChatError` (a refusal) only before their first write, so a store that
/// batches several operations into one transaction (group commit) can answer a refused one
/// with its error and commit the others without a savepoint each; both stores check it (a job
/// refused after writing sends its batch to the savepoint path).
///
/// A rule awaits nothing but these primitives while its transaction is open: it decides over
/// what it read and writes what it decided. SQLite runs the rule inline on its writer's thread
/// (see `InlineAsync`), which stops a rule that awaits anything that resumes later.
public protocol StoreTransaction: Sendable {
    // MARK: Conversations

    /// Takes the conversation for the rest of the transaction: every writer of a conversation
    /// does so first, so they run one after the other and each sees the others' commits
    /// (PostgreSQL locks its row; SQLite's one writer holds everything already). False when
    /// there is no such conversation.
    func lockConversation(_ conversationId: EntityID) async throws -> Bool

    /// The conversation's counter: the highest seq it has given (nil when no such conversation).
    func lastSeq(of conversationId: EntityID) async throws -> Int64?

    /// A conversation's kind, name and organization (nil: no such conversation).
    func conversationHeader(_ conversationId: EntityID) async throws -> ConversationHeader?

    /// Stores a new conversation with its first members (all joining at `new.now`). A direct
    /// conversation whose pair has one already stores nothing and gives the existing id (a
    /// racing creator's is waited for): one direct conversation per pair.
    func insertConversation(_ new: NewConversation, members: [EntityID]) async throws -> (id: EntityID, created: Bool)

    /// Renames a conversation.
    func setName(_ name: String, of conversationId: EntityID) async throws

    /// The conversation as `viewer` sees it (members, watermarks, unread count, last message).
    func view(of conversationId: EntityID, for viewer: EntityID) async throws -> Conversation?

    /// Takes the conversation's next seq for a change to an existing message (an edit, a
    /// delete, a reaction): the counter moves, the conversation's activity does not.
    func takeNextSeq(in conversationId: EntityID) async throws -> Int64

    // MARK: Profiles

    /// An active user's display name and picture (nil: no such active user).
    func profile(of userId: EntityID) async throws -> (displayName: String, avatarId: EntityID?)?

    /// Writes a user's display name and picture.
    func setProfile(of userId: EntityID, displayName: String, avatarId: EntityID?) async throws

    /// Whether the attachment is the picture of a user in `viewer`'s organization.
    func isAvatar(_ attachmentId: EntityID, visibleTo viewer: EntityID) async throws -> Bool

    /// Leaves an attachment to the collector, which deletes it once no message and no
    /// profile refers to it.
    func orphanAttachment(_ attachmentId: EntityID) async throws

    // MARK: Pages (read-only)

    /// Up to `limit` messages by seq: without `after`, the newest before `before` (or the
    /// newest of all); with it, the oldest after it. Oldest first either way, and whether more
    /// lie beyond the page. Thread replies only `includingThreads`.
    func messagePage(in conversationId: EntityID, before: Int64?, after: Int64?, limit: Int, includingThreads: Bool) async throws -> MessagesPage

    /// A thread's replies by seq, paged as ``messagePage(in:before:after:limit:includingThreads:)`` pages.
    func threadPage(of rootId: EntityID, before: Int64?, after: Int64?, limit: Int) async throws -> MessagesPage

    /// Up to `limit` messages whose `updatedSeq` is after `since`, oldest change first, and
    /// whether more follow.
    func changedMessages(in conversationId: EntityID, since: Int64, limit: Int) async throws -> (messages: [Message], hasMore: Bool)

    /// Up to `limit` members with their watermarks, by user id after `after`.
    func memberPage(of conversationId: EntityID, after: EntityID?, limit: Int) async throws -> ParticipantsPage

    /// Up to `limit` members whose read watermark reaches `seq`, by user id after `after`.
    func readerPage(in conversationId: EntityID, reaching seq: Int64, after: EntityID?, limit: Int) async throws -> ReadersPage

    // MARK: Participants

    /// The ids of the conversation's participants, oldest member first.
    func participantIds(of conversationId: EntityID) async throws -> [EntityID]

    /// Whether the user is a participant of the conversation.
    func isParticipant(_ userId: EntityID, of conversationId: EntityID) async throws -> Bool

    /// Makes users participants (joining at `joinedAt`): their history counts as unread to
    /// them, and an earlier departure is forgotten (list sync).
    func addParticipants(_ userIds: [EntityID], to conversationId: EntityID, joinedAt: Date) async throws

    /// Removes a participant, recording the departure (list sync).
    func removeParticipant(_ userId: EntityID, from conversationId: EntityID) async throws

    /// The organization of each of these users who exists and is active (the others are left out).
    func organizationsOfActiveUsers(_ userIds: Set<EntityID>) async throws -> [EntityID: EntityID]

    /// A participant's watermarks, held until the transaction ends (two receipts of one
    /// member apply one after the other), with the conversation's counter; nil when the user
    /// is not a participant.
    func lockWatermarks(of userId: EntityID, in conversationId: EntityID) async throws -> (member: Member, lastSeq: Int64)?

    /// Writes a participant's watermarks as given.
    func setWatermarks(_ member: Member, in conversationId: EntityID) async throws

    /// The participant's read watermark moved: their unread count is taken again from it and
    /// their view of the conversation is marked changed (list sync).
    func readMoved(for userId: EntityID, in conversationId: EntityID) async throws

    /// The participant's unread count, with every participant's id (a receipt's answer and
    /// audience).
    func unreadCountAndParticipants(of userId: EntityID, in conversationId: EntityID) async throws -> (unread: Int, participantIds: [EntityID])

    // MARK: Messages

    /// One whole message by id, in whatever conversation.
    func message(_ messageId: EntityID) async throws -> Message?

    /// The conversation a message is in, without reading the message (nil: no such message).
    func conversationId(ofMessage messageId: EntityID) async throws -> EntityID?

    /// The highest seq among these messages of the conversation (nil: none of them is in it).
    func highestSeq(of messageIds: [EntityID], in conversationId: EntityID) async throws -> Int64?

    /// The message a sender sent with this `clientMessageId`, in whatever conversation.
    func messageId(sentBy senderId: EntityID, clientMessageId: String) async throws -> EntityID?

    /// Looks for the draft's `(senderId, clientMessageId)` and, unless it exists or the sender
    /// is not a participant, stores the draft with the conversation's next seq (a plain send in
    /// one step; PostgreSQL does it in one statement). With `checkOnly` it writes nothing.
    func insertMessageUnlessSent(_ draft: MessageDraft, checkOnly: Bool) async throws -> SendProbe

    /// Stores a message with the conversation's next seq (new activity for the conversation,
    /// counted as unread for the others unless it is a system message). A thread reply
    /// is no new activity and counts as unread to the thread's members only (see
    /// ``joinThread(_:in:users:)``); a mention counts for the mentioned (the sender aside).
    func insertMessage(_ draft: MessageDraft) async throws -> Message

    /// Replaces a message's text, marking it edited at `editedAt`, with `updatedSeq`.
    func setText(_ text: String, of messageId: EntityID, editedAt: Date, updatedSeq: Int64) async throws

    /// Empties a message (text, metadata, attachment, reactions, pin, preview), keeping its seq
    /// as a tombstone deleted at `deletedAt` by `deletedBy` (nil: retention or erasure), with
    /// `updatedSeq`; it stops counting as unread and as a mention.
    func tombstone(_ message: Message, deletedAt: Date, deletedBy: EntityID?, updatedSeq: Int64) async throws

    /// Adds (`present`) or removes a user's reaction with an emoji; false when it was already so.
    func setReaction(_ emoji: String, by userId: EntityID, on messageId: EntityID, present: Bool, at date: Date) async throws -> Bool

    /// Gives a message a new `updatedSeq` (its reactions changed).
    func setUpdatedSeq(_ updatedSeq: Int64, of messageId: EntityID) async throws

    // MARK: Threads, mentions, mute, pins, previews

    /// Makes users members of a thread (those already in it stay as they are): each newcomer's
    /// own unread count gains the thread's replies above their read watermark (not theirs, not
    /// deleted). Run before the reply that brings them is stored, which counts for every member.
    func joinThread(_ rootId: EntityID, in conversationId: EntityID, users: [EntityID]) async throws

    /// The thread's members: its root's sender, everyone who replied, everyone mentioned in it.
    func threadMemberIds(of rootId: EntityID) async throws -> [EntityID]

    /// Writes a root's thread summary with `updatedSeq`.
    func setThreadSummary(_ summary: ThreadSummary, of rootId: EntityID, updatedSeq: Int64) async throws

    /// Writes a participant's mute, and marks their view of the conversation changed (list sync).
    func setMute(_ settings: ConversationSettings, of userId: EntityID, in conversationId: EntityID) async throws

    /// The participants whose mute is on at `now`.
    func mutedMemberIds(of conversationId: EntityID, at now: Date) async throws -> Set<EntityID>

    /// How many messages of the conversation are pinned.
    func pinCount(in conversationId: EntityID) async throws -> Int

    /// Pins (`at` and `by` given) or unpins (both nil) a message, with `updatedSeq`.
    func setPin(of messageId: EntityID, at date: Date?, by userId: EntityID?, updatedSeq: Int64) async throws

    /// The conversation's pinned messages, newest pin first.
    func pinnedMessages(in conversationId: EntityID) async throws -> [Message]

    /// Writes a message's link preview with `updatedSeq`.
    func setPreview(_ preview: LinkPreview, of messageId: EntityID, updatedSeq: Int64) async throws

    // MARK: Blocks

    /// Whether `blocker` blocks `blocked`.
    func blocks(_ blocker: EntityID, _ blocked: EntityID) async throws -> Bool

    /// Adds (`present`) or removes a block; false when it was already so. Counts are not
    /// touched: the caller takes the blocker's again (``readMoved(for:in:)``) in every
    /// conversation the two share, since a blocked sender's messages are never unread to the blocker.
    func setBlock(_ blocker: EntityID, _ blocked: EntityID, present: Bool, at date: Date) async throws -> Bool

    /// The conversations both users are in, by id.
    func sharedConversationIds(_ a: EntityID, _ b: EntityID) async throws -> [EntityID]

    // MARK: Attachments

    /// An uploaded attachment's record, whoever asks.
    func attachment(_ attachmentId: EntityID) async throws -> StoredAttachment?

    /// Whether a message not deleted carries the attachment in a conversation the user is in.
    func isAttachmentShared(_ attachmentId: EntityID, with userId: EntityID) async throws -> Bool
}

/// What the rules need of a conversation's row.
public struct ConversationHeader: Sendable, Equatable {
    /// Direct or group.
    public var type: ConversationType
    /// A group's name, if it has one.
    public var name: String?
    /// The organization it belongs to.
    public var organizationId: EntityID

    /// A header from its parts.
    public init(type: ConversationType, name: String?, organizationId: EntityID) {
        self.type = type
        self.name = name
        self.organizationId = organizationId
    }
}

/// What ``StoreTransaction/insertMessageUnlessSent(_:checkOnly:)`` found and did.
public struct SendProbe: Sendable, Equatable {
    /// The conversation's participants (empty when there is no such conversation).
    public var participantIds: [EntityID]
    /// The message that already has the draft's `(senderId, clientMessageId)`, if any.
    public var existingId: EntityID?
    /// The message stored, if it was.
    public var message: Message?
    /// True when nothing was stored because the conversation is direct and its other member
    /// blocks the sender (a retry of an earlier send still finds its original).
    public var blocked: Bool

    /// A probe's findings.
    public init(participantIds: [EntityID], existingId: EntityID?, message: Message?, blocked: Bool = false) {
        self.participantIds = participantIds
        self.existingId = existingId
        self.message = message
        self.blocked = blocked
    }
}

/// Thrown by a store when a send met its own retry committing at the same moment (another
/// node, another conversation): the store rolled the send back, seq and all, and the chat
/// layer answers with the original.
public struct SendRaceLost: Error, Sendable {
    /// The race's loser.
    public init() {}
}

/// A write queued for group commit; its answer comes once it has committed.
public struct PendingWrite<Output: Sendable>: Sendable {
    private let wait: @Sendable () async throws -> Output
    /// When its rule ran and the transaction it committed in, while writes are traced.
    public let trace: WriteTrace?

    /// A pending write whose `wait` returns the result once the write has committed.
    public init(trace: WriteTrace? = nil, _ wait: @escaping @Sendable () async throws -> Output) {
        self.trace = trace
        self.wait = wait
    }

    /// The write's result, after commit.
    public func result() async throws -> Output { try await wait() }
}

/// A send queued in arrival order (see ``PendingWrite``).
public typealias PendingSend = PendingWrite<SendResult>

/// One write of a group commit: the conversation it writes in, and the rule that does it.
package struct QueuedWrite: Sendable {
    /// The conversation to take first (PostgreSQL locks a batch's conversations in id order).
    package let conversationId: EntityID
    /// The message it sends, when it is a send (see ``ParleyStore/enqueueWrite(in:sending:onCommit:_:)``).
    package var sending: MessageDraft? = nil
    /// The write, run inside the batch's transaction.
    package let run: @Sendable (any StoreTransaction) async throws -> any Sendable

    package init(conversationId: EntityID, sending: MessageDraft? = nil, run: @escaping @Sendable (any StoreTransaction) async throws -> any Sendable) {
        self.conversationId = conversationId
        self.sending = sending
        self.run = run
    }
}

/// A group commit's job refused (threw a `ChatError`) after it had written: the store aborts
/// the batch's transaction and runs the batch again with a savepoint per job, whose rollback
/// undoes the refused job's writes.
package struct RefusedAfterWriting: Error {
    package let refusal: ChatError

    package init(refusal: ChatError) { self.refusal = refusal }
}

extension StoreTransaction {
    /// Empties a message deleted by nobody in particular (see ``tombstone(_:deletedAt:deletedBy:updatedSeq:)``).
    public func tombstone(_ message: Message, deletedAt: Date, updatedSeq: Int64) async throws {
        try await tombstone(message, deletedAt: deletedAt, deletedBy: nil, updatedSeq: updatedSeq)
    }
}
