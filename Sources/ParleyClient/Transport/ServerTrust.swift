import Foundation
import NIOSSL
#if canImport(FoundationNetworking)
import AsyncHTTPClient
import Synchronization
import FoundationNetworking
import NIOCore
import NIOHTTP1
#endif
#if canImport(Security)
import Security
#endif

/// Certificate authorities the SDK trusts for the Parley server besides the system's: a
/// company CA, or the self-signed one of a test or staging server. REST and the WebSocket both
/// honour it; everything else about certificate checking (names, dates) stays as strict.
public struct ServerTrust: Sendable, Equatable {
    /// One or more PEM certificates.
    public let pem: Data

    /// Trusts the PEM certificates in `pem`; throws when there is none.
    public init(pem: Data) throws {
        guard let certificates = try? NIOSSLCertificate.fromPEMBytes(Array(pem)), !certificates.isEmpty else {
            throw ClientError(kind: .decoding, message: "No PEM certificate to trust")
        }
        self.pem = pem
    }

    /// Trusts the PEM certificates in a file (a CA bundle).
    public init(pemFile: URL) throws {
        guard let data = FileManager.default.contents(atPath: pemFile.path) else {
            throw ClientError(kind: .decoding, message: "Cannot read \(pemFile.path)")
        }
        try self.init(pem: data)
    }

    /// The certificates, for NIO's TLS.
    var certificates: [NIOSSLCertificate] { (try? NIOSSLCertificate.fromPEMBytes(Array(pem))) ?? [] }

    /// A client TLS configuration that trusts the system's roots and these.
    var tlsConfiguration: TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.additionalTrustRoots = [.certificates(certificates)]
        configuration.minimumTLSVersion = .tlsv12
        return configuration
    }
}

/// Sends `URLRequest`s: URLSession, or (with a ``ServerTrust`` on Linux, where URLSession
/// cannot be told about another CA) AsyncHTTPClient.
protocol HTTPLoader: Sendable {
    func data(for request: URLRequest) async throws -> (Data, URLResponse)
    func upload(for request: URLRequest, fromFile file: URL) async throws -> (Data, URLResponse)
    /// Streams a successful answer's body into `file` a block at a time, telling `progress` the
    /// bytes written so far; an error answer's body comes back instead, nothing written.
    func download(for request: URLRequest, to file: URL, progress: @Sendable (Int64) -> Void) async throws -> (Data?, URLResponse)
}

/// Writes blocks of a download to a file.
struct DownloadFile {
    private let handle: FileHandle
    private(set) var written: Int64 = 0

    init(_ file: URL) throws {
        guard FileManager.default.createFile(atPath: file.path, contents: nil), let handle = FileHandle(forWritingAtPath: file.path) else {
            throw ClientError(kind: .decoding, message: "Cannot write \(file.path)")
        }
        self.handle = handle
    }

    mutating func write(_ block: Data) throws {
        try handle.write(contentsOf: block)
        written += Int64(block.count)
    }

    func close() throws { try handle.close() }
}

struct SessionLoader: HTTPLoader {
    let session: URLSession

    func data(for request: URLRequest) async throws -> (Data, URLResponse) {
        #if canImport(FoundationNetworking)
        try await CancellableLoad.run { session.dataTask(with: request, completionHandler: $0) }
        #else
        try await session.data(for: request)
        #endif
    }

    func upload(for request: URLRequest, fromFile file: URL) async throws -> (Data, URLResponse) {
        #if canImport(FoundationNetworking)
        try await CancellableLoad.run { session.uploadTask(with: request, fromFile: file, completionHandler: $0) }
        #else
        try await session.upload(for: request, fromFile: file)
        #endif
    }

    func download(for request: URLRequest, to file: URL, progress: @Sendable (Int64) -> Void) async throws -> (Data?, URLResponse) {
        #if canImport(FoundationNetworking)
        // swift-corelibs-foundation has no byte stream: the answer comes whole, then is written.
        let (data, response) = try await data(for: request)
        guard ((response as? HTTPURLResponse)?.statusCode ?? 0) < 300 else { return (data, response) }
        var output = try DownloadFile(file)
        try output.write(data)
        try output.close()
        progress(output.written)
        return (nil, response)
        #else
        let (bytes, response) = try await session.bytes(for: request)
        guard ((response as? HTTPURLResponse)?.statusCode ?? 0) < 300 else {
            var body = Data()
            for try await byte in bytes { body.append(byte) }
            return (body, response)
        }
        var output = try DownloadFile(file)
        var block = Data(capacity: 1 << 16)
        for try await byte in bytes {
            block.append(byte)
            if block.count == 1 << 16 {
                try output.write(block)
                block.removeAll(keepingCapacity: true)
                progress(output.written)
            }
        }
        try output.write(block)
        try output.close()
        progress(output.written)
        return (nil, response)
        #endif
    }
}

