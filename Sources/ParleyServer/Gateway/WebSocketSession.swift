import Foundation
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTP1
import NIOWebSocket
import ParleyProtocol
import Synchronization

/// The WebSocket protocol of one upgraded socket, as a channel handler: frames in (masked, as
/// RFC 6455 requires of a client), whole messages out to its ``SocketSession``; pings answered,
/// the client's close answered and the socket ended.
///
/// It keeps nothing between messages but a fragmented message being put together; outgoing
/// frames are written by ``LiveConnection`` and the heartbeat straight to the channel.
final class WebSocketSessionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let session: SocketSession
    /// The fragments so far of a message sent in several frames, and whether it is text.
    private var partial: (data: ByteBuffer, isText: Bool)?

    init(session: SocketSession) {
        self.session = session
    }

    /// Puts the handler on a socket the upgrader has just turned into a WebSocket (its frame
    /// decoder and encoder are in place) and starts the session, which checks the token.
    static func install(on channel: any Channel, head: HTTPRequestHead, gateway: Gateway) throws {
        let session = SocketSession(
            gateway: gateway, channel: channel, authorization: ParleyHTTPChannel.authorization(of: head), uri: URI(head.uri))
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(WebSocketSessionHandler(session: session))
        // HTTP's flush coalescing is not needed here: a connection's writer flushes once a run.
        if let coalescer = try? pipeline.handler(type: FlushCoalescer.self) { pipeline.removeHandler(coalescer, promise: nil) }
        session.start()
        // Gone before the handler was there to see it end (this runs on the event loop, so
        // nothing can end it in between): the session opens and closes at once.
        if !channel.isActive { session.received(.end) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        guard frame.maskKey != nil, frame.reservedBits.isEmpty else {
            return fail(context, .protocolError, "client frames must be masked and use no extension bits")
        }
        switch frame.opcode {
        case .text, .binary:
            guard partial == nil else { return fail(context, .protocolError, "a new message inside a fragmented one") }
            let data = frame.unmaskedData
            if frame.fin {
                session.received(frame.opcode == .text ? .text(data) : .binary)
            } else {
                partial = (data, frame.opcode == .text)
            }
        case .continuation:
            guard var message = partial else { return fail(context, .protocolError, "a continuation with no message") }
            partial = nil
            var data = frame.unmaskedData
            guard message.data.readableBytes + data.readableBytes <= Gateway.transportLimit else {
                return fail(context, .messageTooLarge, "message too large")
            }
            message.data.writeBuffer(&data)
            if frame.fin {
                session.received(message.isText ? .text(message.data) : .binary)
            } else {
                partial = message
            }
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .pong:
            // A sign of life, already counted below (``LivenessHandler``).
            break
        case .connectionClose:
            var data = frame.unmaskedData
            session.peerClosed(code: data.readWebSocketErrorCode())
        default:
            fail(context, .protocolError, "unknown opcode")
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        partial = nil
        session.received(.end)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A frame the decoder refused: over the frame limit (1009), or a fragmented or long
        // control frame (1002). Anything else (a reset socket) just ends it.
        switch error as? NIOWebSocketError {
        case .invalidFrameLength: fail(context, .messageTooLarge, "message too large")
        case .fragmentedControlFrame, .multiByteControlFrameLength: fail(context, .protocolError, "malformed control frame")
        case nil: context.close(promise: nil)
        }
    }

    /// A broken protocol: the close code (after what is already queued), then the socket.
    private func fail(_ context: ChannelHandlerContext, _ code: WebSocketErrorCode, _ reason: String) {
        partial = nil
        session.broken(code, reason: reason)
    }
}

/// One WebSocket's inbound side: its messages are handled one at a time in arrival order, by a
/// task that exists only while there are messages to handle (the first also opens the
/// session: token, registration, `hello`). An idle socket has no task.
///
/// A client sending faster than its commands are handled is not read from beyond
/// ``pauseAt`` waiting messages, until the handler is down to ``resumeAt``.
final class SocketSession: Sendable {
    enum Item: Sendable {
        case text(ByteBuffer)
        case binary
        /// The socket closed.
        case end
    }

    /// Waiting messages at which reading stops, and at which it starts again.
    static let pauseAt = 32
    static let resumeAt = 8

    private struct State {
        var items: [Item] = []
        var running = false
        var paused = false
        /// The upgrade's credentials, until the first run opens the session with them.
        var opening: (authorization: String?, uri: URI)?
        var open: Gateway.OpenSession?
        /// Pipelined sends waiting for their commit (made on the first send).
        var window: ConcurrencyGate?
    }

    private let gateway: Gateway
    private let channel: any Channel
    private let state: Mutex<State>

    init(gateway: Gateway, channel: any Channel, authorization: String?, uri: URI) {
        self.gateway = gateway
        self.channel = channel
        state = Mutex(State(opening: (authorization, uri)))
    }

    /// Starts the first run, which opens the session.
    func start() {
        state.withLock { $0.running = true }
        Task { await self.run() }
    }

    /// A message or the socket's end, in arrival order (called on the event loop).
    func received(_ item: Item) {
        let (start, pause) = state.withLock { state -> (Bool, Bool) in
            state.items.append(item)
            var pause = false
            if state.items.count >= Self.pauseAt, !state.paused {
                state.paused = true
                pause = true
            }
            guard !state.running else { return (false, pause) }
            state.running = true
            return (true, pause)
        }
        if pause { applyReading() }
        if start { Task { await self.run() } }
    }

    /// Reads or stops reading as the state says now (on the event loop). A resume decided on
    /// the session's task is applied here too, after any pause that overtook it, so a stale
    /// resume never lets a paused session read.
    private func applyReading() {
        let paused = state.withLock { $0.paused }
        channel.setOption(ChannelOptions.autoRead, value: !paused).whenFailure { _ in }
    }

    /// The client's close frame: answered with its code once what is queued before it is out,
    /// then the socket ends (at once if the server's own close is already out, or if the
    /// session is not open yet: its end then closes what the opening registers).
    func peerClosed(code: WebSocketErrorCode?) {
        if let open = state.withLock({ $0.open }) {
            open.connection.peerClosed(code: code ?? .normalClosure)
        } else {
            Gateway.closeUnopened(channel, code ?? .normalClosure, reason: "")
        }
    }

    /// The client broke the WebSocket protocol: an open session sends what is queued, then
    /// the close frame, then ends the socket (its writer keeps the order); one not open yet
    /// is closed at once (its end then closes what the opening registers).
    func broken(_ code: WebSocketErrorCode, reason: String) {
        if let open = state.withLock({ $0.open }) {
            open.connection.close(code, reason: reason, disconnecting: true)
        } else {
            Gateway.closeUnopened(channel, code, reason: reason)
        }
    }

    private func run() async {
        let decoder = WireCoding.makeDecoder()
        if let opening = state.withLock({ state in defer { state.opening = nil }; return state.opening }) {
            let open = await gateway.open(authorization: opening.authorization, uri: opening.uri, channel: channel)
            state.withLock { $0.open = open }
        }
        while let (item, open) = next() {
            switch item {
            case .text(let buffer):
                guard let open else { continue }
                await gateway.receive(String(buffer: buffer), on: open, window: window(), decoder: decoder)
            case .binary:
                if let open, !open.connection.isClosing { gateway.refuseBinary(on: open) }
            case .end:
                guard let open else { continue }
                state.withLock { $0.open = nil }
                await gateway.close(open)
            }
        }
    }

    /// The next message with the session it is for (one lock a message), or nil (and the run
    /// ends) when there is none.
    private func next() -> (Item, Gateway.OpenSession?)? {
        let (next, resume) = state.withLock { state -> ((Item, Gateway.OpenSession?)?, Bool) in
            guard !state.items.isEmpty else {
                state.running = false
                return (nil, false)
            }
            let item = state.items.removeFirst()
            if state.paused, state.items.count <= Self.resumeAt {
                state.paused = false
                return ((item, state.open), true)
            }
            return ((item, state.open), false)
        }
        if resume { channel.eventLoop.execute { self.applyReading() } }
        return next
    }

    private func window() -> ConcurrencyGate {
        state.withLock { state in
            if let window = state.window { return window }
            let window = ConcurrencyGate(limit: Gateway.maxPipelinedSends)
            state.window = window
            return window
        }
    }
}
