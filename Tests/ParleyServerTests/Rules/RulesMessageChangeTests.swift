import Foundation
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing

/// Users and conversations for the rules suites: Alice, Bob and Carol of one organization,
/// Dave of another (with a conversation of his own with Erin), a direct conversation of Alice
/// and Bob, and a group of all three acme users.
struct RulesWorld {
    let store: any ParleyStore
    let alice: User, bob: User, carol: User, dave: User, erin: User
    let direct: Conversation, group: Conversation, foreign: Conversation
    static let now = Date(timeIntervalSince1970: 1_760_000_000)

    static func make(_ store: any ParleyStore) async throws -> RulesWorld {
        func user(_ name: String, _ organization: String) async throws -> User {
            try await store.register(organization: organization, email: "\(name)@\(organization).test", displayName: name, passwordHash: "h", now: now)
        }
        let alice = try await user("alice", "acme"), bob = try await user("bob", "acme"), carol = try await user("carol", "acme")
        let dave = try await user("dave", "globex"), erin = try await user("erin", "globex")
        let direct = try await store.createConversation(NewConversation(
            organizationId: alice.organizationId, creatorId: alice.id, type: .direct, participantIds: [bob.id], now: now)).conversation
        let group = try await store.createConversation(NewConversation(
            organizationId: alice.organizationId, creatorId: alice.id, type: .group, name: "team",
            participantIds: [bob.id, carol.id], now: now)).conversation
        let foreign = try await store.createConversation(NewConversation(
            organizationId: dave.organizationId, creatorId: dave.id, type: .direct, participantIds: [erin.id], now: now)).conversation
        return RulesWorld(store: store, alice: alice, bob: bob, carol: carol, dave: dave, erin: erin, direct: direct, group: group, foreign: foreign)
    }

    /// Sends a text message and returns it.
    @discardableResult
    func send(_ text: String, by sender: User, in conversation: Conversation, id: String = UUID().uuidString) async throws -> Message {
        try await store.send(draft(text, by: sender, in: conversation, id: id)).message
    }

    func draft(_ text: String, by sender: User, in conversation: Conversation, id: String = UUID().uuidString) -> MessageDraft {
        MessageDraft(conversationId: conversation.id, senderId: sender.id, clientMessageId: id, type: .text, text: text, now: Self.now)
    }

    /// The conversation's counter as the store has it.
    func lastSeq(_ conversation: Conversation) async throws -> Int64 {
        try #require(try await store.reading { tx in try await tx.lastSeq(of: conversation.id) })
    }

    /// The message as stored.
    func stored(_ id: EntityID) async throws -> Message {
        try #require(try await store.reading { tx in try await tx.message(id) })
    }

    /// The error code a refused call gets (nil if it was not refused with an `ChatError`).
    func code<T>(_ body: () async throws -> T) async -> ErrorCode? {
        do {
            _ = try await body()
            return nil
        } catch let error as ChatError {
            return error.code
        } catch {
            return .internal
        }
    }
}

/// MessageRules on both stores, beyond the conformance suite: who may edit, delete and react
/// (participants only, of this organization, still members), what a refusal leaves (no seq,
/// no change), and a seeded run of every kind of change checked against a model.
@Suite(.serialized) struct RulesMessageChangeTests {
    static let later = RulesWorld.now.addingTimeInterval(60)

