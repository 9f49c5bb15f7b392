import Foundation
import ParleyProtocol

/// A validated message ready to be stored (the chat layer has checked text, type and limits).
public struct MessageDraft: Sendable, Equatable {
    /// The conversation to send into.
    public var conversationId: EntityID
    /// The user sending it.
    public var senderId: EntityID
    /// The sender's own id for the message; a repeated `(senderId, clientMessageId)` returns the original.
    public var clientMessageId: String
    /// The message type.
    public var type: MessageType
    /// The trimmed text (empty for a forward, which copies the source's).
    public var text: String
    /// The message this one replies to, if any.
    public var replyToId: EntityID?
    /// The uploaded attachment it carries, if any.
    public var attachmentId: EntityID?
    /// Extra key-value pairs (a location's coordinates, a system message's `action`), if any.
    public var metadata: [String: String]?
    /// Forward: the message to copy (the store checks the sender can read it).
    public var forwardedFromId: EntityID?
    /// The thread root it replies in (v1.3; the rules check it).
    public var threadRootId: EntityID?
    /// The participants it mentions, without repeats, in the order given (v1.3; the rules check them).
    public var mentions: [EntityID] = []
    /// When it was sent: the message's `createdAt` and the conversation's new activity time.
    public var now: Date

    /// A draft with every field; the optional ones default to nil.
    public init(
        conversationId: EntityID, senderId: EntityID, clientMessageId: String, type: MessageType,
        text: String, replyToId: EntityID? = nil, attachmentId: EntityID? = nil,
        metadata: [String: String]? = nil, forwardedFromId: EntityID? = nil, threadRootId: EntityID? = nil,
        mentions: [EntityID] = [], now: Date
    ) {
        self.forwardedFromId = forwardedFromId
        self.threadRootId = threadRootId
        self.mentions = mentions
        self.conversationId = conversationId
        self.senderId = senderId
        self.clientMessageId = clientMessageId
        self.type = type
        self.text = text
        self.replyToId = replyToId
        self.attachmentId = attachmentId
        self.metadata = metadata
        self.now = now
    }
}

/// What a send did: the stored message, whether this call created it, and who to tell.
public struct SendResult: Sendable, Equatable {
    /// The stored message (the original when the pair existed).
    public var message: Message
    /// False when the `(senderId, clientMessageId)` pair existed: nothing was written.
    public var created: Bool
    /// Everyone in the conversation at commit time.
    public var participantIds: [EntityID]
    /// A thread reply's root as the reply left it (its new count, at the next seq), to announce after the reply (v1.3).
    public var rootUpdate: Message? = nil
}

/// What a conversation change did, for the answer and for fan-out.
public struct ConversationChange: Sendable, Equatable {
    /// The conversation as the caller sees it after the change.
    public var conversation: Conversation
    /// True when a conversation was created (false for an existing direct one).
    public var created: Bool
    /// The system message the change wrote, if it changed anything.
    public var systemMessage: Message?
    /// Everyone to tell: participants after the change plus anyone removed by it.
    public var audience: [EntityID]
}

/// What a receipt did to one member's watermarks.
public struct WatermarkChange: Sendable, Equatable {
    /// The member's watermarks after the change.
    public var member: Member
    /// The member's unread count after the change.
    public var unreadCount: Int
    /// False when the watermarks were already at or past the target (nothing written).
    public var changed: Bool
    /// Everyone in the conversation, to send the receipt to.
    public var participantIds: [EntityID]
    /// The conversation's last seq when the count was taken (the count covers every change up to it).
    public var lastSeq: Int64 = 0
}

/// What an edit, delete or reaction did to a message.
public struct MessageChange: Sendable, Equatable {
    /// The message after the request.
    public var message: Message
    /// False when it changed nothing (no seq taken, nobody told).
    public var changed: Bool
    /// Everyone in the conversation.
    public var participantIds: [EntityID]
}

/// A change to one message.
public enum MessageEdit: Sendable, Equatable {
    /// New text (sender only).
    case text(String)
    /// Delete: empties text, metadata and attachment; keeps the seq as a tombstone (sender only).
    case delete
    /// Add (true) or remove (false) the caller's reaction with an emoji.
    case reaction(String, add: Bool)
}

