import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket

/// Every connection's HTTP/1.1 pipeline, with the WebSocket upgrade taken below the framework.
///
/// A request is served by Hummingbird's responder as before. An upgrade to ``webSocketPath``
/// becomes a socket of plain channel handlers (``WebSocketSessionHandler``): no task and no
/// async channel wait on it while it idles, and buffers exist only while frames are in
/// flight. A framework WebSocket keeps a suspended task, its async sequences and the upgrade
/// request for the connection's whole life: about 30 KB each at 19,000 idle connections, where
/// this path keeps a few (docs/benchmarks.md, "Idle connections").
///
/// Refusals read as before: an upgrade whose token is refused, or to any other path, is
/// answered `400` and closed; an upgrade arriving as a later request of a kept-alive
/// connection is redirected (307) to a new connection, where the upgrade can run.
struct ParleyHTTPChannel: ServerChildChannel, HTTPChannelHandler {
    enum UpgradeResult: Sendable {
        /// The socket is a WebSocket now, served by its handlers.
        case webSocket
        case notUpgraded(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        case failedUpgrade(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
    }

    struct Value: ServerChildChannelValue {
        let upgradeResult: EventLoopFuture<UpgradeResult>
        let channel: any Channel
    }

    /// The one path that upgrades.
    static let webSocketPath = "/api/v1/ws"

    let responder: HTTPChannelHandler.Responder
    let configuration: HTTP1Channel.Configuration
    let gateway: Gateway

    init(responder: @escaping HTTPChannelHandler.Responder, configuration: HTTP1Channel.Configuration, gateway: Gateway) {
        self.responder = Self.redirectingUpgrades(responder)
        self.configuration = configuration
        self.gateway = gateway
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let attempted = NIOLoopBoundBox(false, eventLoop: channel.eventLoop)
            let gateway = self.gateway, configuration = self.configuration
            // A connection's receive buffer is kept between reads (NIO pools it): 1 KB holds an
            // upgrade request with its token and any command of an idle client, and grows for
            // larger reads. NIO's default starts at 2 KB.
            try channel.syncOptions?.setOption(
                ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 1024, maximum: 65536))
            let upgrader = NIOTypedWebSocketServerUpgrader<UpgradeResult>(
                maxFrameSize: Gateway.transportLimit,
                // Decoder errors are answered by ``WebSocketSessionHandler`` (one handler fewer).
                enableAutomaticErrorHandling: false,
                shouldUpgrade: { channel, head in
                    attempted.value = true
                    return Self.shouldUpgrade(channel: channel, head: head, gateway: gateway)
                },
                upgradePipelineHandler: { channel, head in
                    channel.eventLoop.makeCompletedFuture {
                        try WebSocketSessionHandler.install(on: channel, head: head, gateway: gateway)
                        return .webSocket
                    }
                })
            let upgrade = NIOTypedHTTPServerUpgradeConfiguration(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try pipeline.addHandlers(configuration.additionalChannelHandlers())
                        try pipeline.addHandler(
                            HTTPConnectionStateHandler(idleTimeout: configuration.idleTimeout.map { .init($0) }, logger: logger))
                        let http = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                        return attempted.value ? .failedUpgrade(http) : .notUpgraded(http)
                    }
                })
            var pipeline = NIOUpgradableHTTPServerPipelineConfiguration<UpgradeResult>(upgradeConfiguration: upgrade)
            pipeline.enablePipelining = false  // HTTP is pipelined by NIOAsyncChannel
            pipeline.enableErrorHandling = false  // Hummingbird answers errors
            pipeline.enableResponseHeaderValidation = false  // HTTPTypes validates
            pipeline.decoderConfiguration.maxHeaderFieldSize = configuration.httpDecoder.maxHeaderFieldSize
            pipeline.decoderConfiguration.maxHeaderListSize = configuration.httpDecoder.maxHeaderListSize
            pipeline.decoderConfiguration.maxHeaderFieldCount = configuration.httpDecoder.maxHeaderFieldCount
            let result = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: pipeline)
            return Value(upgradeResult: result, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.upgradeResult.get() {
            case .webSocket:
                // The socket lives on in its handlers; nothing waits here.
                return
            case .notUpgraded(let http):
                await handleHTTP(asyncChannel: http, logger: logger)
            case .failedUpgrade(let http):
                await Self.refuseUpgrade(http, logger: logger)
            }
        } catch {
            // The client went away before its first request was through (a load balancer's
            // probe, a TLS client giving up): its doing, not the server's.
            logger.debug("Connection ended before its first request", metadata: ["error": "\(error)"])
        }
    }

    /// Whether an upgrade may go ahead: the WebSocket path, and a token that holds (a ticket is
    /// only looked at here; the session uses it up once the socket is open).
    static func shouldUpgrade(channel: any Channel, head: HTTPRequestHead, gateway: Gateway) -> EventLoopFuture<HTTPHeaders?> {
        let uri = URI(head.uri)
        guard head.method == .GET, uri.path == webSocketPath else { return channel.eventLoop.makeSucceededFuture(nil) }
        let authorization = authorization(of: head)
        let promise = channel.eventLoop.makePromise(of: HTTPHeaders?.self)
        promise.completeWithTask {
            do {
                _ = try await gateway.authenticator.grant(
                    authorization: authorization, uri: uri, allowingQueryToken: true, consumingTicket: false)
                return HTTPHeaders()
            } catch {
                return nil
            }
        }
        return promise.futureResult
    }

    /// The `Authorization` header as one value (several lines joined, as HTTPFields reads them).
    static func authorization(of head: HTTPRequestHead) -> String? {
        let values = head.headers["Authorization"]
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    /// A refused upgrade: `400`, no body, and the connection closed.
    private static func refuseUpgrade(_ http: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, logger: Logger) async {
        do {
            try await http.executeThenClose { _, outbound in
                let head = HTTPResponse(status: .badRequest, headerFields: [.connection: "close", .contentLength: "0"])
                try await outbound.write(contentsOf: [.head(head), .end(nil)])
            }
        } catch {
            logger.trace("A refused upgrade's answer was not written", metadata: ["error": "\(error)"])
        }
    }

    /// NIO upgrades only a connection's first request; a later one asking to upgrade is sent
    /// to a new connection (307 to the same address, then closed).
    private static func redirectingUpgrades(_ responder: @escaping HTTPChannelHandler.Responder) -> HTTPChannelHandler.Responder {
        struct RedirectedUpgrade: Error {}
        return { (request: Request, writer: consuming ResponseWriter, channel: any Channel) in
            guard request.headers[.upgrade]?.lowercased() == "websocket" else {
                return try await responder(request, writer, channel)
            }
            var path = request.uri.path
            if let query = request.uri.query { path += "?\(query)" }
            try await writer.writeResponse(HTTPResponse(status: .temporaryRedirect, headerFields: [.connection: "close", .location: path]))
            throw RedirectedUpgrade()
        }
    }
}
