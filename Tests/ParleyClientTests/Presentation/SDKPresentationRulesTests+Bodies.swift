import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

extension SDKPresentationRulesTests {
    /// Someone else's message has no mark, even if its delivery state were not `received`.
    @Test func othersMessagesHaveNoMark() {
        #expect(ChatPresentation.StatusMark(.received) == nil)
        let items = timeline([local(ada, at: Self.now, delivery: .read), local(ada, at: Self.now, delivery: .received)])
        #expect(bubbles(items).map(\.status) == [nil, nil])
    }

    /// Deleted messages show the notice, no attachment and no "edited"; edits show "edited";
    /// replies quote the first line (cut at 60), say "You" for mine, "deleted message" for a
    /// deleted one and "an earlier message" when the quoted one is not loaded.
    @Test func bodiesRepliesAndEditsOfDeletedAndEditedMessages() {
        let quoted = EntityID(), mine = EntityID(), gone = EntityID()
        let long = String(repeating: "x", count: 70)
        let file = ParleyProtocol.Attachment(id: EntityID(), name: "a.pdf", contentType: "application/pdf", size: 2048, url: "/a")
        let items = timeline([
            local(ada, at: Self.now, text: long + "\nsecond line", serverId: quoted),
            local(me, at: Self.now, text: "mine", serverId: mine),
            local(ada, at: Self.now, text: "secret", type: .file, deleted: true, edited: true, serverId: gone, attachment: file),
            local(bob, at: Self.now, text: "r1", replyTo: quoted),
            local(bob, at: Self.now, text: "r2", replyTo: mine),
            local(bob, at: Self.now, text: "r3", replyTo: gone),
            local(bob, at: Self.now, text: "r4", replyTo: EntityID()),
            local(bob, at: Self.now, text: "fixed", edited: true, attachment: file),
        ])
        let shown = bubbles(items)
        #expect(shown[2].body == "This message was deleted" && shown[2].attachmentLine == nil && !shown[2].isEdited)
        #expect(shown[2].cell == .deleted)
        #expect(shown[3].replyPreview == "↪ Ada: " + String(repeating: "x", count: 59) + "…")
        #expect(shown[4].replyPreview == "↪ You: mine")
        #expect(shown[5].replyPreview == "↪ Ada: deleted message")
        #expect(shown[6].replyPreview == "↪ an earlier message")
        #expect(shown[7].isEdited && shown[7].attachmentLine == "📎 a.pdf (2 KB)")
        #expect(shown[0].replyPreview == nil)
    }

    /// Reactions: most first, ties by emoji, empty lists dropped; mine are the ones I can undo.
    @Test func reactionLinesAndMine() {
        let reactions: [String: [EntityID]] = ["👍": [ada, bob], "❤️": [me], "🎉": [bob], "😢": []]
        #expect(ChatPresentation.reactionLine(reactions) == "👍 2  ❤️ 1  🎉 1")
        #expect(ChatPresentation.reactionLine([:]) == "")
        let items = timeline([local(ada, at: Self.now, reactions: reactions)])
        #expect(bubbles(items).first?.myReactions == ["❤️"])
        #expect(bubbles(items).first?.reactions == "👍 2  ❤️ 1  🎉 1")
    }

    /// The banner says what the connection is doing and what waits to send; the reconnect
    /// countdown never shows "0 s" and rounds up.
    @Test(arguments: [
        (ConnectionState.connected, false, 0, nil as String?), (.connected, false, 4, nil), (.connected, true, 0, "Syncing…"),
        (.connected, true, 2, "Syncing… · sending 2"), (.connecting, false, 0, "Connecting…"),
        (.connecting, false, 3, "Connecting… · 3 waiting to send"), (.disconnected, false, 0, "Offline"),
        (.disconnected, true, 1, "Offline · 1 waiting to send"),
        (.reconnecting(attempt: 1, retryIn: .milliseconds(200)), false, 0, "Offline · reconnecting in 1 s"),
        (.reconnecting(attempt: 2, retryIn: .milliseconds(1500)), false, 0, "Offline · reconnecting in 2 s"),
        (.reconnecting(attempt: 3, retryIn: .seconds(4)), false, 0, "Offline · reconnecting in 4 s"),
        (.reconnecting(attempt: 8, retryIn: .seconds(30)), false, 5, "Offline · reconnecting in 30 s · 5 waiting to send"),
        (.reconnecting(attempt: 1, retryIn: .zero), false, 0, "Offline · reconnecting in 1 s"),
        (.failed, false, 0, "Offline · can't reach the server"),
        (.failed, false, 2, "Offline · can't reach the server · 2 waiting to send"),
    ])
    func bannerTexts(state: ConnectionState, syncing: Bool, outbox: Int, text: String?) {
        #expect(ChatPresentation.banner(state, syncing: syncing, outboxCount: outbox) == text)
    }

