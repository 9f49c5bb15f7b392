import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing

/// Authorization is checked where it is used: a WebSocket whose token the server would now
/// refuse (account deactivated, signing key retired, token expired) handles no further command
/// and is cut off within a bounded time, even when its client ignores the close frame and keeps
/// sending. Probed with ``RawWebSocket``, a client that never answers a close.
@Suite struct SessionEndTests {
    static func send(_ conversationId: EntityID, _ id: String, _ text: String) -> String {
        #"{"id":"\#(id)","type":"message.send","data":{"conversationId":"\#(conversationId)","clientMessageId":"\#(id)","text":"\#(text)"}}"#
    }

    static func typing(_ conversationId: EntityID, _ id: String) -> String {
        #"{"id":"\#(id)","type":"typing","data":{"conversationId":"\#(conversationId)","isTyping":true}}"#
    }

    /// Opens a raw socket for `user` on `server` and reads its `hello`.
    static func open(_ user: TestUser, on server: TestServer) async throws -> RawWebSocket {
        try await open(token: user.token, on: server)
    }

    /// Opens a raw socket with `token` on `server` and reads its `hello`.
    static func open(token: String, on server: TestServer) async throws -> RawWebSocket {
        let port = server.port
        return try await offPool {
            let socket = try RawWebSocket(port: port, path: "/api/v1/ws?token=\(token)")
            let hello = try socket.next(until: Date().addingTimeInterval(20))
            guard let hello, hello.text.contains("\"hello\"") else { throw RawWebSocket.Failure("no hello") }
            return socket
        }
    }

    /// Sends a burst of commands the way a client ignoring the close would, then reads until the
    /// server drops the TCP connection; returns the frames and the seconds it took.
    static func keepSendingUntilCutOff(
        _ socket: RawWebSocket, conversation: EntityID, prefix: String, limit: TimeInterval = 20
    ) async throws -> (frames: [RawWebSocket.Frame], seconds: TimeInterval, closed: Bool) {
        try await offPool {
            let start = Date()
            var frames: [RawWebSocket.Frame] = []
            for n in 0..<10 where !socket.closedByPeer {
                socket.send(send(conversation, "\(prefix)-\(n)", "\(prefix) \(n)"))
                socket.send(typing(conversation, "\(prefix)-typing-\(n)"))
                if let frame = try socket.next(until: Date().addingTimeInterval(0.1)) { frames.append(frame) }
            }
            let rest = try socket.readUntilClosed(until: start.addingTimeInterval(limit))
            return (frames + (rest ?? []), Date().timeIntervalSince(start), rest != nil)
        }
    }

    /// A group of three; `listener` (carol) records everything she receives.
    static func room(_ server: TestServer) async throws -> (admin: TestUser, bob: TestUser, carol: TestUser, group: Conversation) {
        let admin = try await server.register("admin@x.io")
        let bob = try await server.register("bob@x.io")
        let carol = try await server.register("carol@x.io")
        let group = try await admin.api.createConversation(.init(type: .group, participantIds: [bob.id, carol.id], name: "Room"))
        return (admin, bob, carol, group)
    }

    /// Nothing of what `prefix` names reached the store or the listener.
    static func expectNothingGotThrough(
        _ prefix: String, frames: [RawWebSocket.Frame], events: EventRecorder, admin: TestUser, group: Conversation, from bob: TestUser
    ) async throws {
        #expect(!frames.contains { $0.text.contains("\"replyTo\":\"\(prefix)") }, "no command of the ended session was answered")
        let stored = try await admin.api.messages(group.id).messages
        #expect(!stored.contains { $0.text.hasPrefix(prefix) }, "nothing sent after the end was stored: \(stored.map(\.text))")
        let heard = events.events.filter { event in
            switch event {
            case .messageCreated(let e): e.message.text.hasPrefix(prefix)
            case .typing(let e): e.userId == bob.id && e.isTyping
            default: false
            }
        }
        #expect(heard.isEmpty, "the others heard nothing of it: \(heard.map(\.type))")
    }

