import Foundation
import NIOCore
import NIOWebSocket
import ParleyProtocol
import ParleyRules
import Synchronization

/// One live WebSocket connection: a bounded queue of encoded frames and how it should close.
///
/// Nothing waits on an idle connection: the first frame queued starts a run on the channel's
/// event loop that writes everything queued (in one flush) and comes back when the socket has
/// taken the last of it, so the queue grows only while the socket is slower than the events.
/// An idle connection costs its socket, its pipeline and this object, no task.
public final class LiveConnection: Sendable {
    /// Frames queued for this connection before it is considered a slow consumer.
    public static let queueCapacity = 2048

    private struct State {
        var queue: [ByteBuffer] = []
        /// A run is on the event loop, or its last write has not reached the socket yet.
        var writing = false
        var close: (code: WebSocketErrorCode, reason: String)?
        /// The channel is closed once the close frame is written (the client is not waited for).
        var disconnectAfterClose = false
        var finished = false
        /// The close frame has been handed to the socket (or the socket failed): nothing more
        /// will be written.
        var done = false
    }

    /// How long a connection the server decided to close may stay open after its close frame
    /// was queued: a client that never answers the close (or never reads) is cut off then.
    public static let closeGrace: TimeAmount = .seconds(3)

    let id: Int
    let identity: Identity
    /// What its token allows (nil in tests that build connections by hand): the session ends
    /// when the token would be refused. Opened with one token, renewed by the `auth` command.
    var grant: TokenGrant? { grantBox.withLock { $0 } }
    private let grantBox: Mutex<TokenGrant?>
    private let state = Mutex(State())
    /// The socket, whose pipeline encodes ``WebSocketFrame``s.
    let channel: any Channel

    /// A connection whose queue starts with `first` (its `hello`): nothing can be queued before it.
    init(id: Int, identity: Identity, grant: TokenGrant? = nil, channel: any Channel, first: ByteBuffer? = nil) {
        self.id = id
        self.identity = identity
        self.grantBox = Mutex(grant)
        self.channel = channel
        if let first { enqueue(first) }
    }

    /// Uses a renewed token's grant from now on (the same user's: the gateway checks).
    func renew(_ grant: TokenGrant) { grantBox.withLock { $0 = grant } }

    /// Frames queued and not yet written.
    var queueDepth: Int { state.withLock { $0.queue.count } }

    /// Queues a frame; a connection whose queue is full is closed rather than allowed to grow.
    func enqueue(_ frame: ByteBuffer) {
        let startWriter = state.withLock { state -> Bool in
            guard state.close == nil, !state.finished else { return false }
            if state.queue.count >= Self.queueCapacity {
                state.close = (.policyViolation, "slow consumer")
            } else {
                state.queue.append(frame)
            }
            guard !state.writing else { return false }
            state.writing = true
            return true
        }
        if startWriter { channel.eventLoop.execute { self.write() } }
    }

    /// Sends what is queued, then closes with this code (the first close asked for wins).
    /// From then on nothing more is queued, the gateway handles no further command of it, and
    /// its channel is closed after ``closeGrace`` whatever the client does, or as soon as the
    /// close frame is out if `disconnecting` (a client already gone quiet or already closing).
    func close(_ code: WebSocketErrorCode, reason: String, disconnecting: Bool = false) {
        let (first, startWriter) = state.withLock { state -> (Bool, Bool) in
            guard state.close == nil, !state.finished else { return (false, false) }
            state.close = (code, reason)
            state.disconnectAfterClose = disconnecting
            guard !state.writing else { return (true, false) }
            state.writing = true
            return (true, true)
        }
        if startWriter { channel.eventLoop.execute { self.write() } }
        if first {
            let channel = self.channel
            channel.eventLoop.scheduleTask(in: Self.closeGrace) { channel.close(promise: nil) }
        }
    }

    /// The client sent its close: it is answered with the same code after what is queued
    /// before it (unless the server's own close went first), and the socket then ends.
    func peerClosed(code: WebSocketErrorCode) {
        let (startWriter, endNow) = state.withLock { state -> (Bool, Bool) in
            if state.done { return (false, true) }
            if state.close == nil { state.close = (code, "") }
            state.disconnectAfterClose = true
            guard !state.writing else { return (false, false) }
            state.writing = true
            return (true, false)
        }
        if endNow { channel.close(promise: nil) }
        if startWriter { channel.eventLoop.execute { self.write() } }
    }

    /// Whether the server has decided to close this connection (it then takes no more commands).
    var isClosing: Bool { state.withLock { $0.close != nil } }

    /// Whether the close frame asked for is on its way to the socket, or the socket is gone.
    var isCloseSent: Bool { state.withLock { $0.done } }

    /// One run, on the event loop: everything queued goes out in one flush; the run after it
    /// starts when the socket has taken the last frame (or ends here if nothing is left).
    private func write() {
        let (batch, close) = state.withLock { state -> ([ByteBuffer], (code: WebSocketErrorCode, reason: String)?) in
            let batch = state.queue
            state.queue.removeAll()
            if batch.isEmpty {
                if state.close == nil { state.writing = false } else { state.finished = true }
            }
            return (batch, batch.isEmpty ? state.close : nil)
        }
        if batch.isEmpty {
            guard let close else { return }
            let channel = self.channel
            channel.writeAndFlush(WebSocketFrame.close(close.code, reason: close.reason, allocator: channel.allocator)).whenComplete { _ in
                // Read again: the client's own close may have come while the frame was going out.
                let disconnect = self.state.withLock { state in
                    state.done = true
                    return state.disconnectAfterClose
                }
                if disconnect { channel.close(promise: nil) }
            }
            return
        }
        let last = batch.count - 1
        for (index, frame) in batch.enumerated() {
            let frame = WebSocketFrame(fin: true, opcode: .text, data: frame)
            guard index == last else {
                channel.write(frame, promise: nil)
                continue
            }
            channel.write(frame).whenComplete { result in
                switch result {
                case .success:
                    // A new run, not a nested one: a busy connection would otherwise recurse.
                    self.channel.eventLoop.execute { self.write() }
                case .failure:
                    // The socket is gone: drop the rest; the session sees the end and cleans up.
                    self.state.withLock { state in
                        state.queue.removeAll()
                        state.finished = true
                        state.done = true
                        state.writing = false
                    }
                }
            }
        }
        channel.flush()
    }
}
