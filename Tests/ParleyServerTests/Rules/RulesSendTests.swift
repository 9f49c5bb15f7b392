import Foundation
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing

/// SendRules, AttachmentRules and ReceiptRules on both stores, across conversations and
/// organizations: replies and forwards only from what the sender may read, attachments only
/// their own, retries answered with the original, and no refusal taking a seq or moving a
/// watermark.
@Suite(.serialized) struct RulesSendTests {
    /// Nobody sends into a conversation they are not in (same organization, another one, a
    /// former member, an unknown user or conversation): "not found", and the counter stays.
    @Test(arguments: StoreKind.available)
    func onlyParticipantsSend(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            try await world.send("before", by: world.carol, in: world.group)
            _ = try await store.removeParticipant(conversationId: world.group.id, by: world.carol.id, userId: world.carol.id, now: RulesWorld.now)
            let direct = try await world.lastSeq(world.direct), group = try await world.lastSeq(world.group)
            let foreign = try await world.lastSeq(world.foreign)
            let attempts: [(String, MessageDraft)] = [
                ("an outsider", world.draft("x", by: world.carol, in: world.direct)),
                ("another organization's user", world.draft("x", by: world.dave, in: world.direct)),
                ("a former member", world.draft("x", by: world.carol, in: world.group)),
                ("into another organization", world.draft("x", by: world.alice, in: world.foreign)),
                ("nobody", MessageDraft(conversationId: world.direct.id, senderId: EntityID(), clientMessageId: "n", type: .text, text: "x", now: RulesWorld.now)),
                ("no conversation", MessageDraft(conversationId: EntityID(), senderId: world.alice.id, clientMessageId: "n", type: .text, text: "x", now: RulesWorld.now)),
            ]
            for (who, draft) in attempts {
                #expect(await world.code { try await store.send(draft) } == .notFound, "\(who)")
            }
            #expect(try await world.lastSeq(world.direct) == direct)
            #expect(try await world.lastSeq(world.group) == group)
            #expect(try await world.lastSeq(world.foreign) == foreign)
        }
    }

    /// A reply names a message of the same conversation: not one of another conversation of
    /// the sender, not one of another organization, not an unknown id; replying to a deleted
    /// or a system message of the conversation is fine.
    @Test(arguments: StoreKind.available)
    func repliesStayInTheirConversation(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            let here = try await world.send("here", by: world.bob, in: world.direct)
            let inGroup = try await world.send("group", by: world.bob, in: world.group)
            let abroad = try await world.send("globex", by: world.dave, in: world.foreign)
            let before = try await world.lastSeq(world.direct)
            for target in [inGroup.id, abroad.id, EntityID()] {
                var draft = world.draft("re", by: world.alice, in: world.direct)
                draft.replyToId = target
                #expect(await world.code { try await store.send(draft) } == .invalidRequest)
            }
            #expect(try await world.lastSeq(world.direct) == before, "refused replies take no seq")
            var reply = world.draft("re", by: world.alice, in: world.direct)
            reply.replyToId = here.id
            let sent = try await store.send(reply).message
            #expect(sent.replyToId == here.id && sent.seq == before + 1)
            _ = try await store.change(.delete, messageId: here.id, in: world.direct.id, by: world.bob.id, now: RulesWorld.now)
            var toDeleted = world.draft("re deleted", by: world.alice, in: world.direct)
            toDeleted.replyToId = here.id
            #expect(try await store.send(toDeleted).message.replyToId == here.id)
            let system = try #require(try await store.rename(conversationId: world.group.id, by: world.alice.id, to: "t", now: RulesWorld.now).systemMessage)
            var toSystem = world.draft("re system", by: world.bob, in: world.group)
            toSystem.replyToId = system.id
            #expect(try await store.send(toSystem).message.replyToId == system.id)
        }
    }

    /// A forward copies only what the sender can read: not from a conversation they are not
    /// in (same organization or another), not from one they left; the copy carries the source's
    /// type, text and metadata into the target, as the sender's message, with a reply if asked.
    @Test(arguments: StoreKind.available)
    func forwardsOnlyFromWhatTheSenderCanRead(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            var location = world.draft("meet here", by: world.bob, in: world.direct)
            location.type = .location
            location.metadata = ["latitude": "1.5", "longitude": "2.5"]
            let secret = try await store.send(location).message
            let abroad = try await world.send("globex only", by: world.dave, in: world.foreign)
            let groupMessage = try await world.send("team", by: world.alice, in: world.group)
            _ = try await store.removeParticipant(conversationId: world.group.id, by: world.alice.id, userId: world.carol.id, now: RulesWorld.now)
            let carolAndAlice = try await store.createConversation(NewConversation(
                organizationId: world.alice.organizationId, creatorId: world.carol.id, type: .direct, participantIds: [world.alice.id], now: RulesWorld.now)).conversation
            let before = try await world.lastSeq(carolAndAlice)
            let refusals: [(String, User, EntityID)] = [
                ("from a conversation carol is not in", world.carol, secret.id),
                ("from another organization", world.carol, abroad.id),
                ("from a group carol left", world.carol, groupMessage.id),
                ("an unknown message", world.alice, EntityID()),
            ]
            for (what, sender, source) in refusals {
                var forward = world.draft("", by: sender, in: carolAndAlice)
                forward.forwardedFromId = source
                #expect(await world.code { try await store.send(forward) } == .notFound, "\(what)")
            }
            #expect(try await world.lastSeq(carolAndAlice) == before)
            // Alice is in the direct conversation: she may forward Bob's location to Carol.
            let hello = try await world.send("hello", by: world.carol, in: carolAndAlice)
            var forward = world.draft("", by: world.alice, in: carolAndAlice)
            forward.forwardedFromId = secret.id
            forward.replyToId = hello.id
            let copy = try await store.send(forward).message
            #expect(copy.type == .location && copy.text == "meet here" && copy.metadata == location.metadata)
            #expect(copy.senderId == world.alice.id && copy.conversationId == carolAndAlice.id && copy.forwardedFromId == secret.id)
            #expect(copy.replyToId == hello.id && copy.seq == before + 2)
            #expect(try await store.messages(conversationId: carolAndAlice.id, viewer: world.carol.id, before: nil, after: nil, limit: 10)
                .messages.map(\.text) == ["hello", "meet here"])
            // A forward may not reply into another conversation either.
            var crossed = world.draft("", by: world.alice, in: carolAndAlice)
            crossed.forwardedFromId = secret.id
            crossed.replyToId = groupMessage.id
            #expect(await world.code { try await store.send(crossed) } == .invalidRequest)
            #expect(try await world.lastSeq(carolAndAlice) == before + 2)
        }
    }

    static func attachment(_ uploader: User, _ contentType: String) -> StoredAttachment {
        StoredAttachment(
            id: EntityID(), uploaderId: uploader.id, organizationId: uploader.organizationId, name: "f", contentType: contentType,
            size: 10, sha256: String(repeating: "cd", count: 32), createdAt: RulesWorld.now)
    }

    /// Which attachment fits which message type: an image, video or audio message needs that
    /// family; a file takes anything. Refused ones take no seq.
    @Test(arguments: StoreKind.available)
    func attachmentsMatchTheirMessageType(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            let table: [(MessageType, String, Bool)] = [
                (.image, "image/png", true), (.image, "image/jpeg", true), (.image, "video/mp4", false), (.image, "application/pdf", false),
                (.video, "video/mp4", true), (.video, "image/gif", false), (.audio, "audio/mpeg", true), (.audio, "video/mp4", false),
                (.file, "application/pdf", true), (.file, "image/png", true), (.file, "video/mp4", true), (.image, "imagex/png", false),
            ]
            var expectedSeq = try await world.lastSeq(world.direct)
            for (type, contentType, fits) in table {
                let file = Self.attachment(world.alice, contentType)
                try await store.createAttachment(file)
                var draft = world.draft("", by: world.alice, in: world.direct)
                draft.type = type
                draft.attachmentId = file.id
                if fits {
                    let sent = try await store.send(draft).message
                    expectedSeq += 1
                    #expect(sent.attachment?.id == file.id && sent.seq == expectedSeq, "\(type) with \(contentType)")
                } else {
                    #expect(await world.code { try await store.send(draft) } == .invalidRequest, "\(type) with \(contentType)")
                }
            }
            #expect(try await world.lastSeq(world.direct) == expectedSeq)
        }
    }

    /// Only the uploader puts an attachment into a message: not a member who can download it
    /// (it was shared with them), not another organization's uploader, not an unknown id.
    @Test(arguments: StoreKind.available)
    func onlyTheUploaderAttachesAFile(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            let alices = Self.attachment(world.alice, "image/png")
            let daves = Self.attachment(world.dave, "image/png")
            try await store.createAttachment(alices)
            try await store.createAttachment(daves)
            var shared = world.draft("", by: world.alice, in: world.direct)
            shared.type = .image
            shared.attachmentId = alices.id
            _ = try await store.send(shared)
            #expect(try await store.attachment(id: alices.id, viewer: world.bob.id) == alices, "bob may download it")
            let before = try await world.lastSeq(world.group)
            for (sender, id) in [(world.bob, alices.id), (world.alice, daves.id), (world.alice, EntityID())] {
                var draft = world.draft("", by: sender, in: world.group)
                draft.type = .image
                draft.attachmentId = id
                #expect(await world.code { try await store.send(draft) } == .invalidRequest)
            }
            #expect(try await world.lastSeq(world.group) == before)
        }
    }

    /// Who downloads an attachment: its uploader always; a participant of a conversation
    /// where a live message carries it; nobody else, a member who was removed included, and
    /// never another organization.
    @Test(arguments: StoreKind.available)
    func attachmentVisibilityFollowsMembership(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            let file = Self.attachment(world.alice, "application/pdf")
            try await store.createAttachment(file)
            func viewers() async throws -> [Bool] {
                var answer: [Bool] = []
                for user in [world.alice, world.bob, world.carol, world.dave] {
                    answer.append(try await store.attachment(id: file.id, viewer: user.id) == file)
                }
                return answer
            }
            #expect(try await viewers() == [true, false, false, false], "uploaded, not yet shared")
            var draft = world.draft("", by: world.alice, in: world.group)
            draft.type = .file
            draft.attachmentId = file.id
            let message = try await store.send(draft).message
            #expect(try await viewers() == [true, true, true, false])
            _ = try await store.removeParticipant(conversationId: world.group.id, by: world.alice.id, userId: world.carol.id, now: RulesWorld.now)
            #expect(try await viewers() == [true, true, false, false], "carol was removed")
            _ = try await store.change(.delete, messageId: message.id, in: world.group.id, by: world.alice.id, now: RulesWorld.now)
            #expect(try await viewers() == [true, false, false, false], "the message was deleted")
        }
    }

    /// A retry answers the original and writes nothing (whatever the retry's text), the same
    /// id in another conversation is a conflict, another sender's identical id is their own
    /// message, and a member who left cannot fish their message out by retrying.
    @Test(arguments: StoreKind.available)
    func clientMessageIdsArePerSenderAndConversation(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            let first = try await store.send(world.draft("first", by: world.alice, in: world.direct, id: "c1"))
            #expect(first.created)
            let retry = try await store.send(world.draft("changed my mind", by: world.alice, in: world.direct, id: "c1"))
            #expect(!retry.created && retry.message == first.message)
            let seq = try await world.lastSeq(world.direct)
            let groupSeq = try await world.lastSeq(world.group)
            #expect(await world.code { try await store.send(world.draft("elsewhere", by: world.alice, in: world.group, id: "c1")) } == .conflict)
            #expect(try await world.lastSeq(world.group) == groupSeq, "the conflict took no seq")
            let bobs = try await store.send(world.draft("bob's", by: world.bob, in: world.direct, id: "c1"))
            #expect(bobs.created && bobs.message.id != first.message.id && bobs.message.seq == seq + 1)
            let daves = try await store.send(world.draft("dave's", by: world.dave, in: world.foreign, id: "c1"))
            #expect(daves.created && daves.message.text == "dave's")

            try await world.send("carol's", by: world.carol, in: world.group, id: "k")
            _ = try await store.removeParticipant(conversationId: world.group.id, by: world.alice.id, userId: world.carol.id, now: RulesWorld.now)
            #expect(await world.code { try await store.send(world.draft("carol's", by: world.carol, in: world.group, id: "k")) } == .notFound)
        }
    }

    /// Seeded runs mixing accepted sends, retries and refused ones (outsiders, replies into
    /// other conversations, foreign attachments) into one conversation: the accepted ones are
    /// numbered 1, 2, 3... without a gap, in the order they were sent, and the history holds
    /// exactly them.
    @Test(arguments: StoreKind.available.flatMap { kind in [31, 32].map { (kind, UInt64($0)) } })
    func seededSendsAreGaplessWhateverIsRefused(kind: StoreKind, seed: UInt64) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            let elsewhere = try await world.send("elsewhere", by: world.alice, in: world.group)
            let daves = Self.attachment(world.dave, "image/png")
            try await store.createAttachment(daves)
            var random = SeededGenerator(seed: seed)
            var accepted: [(id: String, text: String)] = []
            var next: Int64 = try await world.lastSeq(world.direct) + 1
            for step in 0..<80 {
                let kind = Int.random(in: 0..<6, using: &random)
                var draft = world.draft("s\(step)", by: Bool.random(using: &random) ? world.alice : world.bob, in: world.direct, id: "s\(step)")
                switch kind {
                case 0 where !accepted.isEmpty:
                    let original = accepted.randomElement(using: &random)!
                    let sender = original.id.hasPrefix("a") ? world.alice : world.bob
                    let result = try await store.send(world.draft("retry", by: sender, in: world.direct, id: original.id))
                    #expect(!result.created && result.message.text == original.text, "seed \(seed) step \(step): retry")
                    continue
                case 1:
                    draft.senderId = [world.carol.id, world.dave.id].randomElement(using: &random)!
                    #expect(await world.code { try await store.send(draft) } == .notFound, "seed \(seed) step \(step)")
                    continue
                case 2:
                    draft.replyToId = elsewhere.id
                    #expect(await world.code { try await store.send(draft) } == .invalidRequest, "seed \(seed) step \(step)")
                    continue
                case 3:
                    draft.type = .image
                    draft.attachmentId = daves.id
                    #expect(await world.code { try await store.send(draft) } == .invalidRequest, "seed \(seed) step \(step)")
                    continue
                default:
                    break
                }
                let prefix = draft.senderId == world.alice.id ? "a" : "b"
                draft.clientMessageId = prefix + draft.clientMessageId
                let result = try await store.send(draft)
                #expect(result.created && result.message.seq == next, "seed \(seed) step \(step): seq \(result.message.seq), expected \(next)")
                next += 1
                accepted.append((draft.clientMessageId, draft.text))
            }
            let history = try await store.messages(conversationId: world.direct.id, viewer: world.bob.id, before: nil, after: nil, limit: 200).messages
            #expect(history.map(\.clientMessageId) == accepted.map(\.id))
            #expect(history.map(\.seq) == Array(1...Int64(accepted.count)))
            #expect(try await world.lastSeq(world.direct) == Int64(accepted.count))
        }
    }

    // MARK: Receipts

    /// Receipts from anyone but a member are "not found" and move nothing; a read naming
    /// messages of another conversation is refused; a negative seq is refused; a read beyond
    /// the last seq is clamped; watermarks never go down and delivered is never below read.
    @Test(arguments: StoreKind.available)
    func receiptsMoveOnlyAMembersOwnWatermarksUpward(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            var sent: [Message] = []
            for n in 0..<4 { sent.append(try await world.send("m\(n)", by: world.alice, in: world.direct)) }
            let inGroup = try await world.send("g", by: world.alice, in: world.group)
            for reader in [world.carol.id, world.dave.id, EntityID()] {
                #expect(await world.code {
                    try await store.markRead(conversationId: world.direct.id, userId: reader, upToSeq: 2, messageIds: nil)
                } == .notFound)
                #expect(await world.code { try await store.markDelivered(conversationId: world.direct.id, userId: reader, upToSeq: 2) } == .notFound)
            }
            #expect(await world.code {
                try await store.markRead(conversationId: world.direct.id, userId: world.bob.id, upToSeq: nil, messageIds: [inGroup.id, EntityID()])
            } == .invalidRequest, "ids of another conversation only")
            #expect(await world.code { try await store.markRead(conversationId: world.direct.id, userId: world.bob.id, upToSeq: -1, messageIds: nil) } == .invalidRequest)
            #expect(await world.code { try await store.markDelivered(conversationId: world.direct.id, userId: world.bob.id, upToSeq: -5) } == .invalidRequest)
            #expect(await world.code { try await store.markRead(conversationId: world.direct.id, userId: world.bob.id, upToSeq: nil, messageIds: []) } == .invalidRequest)
            let view = try #require(try await store.conversation(id: world.direct.id, viewer: world.bob.id))
            #expect(view.readSeq == 0 && view.unreadCount == 4, "nothing refused moved bob's watermark")
            let alicesBefore = try #require(try await store.conversation(id: world.direct.id, viewer: world.alice.id)).readSeq

            let mixed = try await store.markRead(conversationId: world.direct.id, userId: world.bob.id, upToSeq: nil, messageIds: [sent[2].id, inGroup.id])
            #expect(mixed.changed && mixed.member.readSeq == sent[2].seq && mixed.unreadCount == 1, "the group message's seq does not count")
            let delivered = try await store.markDelivered(conversationId: world.direct.id, userId: world.bob.id, upToSeq: 1)
            #expect(!delivered.changed && delivered.member.deliveredSeq == sent[2].seq, "delivered stays at least read")
            let lower = try await store.markRead(conversationId: world.direct.id, userId: world.bob.id, upToSeq: 1, messageIds: nil)
            #expect(!lower.changed && lower.member.readSeq == sent[2].seq)
            let beyond = try await store.markRead(conversationId: world.direct.id, userId: world.bob.id, upToSeq: 1_000, messageIds: nil)
            #expect(beyond.member.readSeq == sent[3].seq && beyond.member.deliveredSeq == sent[3].seq && beyond.unreadCount == 0)
            #expect(try await store.conversation(id: world.direct.id, viewer: world.alice.id)?.readSeq == alicesBefore, "bob's receipts moved only bob's watermark")
            // The clamp holds: the next message is unread although bob once asked for 1,000.
            try await world.send("after", by: world.alice, in: world.direct)
            #expect(try await store.conversation(id: world.direct.id, viewer: world.bob.id)?.unreadCount == 1)
        }
    }
}