/// An uploaded file's record; the bytes live in the data directory under `sha256`.
public struct StoredAttachment: Sendable, Equatable {
    /// The attachment's id.
    public var id: EntityID
    /// The user who uploaded it.
    public var uploaderId: EntityID
    /// The uploader's organization.
    public var organizationId: EntityID
    /// The file name given with the upload.
    public var name: String
    /// The checked content type.
    public var contentType: String
    /// The size in bytes.
    public var size: Int64
    /// Hex SHA-256 of the content: the file's name on disk.
    public var sha256: String
    /// The width in pixels, when known.
    public var width: Int?
    /// The height in pixels, when known.
    public var height: Int?
    /// When the attachment was recorded.
    public var createdAt: Date

    /// An attachment record as a store keeps it.
    public init(
        id: EntityID, uploaderId: EntityID, organizationId: EntityID, name: String, contentType: String, size: Int64,
        sha256: String, width: Int? = nil, height: Int? = nil, createdAt: Date
    ) {
        self.id = id
        self.uploaderId = uploaderId
        self.organizationId = organizationId
        self.name = name
        self.contentType = contentType
        self.size = size
        self.sha256 = sha256
        self.width = width
        self.height = height
        self.createdAt = createdAt
    }

    /// The wire form.
    public var wire: Attachment {
        Attachment(
            id: id, name: name, contentType: contentType, size: size, url: "/api/v1/attachments/\(id)",
            width: width, height: height)
    }
}

/// A new conversation to create.
public struct NewConversation: Sendable, Equatable {
    /// The organization it belongs to (the creator's).
    public var organizationId: EntityID
    /// The user creating it.
    public var creatorId: EntityID
    /// Direct or group.
    public var type: ConversationType
    /// A group's name; nil for a direct conversation or an unnamed group.
    public var name: String?
    /// The other participants (the creator is always added).
    public var participantIds: [EntityID]
    /// When it is created.
    public var now: Date

    /// A new conversation with every field; `name` defaults to nil.
    public init(
        organizationId: EntityID, creatorId: EntityID, type: ConversationType, name: String? = nil,
        participantIds: [EntityID], now: Date
    ) {
        self.organizationId = organizationId
        self.creatorId = creatorId
        self.type = type
        self.name = name
        self.participantIds = participantIds
        self.now = now
    }
}

/// Where Parley keeps everything; the truth every connection and client catches up from.
///
/// The chat operations that decide something (sends, receipts, edits, attachment visibility)
/// are rules in `Chat/Rules/`, run through ``writing(_:)``, ``reading(_:)`` and
/// ``enqueueWrite(in:onCommit:_:)`` over the primitives of ``StoreTransaction``; the requirements
/// below that still take whole operations keep their invariants inside their transactions: the
/// gapless per-conversation seq, unique `(senderId, clientMessageId)`, and participant checks
/// (a conversation the viewer is not in is "not found").
public protocol ParleyStore: Sendable {
    /// Creates the user, and the organization when its name is new; `conflict` if the email is taken there.
    func register(_ registration: Registration, admit: @Sendable (Organization?, Invite?) throws -> Admission) async throws -> User
    /// The user and password hash for a login, or nil when no such user exists.
    func credentials(organization: String, email: String) async throws -> (user: User, passwordHash: String)?
    /// One user by id.
    func user(id: EntityID) async throws -> User?
    /// Users of an organization whose name or email contains `query` (all when nil), by name.
    func users(organizationId: EntityID, matching query: String?, limit: Int) async throws -> [User]
    /// Records when a user's last connection closed.
    func setLastSeen(userId: EntityID, at date: Date) async throws

    /// The viewer's conversations, newest activity first.
    func conversations(viewer: EntityID) async throws -> [Conversation]
    /// The sum of the user's unread counts over their conversations (a push's badge), from the
    /// counters: one row per conversation, no view and no message read.
    func totalUnread(userId: EntityID) async throws -> Int
    /// A page of the viewer's conversations, newest activity first, after the cursor `before`
    /// (v1.2), with the cursor of the next page when there is one.
    func conversations(viewer: EntityID, limit: Int, before: ListCursor?) async throws -> (page: [Conversation], next: ListCursor?)
    /// The viewer's conversations whose view changed after `since` (the store's clock, in ms),
    /// and the ones they left since (v1.2).
    func conversationChanges(viewer: EntityID, since: Int64) async throws -> (changed: [Conversation], removedIds: [EntityID])
    /// The store's clock in milliseconds: what list changes are stamped with (v1.2 sync tokens).
    func clockMilliseconds() async throws -> Int64
    /// One conversation as the viewer sees it; nil when it does not exist or the viewer is not in it.
    func conversation(id: EntityID, viewer: EntityID) async throws -> Conversation?
    /// Each participant's view of one conversation, read together (the shared parts once).
    /// Above `limit` members the views leave out the member lists (and the store need not read
    /// them: a large group's reader asked for their own view on every read).
    func conversationViews(id: EntityID, viewers: [EntityID], listingMembersUpTo limit: Int) async throws -> [EntityID: Conversation]
    /// The ids of a conversation's participants (no check of who asks).
    func participantIds(conversationId: EntityID) async throws -> [EntityID]
    /// How many members have read and received the conversation's newest message (v1.2's
    /// `receipt.summary`; no check of who asks).
    func receiptSummary(conversationId: EntityID) async throws -> ReceiptSummaryEvent