    /// System messages read as who did what, by name, from their metadata (the server's text
    /// names nobody); one without a known action keeps its text.
    @Test func systemMessagesSayWhoDidWhat() {
        let me = EntityID(), ada = EntityID(), bob = EntityID(), dan = EntityID()
        let names: (EntityID) -> String? = { [ada: "Ada", bob: "Bob"][$0] }
        func line(_ metadata: [String: String]?, by actor: EntityID, _ text: String = "x") -> String {
            ChatPresentation.systemLine(text, metadata: metadata, by: actor, me: me, names: names)
        }
        #expect(line(["action": "renamed", "name": "Launch"], by: me) == "You renamed the group to “Launch”")
        #expect(line(["action": "participants.added", "userIds": "\(bob)"], by: ada) == "Ada added Bob")
        #expect(line(["action": "participants.added", "userIds": "\(bob),\(me),\(dan)"], by: ada) == "Ada added Bob, you and Someone")
        #expect(line(["action": "participant.removed", "userId": "\(ada)"], by: me) == "You removed Ada")
        #expect(line(["action": "participant.left", "userId": "\(bob)"], by: bob) == "Bob left")
        #expect(line(nil, by: ada, "Ada created the conversation") == "Ada created the conversation")
        #expect(line(["action": "archived"], by: dan, "") == "Someone changed the conversation")
    }

    /// "New messages" goes above the first message from someone else past the watermark the
    /// chat was opened with (not above one's own, nor a system line), which starts a group; no
    /// watermark, or none past it, no line.
    @Test func theUnreadLineGoesAboveTheFirstUnreadMessage() {
        func at(_ seq: Int64, _ sender: EntityID, _ text: String, type: MessageType = .text) -> LocalMessage {
            LocalMessage(Message(
                id: EntityID(), conversationId: EntityID(), seq: seq, updatedSeq: seq, senderId: sender, clientMessageId: "c\(seq)",
                type: type, text: text, createdAt: Self.now.addingTimeInterval(Double(seq)) ), delivery: sender == me ? .sent : .received)
        }
        let messages = [at(1, ada, "a1"), at(2, ada, "a2"), at(3, me, "mine"), at(4, ada, "joined", type: .system), at(5, ada, "a5"), at(6, ada, "a6")]
        func shaped(_ after: Int64?) -> [String] {
            shape(ChatPresentation.timeline(messages, me: me, names: names, now: Self.now, calendar: Self.utc, unreadAfter: after))
        }
        #expect(shaped(2) == ["D:Today", "+a1", "·a2", "+mine", "N:joined", "U:New messages", "+a5", "·a6"])
        #expect(shaped(0) == ["D:Today", "U:New messages", "+a1", "·a2", "+mine", "N:joined", "+a5", "·a6"])
        #expect(shaped(nil) == ["D:Today", "+a1", "·a2", "+mine", "N:joined", "+a5", "·a6"])
        #expect(shaped(6) == shaped(nil), "nothing past the watermark")
    }

    /// The terminal's bell: a new unread message in another conversation rings; the open one,
    /// reading, the first list and an unchanged list do not.
    @Test func theBellRingsForANewMessageElsewhereOnly() {
        let open = EntityID(), other = EntityID(), fresh = EntityID()
        #expect(!ChatPresentation.shouldRing(previousUnread: nil, currentUnread: [other: 5], open: nil), "the first list")
        #expect(ChatPresentation.shouldRing(previousUnread: [other: 1, open: 0], currentUnread: [other: 2, open: 0], open: open))
        #expect(!ChatPresentation.shouldRing(previousUnread: [other: 1, open: 0], currentUnread: [other: 1, open: 3], open: open), "on screen")
        #expect(!ChatPresentation.shouldRing(previousUnread: [other: 4], currentUnread: [other: 0], open: nil), "read")
        #expect(!ChatPresentation.shouldRing(previousUnread: [other: 4], currentUnread: [other: 4], open: nil))
        #expect(ChatPresentation.shouldRing(previousUnread: [other: 0], currentUnread: [other: 0, fresh: 1], open: nil), "a new conversation")
        #expect(!ChatPresentation.shouldRing(previousUnread: [other: 0], currentUnread: [other: 0, fresh: 0], open: nil))
    }

