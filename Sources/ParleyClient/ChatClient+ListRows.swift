import Foundation
import ParleyProtocol

/// The conversation list kept current from live events: every `message.created` and
/// `message.updated` moves its conversation's row at once, and a large group's
/// `conversation.activity` (sent in place of per-member views) is applied the same way. A row
/// that cannot follow exactly (a missed event) is read again from the server.
extension ChatClient {
    /// Applies a live message change to its conversation's list row.
    func applyToListRow(_ message: Message, changeSeq: Int64) async throws {
        switch try await database.applyToListRow(message, changeSeq: changeSeq, viewer: userId) {
        case .applied: notify(.conversations)
        case .stale: await refreshListRow(message.conversationId)
        }
    }

    /// Applies a large group's `conversation.activity`.
    func apply(activity: ConversationActivityEvent) async throws {
        switch try await database.apply(activity: activity, viewer: userId) {
        case .applied: notify(.conversations)
        case .stale: await refreshListRow(activity.conversationId)
        }
    }

    /// Reads one conversation's view again (a row that missed an event); one read at a time
    /// per conversation, and one more if another miss came in meanwhile.
    func refreshListRow(_ conversationId: EntityID) async {
        await inSingleFlight(.listRow(conversationId), waiting: false) {
            do {
                let view = try await transport.conversation(conversationId)
                readCounts.networkReads += 1
                try await database.store(conversation: view)
                notify(.conversations)
                return true
            } catch let error as ClientError where error.code == .notFound {
                // No longer this user's (left, removed): the row goes.
                try? await database.forget(conversations: [conversationId])
                notify(.conversations)
                return false
            } catch {
                logger.debug("Could not read a conversation again; the next sync will", metadata: ["error": "\(error)"])
                return false
            }
        }
    }
}
