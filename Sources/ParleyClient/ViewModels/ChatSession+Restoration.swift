import Foundation
import ParleyProtocol

/// The open chat across a relaunch: a scene keeps ``keptSelection`` (SwiftUI's `@SceneStorage`)
/// and hands it back to ``restoreSelection(_:)`` once the person is signed in, so the app opens
/// where they left it, as Messages and Slack do.
extension ChatSession {
    /// The open chat as a scene keeps it: the user's id and the conversation's, or "" when no
    /// chat is open.
    public var keptSelection: String {
        guard let me = user?.id, let selection else { return "" }
        return "\(me) \(selection)"
    }

    /// Reopens the chat a scene kept (``keptSelection``): only for the same user, only while
    /// they are still in it, and not over a chat opened meanwhile (a tapped notification).
    /// Anything else (another user signed in, a chat since left or deleted, a garbled value) is
    /// dropped without an error. True when the chat was reopened.
    @discardableResult
    public func restoreSelection(_ kept: String) async -> Bool {
        let parts = kept.split(separator: " ").map(String.init)
        guard parts.count == 2, selection == nil, state == .signedIn, let client, let me = user?.id,
            EntityID(parts[0]) == me, let id = EntityID(parts[1])
        else { return false }
        guard (try? await client.open(PushRoute(conversationId: id, messageId: nil))) != nil, selection == nil else { return false }
        selection = id
        return true
    }
}
