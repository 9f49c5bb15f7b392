import Foundation
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
import ParleyTestSupport
import Testing

/// `PATCH /users/me`: one's own name and picture, on every available store. The organization
/// sees a picture (and nobody outside it does), hears the change at once, and a replaced
/// picture goes with the attachment collector.
@Suite struct ProfileTests {
    private func upload(_ server: TestServer, _ user: TestUser, _ data: Data, type: String) async throws -> ParleyProtocol.Attachment {
        let answer = try await server.raw("POST", "attachments?name=me.png", token: user.token, body: data, headers: ["Content-Type": type])
        #expect(answer.status == 201)
        return try WireCoding.makeDecoder().decode(ParleyProtocol.Attachment.self, from: answer.body)
    }

    private func patch(_ server: TestServer, _ user: TestUser, _ json: String) async throws -> (status: Int, user: User?, code: ErrorCode?) {
        let answer = try await server.raw("PATCH", "users/me", token: user.token, json: json)
        return (answer.status, try? WireCoding.makeDecoder().decode(UserResponse.self, from: answer.body).user, errorCode(answer.body))
    }

    @Test(arguments: StoreKind.available)
    func aPictureAndANameReachTheOrganizationAndNobodyElse(store: StoreKind) async throws {
        try await TestServer.with(store: store) { server in
            let alice = try await server.register("alice@x.io")
            let bob = try await server.register("bob@x.io")  // shares no conversation with alice
            let mallory = try await server.register("mallory@x.io", organization: "evil")
            let bobEvents = EventRecorder(try await bob.connect())
            let malloryEvents = EventRecorder(try await mallory.connect())
            let picture = try await upload(server, alice, Fixtures.png, type: "image/png")
            let path = "attachments/\(picture.id)"
            #expect(try await server.raw("GET", path, token: bob.token).status == 404, "an upload is private until it is a picture")

            let changed = try await patch(server, alice, #"{"displayName": "  Ada Lovelace ", "avatarId": "\#(picture.id)"}"#)
            #expect(changed.status == 200)
            #expect(changed.user?.displayName == "Ada Lovelace" && changed.user?.avatarUrl == "/api/v1/attachments/\(picture.id)")
            // Bob hears it, with the name and the picture, and may download the picture.
            let events = try await bobEvents.wait("user.updated") { events in
                events.contains { if case .userUpdated(let e) = $0 { e.user.id == alice.id } else { false } }
            }
            let heard = events.compactMap { if case .userUpdated(let e) = $0 { e.user } else { nil } }
            #expect(heard.map(\.displayName) == ["Ada Lovelace"] && heard.first?.avatarUrl == changed.user?.avatarUrl)
            let listed = try await bob.api.users().first { $0.id == alice.id }
            #expect(listed?.displayName == "Ada Lovelace" && listed?.avatarUrl == changed.user?.avatarUrl)
            let download = try await server.raw("GET", path, token: bob.token)
            #expect(download.status == 200 && download.body == Fixtures.png)
            #expect(try await alice.api.me().avatarUrl == changed.user?.avatarUrl)
            // Another organization neither hears it nor downloads it.
            #expect(try await server.raw("GET", path, token: mallory.token).status == 404)
            _ = try await mallory.api.send(
                .init(clientMessageId: "probe", text: "x"),
                to: try await mallory.api.createConversation(.init(type: .group, participantIds: [], name: "Solo")).id)
            try await malloryEvents.wait("her own message") { $0.contains { $0.type == "message.created" } }
            #expect(!malloryEvents.events.contains { $0.type == "user.updated" })

            // Removing the picture: no URL any more, and bob can no longer download it.
            let removed = try await patch(server, alice, #"{"avatarId": null}"#)
            #expect(removed.status == 200 && removed.user?.avatarUrl == nil && removed.user?.displayName == "Ada Lovelace")
            #expect(try await server.raw("GET", path, token: bob.token).status == 404)
            #expect(try await server.raw("GET", path, token: alice.token).status == 200, "still the uploader's until collected")
        }
    }

    @Test(arguments: StoreKind.available)
    func aRefusedChangeChangesNothing(store: StoreKind) async throws {
        try await TestServer.with(store: store) { server in
            let alice = try await server.register("alice@x.io")
            let bob = try await server.register("bob@x.io")
            let picture = try await upload(server, alice, Fixtures.png, type: "image/png")
            #expect(try await patch(server, alice, #"{"avatarId": "\#(picture.id)"}"#).status == 200)
            let bobsPicture = try await upload(server, bob, Fixtures.png, type: "image/png")
            let text = try await upload(server, alice, Data("not a picture".utf8), type: "text/plain")
            let refusals: [(String, Int, ErrorCode)] = [
                ("{}", 400, .invalidRequest),
                (#"{"displayName": "   "}"#, 400, .invalidRequest),
                (#"{"displayName": "\#(String(repeating: "x", count: 101))"}"#, 400, .invalidRequest),
                (#"{"displayName": "evil\u001b[31m"}"#, 400, .invalidRequest),
                (#"{"displayName": "A\u202Eb"}"#, 400, .invalidRequest),
                (#"{"displayName": "New", "avatarId": "\#(bobsPicture.id)"}"#, 404, .notFound),
                (#"{"displayName": "New", "avatarId": "\#(text.id)"}"#, 400, .invalidRequest),
                (#"{"displayName": "New", "avatarId": "\#(UUID().uuidString.lowercased())"}"#, 404, .notFound),
                (#"{"avatarId": "not-an-id"}"#, 400, .invalidRequest),
            ]
            for (json, status, code) in refusals {
                let answer = try await patch(server, alice, json)
                #expect(answer.status == status && answer.code == code, "\(json): \(answer.status) \(String(describing: answer.code))")
            }
            let after = try await alice.api.me()
            #expect(after.displayName == "Alice" && after.avatarUrl == picture.url, "nothing changed")
        }
    }

    @Test(arguments: StoreKind.available)
    func aReplacedPictureIsCollectedAndTheCurrentOneStays(store: StoreKind) async throws {
        try await TestServer.with(store: store) { server in
            let alice = try await server.register("alice@x.io")
            let first = try await upload(server, alice, Fixtures.png, type: "image/png")
            var other = Fixtures.png
            other.append(0)  // other bytes: its own blob
            let second = try await upload(server, alice, other, type: "image/png")
            #expect(try await patch(server, alice, #"{"avatarId": "\#(first.id)"}"#).status == 200)
            #expect(try await server.app.lifecycle.collectAttachments() == 0, "a picture is not an orphan")
            #expect(try await patch(server, alice, #"{"avatarId": "\#(second.id)"}"#).status == 200)
            #expect(try await server.app.lifecycle.collectAttachments() == 1)
            #expect(try await server.raw("GET", "attachments/\(first.id)", token: alice.token).status == 404, "the old one is gone")
            #expect(try await server.raw("GET", "attachments/\(second.id)", token: alice.token).status == 200)
            // Setting the same picture again orphans nothing.
            #expect(try await patch(server, alice, #"{"avatarId": "\#(second.id)", "displayName": "Al"}"#).status == 200)
            #expect(try await server.app.lifecycle.collectAttachments() == 0)
            #expect(try await server.raw("GET", "attachments/\(second.id)", token: alice.token).status == 200)
        }
    }
}
