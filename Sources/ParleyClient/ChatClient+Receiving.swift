import Foundation
import Logging
import ParleyProtocol

extension ChatClient {
    // MARK: Receiving

    func receive(_ event: ServerEvent, generation: Int) async {
        guard generation == channelGeneration else { return }
        feed(.frameReceived(at: environment.uptime()))
        do {
            switch event {
            case .messageCreated(let payload):
                try await applyLive(payload.message, changeSeq: payload.message.seq)
                try await applyToListRow(payload.message, changeSeq: payload.message.seq)
            case .messageUpdated(let payload):
                try await applyLive(payload.message, changeSeq: payload.message.updatedSeq)
                try await applyToListRow(payload.message, changeSeq: payload.message.updatedSeq)
            case .conversationActivity(let activity):
                try await apply(activity: activity)
            case .conversationUpdated(let payload):
                // Without this user among its participants: they left or were removed (the
                // server sends this one event, then nothing more); the row and its messages go.
                // (A large group's view may list no participants at all: that says nothing.)
                let participants = payload.conversation.participantIds
                if !participants.isEmpty, !participants.contains(userId) {
                    try await database.forget(conversations: [payload.conversation.id])
                    notify(.conversations)
                    notify(.messages(payload.conversation.id))
                    return
                }
                if try await database.store(conversation: payload.conversation) == .stale {
                    await refreshListRow(payload.conversation.id)
                }
                notify(.conversations)
                if let synced = try await database.syncedSeq(payload.conversation.id), payload.conversation.lastSeq > synced {
                    await catchUp(payload.conversation.id)
                }
            case .receipt(let receipt):
                try await database.apply(receipt: receipt)
                notify(.messages(receipt.conversationId))
                notify(.conversations)
            case .typing(let typing):
                receivedTyping(typing)
            case .presence(let presence):
                presenceSerial += 1
                presenceApplied[presence.userId] = presenceSerial
                try await database.apply(presence: presence)
                notify(.directory)
            case .userUpdated(let payload):
                try await database.apply(profile: payload.user)
                notify(.directory)
                notify(.conversations)
            case .receiptSummary(let summary):
                if summary.seq >= receiptSummaries[summary.conversationId]?.seq ?? 0 {
                    receiptSummaries[summary.conversationId] = summary
                }
                notify(.messages(summary.conversationId))
            case .typingSummary(let summary):
                typingCounts[summary.conversationId] = (summary.count, environment.uptime())
                notify(.typing(summary.conversationId))
            case .hello:
                break
            }
        } catch {
            logger.warning("Could not apply an event", metadata: ["type": "\(event.type)", "error": "\(error)"])
        }
    }

    func applyLive(_ message: Message, changeSeq: Int64) async throws {
        switch try await database.applyLive(message, changeSeq: changeSeq) {
        case .applied:
            notify(.messages(message.conversationId))
            if message.senderId != userId {
                typingIn.clear(conversation: message.conversationId, user: message.senderId)
                notify(.typing(message.conversationId))
            }
            await markDeliveredUpToSynced(message.conversationId)
        case .gap:
            readCounts.gapCatchUps += 1
            await catchUp(message.conversationId)
        case .untracked:
            // Our own message from another device, or a conversation never opened here: its
            // list row follows (applyToListRow); its messages load when it is opened.
            if message.senderId == userId { try await database.apply([message]) }
        }
    }
}
