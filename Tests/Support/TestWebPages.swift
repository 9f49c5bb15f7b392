import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A small HTTP/1.1 web server on loopback serving scripted pages, for link previews: each
/// path answers a status, headers and a body, and every request is counted.
public final class TestWebPages: Sendable {
    /// One scripted answer.
    public struct Page: Sendable {
        public var status: Int
        public var headers: [String: String]
        public var body: [UInt8]

        /// A page with a status, headers and a body.
        public init(status: Int = 200, headers: [String: String] = ["Content-Type": "text/html; charset=utf-8"], body: String = "") {
            self.status = status
            self.headers = headers
            self.body = Array(body.utf8)
        }
    }

    private final class State: Sendable {
        let pages: Mutex<[String: Page]>
        let hits = Mutex<[String: Int]>([:])
        /// Paths whose answers wait for ``TestWebPages/release(_:)``, with the answers waiting.
        let held = Mutex<[String: [@Sendable () -> Void]]>([:])
        init(_ pages: [String: Page]) { self.pages = Mutex(pages) }
    }

    private let state: State
    private let channel: any Channel
    /// The port it listens on (127.0.0.1).
    public let port: Int

    /// Starts serving `pages` (by path) on a free loopback port.
    public init(pages: [String: Page]) async throws {
        let state = State(pages)
        self.state = state
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Responder(state: state))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress?.port ?? 0
    }

    /// The URL of a path on this server.
    public func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    /// How many requests a path got.
    public func hits(_ path: String) -> Int { state.hits.withLock { $0[path] ?? 0 } }

    /// Requests for `path` are counted but not answered until ``release(_:)``: a page that is
    /// slow for exactly as long as a test needs, with no clock involved.
    public func hold(_ path: String) { state.held.withLock { $0[path] = $0[path] ?? [] } }

    /// Answers the requests held for `path`, and the next ones at once.
    public func release(_ path: String) {
        let waiting = state.held.withLock { $0.removeValue(forKey: path) } ?? []
        for answer in waiting { answer() }
    }

    /// Stops listening.
    public func stop() async {
        try? await channel.close()
    }

    private final class Responder: ChannelInboundHandler, @unchecked Sendable {
        // SAFETY: used only on its channel's event loop, by NIO; the shared state is in mutexes.
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let state: State

        init(state: State) { self.state = state }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard case .head(let head) = unwrapInboundIn(data) else { return }
            state.hits.withLock { $0[head.uri, default: 0] += 1 }
            let page = state.pages.withLock { $0[head.uri] } ?? Page(status: 404, headers: [:], body: "")
            var headers = HTTPHeaders(page.headers.map { ($0.key, $0.value) })
            headers.replaceOrAdd(name: "Content-Length", value: String(page.body.count))
            headers.replaceOrAdd(name: "Connection", value: "close")
            let status = HTTPResponseStatus(statusCode: page.status)
            let answer = {
                context.write(self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
                context.write(self.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: page.body)))), promise: nil)
                context.writeAndFlush(self.wrapOutboundOut(.end(nil))).whenComplete { _ in context.close(promise: nil) }
            }
            let loop = context.eventLoop
            // SAFETY (as above): the answer runs on the channel's event loop.
            nonisolated(unsafe) let deferred = answer
            let parked = state.held.withLock { held -> Bool in
                guard held[head.uri] != nil else { return false }
                held[head.uri]!.append { loop.execute { deferred() } }
                return true
            }
            if !parked { answer() }
        }
    }
}