    /// Every change by someone who is not a participant, whatever the reason, is "not found"
    /// (nothing to learn by probing ids), by a participant who is not the sender "forbidden";
    /// and none of them takes a seq or changes the message.
    @Test(arguments: StoreKind.available)
    func onlyTheSenderEditsAndDeletesAndOnlyParticipantsSeeTheMessage(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            let message = try await world.send("original", by: world.alice, in: world.direct)
            let before = try await world.lastSeq(world.direct)
            let actors: [(String, EntityID, ErrorCode, ErrorCode)] = [
                ("the other participant", world.bob.id, .forbidden, .forbidden),
                ("an outsider of the organization", world.carol.id, .notFound, .notFound),
                ("another organization's user", world.dave.id, .notFound, .notFound),
                ("nobody", EntityID(), .notFound, .notFound),
            ]
            for (who, actor, editCode, deleteCode) in actors {
                #expect(await world.code {
                    try await store.change(.text("hijacked"), messageId: message.id, in: world.direct.id, by: actor, now: Self.later)
                } == editCode, "edit by \(who)")
                #expect(await world.code {
                    try await store.change(.delete, messageId: message.id, in: world.direct.id, by: actor, now: Self.later)
                } == deleteCode, "delete by \(who)")
            }
            for (who, actor) in [("outsider", world.carol.id), ("other organization", world.dave.id)] {
                #expect(await world.code {
                    try await store.change(.reaction("👍", add: true), messageId: message.id, in: world.direct.id, by: actor, now: Self.later)
                } == .notFound, "reaction by \(who)")
            }
            // Naming a conversation the caller is in does not reach a message of another one.
            let inGroup = try await world.send("group message", by: world.bob, in: world.group)
            let groupBefore = try await world.lastSeq(world.group)
            #expect(await world.code {
                try await store.change(.delete, messageId: inGroup.id, in: world.direct.id, by: world.bob.id, now: Self.later)
            } == .notFound)
            #expect(await world.code {
                try await store.change(.text("x"), messageId: message.id, in: world.foreign.id, by: world.dave.id, now: Self.later)
            } == .notFound, "a foreign conversation id does not reach acme's message")
            #expect(await world.code {
                try await store.change(.text("x"), messageId: message.id, in: EntityID(), by: world.alice.id, now: Self.later)
            } == .notFound)
            let after = try await world.stored(message.id)
            #expect(after == message, "the message is as sent")
            #expect(try await world.lastSeq(world.direct) == before, "no seq taken")
            #expect(try await world.lastSeq(world.group) == groupBefore, "no seq taken")
            #expect(try await world.stored(inGroup.id) == inGroup)
        }
    }

    /// A member who left or was removed can no longer touch even their own messages, and
    /// what they sent stays as it was.
    @Test(arguments: StoreKind.available)
    func aFormerMemberChangesNothingOfTheirOwn(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            let mine = try await world.send("carol's", by: world.carol, in: world.group)
            _ = try await store.change(.reaction("🎉", add: true), messageId: mine.id, in: world.group.id, by: world.carol.id, now: Self.later)
            _ = try await store.removeParticipant(conversationId: world.group.id, by: world.alice.id, userId: world.carol.id, now: Self.later)
            let before = try await world.lastSeq(world.group)
            let kept = try await world.stored(mine.id)
            for edit in [MessageEdit.text("edited after leaving"), .delete, .reaction("🎉", add: false), .reaction("👍", add: true)] {
                #expect(await world.code {
                    try await store.change(edit, messageId: mine.id, in: world.group.id, by: world.carol.id, now: Self.later)
                } == .notFound, "\(edit)")
            }
            #expect(try await world.stored(mine.id) == kept)
            #expect(kept.reactions == ["🎉": [world.carol.id]], "the reaction made while a member stays")
            #expect(try await world.lastSeq(world.group) == before)
        }
    }

    /// System messages change for nobody, not even the member whose action wrote them.
    @Test(arguments: StoreKind.available)
    func systemMessagesCannotBeChangedEvenByTheirActor(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            let system = try #require(try await store.rename(conversationId: world.group.id, by: world.alice.id, to: "renamed", now: Self.later).systemMessage)
            #expect(system.senderId == world.alice.id && system.type == .system)
            let before = try await world.lastSeq(world.group)
            for actor in [world.alice, world.bob] {
                for edit in [MessageEdit.text("rewritten"), .delete, .reaction("👍", add: true), .reaction("👍", add: false)] {
                    #expect(await world.code {
                        try await store.change(edit, messageId: system.id, in: world.group.id, by: actor.id, now: Self.later)
                    } == .invalidRequest, "\(edit) by \(actor.displayName)")
                }
            }
            #expect(try await world.stored(system.id) == system)
            #expect(try await world.lastSeq(world.group) == before)
        }
    }

    /// Deleting keeps the seq and empties everything else: text, metadata (a shared location
    /// must not survive its deletion) and reactions; the tombstone cannot be edited or reacted
    /// to, and deleting again is no change.
    @Test(arguments: StoreKind.available)
    func aDeletedLocationKeepsNothingButItsSeq(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            var draft = world.draft("here I am", by: world.alice, in: world.direct)
            draft.type = .location
            draft.metadata = ["latitude": "48.8566", "longitude": "2.3522"]
            let sent = try await store.send(draft).message
            _ = try await store.change(.reaction("📍", add: true), messageId: sent.id, in: world.direct.id, by: world.bob.id, now: Self.later)
            let deleted = try await store.change(.delete, messageId: sent.id, in: world.direct.id, by: world.alice.id, now: Self.later)
            #expect(deleted.changed && deleted.message.seq == sent.seq && deleted.message.updatedSeq == sent.seq + 2)
            #expect(deleted.message.text.isEmpty && deleted.message.metadata == nil && deleted.message.reactions.isEmpty)
            #expect(deleted.message.deletedAt == Self.later)
            let stored = try await world.stored(sent.id)
            #expect(stored.text.isEmpty && stored.metadata == nil && stored.reactions.isEmpty && stored.deletedAt != nil)
            let page = try await store.messages(conversationId: world.direct.id, viewer: world.bob.id, before: nil, after: nil, limit: 10)
            #expect(page.messages.map(\.text) == [""] && page.messages[0].metadata == nil, "the history shows the tombstone only")
            #expect(await world.code {
                try await store.change(.reaction("📍", add: false), messageId: sent.id, in: world.direct.id, by: world.bob.id, now: Self.later)
            } == .invalidRequest, "not even removing a reaction")
            let again = try await store.change(.delete, messageId: sent.id, in: world.direct.id, by: world.alice.id, now: Self.later.addingTimeInterval(9))
            #expect(!again.changed && again.message.deletedAt == Self.later)
            #expect(try await world.lastSeq(world.direct) == sent.seq + 2)
        }
    }

    /// A user's several reactions are separate; removing one leaves the others; the last one
    /// removed drops its emoji from the message.
    @Test(arguments: StoreKind.available)
    func reactionsToggleOnePerUserAndEmoji(kind: StoreKind) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            let message = try await world.send("vote", by: world.alice, in: world.group)
            func react(_ emoji: String, _ user: User, _ add: Bool) async throws -> MessageChange {
                try await store.change(.reaction(emoji, add: add), messageId: message.id, in: world.group.id, by: user.id, now: Self.later)
            }
            var seq = message.seq
            for (emoji, user) in [("👍", world.bob), ("❤️", world.bob), ("👍", world.carol), ("👍", world.alice)] {
                let change = try await react(emoji, user, true)
                seq += 1
                #expect(change.changed && change.message.updatedSeq == seq)
            }
            var current = try await world.stored(message.id).reactions
            #expect(Set(current.keys) == ["👍", "❤️"])
            #expect(Set(current["👍"] ?? []) == [world.alice.id, world.bob.id, world.carol.id] && current["❤️"] == [world.bob.id])
            #expect(try await !react("❤️", world.carol, false).changed, "carol never gave ❤️")
            #expect(try await react("❤️", world.bob, false).changed)
            current = try await world.stored(message.id).reactions
            #expect(current["❤️"] == nil && current["👍"]?.count == 3, "the emoji is gone with its last reaction")
            for user in [world.alice, world.bob, world.carol] { _ = try await react("👍", user, false) }
            #expect(try await world.stored(message.id).reactions.isEmpty)
            #expect(try await world.lastSeq(world.group) == seq + 4)
        }
    }

    /// Seeded runs of edits, deletes and reactions by members, outsiders and another
    /// organization's user on a few messages, each answer checked against a model: the error
    /// or whether it changed, the message's text, tombstone, reactions and `updatedSeq`; the
    /// counter moves by exactly one per change and the changes feed ends where it does.
    @Test(arguments: StoreKind.available.flatMap { kind in [21, 22, 23].map { (kind, UInt64($0)) } })
    func seededChangesMatchTheModel(kind: StoreKind, seed: UInt64) async throws {
        try await withStore(kind) { store, _ in
            let world = try await RulesWorld.make(store)
            struct Model {
                var sender: EntityID
                var text: String
                var deleted = false
                var reactions: [String: Set<EntityID>] = [:]
                var updatedSeq: Int64
            }
            var models: [EntityID: Model] = [:]
            var ids: [EntityID] = []
            for (n, sender) in [world.alice, world.bob, world.carol, world.alice].enumerated() {
                let message = try await world.send("m\(n)", by: sender, in: world.group)
                models[message.id] = Model(sender: sender.id, text: message.text, updatedSeq: message.updatedSeq)
                ids.append(message.id)
            }
            let removed = try await store.removeParticipant(conversationId: world.group.id, by: world.alice.id, userId: world.carol.id, now: RulesWorld.now)
            var lastSeq = try #require(removed.systemMessage).seq
            let members: Set<EntityID> = [world.alice.id, world.bob.id]
            let actors = [world.alice.id, world.bob.id, world.alice.id, world.bob.id, world.carol.id, world.dave.id]
            var random = SeededGenerator(seed: seed)
            for step in 0..<60 {
                let id = ids.randomElement(using: &random)!
                let actor = actors.randomElement(using: &random)!
                let edit: MessageEdit = switch Int.random(in: 0..<6, using: &random) {
                case 0: .text(["a", "b", "c"].randomElement(using: &random)!)
                case 1: .delete
                default: .reaction(["👍", "🎉"].randomElement(using: &random)!, add: Bool.random(using: &random))
                }
                var model = models[id]!
                let expected: RulesOutcome
                if !members.contains(actor) {
                    expected = .refused(.notFound)
                } else {
                    switch edit {
                    case .text(let text):
                        if model.sender != actor { expected = .refused(.forbidden) }
                        else if model.deleted { expected = .refused(.invalidRequest) }
                        else { expected = .changed(text != model.text); model.text = text }
                    case .delete:
                        if model.sender != actor { expected = .refused(.forbidden) }
                        else { expected = .changed(!model.deleted); model.deleted = true; model.text = ""; model.reactions = [:] }
                    case .reaction(let emoji, let add):
                        if model.deleted {
                            expected = .refused(.invalidRequest)
                        } else {
                            var users = model.reactions[emoji] ?? []
                            expected = .changed(add ? users.insert(actor).inserted : users.remove(actor) != nil)
                            model.reactions[emoji] = users.isEmpty ? nil : users
                        }
                    }
                }
                if expected == .changed(true) {
                    lastSeq += 1
                    model.updatedSeq = lastSeq
                }
                let context = "seed \(seed) step \(step): \(edit)"
                do {
                    let change = try await store.change(edit, messageId: id, in: world.group.id, by: actor, now: Self.later)
                    #expect(expected == .changed(change.changed), "\(context)")
                    models[id] = model
                } catch let error as ChatError {
                    #expect(expected == .refused(error.code), "\(context)")
                }
                let stored = try await world.stored(id)
                let current = models[id]!
                #expect(stored.text == current.text && (stored.deletedAt != nil) == current.deleted, "\(context)")
                #expect(stored.reactions.mapValues { Set($0) } == current.reactions, "\(context)")
                #expect(stored.updatedSeq == current.updatedSeq, "\(context)")
            }
            #expect(try await world.lastSeq(world.group) == lastSeq, "seed \(seed): one seq per change, none per refusal")
            let feed = try await store.changes(conversationId: world.group.id, viewer: world.bob.id, since: 0, limit: 100)
            #expect(feed.lastSeq == lastSeq)
            let updatedSeqs = feed.messages.map(\.updatedSeq)
            #expect(updatedSeqs == updatedSeqs.sorted() && Set(updatedSeqs).count == updatedSeqs.count, "the feed is in change order")
        }
    }
}

/// What a change is expected to do: change (or not), or be refused with a code.
enum RulesOutcome: Equatable {
    case changed(Bool)
    case refused(ErrorCode)
}
