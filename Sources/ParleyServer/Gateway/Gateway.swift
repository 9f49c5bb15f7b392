import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import ParleyProtocol
import ParleyStorage
import Tracing

/// The WebSocket endpoint: `hello`, commands with exactly one reply each, and event delivery.
///
/// Each connection has a reader that handles commands in arrival order. `message.send` is
/// pipelined: it is validated and queued for the store at once (so a client's sends take
/// their seqs in the order it sent them) and answered when its transaction commits, while the
/// reader goes on; at most ``maxPipelinedSends`` wait at a time. Other commands run one at a
/// time. Frames out go through the connection's bounded queue (see ``LiveConnection``).
struct Gateway: Sendable {
    let authenticator: Authenticator
    let store: any ParleyStore
    let chat: ChatService
    let fanOut: FanOut
    let signals: LiveSignals
    let heartbeatSeconds: Int
    /// Pings every connection once a period (nil: no heartbeat).
    let heartbeats: HeartbeatWheel?
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

    func serve(
        inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, request: Request, channel: any Channel, logger: Logger
    ) async {
        let grant: TokenGrant
        let user: User
        do {
            grant = try await authenticator.grant(for: request, allowingQueryToken: true)
            guard let found = try await store.user(id: grant.identity.userId) else { throw ChatError.unauthorized }
            user = found
        } catch {
            try? await outbound.close(.policyViolation, reason: "unauthorized")
            return
        }
        let identity = grant.identity
        var me = user
        me.isOnline = true
        me.lastSeenAt = nil
        let hello = ServerEvent.hello(HelloEvent(user: me, sessionId: "\(EntityID())", heartbeatSeconds: heartbeatSeconds, storeId: storeId))
        guard let helloFrame = try? WireCoding.makeEncoder().encode(hello) else {
            try? await outbound.close(.unexpectedServerError, reason: "internal")
            return
        }
        // `hello` is queued inside registration: nothing fanned out can overtake it.
        let (connection, isFirst) = fanOut.register(
            identity, grant: grant, outbound: outbound, channel: channel, hello: ByteBuffer(bytes: helloFrame))
        if isFirst { await signals.cameOnline(identity) }
        var logger = logger
        logger[metadataKey: "userId"] = "\(identity.userId)"
        logger[metadataKey: "connection"] = "\(connection.id)"
        logger.debug("WebSocket connected")

        var heartbeat: Int?
        if let heartbeats, let liveness = await LivenessHandler.liveness(of: channel) {
            heartbeat = heartbeats.add(liveness: liveness, channel: channel, outbound: outbound, logger: logger)
        }
        defer { if let heartbeat { heartbeats?.remove(heartbeat) } }
        let window = ConcurrencyGate(limit: Self.maxPipelinedSends)
        let decoder = WireCoding.makeDecoder()
        do {
            for try await message in inbound.messages(maxSize: Self.transportLimit) {
                // Authorization is checked where it is used: a connection the server decided to
                // close, or whose token would now be refused (expired, key retired, account
                // deactivated), handles nothing more, whatever the client sends.
                if !connection.isClosing, let reason = authenticator.endOfSession(connection.grant ?? grant, now: Date()) {
                    connection.close(WebSocketErrorCode(codeNumber: Self.sessionEndedCloseCode), reason: reason)
                }
                if connection.isClosing {
                    await connection.waitUntilCloseIsSent()
                    break
                }
                await handle(message, on: connection, window: window, decoder: decoder, logger: logger)
            }
        } catch {
            logger.debug("WebSocket read ended", metadata: ["error": "\(error)"])
        }
        // The reader is done: whatever is still queued is dropped with the connection.
        connection.close(.normalClosure, reason: "")
        if fanOut.unregister(connection) {
            await signals.wentOffline(identity)
        }
        logger.debug("WebSocket disconnected")
    }

    /// Handles one inbound message; every command gets exactly one reply.
    func handle(
        _ message: WebSocketMessage, on connection: LiveConnection, window: ConcurrencyGate, decoder: JSONDecoder, logger: Logger
    ) async {
        guard case .text(let text) = message else {
            return reply(nil, ChatError.invalid("Binary frames are not supported; send JSON text frames"), on: connection)
        }
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
                return fail(id, error, frame: frame, on: connection, logger: logger)
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
                        fail(id, error, frame: frame, on: connection, logger: logger)
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
                fail(id, error, frame: frame, on: connection, logger: logger)
                ServerTracing.fail(span, error)
            }
        }
    }

    /// The error reply: a contract error as it is, anything else logged and answered `internal`.
    private func fail(_ id: String, _ error: any Error, frame: ClientFrame, on connection: LiveConnection, logger: Logger) {
        if let error = error as? ChatError {
            reply(id, error, on: connection)
        } else if StorageTrouble.matches(error) {
            health?.report(error)
            reply(id, .unavailable, on: connection)
        } else {
            logger.error("Command failed", metadata: ["type": "\(frame.command.type)", "error": "\(String(reflecting: error))"])
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
