#if canImport(SwiftUI)
import ParleyClient
import ParleyProtocol
import SwiftUI

/// What a person can do to a message, as closures the timeline calls.
public struct MessageActions {
    /// Reply to it.
    public var reply: (LocalMessage) -> Void
    /// Edit it (own messages).
    public var edit: (LocalMessage) -> Void
    /// Add a reaction.
    public var react: (LocalMessage, String) -> Void
    /// Take a reaction back.
    public var unreact: (LocalMessage, String) -> Void
    /// Send a refused message again.
    public var resend: (LocalMessage) -> Void
    /// Drop a refused message.
    public var discard: (LocalMessage) -> Void
    /// Delete it for everyone (own messages).
    public var revoke: (LocalMessage) -> Void
    /// Hide it on this device.
    public var deleteForMe: (LocalMessage) -> Void
    /// Open its thread, from a root's thread line or "Reply in thread"; nil hides both.
    public var openThread: ((LocalMessage) -> Void)?
    /// Pin (true) or unpin (false) it for everyone; nil hides the action.
    public var pin: ((LocalMessage, Bool) -> Void)?
    /// Report someone else's message to the admins; nil hides the action.
    public var report: ((LocalMessage) -> Void)?
    /// Block (true) or unblock its sender; nil hides the action.
    public var block: ((LocalMessage, Bool) -> Void)?
    /// Forward it to another conversation; nil hides the action.
    public var forward: ((LocalMessage) -> Void)?
    /// Save its attachment (a file, a picture) outside the app; nil hides the action.
    public var save: ((LocalMessage) -> Void)?

    /// Actions from closures; without `openThread`, `pin`, `report`, `block`, `forward` and
    /// `save` there are no such actions.
    public init(
        reply: @escaping (LocalMessage) -> Void, edit: @escaping (LocalMessage) -> Void,
        react: @escaping (LocalMessage, String) -> Void, unreact: @escaping (LocalMessage, String) -> Void,
        resend: @escaping (LocalMessage) -> Void, discard: @escaping (LocalMessage) -> Void,
        revoke: @escaping (LocalMessage) -> Void, deleteForMe: @escaping (LocalMessage) -> Void,
        openThread: ((LocalMessage) -> Void)? = nil, pin: ((LocalMessage, Bool) -> Void)? = nil,
        report: ((LocalMessage) -> Void)? = nil, block: ((LocalMessage, Bool) -> Void)? = nil,
        forward: ((LocalMessage) -> Void)? = nil, save: ((LocalMessage) -> Void)? = nil
    ) {
        self.report = report
        self.block = block
        self.forward = forward
        self.save = save
        self.reply = reply
        self.edit = edit
        self.react = react
        self.unreact = unreact
        self.resend = resend
        self.discard = discard
        self.revoke = revoke
        self.deleteForMe = deleteForMe
        self.openThread = openThread
        self.pin = pin
    }

    /// Actions that do nothing (previews).
    /// (Computed: a stored static of a type holding non-Sendable closures is an error in Swift 6.)
    public static var none: MessageActions {
        MessageActions(
            reply: { _ in }, edit: { _ in }, react: { _, _ in }, unreact: { _, _ in }, resend: { _ in }, discard: { _ in },
            revoke: { _ in }, deleteForMe: { _ in })
    }
}
#endif
