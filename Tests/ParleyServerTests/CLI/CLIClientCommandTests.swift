import Foundation
import GRDB
import ParleyBench
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// The client commands of the `parley` binary against a real server: each message is sent
/// once however often the outbox retries it, refusals and bad input are reported in one line
/// with the documented exit code (1: the server or the input said no, 2: the server could not
/// be reached), and what the commands list matches the server.
@Suite struct CLIClientCommandTests {
    /// A server with Alice (a CLI profile), Bob (a CLI profile) and their direct conversation,
    /// opened with `parley open-direct`.
    struct Cast {
        let server: TestServer
        let alice: String, bob: String
        let direct: String

        static func start() async throws -> Cast {
            let server = try await TestServer.start()
            let alice = try await CLI.register("alice@x.io", name: "Alice", server: server.baseURL)
            let bob = try await CLI.register("bob@x.io", name: "Bob", server: server.baseURL)
            let opened = try await CLI.run(["open-direct", "bob@x.io"], profile: alice)
            #expect(opened.status == 0, "\(opened.output)")
            let direct = CLI.single(opened.output)
            #expect(EntityID(direct) != nil, "open-direct prints the id: \(opened.output)")
            return Cast(server: server, alice: alice, bob: bob, direct: direct)
        }

        /// The messages the server holds in the direct conversation, read as Bob.
        func stored() async throws -> [Message] {
            let token = try #require(try CLI.session(bob)["token"] as? String)
            return try await server.api(token: token).messages(try #require(EntityID(direct)), limit: 100).messages
        }

        func token(_ profile: String) throws -> String { try #require(try CLI.session(profile)["token"] as? String) }
    }

    @Test func eachSendIsStoredOnceAndALaterSyncHasNothingToDeliver() async throws {
        let cast = try await Cast.start()
        let first = try await CLI.run(["send", cast.direct, "first"], profile: cast.alice)
        let second = try await CLI.run(["send", cast.direct, "first"], profile: cast.alice)
        #expect(first.status == 0 && first.output.hasPrefix("sent #1 "), "\(first.output)")
        #expect(second.status == 0 && second.output.hasPrefix("sent #2 "), "the same text again is a new message: \(second.output)")
        let sync = try await CLI.run(["sync"], profile: cast.alice)
        #expect(sync.status == 0, "\(sync.output)")
        #expect(sync.output.contains("delivered 0 queued messages; 0 still queued; 0 refused"), "\(sync.output)")
        let stored = try await cast.stored()
        #expect(stored.map(\.text) == ["first", "first"] && stored.map(\.seq) == [1, 2])
        #expect(Set(stored.map(\.clientMessageId)).count == 2)
        // The id `send` printed is the stored message's.
        #expect(CLI.single(first.output) == "sent #1 \(stored[0].id)")
        await cast.server.stop()
    }

    /// The outbox retries with the message's own id: when the first attempt reached the server
    /// but its answer was lost, the retry is answered with the stored message, not stored twice.
    @Test func aRetryOfASendThatAlreadyReachedTheServerIsNotStoredTwice() async throws {
        let cast = try await Cast.start()
        let queued = try await CLI.run(["send", cast.direct, "only once", "--server", try CLI.deadServer()], profile: cast.alice)
        #expect(queued.status == 0 && queued.output.contains("queued (server unreachable); `parley sync` delivers it"), "\(queued.output)")

        // The queued entry's id, from the profile's own database.
        let cache = try DatabaseQueue(path: cast.alice + "/cache.sqlite")
        let entries = try await cache.read { db in try String.fetchAll(db, sql: "SELECT client_message_id FROM outbox WHERE state = 'queued'") }
        try cache.close()
        #expect(entries.count == 1)
        let clientMessageId = try #require(entries.first)
        // "The first attempt": the same message, with the same id, reaches the server.
        _ = try await cast.server.api(token: try cast.token(cast.alice))
            .send(SendMessageRequest(clientMessageId: clientMessageId, text: "only once"), to: try #require(EntityID(cast.direct)))

        let sync = try await CLI.run(["sync"], profile: cast.alice)
        #expect(sync.status == 0 && sync.output.contains("delivered 1 queued message; 0 still queued; 0 refused"), "\(sync.output)")
        let stored = try await cast.stored()
        #expect(stored.map(\.text) == ["only once"], "\(stored.map(\.text))")
        #expect(stored.first?.clientMessageId == clientMessageId)
        await cast.server.stop()
    }

    @Test func aSendAfterAnOfflineSendDeliversBothOnceInOrder() async throws {
        let cast = try await Cast.start()
        let dead = try CLI.deadServer()
        for text in ["offline one", "offline two"] {
            let queued = try await CLI.run(["send", cast.direct, text, "--server", dead], profile: cast.alice)
            #expect(queued.output.contains("queued (server unreachable)"), "\(queued.output)")
        }
        let online = try await CLI.run(["send", cast.direct, "online three"], profile: cast.alice)
        #expect(online.status == 0 && online.output.hasPrefix("sent #3 "), "the queue goes first: \(online.output)")
        let sync = try await CLI.run(["sync"], profile: cast.alice)
        #expect(sync.output.contains("delivered 0 queued messages; 0 still queued; 0 refused"), "\(sync.output)")
        #expect(try await cast.stored().map(\.text) == ["offline one", "offline two", "online three"])
        await cast.server.stop()
    }

    @Test func aSendTheServerRefusesFailsOnceAndIsNeverRetried() async throws {
        let cast = try await Cast.start()
        // Carol's conversation with Bob, which Alice is not in.
        let carol = try await cast.server.register("carol@x.io")
        let bobText = (try CLI.session(cast.bob)["user"] as? [String: Any])?["id"] as? String
        let bobId = try #require(bobText.flatMap { EntityID($0) })
        let theirs = try await carol.api.createConversation(.init(type: .direct, participantIds: [bobId]))
        let refused = try await CLI.run(["send", theirs.id.description, "let me in"], profile: cast.alice)
        #expect(refused.status == 1, "\(refused.output)")
        #expect(refused.output.hasPrefix("parley: refused: ") && refused.output.contains("(kept as failed; it will not be sent)"), "\(refused.output)")
        let sync = try await CLI.run(["sync"], profile: cast.alice)
        #expect(sync.status == 0 && sync.output.contains("delivered 0 queued messages; 0 still queued; 1 refused"), "\(sync.output)")
        #expect(try await carol.api.messages(theirs.id).messages.isEmpty)
        await cast.server.stop()
    }

    @Test func anEmptyMessageIsRefusedWithoutQueueingAnything() async throws {
        let cast = try await Cast.start()
        let blank = try await CLI.run(["send", cast.direct, "   "], profile: cast.alice)
        #expect(blank.status == 1 && blank.output.hasPrefix("parley: invalid_request: A message is 1–"), "\(blank.output)")
        let sync = try await CLI.run(["sync"], profile: cast.alice)
        #expect(sync.output.contains("delivered 0 queued messages; 0 still queued; 0 refused"), "\(sync.output)")
        #expect(try await cast.stored().isEmpty)
        await cast.server.stop()
    }

    @Test func badIdsAndLimitsAreRefusedInOneLineBeforeAnyRequest() async throws {
        let cast = try await Cast.start()
        // The server is gone: a command that got past its input check would say "unreachable".
        await cast.server.stop()
        let send = try await CLI.run(["send", "not-an-id", "hello"], profile: cast.alice)
        #expect(send.status == 1 && send.output == "parley: not a conversation id: not-an-id\n", "\(send.output)")
        let history = try await CLI.run(["history", "12345"], profile: cast.alice)
        #expect(history.status == 1 && history.output == "parley: not a conversation id: 12345\n", "\(history.output)")
        let members = try await CLI.run(["members", "--make-admin", "bob"], profile: cast.alice)
        #expect(members.status == 1 && members.output == "parley: not a user id: bob\n", "\(members.output)")
        // The cache would have answered these (an empty page, or every message) without a word.
        for limit in ["0", "-1", "201"] {
            let history = try await CLI.run(["history", cast.direct, "--offline", "--limit=\(limit)"], profile: cast.alice)
            #expect(history.status == 1 && history.output == "parley: --limit must be 1 to 200\n", "\(limit): \(history.output)")
        }
    }

    @Test func anUnreachableServerExitsTwoAndARefusalExitsOne() async throws {
        let cast = try await Cast.start()
        let unreachable = try await CLI.run(["conversations", "--server", try CLI.deadServer()], profile: cast.alice)
        #expect(unreachable.status == 2 && unreachable.output.hasPrefix("parley: "), "\(unreachable.status): \(unreachable.output)")
        let before = try Data(contentsOf: URL(fileURLWithPath: cast.alice + "/session.json"))
        let wrong = try await CLI.run(
            ["login", "--organization", "acme", "--email", "alice@x.io"], profile: cast.alice, server: cast.server.baseURL,
            password: "not the password")
        #expect(wrong.status == 1 && wrong.output.hasPrefix("parley: "), "\(wrong.status): \(wrong.output)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: cast.alice + "/session.json")) == before, "a failed login keeps the session")
        let unknown = try await CLI.run(["open-direct", "nobody@x.io"], profile: cast.alice)
        #expect(unknown.status == 1 && unknown.output == "parley: no user nobody@x.io in your organization\n", "\(unknown.output)")
        await cast.server.stop()
    }

    @Test func noPasswordMeansNoRequestAndNoProfile() async throws {
        let server = try await TestServer.start()
        let profile = TestServer.temporaryDirectory() + "/p"
        // No PARLEY_PASSWORD and nothing on standard input.
        let register = try await CLI.run(
            ["register", "--organization", "acme", "--email", "dan@x.io", "--name", "Dan"], profile: profile, server: server.baseURL)
        #expect(register.status == 1 && register.output.hasSuffix("parley: no password given\n"), "\(register.output)")
        #expect(!FileManager.default.fileExists(atPath: profile + "/session.json"))
        // Nobody was registered: the address is still free.
        let later = try await server.api().register(.init(organization: "acme", email: "dan@x.io", password: TestUser.password, displayName: "Dan"))
        #expect(later.user.email == "dan@x.io")
        await server.stop()
    }

    @Test func historyReadsTheServerThenWorksOfflineFromTheCache() async throws {
        let cast = try await Cast.start()
        for text in ["one", "two", "three"] {
            #expect(try await CLI.run(["send", cast.direct, text], profile: cast.alice).status == 0)
        }
        let dead = try CLI.deadServer()
        let empty = try await CLI.run(["history", cast.direct, "--offline", "--server", dead], profile: cast.bob)
        #expect(empty.status == 0 && empty.output == "(nothing cached for this conversation)\n", "\(empty.output)")

        let online = try await CLI.run(["history", cast.direct], profile: cast.bob)
        #expect(online.status == 0, "\(online.output)")
        let lines = CLI.lines(online.output)
        #expect(lines.count == 3, "\(online.output)")
        for (index, text) in ["one", "two", "three"].enumerated() where index < lines.count {
            #expect(lines[index].hasPrefix("#\(index + 1) ") && lines[index].hasSuffix(" Alice: \(text)"), "\(lines[index])")
        }
        let last = try await CLI.run(["history", cast.direct, "--limit", "2"], profile: cast.bob)
        #expect(CLI.lines(last.output) == Array(lines.suffix(2)), "\(last.output)")

        // The server gone, the cache still answers, names included.
        await cast.server.stop()
        let offline = try await CLI.run(["history", cast.direct, "--offline", "--server", dead], profile: cast.bob)
        #expect(offline.status == 0 && CLI.lines(offline.output) == lines, "\(offline.output)")
        // Alice's own messages show her ticks.
        let mine = try await CLI.run(["history", cast.direct, "--offline"], profile: cast.alice)
        #expect(CLI.lines(mine.output).count == 3 && CLI.lines(mine.output).allSatisfy { $0.contains(" Alice: ") && $0.contains("✓") }, "\(mine.output)")
    }

    @Test func listsShowConversationsPeopleAndUnreadCounts() async throws {
        let cast = try await Cast.start()
        _ = try await cast.server.register("carol@x.io", name: "Carol")
        _ = try await cast.server.register("carl@x.io", name: "Carl")
        let group = try await CLI.run(["open-group", "Project X", "bob@x.io", " CAROL@x.io"], profile: cast.alice)
        #expect(group.status == 0 && EntityID(CLI.single(group.output)) != nil, "emails match whatever their case: \(group.output)")
        let again = try await CLI.run(["open-direct", "Bob@X.io"], profile: cast.alice)
        #expect(CLI.single(again.output) == cast.direct, "the direct conversation is the same one")
        #expect(try await CLI.run(["send", CLI.single(group.output), "kickoff at ten"], profile: cast.alice).status == 0)

        let listed = try await CLI.run(["conversations"], profile: cast.bob)
        #expect(listed.status == 0, "\(listed.output)")
        let rows = CLI.lines(listed.output)
        #expect(rows.count == 2, "\(listed.output)")
        #expect(rows.first == "\(CLI.single(group.output))  [group] Project X  (1 unread)  — kickoff at ten", "newest activity first: \(listed.output)")
        #expect(rows.last == "\(cast.direct)  [direct] Alice", "a direct conversation is titled by the other person: \(listed.output)")

        let people = try await CLI.run(["users", "car"], profile: cast.bob)
        let names = CLI.lines(people.output).map { $0.components(separatedBy: "  ")[1] }
        #expect(names.sorted() == ["Carl <carl@x.io>", "Carol <carol@x.io>"], "\(people.output)")
        let everyone = try await CLI.run(["users"], profile: cast.bob)
        #expect(CLI.lines(everyone.output).count == 4, "\(everyone.output)")
        await cast.server.stop()
    }

    /// An organization that takes invites: only its admin invites, each invite admits as many
    /// people as it says, and a deactivated member's profile stops working.
    @Test func invitesRolesAndDeactivationThroughTheCommandLine() async throws {
        let server = try await TestServer.start { $0.openOrganizations = false }
        let url = server.baseURL
        let admin = TestServer.temporaryDirectory() + "/admin"
        let founded = try await CLI.run(
            ["register", "--organization", "Initech", "--email", "peter@initech.io", "--name", "Peter"], profile: admin, server: url,
            password: TestUser.password)
        #expect(founded.status == 0 && founded.output.hasSuffix(", admin of Initech\n"), "\(founded.output)")

        let uninvited = try await CLI.run(
            ["register", "--organization", "Initech", "--email", "milton@initech.io", "--name", "Milton"],
            profile: TestServer.temporaryDirectory(), server: url, password: TestUser.password)
        #expect(uninvited.status == 1 && uninvited.output.hasPrefix("parley: "), "\(uninvited.output)")

        let invite = try await CLI.run(["invite", "--max-uses", "1"], profile: admin)
        let code = CLI.single(invite.output)
        #expect(invite.status == 0 && !code.isEmpty && !code.contains(" "), "\(invite.output)")
        // The code from the environment, as PARLEY_INVITE documents.
        let joined = TestServer.temporaryDirectory() + "/samir"
        let samir = try await CLI.run(
            ["register", "--organization", "Initech", "--email", "samir@initech.io", "--name", "Samir"], profile: joined, server: url,
            password: TestUser.password, environment: ["PARLEY_INVITE": code])
        #expect(samir.status == 0 && !samir.output.contains("admin"), "\(samir.output)")
        let reused = try await CLI.run(
            ["register", "--organization", "Initech", "--email", "michael@initech.io", "--name", "Michael", "--invite", code],
            profile: TestServer.temporaryDirectory(), server: url, password: TestUser.password)
        #expect(reused.status == 1, "an invite for one is used up: \(reused.output)")

        let notAdmin = try await CLI.run(["invite"], profile: joined)
        #expect(notAdmin.status == 1 && notAdmin.output.hasPrefix("parley: "), "\(notAdmin.output)")

        let samirId = try #require((try CLI.session(joined)["user"] as? [String: Any])?["id"] as? String)
        let members = try await CLI.run(["members"], profile: admin)
        #expect(CLI.lines(members.output).contains("\(samirId)  member  Samir <samir@initech.io>"), "\(members.output)")
        let promoted = try await CLI.run(["members", "--make-admin", samirId], profile: admin)
        #expect(CLI.lines(promoted.output).contains("\(samirId)  admin  Samir <samir@initech.io>"), "\(promoted.output)")
        let domains = try await CLI.run(["members", "--allow-domains", "initech.io,,initrode.io"], profile: admin)
        #expect(domains.output.hasPrefix("allowed domains: initech.io, initrode.io\n"), "\(domains.output)")

        let deactivated = try await CLI.run(["members", "--deactivate", samirId], profile: admin)
        #expect(deactivated.status == 0 && deactivated.output.hasPrefix("deactivated \(samirId)\n"), "\(deactivated.output)")
        let locked = try await CLI.run(["conversations"], profile: joined)
        #expect(locked.status == 1 && locked.output.hasPrefix("parley: "), "\(locked.output)")
        let sync = try await CLI.run(["sync"], profile: joined)
        #expect(sync.status == 1 && sync.output.contains("the server refused this profile's token; `parley login` again"), "\(sync.output)")
        await server.stop()
    }

    /// `parley tail` prints each event as one line as it arrives; when the server goes it says
    /// so on stderr and reconnects like every other client, printing once what was sent while
    /// it was away.
    @Test(.heavy) func tailPrintsEventsAsTheyArriveAndReconnectsWhenTheServerComesBack() async throws {
        let cast = try await Cast.start()
        let tail = try RunningCLI(["tail", "--profile", cast.bob], environment: [:])
        defer { tail.stop() }
        try await tail.waitForOutput("Connected as Bob; waiting for events (Ctrl-C to stop)")
        let aliceToken = try cast.token(cast.alice)
        let api = cast.server.api(token: aliceToken)
        let id = try #require(EntityID(cast.direct))
        let sent = try await api.send(SendMessageRequest(clientMessageId: "tail-1", text: "hello tail"), to: id)
        let prefix = "[\(cast.direct.prefix(8))] "
        try await tail.waitForOutput(" Alice: hello tail\n")
        #expect(tail.output.contains(prefix + "#1 "), "\(tail.output)")
        _ = try await api.editMessage(sent.id, in: id, text: "hello tail, edited")
        try await tail.waitForOutput(prefix + "updated #1 ")
        #expect(tail.output.contains(" Alice: hello tail, edited (edited)"), "\(tail.output)")

        let (directory, port) = (cast.server.dataDirectory, cast.server.port)
        await cast.server.stop()
        // Down long enough for tail's backoff to grow (0.5 s doubling): its next try comes after
        // the message below is stored, so it is caught up, not received live.
        try await waitFor("four tries", timeout: .seconds(60)) { tail.output.components(separatedBy: "parley tail: connection lost").count > 4 }
        #expect(tail.child.isRunning, "tail keeps going:\n\(tail.output)")
        let again = try await TestServer.start(dataDirectory: directory, port: port)
        defer { Task { await again.stop() } }
        let back = again.api(token: aliceToken)
        _ = try await back.send(SendMessageRequest(clientMessageId: "tail-2", text: "while tail was away"), to: id)
        do {
            // #2 was the edit: every change takes the next seq.
            try await tail.waitForOutput(prefix + "#3 ", timeout: .seconds(60))
        } catch {
            Issue.record("tail's output:\n\(tail.output)")
            throw error
        }
        try await tail.waitForOutput("parley tail: reconnected")
        _ = try await back.send(SendMessageRequest(clientMessageId: "tail-3", text: "after the reconnect"), to: id)
        try await tail.waitForOutput(" Alice: after the reconnect\n")
        for text in [" Alice: while tail was away\n", " Alice: after the reconnect\n", " Alice: hello tail\n"] {
            #expect(tail.output.components(separatedBy: text).count == 2, "printed once: \(text)\n\(tail.output)")
        }
    }

    /// A tail whose account is deactivated is told so and stops (exit 1), instead of retrying.
    @Test func tailStopsWhenItsAccountIsDeactivated() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let admin = try await server.register("admin@x.io")
        let bob = try await CLI.register("bob@x.io", name: "Bob", server: server.baseURL)
        let tail = try RunningCLI(["tail", "--profile", bob], environment: [:])
        defer { tail.stop() }
        try await tail.waitForOutput("Connected as Bob")
        let bobIdText = try #require((try CLI.session(bob)["user"] as? [String: Any])?["id"] as? String)
        try await admin.api.deactivate(try #require(EntityID(bobIdText)))
        let status = try await tail.waitForExit()
        #expect(status == 1, "\(tail.output)")
        #expect(tail.output.contains("signed out by the server"), "\(tail.output)")
    }
}
