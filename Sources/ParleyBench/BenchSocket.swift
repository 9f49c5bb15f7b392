import Foundation
import Histogram
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// One generator WebSocket, after the upgrade: answers pings and closes, sends
/// `message.send` frames (masked, written in batches and flushed once), and reads only the
/// bytes it needs from what arrives.
final class BenchSocket: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let spec: SocketSpec
    let state: LoopState
    let ready: EventLoopPromise<Void>
    private var context: ChannelHandlerContext?
    private(set) var isReady = false
    private var inFlight = 0
    /// The highest `seq` of a `message.created` seen on this socket (its one conversation).
    private var lastSeq: UInt64?
    private var number = 0
    private var pendingFlush = false
    private var fragments = FragmentedMessage()
    private var closing = false
    // Verification.
    var counts: [UInt64: Int] = [:]
    var acked = 0
    /// `","type":"message.send","data":{"conversationId":"…","clientMessageId":"nonce-index-`
    private let middle: String
    private let indexText: String

    init(spec: SocketSpec, state: LoopState, ready: EventLoopPromise<Void>) {
        self.spec = spec
        self.state = state
        self.ready = ready
        indexText = String(spec.index)
        middle = #"","type":"message.send","data":{"conversationId":""# + spec.conversationId + #"","clientMessageId":""#
            + state.policy.nonce + "-" + String(spec.index) + "-"
    }

    var canSend: Bool {
        guard state.sending, let context, context.channel.isActive, inFlight < state.policy.inFlight else { return false }
        if let limit = state.policy.messagesPerSender, number >= limit { return false }
        return true
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func channelInactive(context: ChannelHandlerContext) {
        if isReady {
            state.stats.closed += 1
        } else {
            ready.fail(ChannelError.ioOnClosedChannel)
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !isReady { ready.fail(error) }
        context.close(promise: nil)
    }

    func fillWindow() {
        while canSend { sendOne() }
    }

    /// Writes one `message.send` (not flushed: the caller flushes the batch).
    func sendOne() {
        guard let context else { return }
        let now = monotonicNanos()
        let stamp = String(now)
        let n = String(number)
        number += 1
        var buffer = context.channel.allocator.buffer(capacity: 200 + middle.utf8.count)
        buffer.writeStaticString(#"{"id":""#)
        buffer.writeString(stamp)
        buffer.writeString(middle)
        buffer.writeString(n)
        buffer.writeStaticString(#"","text":"pb|"#)
        buffer.writeString(stamp)
        buffer.writeStaticString("|")
        buffer.writeString(indexText)
        buffer.writeStaticString("|")
        buffer.writeString(n)
        buffer.writeStaticString(#"| bench""#)
        if !spec.extraData.isEmpty { buffer.writeString(spec.extraData) }
        buffer.writeStaticString("}}")
        let frame = WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: buffer)
        context.write(wrapOutboundOut(frame), promise: nil)
        inFlight += 1
        pendingFlush = true
        state.stats.totalSent += 1
        if state.measuring { state.stats.sent += 1 }
    }

    func flushIfNeeded() {
        guard pendingFlush, let context else { return }
        pendingFlush = false
        context.flush()
    }

    func close() {
        guard let context, !closing else { return }
        closing = true
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: .normalClosure)
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: data)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in channel.close(promise: nil) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .binary, .continuation:
            if let whole = fragments.whole(frame) { receive(whole) }
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.write(wrapOutboundOut(pong), promise: nil)
            pendingFlush = true
        case .connectionClose:
            if !closing {
                closing = true
                var data = frame.unmaskedData
                let code = data.readSlice(length: Swift.min(2, data.readableBytes)) ?? context.channel.allocator.buffer(capacity: 0)
                let reply = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: code)
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(reply)).whenComplete { _ in channel.close(promise: nil) }
            } else {
                context.close(promise: nil)
            }
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushIfNeeded()
        context.fireChannelReadComplete()
    }

    /// Classifies a text frame by a few bytes and records what it means.
    private func receive(_ buffer: ByteBuffer) {
        let now = monotonicNanos()
        buffer.withUnsafeReadableBytes { bytes in
            if !isReady {
                if find(Marker.hello, in: bytes) != nil {
                    isReady = true
                    ready.succeed(())
                }
                return
            }
            // The server's JSON keys come in no fixed order (Foundation's encoder on Linux), so
            // each marker is searched in the whole frame: a reply has `"replyTo":"<send time>"`
            // and `"ok":true`; an event is `message.created` when it has that type.
            if let replyAt = find(Marker.replyTo, in: bytes) {
                let (sentAt, _) = readNumber(bytes, replyAt + Marker.replyTo.count)
                let ok = find(Marker.okTrue, in: bytes) != nil
                inFlight -= 1
                if ok {
                    acked += 1
                    state.stats.totalAcked += 1
                    if state.measuring {
                        state.stats.acked += 1
                        state.stats.ack.record(now &- sentAt)
                    }
                } else {
                    state.stats.totalErrors += 1
                    if state.measuring { state.stats.errors += 1 }
                    if state.stats.firstError == nil {
                        state.stats.firstError = String(decoding: UnsafeRawBufferPointer(rebasing: bytes.prefix(300)), as: UTF8.self)
                    }
                }
                if state.sending && state.policy.rate == 0 {
                    fillWindow()
                }
                return
            }
            let isCreated = find(Marker.created, in: bytes) != nil
            guard isCreated else {
                // A change to a message (a thread root's new count) takes a number of the
                // sequence too: the next message.created follows it without a gap.
                if find(Marker.updated, in: bytes) != nil, let at = find(Marker.updatedSeq, in: bytes) {
                    let (seq, _) = readNumber(bytes, at + Marker.updatedSeq.count)
                    if let last = lastSeq, seq == last &+ 1 { lastSeq = seq }
                }
                return
            }
            if let seqAt = find(Marker.seq, in: bytes) {
                let (seq, _) = readNumber(bytes, seqAt + Marker.seq.count)
                if let last = lastSeq, seq != last &+ 1 {
                    state.stats.catchUps += 1
                    if seq < last { state.stats.outOfOrder += 1 }
                }
                lastSeq = Swift.max(lastSeq ?? 0, seq)
            }
            guard let stampAt = find(Marker.stamp, in: bytes) else { return }
            let (sentAt, a) = readNumber(bytes, stampAt + Marker.stamp.count)
            let (sender, b) = readNumber(bytes, a + 1)
            let (number, _) = readNumber(bytes, b + 1)
            if Int(sender) == spec.index {
                state.stats.totalEchoes += 1
                if state.measuring { state.stats.echoes += 1 }
            } else {
                state.stats.totalDeliveries += 1
                if state.measuring {
                    state.stats.deliveries += 1
                    state.stats.delivery.record(now &- sentAt)
                }
                if state.policy.verify { counts[sender << 32 | number, default: 0] += 1 }
            }
        }
    }
}

extension BenchSocket {
    var stateIsActive: Bool { context?.channel.isActive ?? false }
}

/// A WebSocket message read frame by frame: the frames of a fragmented message are kept until
/// its last one.
struct FragmentedMessage {
    private var pending: ByteBuffer?

    /// The whole message once `frame` completes it (at once for an unfragmented one), else nil.
    mutating func whole(_ frame: WebSocketFrame) -> ByteBuffer? {
        var payload = frame.unmaskedData
        guard frame.fin else {
            if pending == nil { pending = payload } else { pending!.writeBuffer(&payload) }
            return nil
        }
        guard var earlier = pending else { return payload }
        pending = nil
        earlier.writeBuffer(&payload)
        return earlier
    }
}
