import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOWebSocket
import ParleyClient
import ParleyProtocol
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A storm client's frames: `hello`, `message.created` (its seq), pings and closes.
final class StormSocket: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let client: StormClient
    private let generation: Int
    private var hello = false
    private var fragments = FragmentedMessage()

    init(client: StormClient, generation: Int) {
        self.client = client
        self.generation = generation
    }

    func channelInactive(context: ChannelHandlerContext) {
        client.lost(generation)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text, .continuation:
            if let whole = fragments.whole(frame) { receive(whole) }
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    private func receive(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { bytes in
            if !hello {
                if find(Marker.hello, in: bytes) != nil {
                    hello = true
                    client.connected(generation)
                }
                return
            }
            guard find(Marker.created, in: bytes) != nil, let at = find(Marker.seq, in: bytes) else { return }
            let (seq, _) = readNumber(bytes, at + Marker.seq.count)
            client.received(seq: Int64(seq))
        }
    }
}
