import Foundation
import ParleyProtocol

/// Where Parley keeps everything; the truth every connection and client catches up from.
///
/// The chat operations that decide something (sends, receipts, edits, attachment visibility)
/// are rules in `ParleyRules`, run through ``writing(_:)``, ``reading(_:)`` and
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
    /// A page of the viewer's conversations, newest activity first, after the cursor `before`,
    /// with the cursor of the next page when there is one.
    func conversations(viewer: EntityID, limit: Int, before: ListCursor?) async throws -> (page: [Conversation], next: ListCursor?)
    /// The viewer's conversations whose view changed after `since` (the store's clock, in ms),
    /// and the ones they left since.
    func conversationChanges(viewer: EntityID, since: Int64) async throws -> (changed: [Conversation], removedIds: [EntityID])
    /// The store's clock in milliseconds: what list changes are stamped with (the list's sync tokens).
    func clockMilliseconds() async throws -> Int64
    /// One conversation as the viewer sees it; nil when it does not exist or the viewer is not in it.
    func conversation(id: EntityID, viewer: EntityID) async throws -> Conversation?
    /// Each participant's view of one conversation, read together (the shared parts once).
    /// Above `limit` members the views leave out the member lists (and the store need not read
    /// them: a large group's reader asked for their own view on every read).
    func conversationViews(id: EntityID, viewers: [EntityID], listingMembersUpTo limit: Int) async throws -> [EntityID: Conversation]
    /// The ids of a conversation's participants (no check of who asks).
    func participantIds(conversationId: EntityID) async throws -> [EntityID]
    /// How many members have read and received the conversation's newest message (a large group's
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

    // MARK: Trust and safety

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
    /// Erases a user's profile: "Deleted user", no email, no password, deactivated,
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
