import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Organization and participation, from outside: another organization's user, a user of the
/// same organization who is not in the conversation, and a former member get `404 not_found`
/// on every conversation route; the answer is byte for byte the one an id that never existed
/// gets (so probing ids learns nothing); no answer carries another tenant's data; and what
/// the members read back afterwards is unchanged.
@Suite(.serialized) struct ContractCrossOrganizationTests {
    /// A conversation-scoped request, with `{c}` for the conversation and `{m}` for a message.
    struct Probe: CustomStringConvertible {
        var method: String
        var template: String
        var json: String?
        var description: String { "\(method) \(template) \(json ?? "")" }
    }

    /// Every conversation-scoped route, each with input that would be accepted from a member.
    static func probes(outsider: TestUser, alice: TestUser) -> [Probe] {
        [
            Probe(method: "GET", template: "conversations/{c}"),
            Probe(method: "PATCH", template: "conversations/{c}", json: #"{"name":"pwned"}"#),
            Probe(method: "GET", template: "conversations/{c}/participants"),
            Probe(method: "GET", template: "conversations/{c}/participants?limit=1&after=\(alice.id)"),
            Probe(method: "POST", template: "conversations/{c}/participants", json: #"{"userIds":["\#(outsider.id)"]}"#),
            Probe(method: "DELETE", template: "conversations/{c}/participants/\(alice.id)"),
            Probe(method: "DELETE", template: "conversations/{c}/participants/\(outsider.id)"),
            Probe(method: "POST", template: "conversations/{c}/read", json: #"{"upToSeq":1}"#),
            Probe(method: "POST", template: "conversations/{c}/read", json: #"{"messageIds":["{m}"]}"#),
            Probe(method: "POST", template: "conversations/{c}/delivered", json: #"{"upToSeq":1}"#),
            Probe(method: "GET", template: "conversations/{c}/messages"),
            Probe(method: "GET", template: "conversations/{c}/messages?after=0&limit=200"),
            Probe(method: "GET", template: "conversations/{c}/changes?since=0"),
            Probe(method: "POST", template: "conversations/{c}/messages", json: #"{"clientMessageId":"probe-1","text":"hi"}"#),
            Probe(method: "POST", template: "conversations/{c}/messages", json: #"{"clientMessageId":"probe-2","text":"re","replyToId":"{m}"}"#),
            Probe(method: "POST", template: "conversations/{c}/messages", json: #"{"clientMessageId":"probe-3","forwardOf":"{m}"}"#),
            Probe(method: "POST", template: "conversations/{c}/messages",
                  json: #"{"clientMessageId":"probe-4","text":"","type":"location","metadata":{"latitude":"1","longitude":"2"}}"#),
            Probe(method: "PATCH", template: "conversations/{c}/messages/{m}", json: #"{"text":"pwned"}"#),
            Probe(method: "DELETE", template: "conversations/{c}/messages/{m}"),
            Probe(method: "POST", template: "conversations/{c}/messages/{m}/reactions", json: #"{"emoji":"💀"}"#),
            Probe(method: "DELETE", template: "conversations/{c}/messages/{m}/reactions/%F0%9F%91%8D"),
            Probe(method: "GET", template: "conversations/{c}/messages/{m}/reads"),
        ]
    }

    static func fill(_ template: String, conversation: EntityID, message: EntityID) -> String {
        template.replacingOccurrences(of: "{c}", with: conversation.description).replacingOccurrences(of: "{m}", with: message.description)
    }

    /// An outsider who could read, post into, rename or leave someone else's conversation, or
    /// tell which ids exist by the answers, is the worst chat bug there is.
    @Test(arguments: StoreKind.available)
    func outsidersGetTheSameNotFoundAsForIdsThatNeverExistedAndChangeNothing(_ kind: StoreKind) async throws {
        let world = try await ContractWorld.build(kind)
        defer { Task { await world.server.stop() } }
        let server = world.server
        let targets: [(Conversation, Message)] = [(world.direct, world.directMessages[1]), (world.group, world.groupMessage)]
        for outsider in [world.mallory, world.carol, world.erin] {
            let before = try await world.snapshot()
            for (conversation, message) in targets {
                for probe in Self.probes(outsider: outsider, alice: world.alice) {
                    let context = "\(outsider.auth.user.email) \(probe) in \(conversation.name ?? "direct")"
                    let path = Self.fill(probe.template, conversation: conversation.id, message: message.id)
                    let json = probe.json.map { Self.fill($0, conversation: conversation.id, message: message.id) }
                    let answer = try await server.call(probe.method, path, token: outsider.token, json: json)
                    expectContractError(answer, .notFound, context)
                    expectNoLeak(answer, of: ContractWorld.secrets + [world.alice.auth.user.email, world.bob.auth.user.email], context)
                    let (ghost, ghostMessage) = (EntityID(), EntityID())
                    let unknown = try await server.call(
                        probe.method, Self.fill(probe.template, conversation: ghost, message: ghostMessage), token: outsider.token,
                        json: probe.json.map { Self.fill($0, conversation: ghost, message: ghostMessage) })
                    #expect(
                        canonicalJSON(answer.body) == canonicalJSON(unknown.body) && answer.status == unknown.status,
                        "\(context): \(String(decoding: answer.body, as: UTF8.self)) vs \(String(decoding: unknown.body, as: UTF8.self))")
                }
            }
            #expect(try await world.snapshot() == before, "\(outsider.auth.user.email) changed something")
        }
        // Nothing of it reached the outsiders' own lists either.
        #expect(try await world.carol.api.conversations().isEmpty)
        #expect(try await world.mallory.api.conversations().map(\.id) == [world.evil.id])
    }

    /// A member must not reach into a conversation they are not in through ids placed in a
    /// conversation they are in: editing, reacting to, reading receipts of, replying to,
    /// forwarding or marking read another tenant's message is refused like an unknown id.
    @Test func foreignIdsInsideOnesOwnConversationAreUnknown() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let server = world.server
        let c = "conversations/\(world.direct.id)"
        let before = try await world.snapshot()
        // (method, path, body with {x} for the foreign id, code)
        let cases: [(String, String, String?, ErrorCode)] = [
            ("PATCH", "\(c)/messages/{x}", #"{"text":"pwned"}"#, .notFound),
            ("DELETE", "\(c)/messages/{x}", nil, .notFound),
            ("POST", "\(c)/messages/{x}/reactions", #"{"emoji":"👀"}"#, .notFound),
            ("DELETE", "\(c)/messages/{x}/reactions/x", nil, .notFound),
            ("GET", "\(c)/messages/{x}/reads", nil, .notFound),
            ("POST", "\(c)/messages", #"{"clientMessageId":"r1","text":"re","replyToId":"{x}"}"#, .invalidRequest),
            ("POST", "\(c)/messages", #"{"clientMessageId":"f1","forwardOf":"{x}"}"#, .notFound),
            ("POST", "\(c)/read", #"{"messageIds":["{x}"]}"#, .invalidRequest),
        ]
        for foreign in [world.evilMessage.id, world.groupMessage.id] {
            for (method, template, json, code) in cases {
                // The group message is one alice can see, but not of this conversation: only
                // the forward may use it.
                if foreign == world.groupMessage.id, json?.contains("forwardOf") == true { continue }
                let answer = try await server.call(
                    method, template.replacingOccurrences(of: "{x}", with: "\(foreign)"), token: world.alice.token,
                    json: json?.replacingOccurrences(of: "{x}", with: "\(foreign)"))
                expectContractError(answer, code, "\(method) \(template) with \(foreign)")
                expectNoLeak(answer, of: ["secret-evil", "Evil Plans"], "\(method) \(template)")
                let ghost = EntityID()
                let unknown = try await server.call(
                    method, template.replacingOccurrences(of: "{x}", with: "\(ghost)"), token: world.alice.token,
                    json: json?.replacingOccurrences(of: "{x}", with: "\(ghost)"))
                #expect(unknown.status == answer.status && canonicalJSON(unknown.body) == canonicalJSON(answer.body), "\(method) \(template)")
            }
        }
        #expect(try await world.snapshot() == before)
    }

    /// A former member keeps no way in: forwarding a group message out of the group after being
    /// removed would copy history they may no longer read.
    @Test func aFormerMemberCannotForwardOrReplyToTheGroupsMessages() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let own = try await world.erin.api.createConversation(.init(type: .direct, participantIds: [world.carol.id]))
        let forward = try await world.server.call(
            "POST", "conversations/\(own.id)/messages", token: world.erin.token,
            json: #"{"clientMessageId":"fw","forwardOf":"\#(world.groupMessage.id)"}"#)
        expectContractError(forward, .notFound, "forward by a former member")
        expectNoLeak(forward, of: ["secret-group"], "forward")
        // Before removal the same forward works (the refusal is about membership, not the shape).
        let bobsOwn = try await world.bob.api.createConversation(.init(type: .direct, participantIds: [world.carol.id]))
        let allowed = try await world.bob.api.send(.init(clientMessageId: "fw", text: "", forwardOf: world.groupMessage.id), to: bobsOwn.id)
        #expect(allowed.text == "secret-group" && allowed.forwardedFromId == world.groupMessage.id)
        #expect(try await world.erin.api.conversation(own.id).lastSeq == 0)
        #expect(try await world.carol.api.messages(own.id).messages.isEmpty)
    }

    /// Attachments are readable by their uploader and the members of conversations they were
    /// sent in; anyone else (another organization, the same organization) gets the answer of an
    /// unknown id, and nobody may send someone else's upload as their own.
    @Test func attachmentsAndUploadsStayWithTheirConversationsAndUploader() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let server = world.server
        let before = try await world.snapshot()
        #expect(try await server.call("GET", "attachments/\(world.attachment.id)", token: world.bob.token).status == 200)
        let ghost = try await server.call("GET", "attachments/\(EntityID())", token: world.carol.token)
        expectContractError(ghost, .notFound, "unknown attachment")
        for (user, id) in [
            (world.carol, world.attachment.id), (world.mallory, world.attachment.id), (world.alice, world.evilAttachment.id),
            (world.erin, world.attachment.id),
        ] {
            let answer = try await server.call("GET", "attachments/\(id)", token: user.token)
            expectContractError(answer, .notFound, "\(user.auth.user.email) downloads \(id)")
            #expect(canonicalJSON(answer.body) == canonicalJSON(ghost.body))
        }
        // Someone else's upload, resumable or finished, is unknown to anyone but its uploader.
        let upload = "attachments/uploads/\(world.uploadId)"
        for (method, path, body) in [
            ("GET", upload, nil), ("PUT", "\(upload)?offset=5", Data("67890".utf8)), ("POST", "\(upload)/complete", nil),
        ] as [(String, String, Data?)] {
            for user in [world.bob, world.mallory] {
                let answer = try await server.exchange(method, path, token: user.token, body: body)
                expectContractError(answer, .notFound, "\(user.auth.user.email) \(method) \(path)")
                let unknown = try await server.exchange(
                    method, path.replacingOccurrences(of: "\(world.uploadId)", with: "\(EntityID())"), token: user.token, body: body)
                #expect(canonicalJSON(unknown.body) == canonicalJSON(answer.body) && unknown.status == answer.status, "\(method) \(path)")
            }
        }
        // Sending an attachment one did not upload: refused like an unknown attachment.
        for (user, conversation, id) in [
            (world.bob, world.direct.id, world.attachment.id), (world.alice, world.direct.id, world.evilAttachment.id),
        ] {
            let json = { (id: EntityID) in #"{"clientMessageId":"att-\#(id)","text":"","type":"image","attachmentId":"\#(id)"}"# }
            let answer = try await server.call("POST", "conversations/\(conversation)/messages", token: user.token, json: json(id))
            expectContractError(answer, .invalidRequest, "\(user.auth.user.email) sends \(id)")
            let unknown = try await server.call("POST", "conversations/\(conversation)/messages", token: user.token, json: json(EntityID()))
            #expect(canonicalJSON(unknown.body) == canonicalJSON(answer.body))
        }
        #expect(try await world.snapshot() == before)
    }

    /// A member removed from a group loses its media with its messages: an attachment
    /// forwarded into the group downloads for members, and is unknown to them once removed.
    @Test func aRemovedMemberLosesTheGroupsAttachments() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let server = world.server
        let group = world.group.id
        _ = try await world.alice.api.addParticipants(group, userIds: [world.carol.id])
        let image = try #require(world.directMessages.first { $0.type == .image })
        let forwarded = try await world.alice.api.send(.init(clientMessageId: "fw-image", text: "", forwardOf: image.id), to: group)
        #expect(forwarded.attachment?.id == world.attachment.id)
        let path = "attachments/\(world.attachment.id)"
        let member = try await server.exchange("GET", path, token: world.carol.token)
        #expect(member.status == 200 && member.body == Fixtures.png)
        _ = try await world.alice.api.removeParticipant(group, userId: world.carol.id)
        let former = try await server.call("GET", path, token: world.carol.token)
        expectContractError(former, .notFound, "a removed member downloads the group's attachment")
        let ranged = try await server.exchange("GET", path, token: world.carol.token, headers: ["Range": "bytes=0-15"])
        expectContractError(ranged, .notFound, "a removed member asks for a range")
        // Bob, still a member of both, keeps it.
        #expect(try await server.exchange("GET", path, token: world.bob.token).status == 200)
    }

    /// Nobody unregisters someone else's push device: a user who did would silence another
    /// user's notifications on their phone.
    @Test func nobodyUnregistersAnotherUsersDevice() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let server = world.server
        let token = String(repeating: "0f", count: 32)
        try await world.alice.api.registerDevice(token: token, environment: .sandbox)
        for user in [world.bob, world.mallory] {
            let delete = try await server.call("DELETE", "devices/\(token)", token: user.token)
            expectContractError(delete, .notFound, "\(user.auth.user.email) unregisters alice's device")
            let logout = try await server.call("POST", "auth/logout", token: user.token, json: #"{"deviceToken":"\#(token)"}"#)
            #expect(logout.status == 204)
            // That logout ended the session: the next one signs in again.
            let fresh = try await server.api().login(.init(
                organization: user.auth.user.organizationId == world.alice.auth.user.organizationId ? "acme" : "evil",
                email: user.auth.user.email, password: TestUser.password))
            let all = try await server.call("POST", "auth/logout", token: fresh.token)
            #expect(all.status == 204)
        }
        // Alice's device is still registered: her own unregistration finds it (once).
        #expect(try await server.call("DELETE", "devices/\(token)", token: world.alice.token).status == 204)
        expectContractError(try await server.call("DELETE", "devices/\(token)", token: world.alice.token), .notFound, "gone")
    }

    /// Another organization's admin must not change, deactivate or list this organization's
    /// users or revoke its invites; each is the answer of an unknown id.
    @Test func anotherOrganizationsAdminCannotTouchThisOrganization() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let server = world.server
        let before = try await world.snapshot()
        for (method, template, json) in [
            ("PATCH", "users/{u}", #"{"role":"member"}"#), ("PATCH", "users/{u}", #"{"role":"admin"}"#), ("DELETE", "users/{u}", nil),
        ] as [(String, String, String?)] {
            for target in [world.alice.id, world.bob.id] {
                let answer = try await server.call(method, template.replacingOccurrences(of: "{u}", with: "\(target)"), token: world.mallory.token, json: json)
                expectContractError(answer, .notFound, "\(method) \(template) on \(target)")
                let unknown = try await server.call(
                    method, template.replacingOccurrences(of: "{u}", with: "\(EntityID())"), token: world.mallory.token, json: json)
                #expect(canonicalJSON(unknown.body) == canonicalJSON(answer.body), "\(method) \(template)")
            }
        }
        let invite = try await server.call("DELETE", "organization/invites/\(world.invite.code)", token: world.mallory.token)
        expectContractError(invite, .notFound, "revoking another organization's invite")
        let unknownInvite = try await server.call("DELETE", "organization/invites/nosuchcode", token: world.mallory.token)
        #expect(canonicalJSON(unknownInvite.body) == canonicalJSON(invite.body))
        // A member of the same organization is not an admin: 403, and nothing moves either.
        let member = try await server.call("DELETE", "organization/invites/\(world.invite.code)", token: world.bob.token)
        expectContractError(member, .forbidden, "a member revokes an invite")
        let promote = try await server.call("PATCH", "users/\(world.bob.id)", token: world.bob.token, json: #"{"role":"admin"}"#)
        expectContractError(promote, .forbidden, "a member promotes themself")
        #expect(try await world.snapshot() == before)
        #expect(try await world.bob.api.me().role == .member)
    }

    /// Creating or growing a conversation with one user of another organization (or a
    /// deactivated or unknown one) among valid ones must refuse the whole request: a half-made
    /// group would already hold the valid users and its system message.
    @Test func aMixOfValidAndForeignUsersAddsNobody() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let server = world.server
        let dave = try await server.register("dave@x.io", organization: "acme")
        try await world.alice.api.deactivate(dave.id)
        let before = try await world.snapshot()
        for foreign in [world.mallory.id, dave.id, EntityID()] {
            let create = try await server.call(
                "POST", "conversations", token: world.alice.token,
                json: #"{"type":"group","name":"mixed","participantIds":["\#(world.carol.id)","\#(foreign)"]}"#)
            expectContractError(create, .notFound, "group with \(foreign)")
            let direct = try await server.call(
                "POST", "conversations", token: world.alice.token, json: #"{"type":"direct","participantIds":["\#(foreign)"]}"#)
            expectContractError(direct, .notFound, "direct with \(foreign)")
            let add = try await server.call(
                "POST", "conversations/\(world.group.id)/participants", token: world.alice.token,
                json: #"{"userIds":["\#(world.carol.id)","\#(foreign)"]}"#)
            expectContractError(add, .notFound, "adding carol and \(foreign)")
            expectNoLeak(add, of: ["mallory", "Evil"], "add")
            let remove = try await server.call("DELETE", "conversations/\(world.group.id)/participants/\(foreign)", token: world.alice.token)
            expectContractError(remove, .notFound, "removing \(foreign)")
        }
        #expect(try await world.snapshot() == before)
        #expect(try await world.carol.api.conversations().isEmpty)
    }

    /// The conversation list and its incremental sync show each user their own conversations
    /// only: a paging cursor or sync token taken from someone else's answer, or a token from
    /// long ago, must not widen the scope; a former member learns only the id they lost.
    @Test func listPagesAndSyncTokensNeverShowOthersConversations() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let server = world.server
        let decoder = WireCoding.makeDecoder()
        let alicePage = try await world.alice.api.conversationsPage(limit: 1)
        let cursor = try #require(alicePage.nextBefore)
        #expect(alicePage.hasMore == true)
        for (user, visible) in [(world.mallory, [world.evil.id]), (world.carol, []), (world.erin, [])] as [(TestUser, [EntityID])] {
            let first = try await server.call("GET", "conversations?limit=200", token: user.token)
            #expect(try decoder.decode(ConversationsResponse.self, from: first.body).conversations.map(\.id) == visible)
            // Alice's cursor, in someone else's hands, pages through their own list only.
            let borrowed = try await server.call("GET", "conversations?limit=200&before=\(cursor)", token: user.token)
            #expect(borrowed.status == 200)
            let borrowedIds = try decoder.decode(ConversationsResponse.self, from: borrowed.body).conversations.map(\.id)
            #expect(Set(borrowedIds).isSubset(of: Set(visible)), "\(user.auth.user.email): \(borrowedIds)")
            let synced = try await server.call("GET", "conversations?changedSince=s1.0", token: user.token)
            #expect(synced.status == 200)
            let changes = try decoder.decode(ConversationChanges.self, from: synced.body)
            #expect(changes.conversations.map(\.id) == visible, "\(user.auth.user.email)")
            expectNoLeak(synced, of: ["secret-alpha", "secret-beta", "secret-group", "Team Secret"], "sync of \(user.auth.user.email)")
            if user.id == world.erin.id {
                #expect(changes.removedIds == [world.group.id], "the former member is told which conversation they lost")
            } else {
                #expect(changes.removedIds.isEmpty, "\(user.auth.user.email): \(changes.removedIds)")
            }
        }
        // Alice's own token from the same time sees both of hers, and nothing of mallory's.
        let aliceSync = try await world.alice.api.conversationChanges(since: "s1.0")
        #expect(Set(aliceSync.conversations.map(\.id)) == [world.direct.id, world.group.id])
    }

    /// Search runs over the caller's conversations only, also when asked for one by id: a
    /// search scoped to another tenant's conversation finds nothing, like an unknown id.
    @Test func searchNeverFindsWhatTheCallerCannotRead() async throws {
        let world = try await ContractWorld.build()
        defer { Task { await world.server.stop() } }
        let server = world.server
        let own = try await world.mallory.api.search("secret")
        #expect(own.results.map(\.message.text) == ["secret-evil"])
        let carols = try await world.carol.api.search("secret")
        #expect(carols.results.isEmpty)
        let erins = try await world.erin.api.search("secret")
        #expect(erins.results.isEmpty, "a former member still finds the group's messages")
        for (user, conversation) in [(world.mallory, world.direct.id), (world.alice, world.evil.id), (world.erin, world.group.id)] {
            let answer = try await server.call("GET", "search?q=secret&conversationId=\(conversation)", token: user.token)
            let unknown = try await server.call("GET", "search?q=secret&conversationId=\(EntityID())", token: user.token)
            #expect(answer.status == unknown.status)
            #expect(canonicalJSON(answer.body) == canonicalJSON(unknown.body), "\(String(decoding: answer.body, as: UTF8.self))")
            expectNoLeak(answer, of: ContractWorld.secrets, "search by \(user.auth.user.email)")
        }
    }
}
