import Crypto
import Foundation
import JWTKit
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import ParleyServer
import SwiftASN1
import Synchronization
import X509

/// A stand-in for Apple's push service that speaks the real protocol: HTTP/2 over TLS (ALPN
/// "h2") on loopback, `POST /3/device/<token>`, provider-token authentication checked against
/// the team key's public half, and APNs' answers (status plus `{"reason": ...}`), scripted per
/// device token.
public final class TestAPNs: Sendable {
    /// One request as it arrived.
    public struct Received: Sendable {
        public var token: String
        public var headers: [String: String]
        public var body: Data
        /// Nil when the provider token and headers passed every check; otherwise what failed.
        public var rejection: String?
        /// The decoded provider token's claims and header.
        public var jwtKeyId: String?
        public var jwtIssuer: String?
        public var jwtIssuedAt: Date?
        public var jwtAlgorithm: String?

        /// The body as JSON.
        public var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    }

    /// An answer to give.
    public struct Answer: Sendable {
        public var status: Int
        public var reason: String?
        /// Held this long before answering (a slow APNs).
        public var delay: Duration

        public init(status: Int, reason: String? = nil, delay: Duration = .zero) {
            self.status = status
            self.reason = reason
            self.delay = delay
        }

        public static let ok = Answer(status: 200)
    }

    private struct State {
        var received: [Received] = []
        var scripts: [String: [Answer]] = [:]
        var defaultAnswer = Answer.ok
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    /// The port it listens on (https://localhost:port).
    public let port: Int
    /// The certificate authority of the certificate it serves, to trust in the client.
    public let certificatePEM: String
    /// The team's key (what a .p8 file holds), for the server under test.
    public let privateKeyPEM: String
    public let keyId: String
    public let teamId: String
    public let topic: String
    private let state = Mutex(State())
    private let channel: any Channel
    private let publicKey: ES256PublicKey

    /// The base URL to configure as the APNs host.
    public var url: URL { URL(string: "https://localhost:\(port)")! }

    private init(port: Int, certificatePEM: String, privateKeyPEM: String, publicKey: ES256PublicKey, keyId: String, teamId: String, topic: String, channel: any Channel) {
        self.port = port
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
        self.publicKey = publicKey
        self.keyId = keyId
        self.teamId = teamId
        self.topic = topic
        self.channel = channel
    }

