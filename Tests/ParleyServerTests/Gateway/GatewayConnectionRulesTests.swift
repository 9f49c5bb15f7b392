import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// The gateway's rules per connection and per user: presence follows a user's first and
/// last connection, not each one; refused sends, pipelined between good ones, burn no seq and
/// leave the others' replies and events whole.
@Suite struct GatewayConnectionRulesTests {
    /// Online when the first connection opens, offline (with a last-seen time) when the last
    /// closes, each announced once; the directory agrees at every step.
    @Test func presenceFollowsTheFirstAndLastConnectionOfAUser() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, _) = try await server.directPair()
        let aliceSocket = try await alice.connect()
        let watcher = EventRecorder(aliceSocket)
        @Sendable func bobPresence() -> [PresenceEvent] {
            watcher.events.compactMap { if case .presence(let p) = $0, p.userId == bob.id { p } else { nil } }
        }
        func directory() async throws -> User? { try await alice.api.users().first { $0.id == bob.id } }

        let phone = try await bob.connect()
        try await watcher.wait(timeout: .seconds(30), "Bob online") { _ in bobPresence().count == 1 }
        let laptop = try await bob.connect()
        await phone.close()
        // Alice's socket and the laptop are left once the server has let the phone go.
        try await waitFor("the phone's connection to be gone") { server.app.fanOut.connectionCount == 2 }
        // The laptop still counts: a round trip on it and on Alice's socket shows nothing was announced.
        try await laptop.ping()
        try await aliceSocket.ping()
        #expect(bobPresence().map(\.isOnline) == [true], "the phone's close announced Bob offline")
        #expect(try await directory()?.isOnline == true)
        #expect(server.app.fanOut.isOnlineHere(bob.id))

        await laptop.close()
        try await watcher.wait(timeout: .seconds(30), "Bob offline") { _ in bobPresence().count == 2 }
        let offline = try #require(bobPresence().last)
        #expect(!offline.isOnline && offline.lastSeenAt != nil)
        let listed = try await directory()
        #expect(listed?.isOnline == false && listed?.lastSeenAt == offline.lastSeenAt)

        // Back again: online once more, and the hello says so.
        let again = RealtimeConnection(serverURL: server.baseURL, token: bob.token)
        let hello = try await again.connect(timeout: .seconds(40))
        #expect(hello.user.isOnline && hello.user.lastSeenAt == nil)
        try await watcher.wait(timeout: .seconds(30), "Bob online again") { _ in bobPresence().count == 3 }
        #expect(bobPresence().map(\.isOnline) == [true, false, true])
        await again.close()
        await aliceSocket.close()
    }

    /// Forty sends pipelined on one socket, every fourth refused (blank text, someone else's
    /// conversation): each gets exactly its own reply; the accepted ones take the seqs after
    /// the last without a hole, and the recipient gets each once, in seq order.
    @Test func refusedSendsPipelinedBetweenGoodOnesBurnNoSeq() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let carol = try await server.register("carol@x.io")
        let notHers = try await carol.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        let bobEvents = EventRecorder(try await bob.connect())
        let socket = try await alice.connect()

        enum Outcome: Sendable { case sent(Int, Message), refused(Int, ErrorCode?) }
        let outcomes = try await withThrowingTaskGroup(of: Outcome.self) { tasks in
            for n in 0..<40 {
                tasks.addTask {
                    let request: SendMessageRequest = switch n % 8 {
                    case 3: .init(conversationId: direct.id, clientMessageId: "c\(n)", text: "   ")
                    case 7: .init(conversationId: notHers.id, clientMessageId: "c\(n)", text: "intruding \(n)")
                    default: .init(conversationId: direct.id, clientMessageId: "c\(n)", text: "message \(n)")
                    }
                    do {
                        let message: Message = try await socket.send(.sendMessage(request), timeout: .seconds(60))
                        return .sent(n, message)
                    } catch let error as ClientError where error.kind == .server {
                        return .refused(n, error.code)
                    }
                }
            }
            var all: [Outcome] = []
            for try await outcome in tasks { all.append(outcome) }
            return all
        }
        let sent = outcomes.compactMap { if case .sent(let n, let m) = $0 { (n, m) } else { nil } }
        let refused = outcomes.compactMap { if case .refused(let n, let code) = $0 { (n, code) } else { nil } }
        #expect(sent.count == 30 && refused.count == 10)
        #expect(sent.allSatisfy { n, message in message.clientMessageId == "c\(n)" && message.text == "message \(n)" }, "a reply went to another send")
        #expect(Set(refused.map(\.0)) == Set((0..<40).filter { $0 % 8 == 3 || $0 % 8 == 7 }))
        #expect(refused.allSatisfy { n, code in code == (n % 8 == 3 ? .invalidRequest : .notFound) })
        let seqs = sent.map(\.1.seq).sorted()
        #expect(seqs == Array(direct.lastSeq + 1...direct.lastSeq + 30), "a refused send took a seq")
        #expect(try await alice.api.conversation(direct.id).lastSeq == direct.lastSeq + 30)
        #expect(try await carol.api.conversation(notHers.id).lastSeq == notHers.lastSeq, "an intruder's send was stored")

        try await bobEvents.wait(timeout: .seconds(30), "thirty messages") { _ in
            bobEvents.createdMessages.filter { $0.conversationId == direct.id }.count >= 30
        }
        try await socket.ping()
        let received = bobEvents.createdMessages.filter { $0.conversationId == direct.id }
        #expect(received.map(\.seq) == seqs, "each once, in seq order")
        #expect(!bobEvents.createdMessages.contains { $0.conversationId == notHers.id })
        await socket.close()
    }
}
