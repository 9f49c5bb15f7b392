import Foundation
import Synchronization
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Trust and safety in the SDK against a real server: blocking marks what the cache holds and what comes
/// after, the list row counts nothing of the blocked sender's, and the export lands in a file
/// with its progress told.
@Suite struct SDKSafetyTests {
    @Test func blockingFoldsTheSendersMessagesAwayAndKeepsThemOutOfTheBadge() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let carol = try await server.register("carol@x.io")
        let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id, carol.id], name: "Crew"))
        let early = try await carol.api.send(.init(clientMessageId: "c0", text: "before"), to: group.id)
        let client = try ChatClientTests.client(bob, clock: ManualClock())
        await client.start()
        _ = try await client.openConversation(group.id)
        try await waitFor("connected and cached") {
            try await client.database.messages(in: group.id, viewer: bob.id).contains { $0.serverId == early.id }
        }
        try await client.block(carol.id)
        // What the cache held is marked at once, and the row's badge is the server's new count.
        let cached = try await client.database.messages(in: group.id, viewer: bob.id).first { $0.serverId == early.id }
        let marked = try #require(cached)
        #expect(marked.senderBlocked && ChatPresentation.body(of: marked) == "Message from a blocked user")
        try await waitFor("the row without carol's message") {
            try await client.database.conversation(group.id)?.unreadCount == 0
        }
        // What comes after arrives marked and is never counted; alice's is.
        let later = try await carol.api.send(.init(clientMessageId: "c1", text: "after"), to: group.id)
        _ = try await alice.api.send(.init(clientMessageId: "a1", text: "hello"), to: group.id)
        try await waitFor("both messages cached") {
            try await client.database.messages(in: group.id, viewer: bob.id).count == 3
        }
        #expect(try await client.database.messages(in: group.id, viewer: bob.id).first { $0.serverId == later.id }?.senderBlocked == true)
        try await waitFor("a badge of one") { try await client.database.conversation(group.id)?.unreadCount == 1 }
        // Unblocked: the marks go.
        try await client.unblock(carol.id)
        #expect(try await client.database.messages(in: group.id, viewer: bob.id).allSatisfy { !$0.senderBlocked })
        // A report of carol's message reaches the admin (alice, the organization's first user).
        let message = try #require(try await client.database.messages(in: group.id, viewer: bob.id).first { $0.serverId == later.id })
        let reportId = try await client.report(message: message, reason: "spam")
        #expect(try await alice.api.reports().reports.map(\.id) == [reportId])
        await client.stop()
    }

    @Test func theExportLandsInAFileWithItsProgress() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, _, direct) = try await server.directPair()
        _ = try await alice.api.send(.init(clientMessageId: "m", text: "mine"), to: direct.id)
        let client = try ChatClientTests.client(alice, clock: ManualClock())
        let file = URL(fileURLWithPath: TestServer.temporaryDirectory()).appendingPathComponent("export.zip")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let seen = Counter()
        let size = try await client.exportData(to: file) { seen.set($0) }
        let bytes = try Data(contentsOf: file)
        #expect(size == Int64(bytes.count) && seen.value == size && bytes.prefix(4) == Data([0x50, 0x4B, 0x03, 0x04]))
        #expect(bytes.range(of: Data("mine".utf8)) != nil)
    }
}

/// The last value a callback was given.
private final class Counter: Sendable {
    private let last = Mutex<Int64>(0)
    func set(_ value: Int64) { last.withLock { $0 = value } }
    var value: Int64 { last.withLock { $0 } }
}