    /// Runs `body` in one write transaction: committed when it returns, rolled back when it throws.
    func writing<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) async throws -> T) async throws -> T
    /// Runs `body` on one consistent snapshot (it must not write).
    func reading<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) async throws -> T) async throws -> T
    /// Queues a write in a conversation for group commit, without waiting for it: writes
    /// queued one after another into one conversation commit in that order, several to a
    /// transaction. `onCommit` runs right after the commit, before the result is answered, in
    /// commit order among the writes of a conversation. A write that throws is rolled back alone.
    ///
    /// `draft` is the message the write sends, when it is a send: a store may then store a
    /// batch's plain sends together before their rules run (PostgreSQL: one statement for all
    /// of them), and answer each rule's ``StoreTransaction/insertMessageUnlessSent(_:checkOnly:)``
    /// from that. The rule, and so every answer, stays the same.
    func enqueueWrite<T: Sendable>(
        in conversationId: EntityID, sending draft: MessageDraft?, onCommit: @escaping @Sendable (T) -> Void,
        _ body: @escaping @Sendable (any StoreTransaction) async throws -> T
    ) -> PendingWrite<T>
    /// Tells `observer` each group commit's size and duration (metrics); stores without
    /// batches say nothing.
    func observeSendBatches(_ observer: @escaping @Sendable (Int, Duration) -> Void)

    /// Full-text search over the viewer's conversations (or one of them), newest first.
    func search(_ query: String, viewer: EntityID, conversationId: EntityID?, limit: Int, offset: Int) async throws -> SearchResponse

    /// Records an uploaded attachment.
    func createAttachment(_ attachment: StoredAttachment) async throws

    /// Registers a push token for a user; a token registered by another user moves to this one.
    func registerDevice(token: String, userId: EntityID, platform: String, environment: PushEnvironment, now: Date) async throws
    /// Unregisters a token of the user's; false when the user had no such token.
    func unregisterDevice(token: String, userId: EntityID) async throws -> Bool
    /// The user's registered devices.
    func devices(userId: EntityID) async throws -> [RegisterDeviceRequest]

    /// An organization by id.
    func organization(id: EntityID) async throws -> Organization?
    /// Replaces an organization's allowed email domains.
    func setAllowedEmailDomains(_ domains: [String], organizationId: EntityID) async throws -> Organization?
    /// Stores a new invite.
    func createInvite(_ invite: Invite) async throws
    /// An organization's invites, newest first.
    func invites(organizationId: EntityID) async throws -> [Invite]
    /// Deletes an invite of an organization; false when it has none with that code.
    func deleteInvite(code: String, organizationId: EntityID) async throws -> Bool
    /// Changes an active user's role; `check` gets the number of active admins the change
    /// leaves and may refuse, in the same transaction. Nil when no such active user.
    func setRole(_ role: UserRole, userId: EntityID, organizationId: EntityID, check: @Sendable (Int) throws -> Void) async throws -> User?
    /// Deactivates an active user (their devices go too); `check` as for `setRole`. False when
    /// no such active user.
    func deactivate(userId: EntityID, organizationId: EntityID, now: Date, check: @Sendable (Int) throws -> Void) async throws -> Bool
    /// A user's organization and whether they are active (nil: no such user).
    func userState(id: EntityID) async throws -> UserState?

    // MARK: Trust and safety (v1.4)

    /// The users `blocker` blocks, by display name.
    func blockedUsers(by blocker: EntityID) async throws -> [User]
    /// Whom the user blocks, and who blocks them.
    func blockRelations(of userId: EntityID) async throws -> BlockRelations
    /// Stores a new report (checked by ``ReportRules``).
    func createReport(_ report: Report, organizationId: EntityID) async throws
    /// A page of an organization's reports, newest first, those before `before` (a report's
    /// id), of one status or all, without their messages.
    func reports(organizationId: EntityID, status: ReportStatus?, before: EntityID?, limit: Int) async throws -> (reports: [Report], hasMore: Bool)
    /// Moves a report of the organization to `status`, recording who handled it; nil when the
    /// organization has no such report.
    func setReportStatus(_ status: ReportStatus, reportId: EntityID, organizationId: EntityID, by handler: EntityID, at date: Date) async throws -> Report?
    /// Appends an entry to the organization's audit log.
    func recordAudit(_ entry: AuditEntry, organizationId: EntityID) async throws
    /// A page of the organization's audit log, newest first, entries before `before` (an entry's id).
    func auditEntries(organizationId: EntityID, before: EntityID?, limit: Int) async throws -> (entries: [AuditEntry], hasMore: Bool)

    /// After deletions that must leave no trace (retention, erasure): removes what the store
    /// still keeps of deleted text beside its rows (SQLite: the search index's old segments and
    /// the write-ahead log; PostgreSQL keeps dead rows until its vacuum).
    func purgeDeletedText() async throws
    /// Sets (days) or clears (nil) the organization's message retention; nil when no such organization.
    func setMessageRetention(days: Int?, organizationId: EntityID) async throws -> Organization?
    /// Every organization with a retention, and its days.
    func retentionPolicies() async throws -> [(organizationId: EntityID, days: Int)]
    /// Up to `limit` messages of the organization created before `cutoff` and not deleted
    /// (system messages stay), in no particular order: without an index on the time, a scan
    /// that stops at `limit` costs less than a sort of every expired message.
    func expiredMessages(organizationId: EntityID, before cutoff: Date, limit: Int) async throws -> [MessageRef]
    /// Up to `limit` messages not deleted that hold the user's words: those they sent (system
    /// messages aside) and forwards of those.
    func undeletedMessages(of userId: EntityID, limit: Int) async throws -> [MessageRef]
    /// The user's own messages after `after` (a message id), by id, up to `limit`, deleted ones included.
    func messagesSent(by userId: EntityID, after: EntityID?, limit: Int) async throws -> [Message]
    /// Every attachment the user uploaded, oldest first.
    func attachments(uploadedBy userId: EntityID) async throws -> [StoredAttachment]
    /// Up to `limit` attachments left by deleted messages that no message refers to any more.
    func orphanedAttachments(limit: Int) async throws -> [StoredAttachment]
    /// Deletes an attachment's record when no message refers to it (and forgets it as an
    /// orphan either way); whether it went, and whether another record still has its bytes.
    func deleteAttachmentIfUnused(_ id: EntityID) async throws -> (deleted: Bool, bytesShared: Bool)
    /// Erases a user's profile (v1.4): "Deleted user", no email, no password, deactivated,
    /// devices gone, the reasons of their reports emptied. `check` as for ``deactivate``.
    /// False when the organization has no such user.
    func eraseProfile(userId: EntityID, organizationId: EntityID, now: Date, check: @Sendable (Int) throws -> Void) async throws -> Bool

    /// Which copy of the data this is: a random id made with the database and made anew when
    /// a backup is restored (``renewStoreIdentity()``). Sent in `hello`, so a client whose
    /// cache saw more than a restored copy has knows to start its cache again.
    func storeIdentity() async throws -> String
    /// Gives the data a new identity (after a restore) and returns it.
    func renewStoreIdentity() async throws -> String

    /// Every signing key, retired ones included, oldest first.
    func signingKeys() async throws -> [SigningKey]
    /// Stores `candidate` unless a live key exists already, atomically (nodes starting at once
    /// agree on one key); returns every key after.
    func ensureSigningKey(_ candidate: SigningKey) async throws -> [SigningKey]
    /// Adds a key (rotation): from then on it signs new tokens; the older keys still verify.
    func addSigningKey(_ key: SigningKey) async throws
    /// Retires a key: tokens it signed stop verifying. False when no live key has that kid.
    func retireSigningKey(kid: String, at date: Date) async throws -> Bool

    /// Records that a sign-in session ended (logout): tokens carrying its id are refused until
    /// `expiresAt`, when the last of them would have expired anyway. Rows past that are dropped.
    func revokeSession(_ sessionId: String, userId: EntityID, expiresAt: Date, at date: Date) async throws
    /// The sessions revoked whose tokens could still be presented (`expiresAt` after `now`),
    /// with that time: every node keeps them in memory.
    func revokedSessions(now: Date) async throws -> [String: Date]

    /// Stores a new sign-in session (login, registration).
    func createSignInSession(_ session: SignInSession) async throws
    /// One sign-in session, ended or not (nil: none with that id).
    func signInSession(id: String) async throws -> SignInSession?
    /// Replaces a live session's refresh token hash, atomically: only when its current hash is
    /// still `currentHash` (two renewals with one token cannot both win). The old hash becomes
    /// `previousHash`; `lastUsedAt` and `expiresAt` move on. False when nothing changed.
    func rotateSignInSession(id: String, from currentHash: String, to newHash: String, at date: Date, expiresAt: Date) async throws -> Bool
    /// Marks a session used (a bearer renewal) without changing its token.
    func touchSignInSession(id: String, at date: Date) async throws
    /// The user's sessions that have not ended or expired at `now`, newest first.
    func signInSessions(userId: EntityID, now: Date) async throws -> [SignInSession]
    /// Ends the user's live sessions (only `id` when given) and answers the ids it ended.
    func endSignInSessions(userId: EntityID, id: String?, at date: Date) async throws -> [String]

    /// Keeps a registration waiting for its email to be verified (a domain join), replacing one
    /// waiting for the same organization and email; drops expired ones.
    func savePendingRegistration(_ pending: PendingRegistration) async throws
    /// Takes (removes and answers) the pending registration with this link's hash, unless it
    /// has expired at `now`.
    func takePendingRegistration(tokenHash: String, now: Date) async throws -> PendingRegistration?

    /// Writes one small row (readiness): throws when the store cannot write now.
    func probeWrite(now: Date) async throws

    /// Flushes and releases the store; called once after the server has stopped.
    func close() async throws
}

