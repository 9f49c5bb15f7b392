import Foundation
import Synchronization
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ParleyRules
import ParleyStorage

/// Why a page gave no preview: the metric's `outcome` label.
enum PreviewFetchFailure: Error, Equatable {
    /// Every address the host resolved to (or a redirect's) is outside what the policy allows.
    case refusedAddress
    /// The host did not resolve.
    case unresolved
    /// Not `text/html`, or not a 200 after at most 3 redirects.
    case notHTML
    /// More than 3 redirects, or a redirect to something not http(s).
    case badRedirect
    /// Over 5 seconds.
    case timeout
    /// Connection, TLS or HTTP failure.
    case network
}

/// Fetches a page for its preview over HTTP/1.1, connecting only to addresses the policy
/// permits: the host is resolved here, every address it resolves to is checked, and the
/// connection goes to a checked address (never resolved again), so a name that points at a
/// private address, or changes its answer between check and connect, reaches nothing inside.
/// Redirects are followed by hand, each checked the same way.
struct PreviewFetcher: Sendable {
    /// Which addresses may be connected to.
    var policy: AddressPolicy
    /// The whole fetch, redirects included.
    var timeout: Duration = .seconds(5)
    /// The most body bytes read (the rest is not read).
    var maxBytes = 1 << 20
    /// The most redirects followed.
    var maxRedirects = 3

    /// The page at `url` (after redirects): its final URL and the HTML bytes read.
    func fetch(_ url: URL) async throws -> (url: URL, html: [UInt8], charset: String?) {
        let deadline = ContinuousClock.now + timeout
        var current = url
        for _ in 0...maxRedirects {
            let target = current
            let response = try await withDeadline(deadline) { try await self.get(target, deadline: deadline) }
            switch response.status {
            case 301, 302, 303, 307, 308:
                guard let location = response.location, let next = PreviewURL.resolve(location, against: current) else {
                    throw PreviewFetchFailure.badRedirect
                }
                current = next
            case 200:
                guard let type = response.contentType?.lowercased(), type.hasPrefix("text/html") else { throw PreviewFetchFailure.notHTML }
                return (current, response.body, Self.charset(in: type))
            default:
                throw PreviewFetchFailure.notHTML
            }
        }
        throw PreviewFetchFailure.badRedirect
    }

    private static func charset(in contentType: String) -> String? {
        guard let range = contentType.range(of: "charset=") else { return nil }
        return String(contentType[range.upperBound...].prefix { $0 != ";" && $0 != " " }).trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
    }

