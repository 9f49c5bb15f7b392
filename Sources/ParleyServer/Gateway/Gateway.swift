import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOWebSocket
import ParleyProtocol
import ParleyStorage
import Synchronization
import Tracing

/// The WebSocket endpoint: `hello`, commands with exactly one reply each, and event delivery.
///
/// Each connection has a reader that handles commands in arrival order. `message.send` is
/// pipelined: it is validated and queued for the store at once (so a client's sends take
/// their seqs in the order it sent them) and answered when its transaction commits, while the
/// reader goes on; at most ``maxPipelinedSends`` wait at a time. Other commands run one at a
/// time. Frames out go through the connection's bounded queue (see ``LiveConnection``).
final class Gateway: Sendable {
    let authenticator: Authenticator
    let store: any ParleyStore
    let chat: ChatService
    let fanOut: FanOut
    let signals: LiveSignals
    let heartbeatSeconds: Int
    /// Pings every connection once a period (nil: no heartbeat).
    let heartbeats: HeartbeatWheel?
    /// The server's log.
    let logger: Logger
    /// Which copy of the data this server serves (see ``ParleyStore/storeIdentity()``).
    let storeId: String
    /// Told of storage trouble, which answers `unavailable` with `retryAfter`.
    let health: StoreHealth?
    /// Largest WebSocket message read at all; bigger ones close the connection (1009).
    static let transportLimit = 1 << 20
    /// The close code of a session that ended because its token would be refused now (account
    /// deactivated, token expired, signing key retired): the client must sign in or renew.
    static let sessionEndedCloseCode = MembershipService.deactivatedCloseCode
    /// Sends of one connection waiting for their commit at once; the reader waits beyond it.
    static let maxPipelinedSends = 64

    /// One gateway for the server; every socket's session holds a reference to it.
    init(
        authenticator: Authenticator, store: any ParleyStore, chat: ChatService, fanOut: FanOut, signals: LiveSignals,
        heartbeatSeconds: Int, heartbeats: HeartbeatWheel?, logger: Logger, storeId: String, health: StoreHealth?
    ) {
        self.authenticator = authenticator
        self.store = store
        self.chat = chat
        self.fanOut = fanOut
        self.signals = signals
        self.heartbeatSeconds = heartbeatSeconds
        self.heartbeats = heartbeats
        self.logger = logger
        self.storeId = storeId
        self.health = health
    }

    /// Opens a session on an upgraded socket: checks the token (a ticket is used up here),
    /// registers the connection with its `hello` queued first, and starts its heartbeat.
    /// Returns nil, with the socket closed as the protocol says (1008 "unauthorized"), if
    /// the token no longer holds.
    func open(authorization: String?, uri: URI, channel: any Channel) async -> OpenSession? {
        let grant: TokenGrant
        let user: User
        do {
            grant = try await authenticator.grant(authorization: authorization, uri: uri, allowingQueryToken: true)
            guard let found = try await store.user(id: grant.identity.userId) else { throw ChatError.unauthorized }
            user = found
        } catch {
            Self.closeUnopened(channel, .policyViolation, reason: "unauthorized")
            return nil
        }
        let identity = grant.identity
        var me = user
        me.isOnline = true
        me.lastSeenAt = nil
        let hello = ServerEvent.hello(HelloEvent(user: me, sessionId: "\(EntityID())", heartbeatSeconds: heartbeatSeconds, storeId: storeId))
        guard let helloFrame = try? WireCoding.makeEncoder().encode(hello) else {
            Self.closeUnopened(channel, .unexpectedServerError, reason: "internal")
            return nil
        }
        // `hello` is queued inside registration: nothing fanned out can overtake it.
        fanOut.openSessions.add(1, ordering: .relaxed)
        let (connection, isFirst) = fanOut.register(identity, grant: grant, channel: channel, hello: ByteBuffer(bytes: helloFrame))
        if isFirst { await signals.cameOnline(identity) }
        logger(for: connection).debug("WebSocket connected")
        var heartbeat: Int?
        if let heartbeats, let liveness = await LivenessHandler.liveness(of: channel) {
            heartbeat = heartbeats.add(liveness: liveness, connection: connection)
        }
        return OpenSession(connection: connection, heartbeat: heartbeat)
    }

    /// A session's connection and its key in the heartbeat wheel.
    struct OpenSession: Sendable {
        let connection: LiveConnection
        let heartbeat: Int?
    }

