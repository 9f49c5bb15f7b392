import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ParleyProtocol
import ServiceLifecycle
import Synchronization
import UnixSignals
import ParleyStorage

extension ParleyApp {
    /// How a conversation's orderer fills a gap it waited for in vain: the changes after the
    /// last event it handed on, read from the store as one recipient may see them, announced as
    /// `message.created` (new since then) or `message.updated`.
    static func missingEvents(store: any ParleyStore, blocks: BlockDirectory, logger: Logger) -> ConversationOrder.MissingEvents {
        { conversationId, viewer, after, before in
            // Nothing lies strictly between: nothing to read.
            guard before - after > 1 else { return [] }
            do {
                let page = try await store.changes(
                    conversationId: conversationId, viewer: viewer, since: after, limit: Int(min(before - after, 1000)))
                let encoder = WireCoding.makeEncoder()
                let recipients = try await store.participantIds(conversationId: conversationId)
                var events: [ConversationOrder.Event] = []
                for message in page.messages where message.updatedSeq < before {
                    func frame(_ message: Message) throws -> ByteBuffer {
                        let event: ServerEvent = message.seq > after ? .messageCreated(.init(message: message)) : .messageUpdated(.init(message: message))
                        return ByteBuffer(bytes: try encoder.encode(event))
                    }
                    // Those who block the sender get it marked, as the live path gives it.
                    let blockers = message.type == .system ? [] : await blocks.blockers(of: message.senderId)
                    var event = ConversationOrder.Event(
                        seq: message.updatedSeq, frame: try frame(message), recipients: recipients.filter { !blockers.contains($0) })
                    let apart = recipients.filter(blockers.contains)
                    if !apart.isEmpty {
                        var marked = message
                        marked.senderBlocked = true
                        event.variants = [.init(frame: try frame(marked), recipients: apart)]
                    }
                    events.append(event)
                }
                return events
            } catch {
                logger.warning("Could not read a conversation's missing events", metadata: ["error": "\(error)"])
                return []
            }
        }
    }
}