#if canImport(FoundationNetworking)
/// A URLSession task awaited so that cancelling the awaiting Swift task can neither deadlock
/// nor crash the process.
///
/// swift-corelibs-foundation's own `data(for:)` and `upload(for:fromFile:)` deadlock when the
/// Swift task is cancelled just as the answer arrives (swift-corelibs-foundation#5412): the
/// cancellation handler calls `URLSessionTask.cancel()`, which waits for the session's queue
/// while holding the Swift task's status lock, and that queue, delivering the answer, waits for
/// the same lock to resume the task. With two cores both threads of the concurrency pool ended up
/// waiting and every task of the process stopped. Calling `cancel()` from elsewhere is no cure:
/// a cancel racing the task's own end traps in the session's task registry. So on Linux a
/// cancelled request is let go rather than cancelled: the caller gets `URLError(.cancelled)` at
/// once, from another queue, and the exchange finishes unheard (REST answers are small).
enum CancellableLoad {
    /// The task `start` makes from the completion handler, resumed and awaited.
    static func run(
        _ start: (@escaping @Sendable (Data?, URLResponse?, (any Error)?) -> Void) -> URLSessionTask
    ) async throws -> (Data, URLResponse) {
        let waiter = Waiter()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, URLResponse), any Error>) in
                guard waiter.wait(continuation) else { return }
                let task = start { data, response, error in
                    if let error {
                        waiter.finish(.failure(error))
                    } else if let response {
                        waiter.finish(.success((data ?? Data(), response)))
                    } else {
                        waiter.finish(.failure(URLError(.badServerResponse)))
                    }
                }
                task.resume()
            }
        } onCancel: {
            // Never resumed here: the handler runs under the task's status lock, which resuming
            // the same task takes again.
            DispatchQueue.global().async { waiter.finish(.failure(URLError(.cancelled))) }
        }
    }

    /// The one continuation, resumed by whichever comes first: the answer or the cancellation.
    private final class Waiter: Sendable {
        private let state = Mutex<(continuation: CheckedContinuation<(Data, URLResponse), any Error>?, ended: Bool)>((nil, false))

        /// Keeps `continuation`; false (and it is resumed) when the cancellation came first.
        func wait(_ continuation: CheckedContinuation<(Data, URLResponse), any Error>) -> Bool {
            let ended = state.withLock { state in
                if !state.ended { state.continuation = continuation }
                return state.ended
            }
            if ended { continuation.resume(throwing: URLError(.cancelled)) }
            return !ended
        }

        /// Resumes the waiting caller with `result`, once; later calls do nothing.
        func finish(_ result: Result<(Data, URLResponse), any Error>) {
            let continuation = state.withLock { state in
                defer { state = (nil, true) }
                return state.ended ? nil : state.continuation
            }
            continuation?.resume(with: result)
        }
    }
}
#endif

extension ServerTrust {
    /// The loader REST calls go through for this trust.
    func makeLoader() -> any HTTPLoader {
        #if canImport(FoundationNetworking)
        return NIOLoader.shared(for: self)
        #else
        return SessionLoader(session: URLSession(configuration: .ephemeral, delegate: AnchorDelegate(trust: self), delegateQueue: nil))
        #endif
    }
}

#if canImport(Security) && !canImport(FoundationNetworking)
/// Evaluates the server's chain against the system's anchors plus the extra ones.
///
/// `@unchecked Sendable`: URLSession calls it from its own queue, and its one stored property is
/// a constant array of certificates, immutable objects that the SDKs before iOS 18 do not
/// mark `Sendable` (a checked conformance would not compile at the iOS 17 floor).
// SAFETY: one constant array of immutable certificates; URLSession only reads it.
final class AnchorDelegate: NSObject, URLSessionDelegate, @unchecked Sendable {
    let anchors: [SecCertificate]

    init(trust: ServerTrust) {
        anchors = trust.certificates.compactMap { certificate in
            guard let der = try? certificate.toDERBytes() else { return nil }
            return SecCertificateCreateWithData(nil, Data(der) as CFData)
        }
    }