    /// Handles one text message of an open session, in arrival order (the caller awaits each).
    func receive(_ text: String, on session: OpenSession, window: ConcurrencyGate, decoder: JSONDecoder) async {
        let connection = session.connection
        // Authorization is checked where it is used: a connection the server decided to
        // close, or whose token would now be refused (expired, key retired, account
        // deactivated), handles nothing more, whatever the client sends.
        if !connection.isClosing, let grant = connection.grant, let reason = authenticator.endOfSession(grant, now: Date()) {
            connection.close(WebSocketErrorCode(codeNumber: Self.sessionEndedCloseCode), reason: reason)
        }
        if connection.isClosing { return }
        await handle(text, on: connection, window: window, decoder: decoder)
    }

    /// The session's socket is gone: whatever is still queued is dropped with it, and the
    /// user goes offline if it was their last connection here.
    func close(_ session: OpenSession) async {
        let connection = session.connection
        if let heartbeat = session.heartbeat { heartbeats?.remove(heartbeat) }
        connection.close(.normalClosure, reason: "")
        if fanOut.unregister(connection) {
            await signals.wentOffline(connection.identity)
        }
        fanOut.openSessions.subtract(1, ordering: .relaxed)
        logger(for: connection).debug("WebSocket disconnected")
    }

    /// The server's logger with the connection's user and number.
    func logger(for connection: LiveConnection) -> Logger {
        var logger = self.logger
        logger[metadataKey: "userId"] = "\(connection.identity.userId)"
        logger[metadataKey: "connection"] = "\(connection.id)"
        return logger
    }

    /// Closes a socket that never became a session: the close frame, then the connection.
    static func closeUnopened(_ channel: any Channel, _ code: WebSocketErrorCode, reason: String) {
        channel.writeAndFlush(WebSocketFrame.close(code, reason: reason, allocator: channel.allocator)).whenComplete { _ in
            channel.close(promise: nil)
        }
    }

    /// A binary message: refused (the protocol is JSON text frames), the connection stays.
    func refuseBinary(on session: OpenSession) {
        reply(nil, ChatError.invalid("Binary frames are not supported; send JSON text frames"), on: session.connection)
    }

    /// Handles one inbound message; every command gets exactly one reply.
    func handle(_ text: String, on connection: LiveConnection, window: ConcurrencyGate, decoder: JSONDecoder) async {
        guard text.utf8.count <= Limits.maxPayloadBytes else {
            return reply(FrameHeader.scanId(Data(text.utf8)), ChatError.payloadTooLarge, on: connection)
        }
        // Decoded once (a plain send straight from its bytes, anything else by Foundation);
        // only a frame that does not decode is read again for its id.
        let frame: ClientFrame
        if let plain = FastFrameReader.sendFrame(text) {
            frame = plain
        } else {
            let data = Data(text.utf8)
            do {
                frame = try decoder.decode(ClientFrame.self, from: data)
            } catch {
                // The decoder may fail on the whole frame (too deep, broken): the id is scanned alone.
                guard let id = (try? decoder.decode(FrameHeader.self, from: data).id) ?? FrameHeader.scanId(data), !id.isEmpty else {
                    return reply(nil, ChatError.invalid("A frame must be a JSON object with a string id"), on: connection)
                }
                let message = (error as? DecodingError)?.wireDescription ?? "Malformed frame"
                return reply(id, ChatError.invalid(message), on: connection)
            }
        }
        let id = frame.id
        guard !id.isEmpty else {
            return reply(nil, ChatError.invalid("A frame must be a JSON object with a string id"), on: connection)
        }
        if case .sendMessage(let request) = frame.command, let conversationId = request.conversationId {
            // Queued now, in arrival order; answered after its commit without holding the reader.
            let span = ServerTracing.start("WebSocket send_message", kind: .server)
            let finish: @Sendable () async throws -> SendResult
            do {
                finish = try ServerTracing.within(span) { try chat.beginSend(request, in: conversationId, by: connection.identity) }
            } catch {
                ServerTracing.fail(span, error)
                return fail(id, error, frame: frame, on: connection)
            }
            await window.acquire()
            fanOut.awaitingCommit.add(1, ordering: .relaxed)
            Task {
                await ServerTracing.within(span) {
                    do {
                        let result = try await finish()
                        connection.enqueue(ByteBuffer(bytes: FastWire.messageReply(replyTo: id, result.message)))
                        span?.end()
                    } catch {
                        // Logged (when it is no contract error) with the span's trace id.
                        fail(id, error, frame: frame, on: connection)
                        ServerTracing.fail(span, error)
                    }
                }
                fanOut.awaitingCommit.subtract(1, ordering: .relaxed)
                await window.release()
            }
            return
        }
        let span = ServerTracing.start("WebSocket \(frame.command.type)", kind: .server)
        await ServerTracing.within(span) {
            do {
                try await execute(frame, on: connection)
                span?.end()
            } catch {
                fail(id, error, frame: frame, on: connection)
                ServerTracing.fail(span, error)
            }
        }
    }

