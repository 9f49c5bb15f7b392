import NIOCore

/// Folds the flushes a connection asks for within one turn of its event loop into one.
///
/// The WebSocket writer flushes after every frame, so a connection receiving a burst (a busy
/// group's messages, their replies) made one `writev` system call per frame. Here a flush is
/// deferred to the end of the event loop's current work: the frames written meanwhile go out
/// in one system call. Nothing waits longer than that one turn, and a close first flushes
/// what is pending, so no written frame is lost.
final class FlushCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private var flushPending = false

    func flush(context: ChannelHandlerContext) {
        guard !flushPending else { return }
        flushPending = true
        context.eventLoop.assumeIsolated().execute {
            self.flushNow(context)
        }
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        flushNow(context)
        context.close(mode: mode, promise: promise)
    }

    /// Leaving the pipeline (a WebSocket upgrade) flushes what is pending first.
    func removeHandler(context: ChannelHandlerContext, removalToken: ChannelHandlerContext.RemovalToken) {
        flushNow(context)
        context.leavePipeline(removalToken: removalToken)
    }

    private func flushNow(_ context: ChannelHandlerContext) {
        guard flushPending else { return }
        flushPending = false
        context.flush()
    }
}