/// What authentication needs to know of a user, cached by the server.
public struct UserState: Sendable, Equatable {
    /// The organization the user belongs to.
    public var organizationId: EntityID
    /// False once the user has been deactivated.
    public var isActive: Bool
    /// A user's state from its parts.
    public init(organizationId: EntityID, isActive: Bool) {
        self.organizationId = organizationId
        self.isActive = isActive
    }
}

extension ParleyStore {
    /// Registers with v1's open rule (any organization by name): store tests and tools.
    public func register(organization: String, email: String, displayName: String, passwordHash: String, now: Date) async throws -> User {
        try await register(
            Registration(organization: organization, email: email, displayName: displayName, passwordHash: passwordHash, now: now)
        ) { organization, _ in Admission(role: organization == nil ? .admin : .member) }
    }

    /// A store without batches has nothing to tell.
    public func observeSendBatches(_ observer: @escaping @Sendable (Int, Duration) -> Void) {}
}

/// Where a page of the conversation list ends: the last conversation's activity time and id
/// (the list is ordered by activity, newest first, then by id). On the wire: `"<ms>.<id>"`.
public struct ListCursor: Sendable, Equatable {
    /// The last conversation's activity time, in milliseconds since 1970.
    public var lastActivityMs: Int64
    /// The last conversation's id.
    public var id: EntityID