    /// The error reply: a contract error as it is, anything else logged and answered `internal`.
    private func fail(_ id: String, _ error: any Error, frame: ClientFrame, on connection: LiveConnection) {
        if let error = error as? ChatError {
            reply(id, error, on: connection)
        } else if StorageTrouble.matches(error) {
            health?.report(error)
            reply(id, .unavailable, on: connection)
        } else {
            logger(for: connection).error("Command failed", metadata: ["type": "\(frame.command.type)", "error": "\(String(reflecting: error))"])
            reply(id, ChatError(.internal, "Internal server error"), on: connection)
        }
    }

    private func execute(_ frame: ClientFrame, on connection: LiveConnection) async throws {
        let identity = connection.identity
        switch frame.command {
        case .sendMessage(let request):
            guard let conversationId = request.conversationId else {
                throw ChatError.invalid("Missing key `conversationId` in `data`")
            }
            let result = try await chat.send(request, in: conversationId, by: identity)
            connection.enqueue(ByteBuffer(bytes: FastWire.messageReply(replyTo: frame.id, result.message)))
        case .ping:
            send(ReplyFrame(replyTo: frame.id, data: EmptyPayload()), on: connection)
        case .typing(let command):
            try await signals.typing(command, by: identity)
            send(ReplyFrame(replyTo: frame.id, data: EmptyPayload()), on: connection)
        case .read(let request):
            guard let conversationId = request.conversationId else {
                throw ChatError.invalid("Missing key `conversationId` in `data`")
            }
            let answer = try await signals.markRead(request, in: conversationId, by: identity)
            send(ReplyFrame(replyTo: frame.id, data: answer), on: connection)
        case .delivered(let command):
            _ = try await signals.markDelivered(command, by: identity)
            send(ReplyFrame(replyTo: frame.id, data: EmptyPayload()), on: connection)
        case .focus(let command):
            try await signals.focus(command, by: identity)
            send(ReplyFrame(replyTo: frame.id, data: EmptyPayload()), on: connection)
        case .auth(let command):
            // A renewed token keeps the connection open past the one it was opened with; it
            // must stand for the same user (another user's token is refused, the old grant stays).
            let renewed: TokenGrant
            do {
                renewed = try await authenticator.grant(forToken: command.token)
            } catch {
                throw ChatError(.unauthorized, "The token was refused; this connection keeps its current one")
            }
            guard renewed.identity == identity else {
                throw ChatError(.forbidden, "The token is another user's; a connection stays with the user it was opened for")
            }
            connection.renew(renewed)
            send(ReplyFrame(replyTo: frame.id, data: AuthReply(expiresAt: renewed.expiresAt)), on: connection)
        }
    }

    private func reply(_ id: String?, _ error: ChatError, on connection: LiveConnection) {
        send(ReplyFrame<EmptyPayload>(replyTo: id, error: error.info), on: connection)
    }

    private func send(_ value: some Encodable, on connection: LiveConnection) {
        guard let data = try? WireCoding.makeEncoder().encode(value) else { return }
        connection.enqueue(ByteBuffer(bytes: data))
    }
}

extension WebSocketFrame {
    /// A close frame: the code, then the reason in UTF-8.
    static func close(_ code: WebSocketErrorCode, reason: String, allocator: ByteBufferAllocator) -> WebSocketFrame {
        var data = allocator.buffer(capacity: 2 + reason.utf8.count)
        data.write(webSocketErrorCode: code)
        data.writeString(reason)
        return WebSocketFrame(fin: true, opcode: .connectionClose, data: data)
    }
}
