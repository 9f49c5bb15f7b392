import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The REST client against a real server: what a user types reaches the server as typed (in a
/// query or a path), a retried send is stored once, history and the catch-up feed page without
/// gaps or repeats, the list sync falls back when its token is refused, and ranged downloads
/// carry the whole file's checksum.
@Suite struct ParleyAPIRoundTripTests {
    /// A server with Alice and Bob in a direct conversation, and `count` messages from Bob.
    static func chat(_ count: Int = 0) async throws -> (server: TestServer, alice: TestUser, bob: TestUser, direct: Conversation) {
        let server = try await TestServer.start()
        let (alice, bob, direct) = try await server.directPair()
        for n in 0..<count { _ = try await bob.api.send(.init(clientMessageId: "b\(n + 1)", text: "message \(n + 1)"), to: direct.id) }
        return (server, alice, bob, direct)
    }

    /// `+`, `&`, `=`, `#` and non-ASCII in a search go as characters, not as query syntax: a
    /// `+` read back as a space, or an `&` that starts another parameter, finds someone else.
    @Test func directorySearchSendsTheQueryAsTyped() async throws {
        let (server, alice, _, _) = try await Self.chat()
        defer { Task { await server.stop() } }
        let plus = try await server.register("ada+chat@x.io", name: "Ada Plus")
        let amp = try await server.register("tj@x.io", name: "Tom & Jerry = #1")
        let accented = try await server.register("zoe@x.io", name: "Zoë Ångström")
        #expect(try await alice.api.users(matching: "ada+chat").map(\.id) == [plus.id])
        #expect(try await alice.api.users(matching: "Tom & Jerry = #1").map(\.id) == [amp.id])
        #expect(try await alice.api.users(matching: "Ångström").map(\.id) == [accented.id])
        #expect(try await alice.api.users(matching: "ada chat").isEmpty, "a space is not a plus")
    }

    /// A reaction made of several scalars (a skin tone, a variation selector, a ZWJ flag) goes
    /// into the path of its removal: each comes back off, and the others stay until theirs do.
    @Test func composedEmojiReactionsCanBeTakenBack() async throws {
        let (server, alice, bob, direct) = try await Self.chat(1)
        defer { Task { await server.stop() } }
        let message = try #require(try await alice.api.messages(direct.id).messages.first)
        let emojis = ["👍🏽", "❤️", "🏳️‍🌈", "🙂"]
        for emoji in emojis { _ = try await alice.api.react(message.id, in: direct.id, emoji: emoji) }
        var changed = try await bob.api.react(message.id, in: direct.id, emoji: "🙂")
        #expect(Set(changed.reactions.keys) == Set(emojis) && changed.reactions["🙂"]?.count == 2)
        for (index, emoji) in emojis.enumerated() {
            changed = try await alice.api.unreact(message.id, in: direct.id, emoji: emoji)
            #expect(changed.reactions[emoji] == (emoji == "🙂" ? [bob.id] : nil), "\(emoji)")
            #expect(Set(changed.reactions.keys).isSuperset(of: emojis.dropFirst(index + 1)), "the others stay")
        }
        #expect(Set(changed.reactions.keys) == ["🙂"])
    }

    /// The outbox resends after a lost answer with the same client message id: the server
    /// answers the stored copy, and the conversation holds it once.
    @Test func aRetriedSendIsStoredOnce() async throws {
        let (server, alice, bob, direct) = try await Self.chat()
        defer { Task { await server.stop() } }
        let request = SendMessageRequest(clientMessageId: "retry-1", text: "only once, ünïcode ✓")
        let first = try await alice.api.send(request, to: direct.id)
        let again = try await alice.api.send(request, to: direct.id)
        #expect(again.id == first.id && again.seq == first.seq && again.text == "only once, ünïcode ✓")
        let page = try await bob.api.messages(direct.id)
        #expect(page.messages.map(\.id) == [first.id])
        // Another sender may use the same client id: it is theirs, a different message.
        let bobs = try await bob.api.send(request, to: direct.id)
        #expect(bobs.id != first.id && bobs.seq == first.seq + 1)
    }

    /// Paging back from the newest with `before` visits every seq once, in order, and the
    /// first page says there is nothing older; `after` reads the tail.
    @Test func historyPagesWalkBackWithoutGapsOrRepeats() async throws {
        let (server, alice, _, direct) = try await Self.chat(23)
        defer { Task { await server.stop() } }
        var seen: [Int64] = []
        var page = try await alice.api.messages(direct.id, limit: 5)
        var pages = 1
        seen = page.messages.map(\.seq)
        while page.hasMore, let oldest = page.messages.first?.seq {
            page = try await alice.api.messages(direct.id, before: oldest, limit: 5)
            #expect(page.messages.map(\.seq) == page.messages.map(\.seq).sorted(), "each page ascends")
            seen = page.messages.map(\.seq) + seen
            pages += 1
        }
        #expect(seen == Array(1...23) && pages == 5)
        let start = try await alice.api.messages(direct.id, before: 1, limit: 5)
        #expect(start.messages.isEmpty && !start.hasMore)
        #expect(try await alice.api.messages(direct.id, after: 20).messages.map(\.seq) == [21, 22, 23])
        #expect(try await alice.api.messages(direct.id, after: 23).messages.isEmpty)
    }

    /// The catch-up feed gives each change once, in change order, a later edit as its own
    /// change; reading on from its end gives nothing.
    @Test func theCatchUpFeedPagesThroughEditsAndDeletes() async throws {
        let (server, _, bob, direct) = try await Self.chat(6)
        defer { Task { await server.stop() } }
        let third = try #require(try await bob.api.messages(direct.id).messages.first { $0.seq == 3 })
        _ = try await bob.api.editMessage(third.id, in: direct.id, text: "third, edited")
        _ = try await bob.api.deleteMessage(third.id, in: direct.id)
        var since: Int64 = 0
        var changes: [Message] = []
        var page: ChangesPage
        repeat {
            page = try await bob.api.changes(direct.id, since: since, limit: 2)
            changes += page.messages
            since = page.hasMore ? (page.messages.last?.updatedSeq ?? since) : page.lastSeq
        } while page.hasMore
        #expect(since == 8, "six messages, an edit, a delete")
        #expect(Set(changes.map(\.seq)) == Set(1...6), "every message")
        #expect(changes.map(\.updatedSeq) == changes.map(\.updatedSeq).sorted())
        let latest = try #require(changes.last { $0.id == third.id })
        #expect(latest.deletedAt != nil && latest.text.isEmpty, "the delete is the third's newest version")
        let none = try await bob.api.changes(direct.id, since: 8)
        #expect(none.messages.isEmpty && !none.hasMore && none.lastSeq == 8)
    }

    /// A list paged two at a time with `nextBefore` holds every conversation once.
    @Test func theConversationListPagesWithoutRepeats() async throws {
        let (server, alice, bob, direct) = try await Self.chat()
        defer { Task { await server.stop() } }
        var created = [direct.id]
        for n in 0..<4 {
            created.append(try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id], name: "g\(n)")).id)
        }
        var page = try await alice.api.conversationsPage(limit: 2)
        #expect(page.syncToken != nil, "the first page carries the sync token")
        var ids = page.conversations.map(\.id)
        while page.hasMore == true, let next = page.nextBefore {
            page = try await alice.api.conversationsPage(limit: 2, before: next)
            ids += page.conversations.map(\.id)
        }
        #expect(ids.count == 5 && Set(ids) == Set(created))
        #expect(try await alice.api.allConversations().conversations.map(\.id) == ids, "the same order in one call")
    }

    /// A new device gets the first page; a token it kept gets the changes (and the groups it
    /// left); a token the server cannot answer from (another server's, or garbage) gets the
    /// whole list rather than an error that would stop the sync.
    @Test func theListSyncFallsBackToTheWholeListForARefusedToken() async throws {
        let (server, alice, bob, direct) = try await Self.chat()
        defer { Task { await server.stop() } }
        let group = try await bob.api.createConversation(.init(type: .group, participantIds: [alice.id], name: "Launch"))
        let transport = LiveTransport(serverURL: server.baseURL, token: alice.token)
        guard case .firstPage(let first, let token?, let nextBefore) = try await transport.conversationList(changedSince: nil) else {
            Issue.record("a new device's first sync is the first page")
            return
        }
        #expect(Set(first.map(\.id)) == [direct.id, group.id] && nextBefore == nil)
        _ = try await bob.api.send(.init(clientMessageId: "x", text: "hi"), to: direct.id)
        _ = try await bob.api.removeParticipant(group.id, userId: alice.id)
        guard case .changes(let changed, let removed, let next) = try await transport.conversationList(changedSince: token) else {
            Issue.record("a kept token gets the changes")
            return
        }
        #expect(changed.map(\.id) == [direct.id] && changed.first?.unreadCount == 1)
        #expect(removed == [group.id] && next != token)
        for refused in ["garbage", "", "🙂", String(repeating: "A", count: 600)] {
            guard case .all(let all, let fresh) = try await transport.conversationList(changedSince: refused) else {
                Issue.record("\(refused.prefix(8)): a refused token brings the whole list")
                continue
            }
            #expect(all.map(\.id) == [direct.id] && fresh != nil)
        }
    }

    /// Ranged downloads put the file back together exactly, each piece carrying the checksum
    /// of the whole file (what the media cache verifies against).
    @Test func rangedDownloadsCarryTheWholeFilesChecksum() async throws {
        let (server, alice, bob, direct) = try await Self.chat()
        defer { Task { await server.stop() } }
        let data = Data((0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 8) })
        let file = URL(fileURLWithPath: TestServer.temporaryDirectory()).appendingPathComponent("blob.bin")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: file)
        let attachment = try await alice.api.upload(file: file, name: "blob.bin", contentType: "application/octet-stream")
        #expect(attachment.size == 10_000 && attachment.name == "blob.bin")
        _ = try await alice.api.send(.init(clientMessageId: "f", text: "", type: .file, attachmentId: attachment.id), to: direct.id)
        var joined = Data()
        for range: ClosedRange<Int64> in [0...0, 1...4095, 4096...9998, 9999...9999] {
            let part = try await bob.api.download(attachment.url, range: range)
            #expect(part.data.count == range.count && part.etag == MediaCache.sha256(data), "\(range)")
            joined.append(part.data)
        }
        #expect(joined == data)
        #expect(try await bob.api.download(attachment.url) == data)
        let outsider = try await server.register("mallory@x.io")
        await #expect(throws: ClientError.self) { _ = try await outsider.api.download(attachment.url) }
    }
}