    /// `body`'s result, or `timeout` at the deadline, whichever comes first. The caller never
    /// waits past the deadline: a task group would, for a child stuck where cancellation does not
    /// reach (getaddrinfo on the thread pool, a connect in progress), so the body runs as its own
    /// task, cancelled at the deadline and left to end by itself (its connect is bounded too).
    private func withDeadline<T: Sendable>(_ deadline: ContinuousClock.Instant, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let outcome = FirstOutcome<T>()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                outcome.wait(continuation)
                let work = Task {
                    do { outcome.finish(.success(try await body())) } catch { outcome.finish(.failure(error)) }
                }
                let timer = Task {
                    try? await Task.sleep(until: deadline, clock: .continuous)
                    outcome.finish(.failure(PreviewFetchFailure.timeout))
                    work.cancel()
                }
                outcome.onFinish { timer.cancel() }
            }
        } onCancel: {
            outcome.finish(.failure(CancellationError()))
        }
    }

    /// One request to a checked address of the URL's host.
    private func get(_ url: URL, deadline: ContinuousClock.Instant) async throws -> PreviewResponse {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty else {
            throw PreviewFetchFailure.badRedirect
        }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        let addresses = try await Self.resolve(host, port: port)
        guard !addresses.isEmpty else { throw PreviewFetchFailure.unresolved }
        // Every address must pass: a name with one private answer among public ones is refused
        // (the resolver's order, or an attacker's, would otherwise choose).
        guard addresses.allSatisfy({ $0.ipAddress.flatMap(IPAddressBytes.init).map(policy.permits) ?? false }) else {
            throw PreviewFetchFailure.refusedAddress
        }
        var lastError: any Error = PreviewFetchFailure.network
        for address in addresses {
            do {
                return try await request(url, host: host, scheme: scheme, port: port, at: address, deadline: deadline)
            } catch let error as PreviewFetchFailure {
                throw error
            } catch {
                lastError = error
            }
        }
        throw lastError is PreviewFetchFailure ? lastError : PreviewFetchFailure.network
    }

    private func request(
        _ url: URL, host: String, scheme: String, port: Int, at address: SocketAddress, deadline: ContinuousClock.Instant
    ) async throws -> PreviewResponse {
        let left = deadline - ContinuousClock.now
        guard left > .zero else { throw PreviewFetchFailure.timeout }
        let group = MultiThreadedEventLoopGroup.singleton
        let promise = group.next().makePromise(of: PreviewResponse.self)
        let limit = maxBytes
        let tls: NIOSSLContext? = scheme == "https" ? try NIOSSLContext(configuration: .makeClientConfiguration()) : nil
        let serverName = IPAddressBytes(host) == nil ? host : nil  // SNI takes names, not literals
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .connectTimeout(.nanoseconds(max(1_000_000, left.components.seconds * 1_000_000_000 + left.components.attoseconds / 1_000_000_000)))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let tls {
                            try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: tls, serverHostname: serverName))
                        }
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(PreviewResponseCollector(limit: limit, promise: promise))
                    }
                }
                .connect(to: address).get()
        } catch {
            promise.fail(error)
            throw PreviewFetchFailure.network
        }
        var path = url.path.isEmpty ? "/" : url.path
        if let query = url.query { path += "?" + query }
        var headers = HTTPHeaders()
        let defaultPort = (scheme == "https" && port == 443) || (scheme == "http" && port == 80)
        headers.add(name: "Host", value: defaultPort ? host : "\(host):\(port)")
        headers.add(name: "User-Agent", value: "ParleyLinkPreview/1.0")
        headers.add(name: "Accept", value: "text/html")
        headers.add(name: "Connection", value: "close")
        let head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: headers)
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
        do {
            let response = try await withTaskCancellationHandler {
                try await promise.futureResult.get()
            } onCancel: {
                channel.close(promise: nil)
            }
            channel.close(promise: nil)
            return response
        } catch {
            channel.close(promise: nil)
            throw error is PreviewFetchFailure ? error : PreviewFetchFailure.network
        }
    }

    /// The host's addresses, resolved on NIO's thread pool (getaddrinfo blocks).
    static func resolve(_ host: String, port: Int) async throws -> [SocketAddress] {
        if IPAddressBytes(host) != nil { return [try SocketAddress(ipAddress: host, port: port)] }
        if host.hasPrefix("["), host.hasSuffix("]") {
            return [try SocketAddress(ipAddress: String(host.dropFirst().dropLast()), port: port)]
        }
        return try await NIOThreadPool.singleton.runIfActive {
            return Self.allAddresses(host, port: port)
        }
    }

    /// Every address getaddrinfo gives for the host (IPv4 and IPv6, TCP).
    private static func allAddresses(_ host: String, port: Int) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let first = result else { return [] }
        defer { freeaddrinfo(first) }
        var addresses: [SocketAddress] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let info = next {
            if let raw = info.pointee.ai_addr {
                switch info.pointee.ai_family {
                case AF_INET:
                    let address = raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
                    addresses.append(SocketAddress(address, host: host))
                case AF_INET6:
                    let address = raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee }
                    addresses.append(SocketAddress(address, host: host))
                default:
                    break
                }
            }
            next = info.pointee.ai_next
        }
        return addresses
    }
}

/// A page's answer: status, the headers a preview needs, and up to the limit of its body.
struct PreviewResponse: Sendable {
    var status: Int
    var location: String?
    var contentType: String?
    var body: [UInt8] = []
}

/// Collects one response, stopping at the byte limit (the connection is then closed).
private final class PreviewResponseCollector: ChannelInboundHandler, @unchecked Sendable {
    // SAFETY: used only on its channel's event loop, by NIO.
    typealias InboundIn = HTTPClientResponsePart

    private let limit: Int
    private let promise: EventLoopPromise<PreviewResponse>
    private var response: PreviewResponse?
    private var done = false

    init(limit: Int, promise: EventLoopPromise<PreviewResponse>) {
        self.limit = limit
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            response = PreviewResponse(
                status: Int(head.status.code), location: head.headers.first(name: "Location"),
                contentType: head.headers.first(name: "Content-Type"))
            // A redirect's or an error's body is not needed.
            if head.status.code != 200 || !(response?.contentType?.lowercased().hasPrefix("text/html") ?? false) { finish(context) }
        case .body(var buffer):
            let room = limit - (response?.body.count ?? 0)
            if let bytes = buffer.readBytes(length: min(room, buffer.readableBytes)) { response?.body += bytes }
            if (response?.body.count ?? 0) >= limit { finish(context) }
        case .end:
            finish(context)
        }
    }

    private func finish(_ context: ChannelHandlerContext) {
        guard !done else { return }
        done = true
        if let response { promise.succeed(response) } else { promise.fail(PreviewFetchFailure.network) }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !done {
            done = true
            if let response { promise.succeed(response) } else { promise.fail(PreviewFetchFailure.network) }
        }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !done {
            done = true
            promise.fail(PreviewFetchFailure.network)
        }
        context.close(promise: nil)
    }
}
