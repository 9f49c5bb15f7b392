import Foundation
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import Testing

/// The coalescing rules alone, with time passed in.
@Suite struct PushCoalescerTests {
    static func message(_ n: Int, in conversation: EntityID) -> Message {
        Message(
            id: EntityID(), conversationId: conversation, seq: Int64(n), updatedSeq: Int64(n), senderId: EntityID(),
            clientMessageId: "m\(n)", type: .text, text: "text \(n)", createdAt: Date(timeIntervalSince1970: 0))
    }

    @Test func firstGoesAtOnceTheRestMergeUntilTheWindowEnds() {
        var coalescer = PushCoalescer(window: 2)
        let conversation = EntityID(), user = EntityID()
        let key = PushCoalescer.Key(userId: user, conversationId: conversation)
        let t0 = Date(timeIntervalSince1970: 1000)
        let m = (1...5).map { Self.message($0, in: conversation) }
        #expect(coalescer.offer(m[0], for: key, now: t0) == .sendNow(.init(message: m[0], count: 1)))
        #expect(coalescer.offer(m[1], for: key, now: t0 + 0.5) == .scheduleFlush(at: t0 + 2))
        #expect(coalescer.offer(m[2], for: key, now: t0 + 1.9) == .merged)
        #expect(coalescer.flush(key, now: t0 + 2) == .init(message: m[2], count: 2))
        #expect(coalescer.flush(key, now: t0 + 2) == nil, "flushed once")
        // The follow-up opened a new window: a message right after merges again.
        #expect(coalescer.offer(m[3], for: key, now: t0 + 3) == .scheduleFlush(at: t0 + 4))
        #expect(coalescer.flush(key, now: t0 + 4) == .init(message: m[3], count: 1))
        // After a quiet window, at once again.
        #expect(coalescer.offer(m[4], for: key, now: t0 + 6.5) == .sendNow(.init(message: m[4], count: 1)))
    }

    @Test func usersAndConversationsHaveTheirOwnWindowsAndClosedOnesAreForgotten() {
        var coalescer = PushCoalescer(window: 2)
        let t0 = Date(timeIntervalSince1970: 1000)
        let a = EntityID(), b = EntityID(), u1 = EntityID(), u2 = EntityID()
        let message = Self.message(1, in: a)
        #expect(coalescer.offer(message, for: .init(userId: u1, conversationId: a), now: t0) == .sendNow(.init(message: message, count: 1)))
        #expect(coalescer.offer(message, for: .init(userId: u2, conversationId: a), now: t0) == .sendNow(.init(message: message, count: 1)))
        #expect(coalescer.offer(message, for: .init(userId: u1, conversationId: b), now: t0) == .sendNow(.init(message: message, count: 1)))
        // Many users later, the closed windows are pruned: memory stays bounded.
        for n in 0..<1000 {
            _ = coalescer.offer(message, for: .init(userId: EntityID(), conversationId: a), now: t0 + 10 + Double(n) * 0.01)
        }
        #expect(coalescer.openWindows < 600)
    }

    @Test func thePayloadFollowsTheContract() throws {
        var message = Self.message(1, in: EntityID())
        message.text = String(repeating: "x", count: 1000)
        let long = PushNotificationPayload(message: message, senderName: "Alice", badge: 7, messageCount: 3)
        #expect(long.aps.alert.body.count == PushNotificationPayload.maxBodyCharacters)
        #expect(long.aps.alert.body.hasSuffix("…"))
        #expect(long.aps.alert.subtitle == "3 new messages")
        #expect(long.aps.badge == 7)
        message.text = ""
        message.type = .image
        #expect(PushNotificationPayload(message: message, senderName: "A", badge: nil).aps.alert.body == "📷 Photo")
        let json = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(long)) as? [String: Any])
        let aps = try #require(json["aps"] as? [String: Any])
        #expect(Set(aps.keys) == ["alert", "badge", "sound", "thread-id", "category", "mutable-content"])
        #expect(json["type"] as? String == "chat_message")
        #expect(json["conversationId"] is String && json["messageId"] is String && json["senderId"] is String)
    }
}