    @Test func aDeactivatedUserIgnoringTheCloseCanDoNothingMoreAndIsCutOff() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (admin, bob, carol, group) = try await Self.room(server)
        let carolSocket = try await carol.connect()
        let carolEvents = EventRecorder(carolSocket)
        let socket = try await Self.open(bob, on: server)
        // Before: Bob's raw client works.
        try await offPool { socket.send(Self.send(group.id, "before", "before")) }
        try await carolEvents.wait { $0.contains { if case .messageCreated(let e) = $0 { e.message.text == "before" } else { false } } }

        try await admin.api.deactivate(bob.id)
        let (frames, seconds, closed) = try await Self.keepSendingUntilCutOff(socket, conversation: group.id, prefix: "after")
        #expect(closed, "the server dropped the connection of a client that ignored its close")
        #expect(seconds < 15, "cut off within a bounded time: \(seconds) s")
        #expect(frames.contains { $0.closeCode == 4001 }, "told why: \(frames.map(\.opcode))")
        // Let anything that slipped through reach Carol before looking.
        try await carolSocket.ping()
        try await Self.expectNothingGotThrough("after", frames: frames, events: carolEvents, admin: admin, group: group, from: bob)
        await carolSocket.close()
    }

    @Test func retiringTheSigningKeyInTheDatabaseEndsOpenSessions() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (admin, bob, carol, group) = try await Self.room(server)
        let socket = try await Self.open(bob, on: server)
        let oldKid = try #require(TokenService.keyId(of: bob.token))

        // As `parley keys rotate` then `retire` do, on the database: the server is not told.
        try await server.app.store.addSigningKey(SigningKey.generate(now: Date().addingTimeInterval(1)))
        #expect(try await server.app.store.retireSigningKey(kid: oldKid, at: Date()))
        let (frames, seconds, closed) = try await offPool { () -> ([RawWebSocket.Frame], TimeInterval, Bool) in
            let start = Date()
            let frames = try socket.readUntilClosed(until: start.addingTimeInterval(30))
            return (frames ?? [], Date().timeIntervalSince(start), frames != nil)
        }
        #expect(closed, "the session of a retired key ends")
        #expect(seconds < 25, "within seconds of the retirement: \(seconds) s")
        #expect(frames.contains { $0.closeCode == 4001 && $0.text.contains("retired") }, "\(frames.map(\.text))")
        #expect(try await server.raw("GET", "users/me", token: bob.token).status == 401)
        // A fresh sign-in works with the new key.
        let fresh = try await server.api().login(.init(organization: "acme", email: "carol@x.io", password: TestUser.password))
        #expect(TokenService.keyId(of: fresh.token) != oldKid)
        #expect(try await server.api(token: fresh.token).me().id == carol.id)
        _ = admin
        _ = group
    }

    @Test func aSocketDoesNotOutliveItsToken() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (_, bob, _, group) = try await Self.room(server)
        // A token with 3 seconds left, as one issued 30 days ago would be.
        let lifetime = server.app.tokens.lifetime.components.seconds
        let shortLived = try await server.app.tokens.issue(for: bob.auth.user, now: Date().addingTimeInterval(3 - Double(lifetime)))
        let socket = try await Self.open(token: shortLived, on: server)
        let (frames, _, closed) = try await offPool { () -> ([RawWebSocket.Frame], TimeInterval, Bool) in
            let start = Date()
            // Keeps sending after the token's expiry, ignoring the close.
            var frames: [RawWebSocket.Frame] = []
            var n = 0
            while Date().timeIntervalSince(start) < 6, !socket.closedByPeer {
                n += 1
                socket.send(Self.send(group.id, "late-\(n)", "late \(n)"))
                if let frame = try socket.next(until: Date().addingTimeInterval(0.2)) { frames.append(frame) }
            }
            let rest = try socket.readUntilClosed(until: start.addingTimeInterval(20))
            return (frames + (rest ?? []), 0, rest != nil)
        }
        #expect(closed, "the server ended the session when its token expired")
        #expect(frames.contains { $0.closeCode == 4001 && $0.text.contains("expired") }, "\(frames.map { ($0.opcode, $0.closeCode, $0.text) })")
        // Whatever was answered was answered before the expiry; nothing after the close.
        let closeIndex = try #require(frames.firstIndex { $0.opcode == 0x8 })
        #expect(!frames[(closeIndex + 1)...].contains { $0.opcode == 0x1 }, "nothing after the close frame")
    }

    @Test func restRoutesTakeNoTokenInTheURL() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        #expect(try await server.raw("GET", "users/me?token=\(alice.token)").status == 401, "a token in a URL ends up in logs")
        #expect(try await server.raw("GET", "users/me", token: alice.token).status == 200)
        // The WebSocket upgrade still takes it (browsers cannot set headers there).
        let socket = try await Self.open(alice, on: server)
        _ = socket
    }

    /// Logout ends the sign-in it is called with: that token, every token refreshed from it and
    /// the sockets they opened (a client ignoring the close included), not the user's other
    /// sign-ins.
    @Test func logoutEndsItsSessionEverywhereButNotTheUsersOtherSignIns() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let refreshed = try await alice.api.refresh().token
        let phone = try await server.api().login(.init(organization: "acme", email: "alice@x.io", password: TestUser.password)).token
        let socket = try await Self.open(token: refreshed, on: server)
        let phoneSocket = try await Self.open(token: phone, on: server)

        #expect(try await server.raw("POST", "auth/logout", token: alice.token).status == 204)
        for token in [alice.token, refreshed] {
            #expect(try await server.raw("GET", "users/me", token: token).status == 401, "the session's tokens are refused")
        }
        #expect(try await server.raw("POST", "auth/ticket", token: refreshed).status == 401)
        let (frames, closed) = try await offPool { () -> ([RawWebSocket.Frame], Bool) in
            let frames = try socket.readUntilClosed(until: Date().addingTimeInterval(20))
            return (frames ?? [], frames != nil)
        }
        #expect(closed, "its socket is cut off")
        #expect(frames.contains { $0.closeCode == 4001 && $0.text.contains("signed out") }, "\(frames.map(\.text))")
        // The phone's sign-in goes on: its token, and its socket.
        #expect(try await server.raw("GET", "users/me", token: phone).status == 200)
        let alive = try await offPool { () -> Bool in
            phoneSocket.send(#"{"id":"p","type":"ping","data":{}}"#)
            // The heartbeat's pings may come first (any time after the first second).
            let reply = try WebSocketProtocolTests.read(phoneSocket) { $0.opcode == 0x1 }
            return reply?.text.contains("\"replyTo\":\"p\"") == true
        }
        #expect(alive)
        // A restarted server still refuses the ended session (it is in the store).
        let restarted = try await TestServer.start(dataDirectory: server.dataDirectory)
        defer { Task { await restarted.stop() } }
        #expect(try await restarted.raw("GET", "users/me", token: refreshed).status == 401)
        #expect(try await restarted.raw("GET", "users/me", token: phone).status == 200)
    }

    /// On two nodes: a logout on A ends the session's socket on B within seconds.
    @Test(.needsPostgres) func logoutOnOneNodeEndsTheSessionOnAnother() async throws {
        let a = try await TestServer.start(store: .postgres)
        let url = try #require(a.database?.url)
        let b = try await TestServer.start { $0.databaseURL = url }
        defer { Task { await b.stop(); await a.stop() } }
        let alice = try await a.register("alice@x.io")
        let socket = try await Self.open(alice, on: b)
        #expect(try await a.raw("POST", "auth/logout", token: alice.token).status == 204)
        let (frames, seconds, closed) = try await offPool { () -> ([RawWebSocket.Frame], TimeInterval, Bool) in
            let start = Date()
            let frames = try socket.readUntilClosed(until: start.addingTimeInterval(30))
            return (frames ?? [], Date().timeIntervalSince(start), frames != nil)
        }
        #expect(closed && seconds < 25, "closed: \(closed) after \(seconds) s")
        #expect(frames.contains { $0.closeCode == 4001 })
        #expect(try await b.raw("GET", "users/me", token: alice.token).status == 401)
    }

    /// The web client's way in: a one-use ticket asked for with the token in a header opens one
    /// socket; it is not an access token, and an access token is not a ticket.
    @Test func aTicketOpensOneSocketOnceAndIsNoAccessToken() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let answer = try await server.raw("POST", "auth/ticket", token: alice.token)
        #expect(answer.status == 200)
        let ticket = try WireCoding.makeDecoder().decode(SocketTicket.self, from: answer.body)
        #expect(ticket.expiresAt > Date() && ticket.expiresAt < Date().addingTimeInterval(60))
        let port = server.port
        let socket = try await offPool { () -> RawWebSocket in
            let socket = try RawWebSocket(port: port, path: "/api/v1/ws?ticket=\(ticket.ticket)")
            guard let hello = try socket.next(until: Date().addingTimeInterval(20)), hello.text.contains("\"hello\"") else {
                throw RawWebSocket.Failure("no hello")
            }
            return socket
        }
        await #expect(throws: RawWebSocket.Failure.self, "a ticket opens one socket") {
            try await offPool { _ = try RawWebSocket(port: port, path: "/api/v1/ws?ticket=\(ticket.ticket)") }
        }
        await #expect(throws: RawWebSocket.Failure.self, "an access token is not a ticket") {
            try await offPool { _ = try RawWebSocket(port: port, path: "/api/v1/ws?ticket=\(alice.token)") }
        }
        #expect(try await server.raw("GET", "users/me", token: ticket.ticket).status == 401, "a ticket is not an access token")
        #expect(try await server.raw("POST", "auth/ticket").status == 401)
        _ = socket
    }

    /// On two nodes of one PostgreSQL: Bob's client on B ignores the close; A deactivates him.
    @Test(.needsPostgres)
    func deactivationOnOneNodeCutsOffAClientIgnoringTheCloseOnAnother() async throws {
        let a = try await TestServer.start(store: .postgres)
        let url = try #require(a.database?.url)
        let b = try await TestServer.start { $0.databaseURL = url }
        defer { Task { await b.stop(); await a.stop() } }
        let (admin, bob, carol, group) = try await Self.room(a)
        let carolSocket = try await carol.connect()
        let carolEvents = EventRecorder(carolSocket)
        let socket = try await Self.open(bob, on: b)
        try await offPool { socket.send(Self.send(group.id, "before", "before")) }
        try await carolEvents.wait(timeout: .seconds(30)) {
            $0.contains { if case .messageCreated(let e) = $0 { e.message.text == "before" } else { false } }
        }

        try await admin.api.deactivate(bob.id)
        // The record reaches B through the cluster link; until it does B may still act for Bob,
        // so the test waits for B to refuse his token over HTTP first.
        try await waitFor("B to refuse Bob's token", timeout: .seconds(30)) { try await b.raw("GET", "users/me", token: bob.token).status == 401 }
        let (frames, _, closed) = try await Self.keepSendingUntilCutOff(socket, conversation: group.id, prefix: "after", limit: 30)
        #expect(closed)
        #expect(frames.contains { $0.closeCode == 4001 })
        try await carolSocket.ping()
        try await Self.expectNothingGotThrough("after", frames: frames, events: carolEvents, admin: admin, group: group, from: bob)
        await carolSocket.close()
    }
}