    /// A cursor after the conversation with this activity time and id.
    public init(lastActivityMs: Int64, id: EntityID) {
        self.lastActivityMs = lastActivityMs
        self.id = id
    }

    /// Parses the wire form; nil when malformed.
    public init?(_ text: String) {
        let parts = text.split(separator: ".", maxSplits: 1)
        guard parts.count == 2, let ms = Int64(parts[0]), let id = EntityID(String(parts[1])) else { return nil }
        self.init(lastActivityMs: ms, id: id)
    }

    /// The wire form, `"<ms>.<id>"`.
    public var wire: String { "\(lastActivityMs).\(id)" }
}

/// Whom a user blocks and who blocks them (v1.4), as the block directory keeps it.
public struct BlockRelations: Sendable, Equatable {
    /// The users this user blocks.
    public var blocks: Set<EntityID>
    /// The users who block this user.
    public var blockedBy: Set<EntityID>

    /// Relations from their two sides.
    public init(blocks: Set<EntityID> = [], blockedBy: Set<EntityID> = []) {
        self.blocks = blocks
        self.blockedBy = blockedBy
    }
}

/// A message by id and conversation (what a sweep needs to take its conversation first).
public struct MessageRef: Sendable, Equatable {
    /// The message.
    public var id: EntityID
    /// Its conversation.
    public var conversationId: EntityID

    /// A reference from its parts.
    public init(id: EntityID, conversationId: EntityID) {
        self.id = id
        self.conversationId = conversationId
    }
}