    /// A phone's banner names no terminal command (it has a retry button); the terminal's
    /// names its `/retry`, and only once the client gave up.
    @Test func onlyTheTerminalsBannerNamesItsRetryCommand() {
        #expect(ChatPresentation.banner(.failed, outboxCount: 2, retryHint: "/retry") == "Offline · can't reach the server (/retry) · 2 waiting to send")
        #expect(ChatPresentation.banner(.reconnecting(attempt: 1, retryIn: .seconds(2)), retryHint: "/retry") == "Offline · reconnecting in 2 s")
        for state in [ConnectionState.failed, .disconnected, .connecting, .reconnecting(attempt: 3, retryIn: .seconds(4))] {
            #expect(ChatPresentation.banner(state, outboxCount: 1)?.contains("/") == false, "\(state)")
        }
    }

    /// Badges and counts at their edges.
    @Test func badgesByteCountsAndJumpButtonsAtTheirEdges() {
        #expect([-3, 0, 1, 9, 99, 100, 12_345].map(ChatPresentation.badge) == ["", "", "1", "9", "99", "99+", "99+"])
        let sizes: [Int64] = [0, 1023, 1024, 1025, 1_048_575, 1_048_576, 1_572_864, 5_000_000_000]
        #expect(sizes.map(ChatPresentation.byteCount) == ["0 B", "1023 B", "1 KB", "1 KB", "1023 KB", "1.0 MB", "1.5 MB", "4768.4 MB"])
        #expect([-1, 0, 1, 99, 100].map(ChatPresentation.jumpToNewest) == ["↓", "↓", "↓ 1 new", "↓ 99 new", "↓ 99+ new"])
        let image = ParleyProtocol.Attachment(id: EntityID(), name: "cat.png", contentType: "image/png", size: 1_572_864, url: "/c")
        #expect(ChatPresentation.attachmentLine(image) == "🖼 cat.png (1.5 MB)")
    }

    /// First lines are cut to exactly `max` characters with the ellipsis counted; the text up
    /// to `max` is kept whole, and grapheme clusters (emoji) count as one.
    @Test(arguments: [
        ("short", 10, "short"), ("exactly10!", 10, "exactly10!"), ("eleven chr!", 10, "eleven ch…"),
        ("line one\nline two", 80, "line one"), ("\nafter a blank line", 80, ""), ("", 5, ""),
        ("👩‍👩‍👧‍👦👩‍👩‍👧‍👦👩‍👩‍👧‍👦", 2, "👩‍👩‍👧‍👦…"),
    ])
    func firstLines(text: String, max: Int, expected: String) {
        #expect(ChatPresentation.firstLine(text, max: max) == expected)
    }

    /// Previews in the list: a direct chat shows the other person's text bare and mine with
    /// "You:", a group names every sender; deleted, system, attachment-only and empty cases.
    @Test func previewsNameTheSenderWhereItHelps() {
        let world = SDKWorld()
        func preview(_ type: ConversationType, _ last: Message?) -> String {
            let conversation = world.conversation(type: type, lastSeq: 1, lastMessage: last)
            return ChatPresentation.preview(conversation, me: world.me, names: { $0 == world.other ? "Ada" : nil })
        }
        let theirs = world.message(1, from: world.other, text: "hello\nthere")
        let mine = world.message(1, from: world.me, text: "hi")
        let stranger = world.message(1, from: world.third, text: "yo")
        var attachmentOnly = world.message(1, from: world.other, text: "")
        attachmentOnly.attachment = ParleyProtocol.Attachment(id: EntityID(), name: "doc.pdf", contentType: "application/pdf", size: 100, url: "/d")
        #expect(preview(.direct, theirs) == "hello")
        #expect(preview(.direct, mine) == "You: hi")
        #expect(preview(.group, theirs) == "Ada: hello")
        #expect(preview(.group, mine) == "You: hi")
        #expect(preview(.group, stranger) == "Someone: yo")
        #expect(preview(.direct, attachmentOnly) == "📎 doc.pdf (100 B)")
        #expect(preview(.group, world.message(1, from: world.other, deleted: true)) == "This message was deleted")
        #expect(preview(.group, world.message(1, from: world.other, text: "Ada renamed the group", type: .system)) == "Ada renamed the group")
        #expect(preview(.group, world.message(1, from: world.other, text: String(repeating: "y", count: 100))) == "Ada: " + String(repeating: "y", count: 79) + "…")
        #expect(preview(.direct, nil) == "No messages yet")
    }