    /// Starts one on a free loopback port with a fresh certificate and team key.
    public static func start(keyId: String = "KEY1234567", teamId: String = "TEAM123456", topic: String = "app.parley.test") async throws -> TestAPNs {
        let teamKey = ES256PrivateKey()
        let authority = try TestCertificateAuthority(name: "Test APNs CA")
        let (serverPEM, tlsKeyPEM) = try authority.serverCertificate()
        let certificatePEM = authority.certificatePEM
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(serverPEM.utf8)).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(tlsKeyPEM.utf8), format: .pem)))
        tls.applicationProtocols = ["h2"]
        let sslContext = try NIOSSLContext(configuration: tls)
        let box = Mutex<TestAPNs?>(nil)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                }.flatMap {
                    channel.configureHTTP2Pipeline(mode: .server, inboundStreamInitializer: { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandlers([
                                HTTP2FramePayloadToHTTP1ServerCodec(), StreamHandler(server: { box.withLock { $0 } }),
                            ])
                        }
                    }).map { _ in }
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let server = TestAPNs(
            port: channel.localAddress?.port ?? 0, certificatePEM: certificatePEM, privateKeyPEM: teamKey.pemRepresentation,
            publicKey: teamKey.publicKey, keyId: keyId, teamId: teamId, topic: topic, channel: channel)
        box.withLock { $0 = server }
        return server
    }

    /// The configuration a Parley server needs to push here (fast retries for tests).
    public func configuration() -> APNsConfiguration {
        var configuration = APNsConfiguration(privateKeyPEM: privateKeyPEM, keyId: keyId, teamId: teamId, topic: topic)
        configuration.sandboxURL = url
        configuration.productionURL = url
        configuration.additionalTrustRootsPEM = [certificatePEM]
        configuration.retryBaseDelay = .milliseconds(20)
        return configuration
    }

    /// Answers the next requests for `token` with `answers`, in order; then the default.
    public func script(_ token: String, _ answers: [Answer]) {
        state.withLock { $0.scripts[token, default: []] += answers }
    }

    /// Answers requests with no script with this.
    public func setDefaultAnswer(_ answer: Answer) {
        state.withLock { $0.defaultAnswer = answer }
    }

    /// Every request so far, in arrival order.
    public var received: [Received] { state.withLock { $0.received } }

    /// Waits until `count` requests have arrived (or `timeout` passed); returns them.
    @discardableResult
    public func waitForRequests(_ count: Int, timeout: Duration = .seconds(10)) async -> [Received] {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let ready = self.state.withLock { state -> Bool in
                        if state.received.count >= count { return true }
                        state.waiters.append((count, continuation))
                        return false
                    }
                    if ready { continuation.resume() }
                }
            }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
            // Release a waiter left behind by the timeout.
            let stale = self.state.withLock { state in
                defer { state.waiters.removeAll() }
                return state.waiters.map(\.continuation)
            }
            stale.forEach { $0.resume() }
        }
        return received
    }

    /// Stops listening.
    public func stop() async {
        try? await channel.close()
    }

    /// Checks a request like APNs does and decides the answer.
    fileprivate func handle(path: String, headers: HTTPHeaders, body: Data) async -> Answer {
        let token = path.hasPrefix("/3/device/") ? String(path.dropFirst("/3/device/".count)) : ""
        var received = Received(
            token: token, headers: Dictionary(headers.map { ($0.name.lowercased(), $0.value) }, uniquingKeysWith: { $1 }), body: body)
        var rejection: (status: Int, reason: String)?
        func reject(_ status: Int, _ reason: String) { if rejection == nil { rejection = (status, reason) } }

        if token.isEmpty || !token.allSatisfy(\.isHexDigit) { reject(400, "BadDeviceToken") }
        if received.headers["apns-topic"] != topic { reject(400, "BadTopic") }
        if received.headers["apns-push-type"] != "alert" { reject(400, "InvalidPushType") }
        if !["5", "10"].contains(received.headers["apns-priority"] ?? "10") { reject(400, "BadPriority") }
        if let expiration = received.headers["apns-expiration"], Int(expiration) == nil { reject(400, "BadExpirationDate") }
        if (received.headers["apns-collapse-id"]?.utf8.count ?? 0) > 64 { reject(400, "BadCollapseId") }
        if body.count > 4096 { reject(413, "PayloadTooLarge") }
        if (try? JSONSerialization.jsonObject(with: body)) == nil { reject(400, "PayloadEmpty") }
        if let authorization = received.headers["authorization"], authorization.hasPrefix("bearer ") {
            let jwt = String(authorization.dropFirst("bearer ".count))
            let parts = jwt.split(separator: ".")
            if parts.count == 3, let header = Self.base64URLJSON(parts[0]), let claims = Self.base64URLJSON(parts[1]) {
                received.jwtAlgorithm = header["alg"] as? String
                received.jwtKeyId = header["kid"] as? String
                received.jwtIssuer = claims["iss"] as? String
                received.jwtIssuedAt = (claims["iat"] as? NSNumber).map { Date(timeIntervalSince1970: $0.doubleValue) }
            }
            let keys = JWTKeyCollection()
            await keys.add(ecdsa: publicKey, kid: JWKIdentifier(string: keyId))
            if (try? await keys.verify(jwt, as: ProviderClaims.self)) == nil || received.jwtAlgorithm != "ES256" {
                reject(403, "InvalidProviderToken")
            } else if received.jwtKeyId != keyId || received.jwtIssuer != teamId {
                reject(403, "InvalidProviderToken")
            } else if let issuedAt = received.jwtIssuedAt, Date().timeIntervalSince(issuedAt) > 3600 {
                reject(403, "ExpiredProviderToken")
            }
        } else {
            reject(403, "MissingProviderToken")
        }
        received.rejection = rejection.map { "\($0.status) \($0.reason)" }

        let (answer, ready) = state.withLock { state -> (Answer, [CheckedContinuation<Void, Never>]) in
            state.received.append(received)
            let answer: Answer
            if var script = state.scripts[token], !script.isEmpty {
                answer = script.removeFirst()
                state.scripts[token] = script
            } else {
                answer = state.defaultAnswer
            }
            let count = state.received.count
            let ready = state.waiters.filter { $0.count <= count }.map(\.continuation)
            state.waiters.removeAll { $0.count <= count }
            return (answer, ready)
        }
        ready.forEach { $0.resume() }
        if answer.delay > .zero { try? await Task.sleep(for: answer.delay) }
        if let rejection { return Answer(status: rejection.status, reason: rejection.reason) }
        return answer
    }

    private static func base64URLJSON(_ part: Substring) -> [String: Any]? {
        var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        guard let data = Data(base64Encoded: text) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
    }

    private struct ProviderClaims: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }
}

/// One HTTP/2 stream, seen as HTTP/1 parts: collects the request, asks the server, answers.
private final class StreamHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let server: @Sendable () -> TestAPNs?
    private var head: HTTPRequestHead?
    private var body = Data()

    init(server: @escaping @Sendable () -> TestAPNs?) {
        self.server = server
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body(let buffer):
            body.append(contentsOf: buffer.readableBytesView)
        case .end:
            guard let head, let server = server() else { return }
            let body = self.body
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            let promise = context.eventLoop.makePromise(of: TestAPNs.Answer.self)
            promise.completeWithTask { await server.handle(path: head.uri, headers: head.headers, body: body) }
            promise.futureResult.whenSuccess { answer in
                let context = bound.value
                var headers = HTTPHeaders()
                headers.add(name: "apns-id", value: UUID().uuidString)
                var payload = ByteBuffer()
                if let reason = answer.reason {
                    payload = ByteBuffer(string: #"{"reason":"\#(reason)"}"#)
                    headers.add(name: "content-type", value: "application/json")
                }
                headers.add(name: "content-length", value: "\(payload.readableBytes)")
                let status = HTTPResponseStatus(statusCode: answer.status)
                context.write(NIOAny(HTTPServerResponsePart.head(HTTPResponseHead(version: .http2, status: status, headers: headers))), promise: nil)
                if payload.readableBytes > 0 { context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(payload))), promise: nil) }
                context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
            }
        }
    }
}
