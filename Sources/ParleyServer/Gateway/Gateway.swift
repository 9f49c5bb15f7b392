import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import ParleyProtocol

/// The WebSocket endpoint: `hello`, commands with exactly one reply each, and event delivery.
///
/// Each connection runs two loops: a reader that handles commands one at a time (so a
/// client's pipelined sends are stored in the order it sent them) and a writer that drains the
/// connection's bounded queue of pre-encoded frames.
struct Gateway: Sendable {
    let authenticator: Authenticator
    let store: any ParleyStore
    let chat: ChatService
    let fanOut: FanOut
    let signals: LiveSignals
    let heartbeatSeconds: Int
    /// Largest WebSocket message read at all; bigger ones close the connection (1009).
    static let transportLimit = 1 << 20

    func serve(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, request: Request, logger: Logger) async {
        let identity: Identity
        let user: User
        do {
            identity = try await authenticator.identity(for: request)
            guard let found = try await store.user(id: identity.userId) else { throw APIError.unauthorized }
            user = found
        } catch {
            try? await outbound.close(.policyViolation, reason: "unauthorized")
            return
        }
        let (connection, isFirst) = fanOut.register(identity, outbound: outbound)
        if isFirst { await signals.cameOnline(identity) }
        var logger = logger
        logger[metadataKey: "userId"] = "\(identity.userId)"
        logger[metadataKey: "connection"] = "\(connection.id)"
        logger.debug("WebSocket connected")

        var hello = user
        hello.isOnline = true
        hello.lastSeenAt = nil
        send(ServerEvent.hello(HelloEvent(user: hello, sessionId: "\(EntityID())", heartbeatSeconds: heartbeatSeconds)), on: connection)

        do {
            for try await message in inbound.messages(maxSize: Self.transportLimit) {
                await handle(message, on: connection, logger: logger)
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
    func handle(_ message: WebSocketMessage, on connection: LiveConnection, logger: Logger) async {
        guard case .text(let text) = message else {
            return reply(nil, APIError.invalid("Binary frames are not supported; send JSON text frames"), on: connection)
        }
        let data = Data(text.utf8)
        let decoder = WireCoding.makeDecoder()
        let header = try? decoder.decode(FrameHeader.self, from: data)
        guard data.count <= Limits.maxPayloadBytes else {
            return reply(header?.id, APIError.payloadTooLarge, on: connection)
        }
        guard let id = header?.id, !id.isEmpty else {
            return reply(nil, APIError.invalid("A frame must be a JSON object with a string id"), on: connection)
        }
        let frame: ClientFrame
        do {
            frame = try decoder.decode(ClientFrame.self, from: data)
        } catch let error as DecodingError {
            return reply(id, APIError.invalid(error.wireDescription), on: connection)
        } catch {
            return reply(id, APIError.invalid("Malformed frame"), on: connection)
        }
        do {
            try await execute(frame, on: connection)
        } catch let error as APIError {
            reply(id, error, on: connection)
        } catch {
            logger.error("Command failed", metadata: ["type": "\(frame.command.type)", "error": "\(String(reflecting: error))"])
            reply(id, APIError(.internal, "Internal server error"), on: connection)
        }
    }

    private func execute(_ frame: ClientFrame, on connection: LiveConnection) async throws {
        let identity = connection.identity
        switch frame.command {
        case .sendMessage(let request):
            guard let conversationId = request.conversationId else {
                throw APIError.invalid("Missing key `conversationId` in `data`")
            }
            let result = try await chat.send(request, in: conversationId, by: identity)
            send(ReplyFrame(replyTo: frame.id, data: result.message), on: connection)
        case .ping:
            send(ReplyFrame(replyTo: frame.id, data: EmptyPayload()), on: connection)
        case .typing(let command):
            try await signals.typing(command, by: identity)
            send(ReplyFrame(replyTo: frame.id, data: EmptyPayload()), on: connection)
        case .read(let request):
            guard let conversationId = request.conversationId else {
                throw APIError.invalid("Missing key `conversationId` in `data`")
            }
            let answer = try await signals.markRead(request, in: conversationId, by: identity)
            send(ReplyFrame(replyTo: frame.id, data: answer), on: connection)
        case .delivered(let command):
            _ = try await signals.markDelivered(command, by: identity)
            send(ReplyFrame(replyTo: frame.id, data: EmptyPayload()), on: connection)
        case .focus(let command):
            try await signals.focus(command, by: identity)
            send(ReplyFrame(replyTo: frame.id, data: EmptyPayload()), on: connection)
        }
    }

    private func reply(_ id: String?, _ error: APIError, on connection: LiveConnection) {
        send(ReplyFrame<EmptyPayload>(replyTo: id, error: error.info), on: connection)
    }

    private func send(_ value: some Encodable, on connection: LiveConnection) {
        guard let data = try? WireCoding.makeEncoder().encode(value) else { return }
        connection.enqueue(ByteBuffer(bytes: data))
    }
}
