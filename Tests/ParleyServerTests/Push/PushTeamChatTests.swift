import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// Team chat's push rules against the APNs double: a muted conversation notifies its muter only of
/// mentions and adds nothing to their badge; a thread reply notifies the thread's members only.
@Suite struct PushTeamChatTests {
    @Test func muteHoldsBackAllButMentionsAndThreadRepliesReachTheirMembers() async throws {
        let push = try await PushHarness.start()
        defer { Task { await push.stop() } }
        let alice = try await push.server.register("alice@x.io")
        let bob = try await push.server.register("bob@x.io")
        let carol = try await push.server.register("carol@x.io")
        let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id, carol.id], name: "Ops"))
        for (n, user) in [alice, bob, carol].enumerated() { try await push.register(user, token: deviceToken(n + 1)) }
        _ = try await bob.api.setMuted(true, in: group.id)

        // A plain message: carol is notified, bob (muted) is not.
        let plain = try await alice.api.send(.init(clientMessageId: "p1", text: "deploy at five"), to: group.id)
        #expect(await push.apns.waitForRequests(1).map(\.token) == [deviceToken(3)])
        push.clock.advance(by: 3)

        // A mention reaches bob through his mute; his badge leaves the muted conversation out.
        _ = try await alice.api.send(.init(clientMessageId: "p2", text: "@Bob ok?", mentions: [bob.id]), to: group.id)
        let afterMention = await push.apns.waitForRequests(3)
        let toBob = try #require(afterMention.first { $0.token == deviceToken(2) })
        let payload = try JSONDecoder().decode(PushNotificationPayload.self, from: toBob.body)
        #expect(payload.aps.alert.body == "@Bob ok?")
        #expect(payload.aps.badge == 0, "a muted conversation adds nothing to the badge")
        #expect(try await bob.api.conversation(group.id).unreadCount == 2, "unread still counts")
        push.clock.advance(by: 3)

        // A thread reply by carol on alice's message: alice (the root's sender) only.
        let before = push.apns.received.count
        _ = try await carol.api.send(.init(clientMessageId: "r1", text: "on it", threadRootId: plain.id), to: group.id)
        let afterReply = await push.apns.waitForRequests(before + 1)
        #expect(afterReply.dropFirst(before).map(\.token) == [deviceToken(1)])
        // Nothing more arrives for bob or carol: the next push (alice's plain message) is carol's.
        push.clock.advance(by: 3)
        _ = try await alice.api.send(.init(clientMessageId: "p3", text: "thanks"), to: group.id)
        let last = await push.apns.waitForRequests(before + 2)
        #expect(last.dropFirst(before).map(\.token) == [deviceToken(1), deviceToken(3)])
    }
}
