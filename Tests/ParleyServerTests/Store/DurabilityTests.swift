import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// What was acknowledged survives a restart on the same data directory.
@Suite struct DurabilityTests {
    @Test func restartLosesNothingAcknowledged() async throws {
        let directory = TestServer.temporaryDirectory()
        let first = try await TestServer.start(dataDirectory: directory)
        let (alice, bob, direct) = try await first.directPair()
        let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id], name: "g"))
        let socket = try await alice.connect()
        var acknowledged: [Message] = []
        for index in 0..<25 {
            let request = SendMessageRequest(conversationId: direct.id, clientMessageId: "d\(index)", text: "direct \(index)")
            acknowledged.append(index.isMultiple(of: 2) ? try await socket.sendMessage(request) : try await alice.api.send(request, to: direct.id))
        }
        _ = try await bob.api.rename(group.id, to: "renamed")
        await socket.close()
        await first.stop()

        let second = try await TestServer.start(dataDirectory: directory)
        defer { Task { await second.stop() } }
        let bobAgain = second.api(token: bob.token)
        let history = try await bobAgain.messages(direct.id, limit: 200)
        #expect(history.messages == acknowledged)
        #expect(try await bobAgain.conversation(group.id).name == "renamed")
        // A retry after the restart of something sent before it is still the same message.
        let retried = try await second.api(token: alice.token).send(
            .init(clientMessageId: "d3", text: "direct 3"), to: direct.id)
        #expect(retried == acknowledged[3])
        let next = try await second.api(token: alice.token).send(.init(clientMessageId: "new", text: "after"), to: direct.id)
        #expect(next.seq == 26)
        let login = try await second.api().login(.init(organization: "acme", email: "bob@x.io", password: TestUser.password))
        #expect(login.user.id == bob.id)
    }
}
