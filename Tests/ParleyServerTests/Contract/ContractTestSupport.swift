import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// A small world for the contract suites (invariant 4: every read and write checks organization
/// and participation; bad input gets a clear error with a stable code and changes nothing).
///
/// Organization "acme": alice (admin), bob, carol (in no conversation of alice's), erin (a
/// former member of the group). Organization "evil": mallory (its admin). Alice and bob share
/// a direct conversation with three messages (a reaction, an edit, an image) and a group.
/// Mallory has a group of her own with a message and an attachment.
struct ContractWorld {
    let server: TestServer
    let alice: TestUser
    let bob: TestUser
    let carol: TestUser
    let erin: TestUser
    let mallory: TestUser
    /// Alice and bob.
    let direct: Conversation
    /// Alice and bob; erin was added and removed.
    let group: Conversation
    /// Mallory alone, in her own organization.
    let evil: Conversation
    /// Alice's, bob's (with alice's 👍) and alice's image, in `direct`.
    let directMessages: [Message]
    let groupMessage: Message
    let evilMessage: Message
    let attachment: ParleyProtocol.Attachment
    let evilAttachment: ParleyProtocol.Attachment
    /// Alice's resumable upload, opened and not completed.
    let uploadId: EntityID
    let invite: Invite
    let evilInvite: Invite

    /// Texts and names no outsider may ever see in an answer.
    static let secrets = ["secret-alpha", "secret-beta", "secret-group", "secret-evil", "Team Secret", "Evil Plans"]

    static func build(_ kind: StoreKind = .sqlite) async throws -> ContractWorld {
        let server = try await TestServer.start(store: kind)
        do {
            return try await build(on: server)
        } catch {
            await server.stop()
            throw error
        }
    }