    func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge
    ) async -> (URLSession.AuthChallengeDisposition, URLCredential?) {
        guard challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust,
            let trust = challenge.protectionSpace.serverTrust
        else { return (.performDefaultHandling, nil) }
        SecTrustSetAnchorCertificates(trust, anchors as CFArray)
        SecTrustSetAnchorCertificatesOnly(trust, false)
        guard SecTrustEvaluateWithError(trust, nil) else { return (.cancelAuthenticationChallenge, nil) }
        return (.useCredential, URLCredential(trust: trust))
    }
}
#endif

#if canImport(FoundationNetworking)
/// REST over AsyncHTTPClient with the extra trust roots (Linux). One client per trust for the
/// process's life (an AsyncHTTPClient must be shut down before it goes; these never go).
struct NIOLoader: HTTPLoader {
    let client: HTTPClient
    private static let clients = Mutex<[Data: NIOLoader]>([:])

    static func shared(for trust: ServerTrust) -> NIOLoader {
        clients.withLock { clients in
            if let loader = clients[trust.pem] { return loader }
            let loader = NIOLoader(trust: trust)
            clients[trust.pem] = loader
            return loader
        }
    }

    private init(trust: ServerTrust) {
        var configuration = HTTPClient.Configuration(tlsConfiguration: trust.tlsConfiguration)
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(300))
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    func data(for request: URLRequest) async throws -> (Data, URLResponse) {
        try await execute(request, body: request.httpBody.map { .bytes(ByteBuffer(bytes: $0)) })
    }

    func upload(for request: URLRequest, fromFile file: URL) async throws -> (Data, URLResponse) {
        guard let handle = FileHandle(forReadingAtPath: file.path) else {
            throw ClientError(kind: .decoding, message: "Cannot read \(file.path)")
        }
        let size = try handle.seekToEnd()
        try handle.seek(toOffset: 0)
        let chunks = AsyncThrowingStream<ByteBuffer, any Error> { continuation in
            defer { try? handle.close() }
            do {
                while let block = try handle.read(upToCount: 1 << 20), !block.isEmpty {
                    continuation.yield(ByteBuffer(bytes: block))
                }
                continuation.finish()
            } catch {
                continuation.finish(throwing: error)
            }
        }
        return try await execute(request, body: .stream(chunks, length: .known(Int64(size))))
    }

    func download(for request: URLRequest, to file: URL, progress: @Sendable (Int64) -> Void) async throws -> (Data?, URLResponse) {
        guard let url = request.url else { throw ClientError(kind: .decoding, message: "A request without a URL") }
        var outgoing = HTTPClientRequest(url: url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.httpMethod ?? "GET")
        for (name, value) in request.allHTTPHeaderFields ?? [:] { outgoing.headers.add(name: name, value: value) }
        let response = try await client.execute(outgoing, timeout: .seconds(3600))
        var fields: [String: String] = [:]
        for header in response.headers { fields[header.name] = header.value }
        guard let answer = HTTPURLResponse(url: url, statusCode: Int(response.status.code), httpVersion: "HTTP/1.1", headerFields: fields) else {
            throw ClientError(kind: .transport, message: "An answer that cannot be read")
        }
        guard response.status.code < 300 else {
            return (Data(try await response.body.collect(upTo: 1 << 20).readableBytesView), answer)
        }
        var output = try DownloadFile(file)
        for try await buffer in response.body {
            try output.write(Data(buffer.readableBytesView))
            progress(output.written)
        }
        try output.close()
        return (nil, answer)
    }

    private func execute(_ request: URLRequest, body: HTTPClientRequest.Body?) async throws -> (Data, URLResponse) {
        guard let url = request.url else { throw ClientError(kind: .decoding, message: "A request without a URL") }
        var outgoing = HTTPClientRequest(url: url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.httpMethod ?? "GET")
        for (name, value) in request.allHTTPHeaderFields ?? [:] { outgoing.headers.add(name: name, value: value) }
        outgoing.body = body
        let response = try await client.execute(outgoing, timeout: .seconds(Int64(max(request.timeoutInterval, 1))))
        let collected = try await response.body.collect(upTo: 512 << 20)
        let data = Data(collected.readableBytesView)
        var fields: [String: String] = [:]
        for header in response.headers { fields[header.name] = header.value }
        guard let answer = HTTPURLResponse(url: url, statusCode: Int(response.status.code), httpVersion: "HTTP/1.1", headerFields: fields) else {
            throw ClientError(kind: .transport, message: "An answer that cannot be read")
        }
        return (data, answer)
    }
}
#endif
