import Foundation
import ParleyProtocol

/// A pre-send check's answer.
public enum PrecheckVerdict: Sendable, Equatable {
    /// Let the send go on.
    case allow
    /// Refuse the send; nothing is written, and `reason` is shown to the user.
    case veto(reason: String)
}

/// A precheck: may veto a message before it is written anywhere
/// (a content filter, a muted conversation, a size policy).
public protocol MessagePrecheck: Sendable {
    /// Whether a send of `request` into the conversation may go on.
    func check(_ request: SendMessageRequest, in conversationId: EntityID) async -> PrecheckVerdict
}

/// A message on its way through the preparations.
public struct PreparedMessage: Sendable {
    /// What will be sent; a preparation may change it (set `attachmentId`, add metadata).
    public var request: SendMessageRequest
    /// Durable scratch shared by the preparations (e.g. `file` → a local path to upload).
    public var context: [String: String]
    /// The conversation the message goes to.
    public let conversationId: EntityID
    /// Tells the screen how far a long preparation (an upload) has come, 0...1.
    public let reportProgress: @Sendable (Double) -> Void
    /// Records `context` in the outbox before the preparation has finished, so that after a
    /// restart it can go on from there (an upload's id, to resume at the server's offset).
    public internal(set) var saveContext: @Sendable ([String: String]) async -> Void = { _ in }

    /// A message to prepare; `reportProgress` does nothing unless given.
    public init(
        request: SendMessageRequest, context: [String: String], conversationId: EntityID,
        reportProgress: @escaping @Sendable (Double) -> Void = { _ in }
    ) {
        self.request = request
        self.context = context
        self.conversationId = conversationId
        self.reportProgress = reportProgress
    }
}

/// A preparation: runs in the outbox before the message is sent, in
/// order, and again after a restart until it has finished (so it must be safe to repeat).
/// Throwing a transient ``ClientError`` retries later; any other error marks the message failed
/// with the error's description as the reason.
public protocol MessagePreparation: Sendable {
    /// A stable name: the outbox remembers which preparations are left by name.
    var name: String { get }
    /// Does this preparation's work and returns the message to go on with.
    func prepare(_ message: PreparedMessage) async throws -> PreparedMessage
}

/// The hooks an app injects into its ``ChatClient``.
public struct MessageHooks: Sendable {
    /// Run in order before a send is written anywhere; the first veto stops it.
    public var prechecks: [any MessagePrecheck]
    /// Run by the outbox in this order before a message is sent, found by name.
    public var preparations: [any MessagePreparation]
    /// The service the chat screens act through (send, resend, forward, revoke, save, delete
    /// for me, edit, react, search), made for the signed-in user's client; nil is
    /// ``MessageService``. An app wraps or replaces it to log, guard or reroute any action.
    public var service: (@Sendable (ChatClient) -> any MessageServicing)?

    /// Hooks with the given prechecks, preparations and service (none by default).
    public init(
        prechecks: [any MessagePrecheck] = [], preparations: [any MessagePreparation] = [],
        service: (@Sendable (ChatClient) -> any MessageServicing)? = nil
    ) {
        self.prechecks = prechecks
        self.preparations = preparations
        self.service = service
    }
}

/// A precheck refused the message.
public struct SendVetoed: Error, Sendable, Equatable, CustomStringConvertible {
    /// The precheck's reason.
    public var reason: String
    /// "not sent: " and the reason.
    public var description: String { "not sent: \(reason)" }
}

/// A preparation failed for good; the message is marked failed with this reason.
public struct PreparationFailed: Error, Sendable, CustomStringConvertible {
    /// Why the preparation failed: the message's failure reason.
    public var reason: String
    /// A failure with `reason`.
    public init(_ reason: String) { self.reason = reason }
    /// The reason.
    public var description: String { reason }
}
