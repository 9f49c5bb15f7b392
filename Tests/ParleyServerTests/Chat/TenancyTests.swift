import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Nobody sees another organization, and only participants see a conversation.
@Suite struct TenancyTests {
    @Test func directoryShowsOwnOrganizationOnly() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io", organization: "acme")
        _ = try await server.register("bob@x.io", organization: "acme")
        _ = try await server.register("mallory@x.io", organization: "evil")
        let users = try await alice.api.users()
        #expect(Set(users.map(\.email)) == ["alice@x.io", "bob@x.io"])
        #expect(try await alice.api.users(matching: "bo").map(\.email) == ["bob@x.io"])
        #expect(try await alice.api.users(matching: "mallory").isEmpty)
        #expect(try await alice.api.users(matching: "%").isEmpty)
        #expect(try await alice.api.users(matching: "_").isEmpty)
    }

    @Test func otherTenantsConversationsAreNotFound() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io", organization: "acme")
        let bob = try await server.register("bob@x.io", organization: "acme")
        let mallory = try await server.register("mallory@x.io", organization: "evil")
        let carol = try await server.register("carol@x.io", organization: "acme")
        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        _ = try await alice.api.send(.init(clientMessageId: "m1", text: "secret"), to: direct.id)

        for outsider in [mallory, carol] {
            for (method, path, body) in [
                ("GET", "conversations/\(direct.id)", nil),
                ("GET", "conversations/\(direct.id)/messages", nil),
                ("GET", "conversations/\(direct.id)/changes?since=0", nil),
                ("POST", "conversations/\(direct.id)/messages", #"{"clientMessageId":"x","text":"hi"}"#),
                ("PATCH", "conversations/\(direct.id)", #"{"name":"pwned"}"#),
                ("POST", "conversations/\(direct.id)/participants", #"{"userIds":["\#(outsider.id)"]}"#),
                ("DELETE", "conversations/\(direct.id)/participants/\(alice.id)", nil),
            ] as [(String, String, String?)] {
                let answer = try await server.raw(method, path, token: outsider.token, body: body.map { Data($0.utf8) })
                #expect(answer.status == 404, "\(method) \(path)")
                #expect(errorCode(answer.body) == .notFound)
                #expect(!String(decoding: answer.body, as: UTF8.self).contains("secret"))
            }
            #expect(try await outsider.api.conversations().isEmpty)
        }
        let history = try await alice.api.messages(direct.id)
        #expect(history.messages.map(\.text) == ["secret"])
    }

    @Test func cannotAddOrTalkToUsersOfAnotherOrganization() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io", organization: "acme")
        let mallory = try await server.register("mallory@x.io", organization: "evil")
        let direct = try await server.raw(
            "POST", "conversations", token: alice.token, json: #"{"type":"direct","participantIds":["\#(mallory.id)"]}"#)
        #expect(direct.status == 404 && errorCode(direct.body) == .notFound)
        let group = try await server.raw(
            "POST", "conversations", token: alice.token,
            json: #"{"type":"group","name":"g","participantIds":["\#(mallory.id)"]}"#)
        #expect(group.status == 404)
        let team = try await alice.api.createConversation(.init(type: .group, participantIds: [], name: "team"))
        let add = try await server.raw(
            "POST", "conversations/\(team.id)/participants", token: alice.token, json: #"{"userIds":["\#(mallory.id)"]}"#)
        #expect(add.status == 404)
        #expect(try await alice.api.conversation(team.id).participantIds == [alice.id])
        #expect(try await mallory.api.conversations().isEmpty)
    }

    @Test func removedParticipantLosesAccessAndEvents() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id], name: "g"))
        let bobSocket = try await bob.connect()
        let bobEvents = EventRecorder(bobSocket)
        _ = try await alice.api.removeParticipant(group.id, userId: bob.id)
        try await bobEvents.wait { events in
            events.contains { if case .conversationUpdated(let e) = $0 { !e.conversation.participantIds.contains(bob.id) } else { false } }
        }
        _ = try await alice.api.send(.init(clientMessageId: "after", text: "not for bob"), to: group.id)
        try await bobSocket.ping()
        #expect(!bobEvents.createdMessages.contains { $0.text == "not for bob" })
        await #expect(throws: ClientError.self) { try await bob.api.messages(group.id) }
        await bobSocket.close()
    }
}
