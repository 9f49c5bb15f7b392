import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOWebSocket
import ServiceLifecycle
import Synchronization

/// The floor: a minimal Hummingbird WebSocket broadcast server. No storage, no auth, no JSON
/// parsing: a connection joins the group in its `?group=` query, gets `{"type":"hello"}`, and
/// every frame it sends is wrapped once as `{"type":"message.created","data":<frame>}` and
/// written to every member of its group (itself included, as Parley does), then answered
/// with `{"replyTo":"<id>","ok":true}` (the id is the frame's first string, cut out by hand).
public enum BareServer {
    /// The members of each group.
    final class Groups: Sendable {
        private struct State {
            var nextId = 0
            var members: [Int: [(id: Int, writer: WebSocketOutboundWriter)]] = [:]
        }
        private let state = Mutex(State())

        func join(_ group: Int, _ writer: WebSocketOutboundWriter) -> Int {
            state.withLock { state in
                state.nextId += 1
                state.members[group, default: []].append((state.nextId, writer))
                return state.nextId
            }
        }

        func leave(_ group: Int, _ id: Int) {
            state.withLock { state in state.members[group]?.removeAll { $0.id == id } }
        }

        func members(_ group: Int) -> [(id: Int, writer: WebSocketOutboundWriter)] {
            state.withLock { $0.members[group] ?? [] }
        }
    }

    /// The application: `GET /ws?group=N` (any path ending in `ws` works, so the generator's
    /// `/api/v1/ws` does too).
    static func makeApplication(host: String, port: Int, onRunning: @escaping @Sendable (Int) async -> Void)
        -> some ApplicationProtocol
    {
        let groups = Groups()
        let router = Router(context: BasicWebSocketRequestContext.self)
        let handler: WebSocketDataHandler<WebSocketRouterContext<BasicWebSocketRequestContext>> = { inbound, outbound, context in
            let group = context.request.uri.queryParameters.get("group").flatMap { Int($0) } ?? 0
            let id = groups.join(group, outbound)
            defer { groups.leave(group, id) }
            try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(staticString: #"{"type":"hello"}"#))))
            for try await frame in inbound {
                let data = frame.data
                var event = ByteBuffer()
                event.reserveCapacity(data.readableBytes + 40)
                event.writeStaticString(#"{"type":"message.created","data":"#)
                event.writeImmutableBuffer(data)
                event.writeStaticString("}")
                let created = WebSocketFrame(fin: true, opcode: .text, data: event)
                for member in groups.members(group) {
                    try? await member.writer.write(.custom(created))
                }
                var reply = ByteBuffer()
                reply.writeStaticString(#"{"replyTo":""#)
                reply.writeImmutableBuffer(Self.firstString(in: data))
                reply.writeStaticString(#"","ok":true}"#)
                try await outbound.write(.custom(WebSocketFrame(fin: true, opcode: .text, data: reply)))
            }
        }
        router.ws("ws", onUpgrade: handler)
        router.ws("api/v1/ws", onUpgrade: handler)
        var logger = Logger(label: "parley.bench.bare")
        logger.logLevel = .error
        return Application(
            router: router,
            server: .http1WebSocketUpgrade(webSocketRouter: router, configuration: .init(maxFrameSize: 1 << 16)),
            configuration: .init(address: .hostname(host, port: port), serverName: "bare"),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
    }

    /// The first JSON string value of a frame (`{"id":"…"` → …), without parsing the rest.
    static func firstString(in data: ByteBuffer) -> ByteBuffer {
        let view = data.readableBytesView
        guard let colon = view.firstIndex(of: UInt8(ascii: ":")),
            let open = view[colon...].firstIndex(of: UInt8(ascii: "\"")),
            let close = view[(open + 1)...].firstIndex(of: UInt8(ascii: "\""))
        else { return ByteBuffer() }
        return data.getSlice(at: open + 1, length: close - open - 1) ?? ByteBuffer()
    }

    /// Starts the floor server in this process; returns its port and how to stop it.
    public static func start(host: String = "127.0.0.1", port: Int = 0) async throws -> (port: Int, stop: @Sendable () async -> Void) {
        let (ports, sink) = AsyncStream.makeStream(of: Int.self)
        let app = makeApplication(host: host, port: port, onRunning: { sink.yield($0) })
        var logger = Logger(label: "parley.bench.bare")
        logger.logLevel = .error
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        let task = Task {
            defer { sink.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next() else {
            _ = try? await task.value
            throw BenchError("the bare server stopped before it listened")
        }
        return (bound, {
            await group.triggerGracefulShutdown()
            _ = try? await task.value
        })
    }

    /// Serves until SIGINT/SIGTERM (the `bench bare-server` process); prints `LISTENING <port>`.
    public static func run(host: String = "127.0.0.1", port: Int) async throws {
        let app = makeApplication(host: host, port: port, onRunning: { port in
            print("LISTENING \(port)")
            fflush(nil)
        })
        var logger = Logger(label: "parley.bench.bare")
        logger.logLevel = .error
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}

/// A benchmark could not run, in words.
public struct BenchError: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String
    /// An error that says `description`.
    public init(_ description: String) { self.description = description }
}
