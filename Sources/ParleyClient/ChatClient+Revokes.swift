import Foundation
import Logging
import ParleyProtocol

/// Deleting a message that has not been confirmed yet. One never sent is simply dropped. One
/// that went (its answer still awaited, or lost, so the server may well have stored it) cannot
/// be dropped: that would leave it on the server, shown to everyone, and back on this device
/// with the next catch-up. It is shown deleted at once, the delete is kept in the database, and
/// it goes to the server as soon as the message has an id there, even after a restart.
extension ChatClient {
    /// Deletes one's own message that has no server id yet (see the extension's note).
    public func revokeUnsent(clientMessageId: String, in conversationId: EntityID) async throws {
        if try await dropIfNeverSent(clientMessageId) {
            notify(.messages(conversationId))
            return
        }
        if try await database.outboxState(clientMessageId: clientMessageId)?.state == "failed" {
            // Refused by the server: it has no copy.
            try await discard(clientMessageId: clientMessageId, in: conversationId)
            return
        }
        try await database.enqueueRevoke(clientMessageId: clientMessageId, senderId: userId, conversationId: conversationId)
        revokesPending.insert(clientMessageId)
        notify(.messages(conversationId))
        notify(.conversations)
        await flushRevokes()
    }

    /// Drops a queued message that never went (not in flight, no attempt so far) with its
    /// local copy and file; false, changing nothing, when it may be on the server already.
    /// Decided in one turn of the actor: not in flight now, and never sent from here on (a
    /// flush that read the entry before skips it, being cancelled).
    func dropIfNeverSent(_ clientMessageId: String) async throws -> Bool {
        guard !schedule.inFlight.contains(clientMessageId) else { return false }
        cancelledSends.insert(clientMessageId)
        let dropped: Bool
        do {
            dropped = try await database.discardNeverSent(clientMessageId: clientMessageId)
        } catch {
            cancelledSends.remove(clientMessageId)
            throw error
        }
        // Dropped: it stays cancelled, for a flush still preparing it; else it may go as usual.
        if dropped { forgetSend(clientMessageId) } else { cancelledSends.remove(clientMessageId) }
        return dropped
    }

    /// What the client keeps in memory and on disk for a send that is settled or dropped.
    func forgetSend(_ clientMessageId: String) {
        outboxFiles.release(clientMessageId: clientMessageId)
        sendStartedAt[LocalMessage.id(senderId: userId, clientMessageId: clientMessageId)] = nil
        schedule.settled(clientMessageId)
    }

    /// Deletes on the server the messages deleted while on their way that now have an id
    /// there; the others wait for their answer. A refusal (the server will not delete it) ends
    /// the revoke and the message shows as the server has it.
    func flushRevokes() async {
        await loadPendingRevokes()
        guard !revokesPending.isEmpty, !signInRequired else { return }
        // One flush at a time; a call meanwhile makes it look once more (what it asked for may
        // have changed since the running one read the table).
        await inSingleFlight(.revokes, waiting: false) { await flushRevokesOnce() }
    }

    /// One pass over the pending revokes; false when the server did not answer.
    private func flushRevokesOnce() async -> Bool {
        guard let revokes = try? await database.pendingRevokes(senderId: userId) else { return false }
        for revoke in revokes {
            let id = revoke.clientMessageId
            do {
                if let serverId = revoke.serverId {
                    if !revoke.isDeleted {
                        let tombstone = try await transport.deleteMessage(serverId, in: revoke.conversationId)
                        try await database.apply([tombstone])
                    }
                } else if revoke.outboxState == "queued" {
                    continue  // still on its way
                } else if revoke.outboxState == "failed" {
                    try await discard(clientMessageId: id, in: revoke.conversationId)
                } else {
                    // Neither in the outbox nor here: the copy will come with a catch-up.
                    continue
                }
                try await database.finishRevoke(clientMessageId: id, senderId: userId)
                revokesPending.remove(id)
            } catch let error as ClientError where error.code == .unauthorized {
                requireSignIn()
                return false
            } catch let error as ClientError where !error.isTransient {
                logger.notice("The server would not delete a message", metadata: ["error": "\(error)"])
                try? await database.finishRevoke(clientMessageId: id, senderId: userId)
                revokesPending.remove(id)
            } catch {
                // No answer: deleting again later is safe.
                return false
            }
            notify(.messages(revoke.conversationId))
            notify(.conversations)
        }
        return true
    }

    /// Reads the pending revokes once per run (they survive restarts).
    func loadPendingRevokes() async {
        guard !revokesLoaded else { return }
        revokesLoaded = true
        let stored = (try? await database.pendingRevokes(senderId: userId)) ?? []
        revokesPending.formUnion(stored.map(\.clientMessageId))
    }

    /// The messages with the pending revokes shown as done.
    func overlayPendingRevokes(_ messages: [LocalMessage]) -> [LocalMessage] {
        guard !revokesPending.isEmpty else { return messages }
        let now = environment.now()
        return messages.map { message in
            guard message.senderId == userId, message.deletedAt == nil, revokesPending.contains(message.clientMessageId) else { return message }
            var shown = message
            shown.deletedAt = now
            shown.text = ""
            return shown
        }
    }
}
