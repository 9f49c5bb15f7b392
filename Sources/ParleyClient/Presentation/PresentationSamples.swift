import Foundation
import ParleyProtocol

/// Sample data for SwiftUI previews, screenshots and presentation tests: three people, a direct
/// chat and a group, and a timeline with every status, a reply, reactions, an edit, a deletion,
/// an image, a file, a location and a system line. Nothing here touches a server or a database.
package enum PresentationSamples {
    private static func id(_ n: Int) -> EntityID {
        EntityID(UUID(uuid: (0, 0, 0, 0, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n))))
    }

    /// The organization everyone is in.
    package static let organizationId = id(1)
    /// The signed-in user.
    package static let me = User(id: id(2), organizationId: organizationId, email: "you@acme.io", displayName: "You Rself", isOnline: true)
    /// Someone online.
    package static let ada = User(id: id(3), organizationId: organizationId, email: "ada@acme.io", displayName: "Ada Lovelace", isOnline: true)
    /// Someone last seen an hour before `now`.
    package static func bob(now: Date = Date()) -> User {
        User(id: id(4), organizationId: organizationId, email: "bob@acme.io", displayName: "Bob Byte", isOnline: false,
             lastSeenAt: now.addingTimeInterval(-3600))
    }

    /// Everyone, by id.
    package static func users(now: Date = Date()) -> [EntityID: User] {
        Dictionary(uniqueKeysWithValues: [me, ada, bob(now: now)].map { ($0.id, $0) })
    }

    /// A display-name lookup over ``users(now:)``.
    package static func names(now: Date = Date()) -> @Sendable (EntityID) -> String? {
        let users = users(now: now)
        return { users[$0]?.displayName }
    }

    /// The direct chat with Ada: its timeline is ``messages(now:)``.
    package static let directId = id(10)
    /// The group "Launch" with Ada and Bob.
    package static let groupId = id(11)

    /// The timeline of the direct chat with Ada, oldest first: yesterday's messages, then
    /// today's, ending with own messages in every delivery state.
    package static func messages(now: Date = Date()) -> [LocalMessage] {
        var seq: Int64 = 0
        func message(
            _ sender: User, _ text: String, minutesAgo: Double, type: MessageType = .text, delivery: Delivery? = nil,
            configure: (inout Message) -> Void = { _ in }
        ) -> LocalMessage {
            seq += 1
            var stored = Message(
                id: id(100 + Int(seq)), conversationId: directId, seq: seq, updatedSeq: seq, senderId: sender.id,
                clientMessageId: "sample-\(seq)", type: type, text: text, createdAt: now.addingTimeInterval(-minutesAgo * 60))
            configure(&stored)
            return LocalMessage(stored, delivery: delivery ?? (sender.id == me.id ? .read : .received))
        }
        var list = [
            message(ada, "Ada created the conversation", minutesAgo: 26 * 60, type: .system),
            message(ada, "Are we still on for the launch review?", minutesAgo: 25 * 60) { $0.reactions = ["👍": [me.id]] },
            message(me, "Yes, 10:00 in the big room.", minutesAgo: 24.9 * 60),
            message(ada, "Here is the latest mock-up", minutesAgo: 90, type: .image) {
                $0.attachment = Attachment(id: id(200), name: "mockup.png", contentType: "image/png", size: 482_113,
                                           url: "/api/v1/attachments/sample", width: 1200, height: 800)
            },
            message(ada, "and the plan", minutesAgo: 89, type: .file) {
                $0.attachment = Attachment(id: id(201), name: "launch-plan.pdf", contentType: "application/pdf",
                                           size: 1_310_720, url: "/api/v1/attachments/sample2")
            },
            message(me, "Looks great! 🎉", minutesAgo: 60) { $0.reactions = ["❤️": [ada.id], "👍": [ada.id]] },
            message(ada, "We meet here", minutesAgo: 45, type: .location) {
                $0.metadata = ["latitude": "51.5246", "longitude": "-0.1340", "name": "British Library"]
            },
            message(ada, "Oops, wrong file", minutesAgo: 44) { $0.deletedAt = now.addingTimeInterval(-43 * 60) },
            message(me, "See you at ten (fixed the time)", minutesAgo: 30) { $0.editedAt = now.addingTimeInterval(-29 * 60) },
        ]
        let quoted = list[1].serverId
        list.append(message(me, "Agenda attached to the invite", minutesAgo: 5, delivery: .delivered) { $0.replyToId = quoted })
        list.append(message(me, "Ping me when you arrive", minutesAgo: 4, delivery: .sent))
        var failed = message(me, "This one the server refused", minutesAgo: 3, delivery: .failed(reason: "message too long"))
        failed.seq = nil
        failed.serverId = nil
        var waiting = message(me, "Written offline, still sending", minutesAgo: 2, delivery: .sending)
        waiting.seq = nil
        waiting.serverId = nil
        list.append(contentsOf: [failed, waiting])
        return list
    }

    /// The direct chat with Ada and the group "Launch", as the list shows them.
    package static func conversations(now: Date = Date()) -> [Conversation] {
        let messages = messages(now: now)
        let lastStored = messages.last { $0.seq != nil }
        let last = lastStored.flatMap { local -> Message? in
            guard let serverId = local.serverId, let seq = local.seq else { return nil }
            return Message(id: serverId, conversationId: directId, seq: seq, updatedSeq: seq, senderId: local.senderId,
                           clientMessageId: local.clientMessageId, type: local.type, text: local.text, createdAt: local.createdAt)
        }
        let groupLast = Message(
            id: id(300), conversationId: groupId, seq: 41, updatedSeq: 41, senderId: bob(now: now).id,
            clientMessageId: "sample-g41", type: .text, text: "Slides are in the shared folder",
            createdAt: now.addingTimeInterval(-26 * 3600))
        return [
            Conversation(id: directId, type: .direct, participantIds: [me.id, ada.id], createdAt: now.addingTimeInterval(-26 * 3600),
                         lastActivityAt: last?.createdAt ?? now, lastSeq: last?.seq ?? 0, lastMessage: last,
                         unreadCount: 0, readSeq: last?.seq ?? 0, members: []),
            Conversation(id: groupId, type: .group, name: "Launch", participantIds: [me.id, ada.id, bob(now: now).id],
                         createdAt: now.addingTimeInterval(-9 * 86400), lastActivityAt: groupLast.createdAt, lastSeq: 41,
                         lastMessage: groupLast, unreadCount: 3, readSeq: 38, members: []),
        ]
    }

    /// The list's rows, titled as ``ConversationListModel`` titles them.
    package static func rows(now: Date = Date()) -> [ConversationRow] {
        conversations(now: now).map { conversation in
            ConversationRow(conversation: conversation, title: conversation.name ?? ada.displayName)
        }
    }
}