    private static func build(on server: TestServer) async throws -> ContractWorld {
        let alice = try await server.register("alice@x.io", organization: "acme")
        let bob = try await server.register("bob@x.io", organization: "acme")
        let carol = try await server.register("carol@x.io", organization: "acme")
        let erin = try await server.register("erin@x.io", organization: "acme")
        let mallory = try await server.register("mallory@evil.io", organization: "evil")
        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        let first = try await alice.api.send(.init(clientMessageId: "d1", text: "secret-alpha"), to: direct.id)
        let second = try await bob.api.send(.init(clientMessageId: "d2", text: "secret-beta"), to: direct.id)
        _ = try await alice.api.react(second.id, in: direct.id, emoji: "👍")
        _ = try await alice.api.editMessage(first.id, in: direct.id, text: "secret-alpha edited")
        let attachment = try await upload(server, alice, name: "a.png")
        _ = try await alice.api.send(.init(clientMessageId: "d3", text: "", type: .image, attachmentId: attachment.id), to: direct.id)
        _ = try await bob.api.markRead(direct.id, upToSeq: 2)

        let group = try await alice.api.createConversation(.init(type: .group, participantIds: [bob.id, erin.id], name: "Team Secret"))
        let groupMessage = try await bob.api.send(.init(clientMessageId: "g1", text: "secret-group"), to: group.id)
        _ = try await alice.api.removeParticipant(group.id, userId: erin.id)

        let evil = try await mallory.api.createConversation(.init(type: .group, participantIds: [], name: "Evil Plans"))
        let evilMessage = try await mallory.api.send(.init(clientMessageId: "e1", text: "secret-evil"), to: evil.id)
        let evilAttachment = try await upload(server, mallory, name: "e.png")

        let opened = try await server.raw(
            "POST", "attachments/uploads", token: alice.token, json: #"{"name":"u.txt","contentType":"text/plain","size":10}"#)
        let upload = try WireCoding.makeDecoder().decode(UploadStatus.self, from: opened.body)
        _ = try await server.raw("PUT", "attachments/uploads/\(upload.uploadId)?offset=0", token: alice.token, body: Data("12345".utf8))

        let invite = try await alice.api.createInvite(.init(maxUses: 3))
        let evilInvite = try await mallory.api.createInvite(.init(maxUses: 3))
        let directMessages = try await alice.api.messages(direct.id).messages
        return ContractWorld(
            server: server, alice: alice, bob: bob, carol: carol, erin: erin, mallory: mallory, direct: direct, group: group,
            evil: evil, directMessages: directMessages, groupMessage: groupMessage, evilMessage: evilMessage,
            attachment: attachment, evilAttachment: evilAttachment, uploadId: upload.uploadId, invite: invite, evilInvite: evilInvite)
    }

    /// Uploads the test PNG as `user`.
    static func upload(_ server: TestServer, _ user: TestUser, name: String) async throws -> ParleyProtocol.Attachment {
        let answer = try await server.raw(
            "POST", "attachments?name=\(name)", token: user.token, body: Fixtures.png, headers: ["Content-Type": "image/png"])
        guard answer.status == 201 else { throw ContractFailure("upload answered \(answer.status)") }
        return try WireCoding.makeDecoder().decode(ParleyProtocol.Attachment.self, from: answer.body)
    }

    /// Everything the legitimate users can read back, to compare before and after a refused request.
    func snapshot() async throws -> ContractSnapshot {
        let decoder = WireCoding.makeDecoder()
        func body(_ path: String, _ user: TestUser) async throws -> Data {
            let answer = try await server.raw("GET", path, token: user.token)
            guard answer.status == 200 else { throw ContractFailure("GET \(path) answered \(answer.status)") }
            return answer.body
        }
        let participants = try decoder.decode(
            ParticipantsPage.self, from: try await body("conversations/\(group.id)/participants", alice))
        let readers = try decoder.decode(
            ReadersPage.self, from: try await body("conversations/\(direct.id)/messages/\(directMessages[0].id)/reads", alice))
        let users = try await alice.api.users().map { "\($0.id) \($0.email) \($0.displayName) \($0.role?.rawValue ?? "-")" }
        return ContractSnapshot(
            lists: [
                try await alice.api.conversations(), try await bob.api.conversations(), try await carol.api.conversations(),
                try await erin.api.conversations(), try await mallory.api.conversations(),
            ],
            histories: [
                try await alice.api.messages(direct.id, limit: 200).messages, try await bob.api.messages(group.id, limit: 200).messages,
                try await mallory.api.messages(evil.id, limit: 200).messages,
            ],
            directChanges: try await bob.api.changes(direct.id, since: 0),
            groupParticipants: participants, directReaders: readers, acmeUsers: users,
            organizations: [try await alice.api.organization(), try await mallory.api.organization()],
            invites: [try await alice.api.invites(), try await mallory.api.invites()],
            upload: try decoder.decode(UploadStatus.self, from: try await body("attachments/uploads/\(uploadId)", alice)))
    }

    /// Every `{name}` of a route template replaced by a value of this world.
    func path(_ template: String, _ values: [String: String]) -> String {
        var path = template
        for (name, value) in values { path = path.replacingOccurrences(of: "{\(name)}", with: value) }
        return path
    }

    /// Ids of alice's direct conversation, for routes that take them.
    var directValues: [String: String] {
        [
            "id": direct.id.description, "messageId": directMessages[1].id.description, "userId": bob.id.description,
            "emoji": "%F0%9F%91%8D", "upload": uploadId.description, "code": invite.code, "token": String(repeating: "ab", count: 32),
        ]
    }
}

/// What the legitimate users read back; equal before and after a refused request.
struct ContractSnapshot: Equatable {
    var lists: [[Conversation]]
    var histories: [[Message]]
    var directChanges: ChangesPage
    var groupParticipants: ParticipantsPage
    var directReaders: ReadersPage
    var acmeUsers: [String]
    var organizations: [Organization]
    var invites: [[Invite]]
    var upload: UploadStatus
}

struct ContractFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A raw answer with its headers.
typealias ContractAnswer = (status: Int, headers: [String: String], body: Data)

extension TestServer {
    /// A raw exchange with an optional JSON string body.
    func call(_ method: String, _ path: String, token: String?, json: String? = nil) async throws -> ContractAnswer {
        try await exchange(method, path, token: token, body: json.map { Data($0.utf8) })
    }
}

/// Checks an answer is the contract's error: the status of `code`, a JSON body
/// `{"error": {"code", "message"}}` with exactly that code and a message for people.
func expectContractError(
    _ answer: ContractAnswer, _ code: ErrorCode, _ context: @autoclosure () -> String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let text = String(decoding: answer.body.prefix(300), as: UTF8.self)
    #expect(answer.status == code.httpStatus, "\(context()): status \(answer.status) \(text)", sourceLocation: sourceLocation)
    #expect(
        answer.headers["content-type"]?.hasPrefix("application/json") == true,
        "\(context()): content type \(answer.headers["content-type"] ?? "none")", sourceLocation: sourceLocation)
    guard let object = (try? JSONSerialization.jsonObject(with: answer.body)) as? [String: Any],
        let error = object["error"] as? [String: Any]
    else {
        Issue.record("\(context()): the error body is not {\"error\": {...}}: \(text)", sourceLocation: sourceLocation)
        return
    }
    #expect(Set(object.keys) == ["error"], "\(context()): \(text)", sourceLocation: sourceLocation)
    #expect(error["code"] as? String == code.rawValue, "\(context()): \(text)", sourceLocation: sourceLocation)
    // Optional fields are left out, never null: only a wait carries retryAfter.
    let expectedKeys: Set<String> = [.rateLimited, .unavailable].contains(code) ? ["code", "message", "retryAfter"] : ["code", "message"]
    #expect(Set(error.keys) == expectedKeys, "\(context()): \(text)", sourceLocation: sourceLocation)
    let message = error["message"] as? String ?? ""
    #expect(!message.trimmingCharacters(in: .whitespaces).isEmpty, "\(context()): no message", sourceLocation: sourceLocation)
    #expect(message.count < 300, "\(context()): an error message echoes too much: \(message.prefix(80))…", sourceLocation: sourceLocation)
}

/// Checks an answer carries none of another tenant's texts, names or ids.
func expectNoLeak(_ answer: ContractAnswer, of secrets: [String], _ context: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation) {
    let text = String(decoding: answer.body, as: UTF8.self)
    for secret in secrets where text.contains(secret) {
        Issue.record("\(context()): the answer shows \(secret): \(text.prefix(200))", sourceLocation: sourceLocation)
    }
}

/// A JSON body with its keys sorted (the order of keys means nothing in JSON; the server's
/// encoder does not keep one), to compare two answers for what they say.
func canonicalJSON(_ body: Data) -> String {
    guard let object = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]),
        let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed])
    else { return String(decoding: body, as: UTF8.self) }
    return String(decoding: data, as: UTF8.self)
}
