import Foundation
import ParleyProtocol

/// Edits and reactions that work offline: a change shows at once, is kept in the database
/// until the server answers, and is sent in order (after the messages queued before it) when
/// the server can be reached, even after a restart.
extension ChatClient {
    /// Applies an edit or a reaction on screen now and sends it. Offline (or when the server
    /// does not answer), it waits in the database and this returns: it goes when the server is
    /// back. A refusal (someone else's message, a deleted one, a bad emoji) drops it, the
    /// message shows as the server has it, and this throws the server's error.
    public func change(_ change: MessageChange, of message: LocalMessage) async throws {
        guard let messageId = message.serverId else {
            throw ClientError(kind: .server, code: .invalidRequest, message: "The message has not reached the server yet")
        }
        await loadPendingChanges()
        let pending = try await database.enqueue(change, of: messageId, in: message.conversationId)
        pendingChanges.append(pending)
        notify(.messages(message.conversationId))
        await flushChanges()
        if let refusal = changeRefusals.removeValue(forKey: pending.position) { throw refusal }
    }

    /// Sends the pending changes, oldest first, until one gets no answer. A call while a flush
    /// runs waits for it (and the flush runs once more for what came meanwhile).
    func flushChanges() async {
        await loadPendingChanges()
        await inSingleFlight(.changes, waiting: true) {
            while !signInRequired, let next = pendingChanges.first {
                do {
                    let answer = try await transport.change(next.change, of: next.messageId, in: next.conversationId)
                    try await database.finish(next, applying: answer)
                    pendingChanges.removeFirst()
                } catch let error as ClientError where error.code == .unauthorized {
                    requireSignIn()
                    return false
                } catch let error as ClientError where !error.isTransient {
                    // Refused: nothing to retry. The cache keeps the server's version.
                    try? await database.finish(next, applying: nil)
                    pendingChanges.removeFirst()
                    changeRefusals[next.position] = error
                    if changeRefusals.count > 100, let oldest = changeRefusals.keys.min() { changeRefusals[oldest] = nil }
                } catch {
                    // No answer: it may or may not have been applied; edits and reactions are
                    // idempotent, so sending it again later is safe.
                    try? await database.changeAttemptFailed(next)
                    break
                }
                notify(.messages(next.conversationId))
                notify(.conversations)
            }
            return true
        }
    }

    /// Reads the pending changes once per run (they survive restarts).
    func loadPendingChanges() async {
        guard !pendingChangesLoaded else { return }
        pendingChangesLoaded = true
        pendingChanges = (try? await database.pendingChanges()) ?? []
    }

    /// The messages with the pending changes laid over them, as the user expects to see them.
    func overlayPendingChanges(_ messages: [LocalMessage]) -> [LocalMessage] {
        guard !pendingChanges.isEmpty else { return messages }
        let byMessage = Dictionary(grouping: pendingChanges, by: \.messageId)
        let now = environment.now()
        return messages.map { message in
            guard let id = message.serverId, let changes = byMessage[id], message.deletedAt == nil else { return message }
            var shown = message
            for pending in changes {
                switch pending.change {
                case .edit(let text):
                    shown.text = text
                    shown.editedAt = shown.editedAt ?? now
                case .react(let emoji):
                    if !(shown.reactions[emoji] ?? []).contains(userId) { shown.reactions[emoji, default: []].append(userId) }
                case .unreact(let emoji):
                    shown.reactions[emoji]?.removeAll { $0 == userId }
                    if shown.reactions[emoji]?.isEmpty == true { shown.reactions[emoji] = nil }
                }
            }
            return shown
        }
    }
}
