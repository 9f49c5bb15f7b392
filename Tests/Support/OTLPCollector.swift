import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// An OpenTelemetry collector on a loopback port: it takes OTLP/HTTP trace exports in the JSON
/// encoding (`POST /v1/traces`, `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`), answers 200 as a
/// collector does, and keeps every span with its resource's attributes.
public final class OTLPCollector: Sendable {
    /// One exported span.
    public struct Span: Sendable, Equatable {
        /// Lowercase hex, as W3C trace context writes them.
        public var traceId: String, spanId: String, parentSpanId: String
        public var name: String
        /// OTLP's kind number (1 internal, 2 server, 3 client, 4 producer, 5 consumer).
        public var kind: Int
        /// The span's attributes, each value as text.
        public var attributes: [String: String]
        /// The exporting process's resource attributes (service.name, service.instance.id).
        public var resource: [String: String]
        public var startNanos: UInt64, endNanos: UInt64
        /// OTLP's status code (0 unset, 1 ok, 2 error).
        public var status: Int
    }

    private let channel: any Channel
    private let spans = Mutex<[Span]>([])
    private let requests = Mutex<Int>(0)
    /// The port it listens on (127.0.0.1).
    public let port: Int

    /// Starts listening on a free loopback port.
    public init() async throws {
        let box = Mutex<OTLPCollector?>(nil)
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.pipeline.configureHTTPServerPipeline().flatMap {
                    child.pipeline.addHandler(CollectorHandler { body in box.withLock { $0?.take(body) } })
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress?.port ?? 0
        box.withLock { $0 = self }
    }

    /// `http://127.0.0.1:PORT` (for OTEL_EXPORTER_OTLP_ENDPOINT).
    public var endpoint: String { "http://127.0.0.1:\(port)" }

    /// Every span received so far.
    public var received: [Span] { spans.withLock { $0 } }

    /// Export requests that did not decode as OTLP JSON (a test expects none).
    public var malformed: Int { requests.withLock { $0 } }

    public func stop() async { try? await channel.close() }

    fileprivate func take(_ body: Data) {
        guard let request = try? JSONDecoder().decode(ExportRequest.self, from: body) else {
            requests.withLock { $0 += 1 }
            return
        }
        var found: [Span] = []
        for resourceSpans in request.resourceSpans ?? [] {
            let resource = Self.attributes(resourceSpans.resource?.attributes)
            for scope in resourceSpans.scopeSpans ?? [] {
                for span in scope.spans ?? [] {
                    found.append(Span(
                        traceId: Self.hex(span.traceId), spanId: Self.hex(span.spanId), parentSpanId: Self.hex(span.parentSpanId ?? ""),
                        name: span.name, kind: span.kind ?? 0, attributes: Self.attributes(span.attributes), resource: resource,
                        startNanos: UInt64(span.startTimeUnixNano ?? "0") ?? 0, endNanos: UInt64(span.endTimeUnixNano ?? "0") ?? 0,
                        status: span.status?.code ?? 0))
                }
            }
        }
        spans.withLock { $0 += found }
    }

    /// An id as lowercase hex: OTLP JSON writes ids in hex, protobuf's JSON mapping in base64.
    static func hex(_ id: String) -> String {
        if id.isEmpty { return "" }
        if (id.count == 32 || id.count == 16), id.allSatisfy(\.isHexDigit) { return id.lowercased() }
        guard let bytes = Data(base64Encoded: id) else { return id }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }

    private static func attributes(_ list: [KeyValue]?) -> [String: String] {
        var result: [String: String] = [:]
        for item in list ?? [] {
            let value = item.value
            result[item.key] = value.stringValue ?? value.intValue ?? value.boolValue.map { "\($0)" } ?? value.doubleValue.map { "\($0)" } ?? ""
        }
        return result
    }

    // The OTLP JSON encoding's ExportTraceServiceRequest, the fields a test reads.
    private struct ExportRequest: Decodable { var resourceSpans: [ResourceSpans]? }
    private struct ResourceSpans: Decodable { var resource: Resource?; var scopeSpans: [ScopeSpans]? }
    private struct Resource: Decodable { var attributes: [KeyValue]? }
    private struct ScopeSpans: Decodable { var spans: [WireSpan]? }
    private struct WireSpan: Decodable {
        var traceId: String, spanId: String, parentSpanId: String?, name: String, kind: Int?
        var startTimeUnixNano: String?, endTimeUnixNano: String?
        var attributes: [KeyValue]?
        var status: Status?
    }
    private struct Status: Decodable { var code: Int? }
    private struct KeyValue: Decodable { var key: String; var value: AnyValue }
    private struct AnyValue: Decodable {
        var stringValue: String?, intValue: String?, boolValue: Bool?, doubleValue: Double?
        enum CodingKeys: String, CodingKey { case stringValue, intValue, boolValue, doubleValue }
        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            stringValue = try c.decodeIfPresent(String.self, forKey: .stringValue)
            // int64 is a string in OTLP JSON; accept a number too.
            intValue = (try? c.decodeIfPresent(String.self, forKey: .intValue)) ?? (try? c.decodeIfPresent(Int64.self, forKey: .intValue)).flatMap { $0.map(String.init) }
            boolValue = try c.decodeIfPresent(Bool.self, forKey: .boolValue)
            doubleValue = try c.decodeIfPresent(Double.self, forKey: .doubleValue)
        }
    }
}

/// Collects a request's body; answers every request 200 with an empty JSON export response.
private final class CollectorHandler: ChannelInboundHandler, @unchecked Sendable {
    // SAFETY: a channel handler lives on its channel's event loop; `body` is touched only there.
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    private var body = ByteBuffer()
    private let deliver: @Sendable (Data) -> Void

    init(deliver: @escaping @Sendable (Data) -> Void) { self.deliver = deliver }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: body.clear()
        case .body(var chunk): body.writeBuffer(&chunk)
        case .end:
            deliver(Data(body.readableBytesView))
            let reply = ByteBuffer(string: "{}")
            var headers = HTTPHeaders([("Content-Type", "application/json"), ("Content-Length", "\(reply.readableBytes)")])
            headers.add(name: "Connection", value: "keep-alive")
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(reply))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }
    }
}