    /// List rows: an unnamed group gets "#", the badge caps at 99+, the spoken label counts
    /// unread and says online only for an online peer; a typing line replaces the preview.
    @Test func listRowsForUnnamedGroupsAndBigBadges() {
        let world = SDKWorld()
        var group = world.conversation(type: .group, lastSeq: 300, unread: 250, lastMessage: world.message(300, from: world.other, text: "last"))
        group.lastActivityAt = Self.now.addingTimeInterval(-60)
        let users = [world.other: User(id: world.other, organizationId: EntityID(), email: "a@x.io", displayName: "Ada Lovelace", isOnline: true)]
        let row = ChatPresentation.listRow(
            ConversationRow(conversation: group, title: "Ada Lovelace, Bob"), me: world.me, users: users, now: Self.now, calendar: Self.utc)
        #expect(row.initials == "#" && row.badge == "99+" && row.presence == nil)
        #expect(row.time == "15:29")
        #expect(row.preview == "Ada Lovelace: last")
        #expect(row.accessibilityLabel == "Ada Lovelace, Bob, 250 unread, Ada Lovelace: last")
        let typing = ChatPresentation.listRow(
            ConversationRow(conversation: group, title: "G"), me: world.me, users: users, typing: "", now: Self.now, calendar: Self.utc)
        #expect(!typing.isTyping && typing.preview == "Ada Lovelace: last", "an empty typing line is no typing line")
        let direct = world.conversation(type: .direct, lastSeq: 0)
        let directRow = ChatPresentation.listRow(ConversationRow(conversation: direct, title: "Ada Lovelace"), me: world.me, users: users, now: Self.now)
        #expect(directRow.presence == .online && directRow.accessibilityLabel == "Ada Lovelace, online, No messages yet")
        #expect(directRow.initials == "AL" && directRow.badge == "" && directRow.time == "")
    }

    /// Subtitles: one member is singular; a direct chat with someone not in the directory is
    /// blank rather than "offline".
    @Test func subtitlesForSmallGroupsAndUnknownPeople() {
        let world = SDKWorld()
        var solo = world.conversation(type: .group, lastSeq: 0)
        solo.memberCount = 1
        #expect(ChatPresentation.subtitle(solo, me: world.me, users: [:]) == "1 member")
        solo.memberCount = 250
        #expect(ChatPresentation.subtitle(solo, me: world.me, users: [:]) == "250 members")
        #expect(ChatPresentation.subtitle(world.conversation(lastSeq: 0), me: world.me, users: [:]) == "")
    }

    /// A title is worked out when shown: a direct chat listed before the directory arrived
    /// (a first sign-in) says "Someone" only until the name is known, then the name.
    @Test func aConversationTitleFollowsNamesThatArriveLater() {
        let me = EntityID(), bob = EntityID(), carol = EntityID()
        let direct = Conversation(
            id: EntityID(), type: .direct, participantIds: [me, bob], createdAt: Date(), lastActivityAt: Date(), lastSeq: 0,
            unreadCount: 0, readSeq: 0, members: [])
        var known: [EntityID: String] = [:]
        #expect(ChatPresentation.title(direct, me: me, names: { known[$0] }) == "Someone")
        known[bob] = "Bob"
        #expect(ChatPresentation.title(direct, me: me, names: { known[$0] }) == "Bob")
        var group = direct
        group.participantIds = [me, bob, carol]
        #expect(ChatPresentation.title(group, me: me, names: { known[$0] }) == "Bob, Someone")
        group.name = "Planning"
        #expect(ChatPresentation.title(group, me: me, names: { known[$0] }) == "Planning")
        group.name = nil
        group.participantIds = [me]
        #expect(ChatPresentation.title(group, me: me, names: { known[$0] }) == "Just you")
    }
}
