import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// What a chat screen shows, decided in plain Swift (shared by the terminal client and the
/// SwiftUI screens, which only lay it out): cells, list rows, subtitles, times, and the
/// first-run list that the README's sample reads.
@Suite struct PresentationTests {
    static var utc: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        return calendar
    }

    /// Tuesday 24 Nov 2026, 15:30 UTC.
    static let now = Date(timeIntervalSince1970: 1_795_534_200)

    /// A blocked sender's words and files are folded away in the timeline and the list
    /// row; an admin's delete reads differently from the sender's own.
    @Test func blockedSendersAndAdminDeletesReadAsSuch() throws {
        let ada = PresentationSamples.messages(now: Self.now).first { $0.senderId != PresentationSamples.me.id && $0.type == .text }!
        var blocked = ada
        blocked.senderBlocked = true
        blocked.preview = LinkPreview(url: "https://example.com", title: "Example")
        var removed = ada
        removed.deletedAt = Self.now
        removed.deletedBy = PresentationSamples.me.id
        var ownDelete = ada
        ownDelete.deletedAt = Self.now
        ownDelete.deletedBy = ada.senderId
        #expect(ChatPresentation.body(of: blocked) == "Message from a blocked user")
        #expect(ChatPresentation.body(of: removed) == "Removed by an admin")
        #expect(ChatPresentation.body(of: ownDelete) == "This message was deleted")
        #expect(ChatPresentation.body(of: ada) == ada.text)
        // Search results too: the blocked sender's snippet is not shown.
        var hit = Message(id: EntityID(), conversationId: ada.conversationId, seq: 12, updatedSeq: 12, senderId: ada.senderId,
                          clientMessageId: "c12", type: .text, text: "cheap watches", createdAt: Self.now)
        let found = SearchResult(conversationId: ada.conversationId, seq: 12, message: hit, snippet: "cheap [watches]")
        #expect(ChatPresentation.searchLine(found, sender: "Ada", calendar: Self.utc) == "#12 15:30 Ada: cheap [watches]")
        hit.senderBlocked = true
        let folded = SearchResult(conversationId: ada.conversationId, seq: 12, message: hit, snippet: "cheap [watches]")
        #expect(ChatPresentation.searchLine(folded, sender: "Ada", calendar: Self.utc) == "#12 15:30 Message from a blocked user")
        let items = ChatPresentation.timeline(
            [blocked], me: PresentationSamples.me.id, names: { _ in "Ada" }, now: Self.now, calendar: Self.utc)
        let bubble = try #require(items.compactMap { if case .message(let item) = $0 { item } else { nil } }.first)
        #expect(bubble.body == "Message from a blocked user" && bubble.previewCard == nil && bubble.attachmentLine == nil)
        var message = Message(
            id: EntityID(), conversationId: EntityID(), seq: 1, updatedSeq: 1, senderId: ada.senderId, clientMessageId: "x",
            type: .text, text: "their words", createdAt: Self.now)
        message.senderBlocked = true
        let conversation = Conversation(
            id: message.conversationId, type: .group, name: "Team", participantIds: [], createdAt: Self.now,
            lastActivityAt: Self.now, lastSeq: 1, lastMessage: message, unreadCount: 0, readSeq: 0, members: [])
        #expect(ChatPresentation.preview(conversation, me: PresentationSamples.me.id, names: { _ in "Ada" }) == "Message from a blocked user")
    }

    @Test func theSampleTimelineHasEveryCellAndStatusAScreenMustDraw() throws {
        let messages = PresentationSamples.messages(now: Self.now)
        let items = ChatPresentation.timeline(
            messages, me: PresentationSamples.me.id, names: PresentationSamples.names(now: Self.now), now: Self.now, calendar: Self.utc)
        let days = items.compactMap { if case .day(let title) = $0 { title } else { nil } }
        #expect(days == ["Yesterday", "Today"])
        let notices = items.compactMap { if case .notice(let text, _) = $0 { text } else { nil } }
        #expect(notices == ["Ada created the conversation"])
        let bubbles = items.compactMap { if case .message(let item) = $0 { item } else { nil } }
        #expect(bubbles.count == messages.count - 1)
        #expect(Set(bubbles.map(\.cell)) == [.text, .image, .file, .location, .deleted])
        #expect(Set(bubbles.compactMap(\.status)) == [.read, .delivered, .sent, .failed, .sending])
        #expect(bubbles.filter { $0.status?.canResend == true }.map(\.body) == ["This one the server refused"])
        let deleted = try #require(bubbles.first { $0.cell == .deleted })
        #expect(deleted.body == "This message was deleted" && deleted.attachmentLine == nil && !deleted.isEdited)
        #expect(bubbles.first { $0.body.hasPrefix("See you") }?.isEdited == true)
        #expect(bubbles.first { $0.body.hasPrefix("Agenda") }?.replyPreview == "↪ Ada Lovelace: Are we still on for the launch review?")
        #expect(bubbles.first { $0.body.hasPrefix("Looks great") }?.reactions == "❤️ 1  👍 1")
        #expect(bubbles.first { $0.body.hasPrefix("Looks great") }?.myReactions == [], "Ada reacted, not me")
        #expect(bubbles.first { $0.body.hasPrefix("Are we still on") }?.myReactions == ["👍"])
        #expect(Set(items.map(\.id)).count == items.count, "every item has its own identity")
        #expect(bubbles.first { $0.cell == .file }?.attachmentLine == "📎 launch-plan.pdf (1.2 MB)")
        // VoiceOver hears the kind and the name, not the emoji.
        let file = try #require(bubbles.first { $0.cell == .file }?.message.attachment)
        #expect(ChatPresentation.spokenAttachment(file) == "File, launch-plan.pdf, 1.2 MB")
        let picture = try #require(bubbles.first { $0.cell == .image }?.message.attachment)
        #expect(ChatPresentation.spokenAttachment(picture).hasPrefix("Picture, "))
        var clip = picture
        clip.contentType = "video/quicktime"
        clip.size = 900
        clip.name = "clip.mov"
        #expect(ChatPresentation.spokenAttachment(clip) == "Video, clip.mov, 900 B")
        // Groups: Ada's image and file within five minutes are one group; her location an hour
        // later starts a new one.
        let ada = bubbles.filter { !$0.isOwn }
        #expect(ada.map(\.startsGroup) == [true, true, false, true, false])
        #expect(bubbles.filter(\.isOwn).allSatisfy { $0.senderName == "You" })
    }

    @Test func cellsComeFromTheRegistryAndNeverShowAnEmptyFrame() throws {
        var message = try #require(PresentationSamples.messages(now: Self.now).first { $0.type == .image })
        #expect(ChatPresentation.cell(for: message) == .image)
        message.attachment = nil
        #expect(ChatPresentation.cell(for: message) == .text, "media without its attachment falls back to text")
        var location = try #require(PresentationSamples.messages(now: Self.now).first { $0.type == .location })
        #expect(ChatPresentation.pin(of: location) == .init(latitude: 51.5246, longitude: -0.1340, name: "British Library"))
        location.metadata?["latitude"] = "91"
        #expect(ChatPresentation.pin(of: location) == nil)
        #expect(ChatPresentation.cell(for: location) == .text)

        // An app's own component for a type comes back as its identifier.
        var registry = MessageComponentRegistry()
        registry.register(MessageComponent(identifier: "poll"), for: .location)
        location.metadata?["latitude"] = "10"
        #expect(ChatPresentation.cell(for: location, registry: registry) == .custom("poll"))
    }

    /// Who reacted: the user first as "You", then the others in the order they reacted; the
    /// emoji in the order of the counts line; any emoji, not only the quick ones.
    @Test func whoReactedReadsInTheCountsOrder() {
        let me = PresentationSamples.me.id, ada = PresentationSamples.ada.id, bob = PresentationSamples.bob().id
        let names = PresentationSamples.names(now: Self.now)
        let reactions: [String: [EntityID]] = ["🦄": [bob], "👍": [ada, me, bob], "❤️": [], "🎉": [ada]]
        #expect(ChatPresentation.reactionLine(reactions) == "👍 3  🎉 1  🦄 1")
        #expect(ChatPresentation.reactionPeople(reactions, me: me, names: names) == "👍 You, Ada Lovelace, Bob Byte; 🎉 Ada Lovelace; 🦄 Bob Byte")
        #expect(ChatPresentation.reactionPeople([:], me: me, names: names) == "")
        #expect(ChatPresentation.reactionPeople(["👀": [EntityID()]], me: me, names: names) == "👀 Someone")
    }

    @Test func listRowsSayWhoWhatWhenAndHowManyUnread() throws {
        let users = PresentationSamples.users(now: Self.now)
        let rows = PresentationSamples.rows(now: Self.now)
        let me = PresentationSamples.me.id
        let direct = ChatPresentation.listRow(rows[0], me: me, users: users, now: Self.now, calendar: Self.utc)
        #expect(direct.title == "Ada Lovelace" && direct.initials == "AL")
        #expect(direct.presence == .online && direct.badge == "" && !direct.isTyping)
        #expect(direct.preview == "You: Ping me when you arrive")
        #expect(direct.time == "15:26")
        let group = ChatPresentation.listRow(rows[1], me: me, users: users, now: Self.now, calendar: Self.utc)
        #expect(group.title == "Launch" && group.initials == "L" && group.presence == nil)
        #expect(group.badge == "3" && group.time == "Yesterday")
        #expect(group.preview == "Bob Byte: Slides are in the shared folder")
        #expect(group.accessibilityLabel == "Launch, 3 unread, Bob Byte: Slides are in the shared folder")
        let typing = ChatPresentation.listRow(rows[1], me: me, users: users, typing: "Ada is typing…", now: Self.now, calendar: Self.utc)
        #expect(typing.preview == "Ada is typing…" && typing.isTyping)

        // Someone who went offline: the dot follows presence.
        var offline = users
        offline[PresentationSamples.ada.id]?.isOnline = false
        #expect(ChatPresentation.listRow(rows[0], me: me, users: offline, now: Self.now).presence == .offline)
        // An empty conversation has no time and says so.
        var empty = rows[0]
        empty.conversation.lastMessage = nil
        let emptyRow = ChatPresentation.listRow(empty, me: me, users: users, now: Self.now)
        #expect(emptyRow.time == "" && emptyRow.preview == "No messages yet")
    }

    @Test func subtitlesTimesInitialsAndCountsReadNaturally() {
        let users = PresentationSamples.users(now: Self.now)
        let me = PresentationSamples.me.id
        let conversations = PresentationSamples.conversations(now: Self.now)
        #expect(ChatPresentation.subtitle(conversations[0], me: me, users: users, calendar: Self.utc) == "online")
        #expect(ChatPresentation.subtitle(conversations[1], me: me, users: users) == "3 members")
        #expect(ChatPresentation.subtitle(conversations[1], me: me, users: users, typing: "Bob is typing…") == "Bob is typing…")
        var withBob = conversations[0]
        withBob.participantIds = [me, PresentationSamples.bob(now: Self.now).id]
        #expect(ChatPresentation.subtitle(withBob, me: me, users: users, now: Self.now, calendar: Self.utc) == "last seen 14:30")
        var longAgo = users
        longAgo[PresentationSamples.bob(now: Self.now).id]?.lastSeenAt = Self.now.addingTimeInterval(-86400)
        #expect(ChatPresentation.subtitle(withBob, me: me, users: longAgo, now: Self.now, calendar: Self.utc) == "last seen Yesterday at 15:30")
        longAgo[PresentationSamples.bob(now: Self.now).id]?.lastSeenAt = nil
        #expect(ChatPresentation.subtitle(withBob, me: me, users: longAgo, now: Self.now) == "offline")
        #expect(ChatPresentation.subtitle(withBob, me: me, users: [:], now: Self.now) == "")

        let day: TimeInterval = 86400
        #expect(ChatPresentation.listTime(Self.now.addingTimeInterval(-3 * day), now: Self.now, calendar: Self.utc) == "Saturday")
        #expect(ChatPresentation.listTime(Self.now.addingTimeInterval(-20 * day), now: Self.now, calendar: Self.utc) == "4 Nov")
        #expect(ChatPresentation.listTime(Self.now.addingTimeInterval(-400 * day), now: Self.now, calendar: Self.utc) == "20 Oct 2025")

        #expect(ChatPresentation.initials("Ada Lovelace") == "AL")
        #expect(ChatPresentation.initials("bob") == "B")
        #expect(ChatPresentation.initials("Ada, Bob, Cy") == "AB")
        #expect(ChatPresentation.initials("  ") == "#")
        #expect(ChatPresentation.initials("😀 Ünal Öz") == "ÜÖ")

        #expect(ChatPresentation.jumpToNewest(newBelow: 0) == "↓")
        #expect(ChatPresentation.jumpToNewest(newBelow: 3) == "↓ 3 new")
        #expect(ChatPresentation.jumpToNewest(newBelow: 250) == "↓ 99+ new")
        #expect(ChatPresentation.typingLine(["Ada", "Bob", "Cy", "Di"]) == "Ada, Bob and 2 others are typing…")
        #expect(ChatPresentation.typingLine([]) == nil)
        #expect(ChatPresentation.emptyListText(isLoading: true) == "Loading conversations…")
        #expect(ChatPresentation.StatusMark.failed.label == "failed" && !ChatPresentation.StatusMark.notSent.canResend)
    }

    /// The README's sample read `list.rows[0]` right after `start()`; on a first run the list
    /// was still empty (the first sync had not come back) and the sample crashed.
    @MainActor @Test func onAFirstRunTheListHoldsTheServersConversationsWhenStartReturns() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, _, direct) = try await server.directPair()
        _ = try await alice.api.send(.init(clientMessageId: "x1", text: "first"), to: direct.id)
        for _ in 0..<3 {
            // No time passes: the rows are there because start() waited for the first sync.
            let client = try ChatClientTests.client(alice, path: TestServer.temporaryDirectory() + "-first.sqlite", clock: ManualClock())
            await client.start()
            let list = ConversationListModel(client: client)
            await list.start()
            let rows = list.rows
            #expect(rows.map(\.id) == [direct.id])
            #expect(list.isLoading == false)
            await list.stop()
            await client.stop()
        }

        // Offline on a first run: start() returns at once with an empty list, not a hang.
        let offline = try ChatClient(
            serverURL: URL(string: "http://127.0.0.1:9")!, token: alice.token, userId: alice.id, databasePath: nil,
            policy: .init(maxAttempts: 1))
        await offline.start()
        let list = ConversationListModel(client: offline)
        await list.start()
        #expect(list.rows.isEmpty)
        #expect(await offline.hasSynchronizedList() == false)
        await offline.stop()

        // A client that was never started: nothing to wait for.
        let idle = try ChatClient(serverURL: server.baseURL, token: alice.token, userId: alice.id, databasePath: nil)
        await idle.waitForFirstSync()
    }
}
