import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOWebSocket
import ParleyProtocol
import WSClient
import WSCore

#if canImport(Network)
import Network
import NIOTransportServices
#endif

/// One WebSocket connection to the gateway: decoded events as an async sequence, commands as
/// async calls that return their reply.
///
/// A connection lives once: when it closes, `events` finishes and pending commands fail with
/// `.disconnected`. Reconnecting (with backoff and catch-up) is the job of the layer above.
public actor RealtimeConnection {
    /// Server events in arrival order (not `hello`, which `connect()` returns).
    public nonisolated let events: AsyncStream<ServerEvent>
    private let eventSink: AsyncStream<ServerEvent>.Continuation
    private let outgoing: AsyncStream<String>
    private let outgoingSink: AsyncStream<String>.Continuation
    private let url: String
    private let token: String
    private let logger: Logger
    private var pending: [String: CheckedContinuation<Data, any Error>] = [:]
    private var helloWaiter: CheckedContinuation<HelloEvent, any Error>?
    private var rawWaiters: [CheckedContinuation<Data, any Error>] = []
    private var hello: HelloEvent?
    /// The `storeId` of the connection's `hello`, once it came.
    public var storeId: String? { hello?.storeId }
    private var closedError: ClientError?
    private var nextId = 0
    private var runTask: Task<Void, Never>?
    /// The WebSocket close code the server sent (1001: going away), once closed.
    public private(set) var closeCode: Int?
    /// Why the connection ended, once it has.
    public var closedReason: ClientError? { closedError }

    /// Extra certificate authorities for a `wss` server.
    private let trust: ServerTrust?

    /// A connection to `serverURL` (http or https; the WebSocket scheme is derived) with a token;
    /// `trust` for an `https` server whose certificate authority the system does not know.
    public init(serverURL: URL, token: String, trust: ServerTrust? = nil, logger: Logger = Logger(label: "parley.realtime")) {
        self.trust = trust
        var components = URLComponents(url: serverURL, resolvingAgainstBaseURL: false)!
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        components.path = (components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path) + "/api/v1/ws"
        url = components.string!
        self.token = token
        self.logger = logger
        (events, eventSink) = AsyncStream.makeStream()
        (outgoing, outgoingSink) = AsyncStream.makeStream()
    }

    /// Opens the connection and waits for `hello`.
    public func connect(timeout: Duration = .seconds(10)) async throws -> HelloEvent {
        if let hello { return hello }
        if let closedError { throw closedError }
        let url = self.url
        let configuration = WebSocketClientConfiguration(
            maxFrameSize: 1 << 20,
            additionalHeaders: [.authorization: "Bearer \(token)"],
            autoPing: .disabled)
        let logger = self.logger
        let outgoing = self.outgoing
        let trust = self.trust
        runTask = Task {
            do {
                let closeFrame = try await Self.run(
                    url: url, configuration: configuration, trust: trust, logger: logger
                ) {
                    inbound, outbound, _ in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        group.addTask {
                            for await text in outgoing { try await outbound.write(.text(text)) }
                            try? await outbound.close(.normalClosure, reason: nil)
                        }
                        // Reading for the connection's whole life also answers the server's pings.
                        for try await message in inbound.messages(maxSize: 1 << 20) {
                            if case .text(let text) = message { await self.receive(Data(text.utf8)) }
                        }
                        group.cancelAll()
                    }
                }
                self.finish(
                    ClientError(
                        kind: .disconnected,
                        message: "Connection closed" + (closeFrame.map { " (\($0.closeCode))" } ?? "")),
                    closeCode: closeFrame.map { Int(UInt16(webSocketErrorCode: $0.closeCode)) })
            } catch {
                self.finish(ClientError(kind: .transport, message: "WebSocket failed: \(error)"))
            }
        }
        return try await withTimeout(timeout, onTimeout: { await self.abandonHello() }) {
            try await self.waitForHello()
        }
    }

    /// Connects and runs `handler` over the connection. On Apple platforms the socket and TLS are
    /// the system's (Network.framework through NIO Transport Services: the platform's trust
    /// store, proxies, VPNs and path changes, and no BSD sockets, which iOS discourages); a
    /// server with an extra certificate authority (``ServerTrust``, for development and private
    /// deployments) goes through NIO's TLS with that authority, as it does on Linux.
    private static func run(
        url: String, configuration: WebSocketClientConfiguration, trust: ServerTrust?, logger: Logger,
        handler: @escaping WebSocketDataHandler<WebSocketClient.Context>
    ) async throws -> WebSocketCloseFrame? {
        #if canImport(Network)
        if trust == nil {
            if url.hasPrefix("wss:") {
                return try await WebSocketClient.connect(
                    url: url, configuration: configuration, transportServicesTLSOptions: .options(NWProtocolTLS.Options()),
                    eventLoopGroup: NIOTSEventLoopGroup.singleton, logger: logger, handler: handler)
            }
            return try await WebSocketClient.connect(
                url: url, configuration: configuration, eventLoopGroup: NIOTSEventLoopGroup.singleton, logger: logger, handler: handler)
        }
        #endif
        return try await WebSocketClient.connect(
            url: url, configuration: configuration, tlsConfiguration: trust?.tlsConfiguration, logger: logger, handler: handler)
    }

    /// Sends a command and returns its reply's data; throws the server's error as ``ClientError``.
    public func send<Reply: Codable & Sendable & Equatable>(
        _ command: ClientCommand, expecting: Reply.Type = Reply.self, timeout: Duration = .seconds(15)
    ) async throws -> Reply {
        nextId += 1
        let id = "c\(nextId)"
        let frame = String(decoding: try WireCoding.makeEncoder().encode(ClientFrame(id: id, command: command)), as: UTF8.self)
        let data = try await withTimeout(timeout, onTimeout: { await self.abandon(id) }) {
            try await self.enqueue(frame, id: id)
        }
        let reply: ReplyFrame<Reply>
        do {
            reply = try WireCoding.makeDecoder().decode(ReplyFrame<Reply>.self, from: data)
        } catch {
            throw ClientError(kind: .decoding, message: "Unreadable reply to \(command.type): \(error)")
        }
        switch reply.result {
        case .success(let payload): return payload
        case .failure(let info): throw ClientError.server(info)
        }
    }

    /// Sends a message and returns it as stored (after the server committed it).
    public func sendMessage(_ request: SendMessageRequest) async throws -> Message {
        try await send(.sendMessage(request))
    }

    /// A round trip through the server.
    public func ping() async throws {
        let _: EmptyPayload = try await send(.ping)
    }

    /// A read receipt; returns the watermark and unread count after it.
    public func read(_ request: ReadRequest) async throws -> ReadResponse {
        try await send(.read(request))
    }

    /// A command whose reply carries nothing (`typing`, `delivered`, `focus`).
    public func perform(_ command: ClientCommand) async throws {
        let _: EmptyPayload = try await send(command)
    }

    /// Sends raw text as one frame and returns the next reply whose `replyTo` is null or not one
    /// of this connection's own ids: for probing how the server answers malformed input.
    package func sendRawAwaitingReply(_ text: String, timeout: Duration = .seconds(10)) async throws -> Data {
        try await withTimeout(timeout, onTimeout: { await self.abandonRaw() }) {
            try await self.enqueueRaw(text)
        }
    }

    /// Closes the connection.
    public func close() async {
        outgoingSink.finish()
        await runTask?.value
    }

    // MARK: Internals

    private func enqueue(_ frame: String, id: String) async throws -> Data {
        try await withCheckedThrowingContinuation { continuation in
            if let closedError { return continuation.resume(throwing: closedError) }
            pending[id] = continuation
            outgoingSink.yield(frame)
        }
    }

    private func enqueueRaw(_ frame: String) async throws -> Data {
        try await withCheckedThrowingContinuation { continuation in
            if let closedError { return continuation.resume(throwing: closedError) }
            rawWaiters.append(continuation)
            outgoingSink.yield(frame)
        }
    }

    private func abandonRaw() {
        guard !rawWaiters.isEmpty else { return }
        rawWaiters.removeFirst().resume(throwing: ClientError(kind: .timeout, message: "No reply in time"))
    }

    private func waitForHello() async throws -> HelloEvent {
        try await withCheckedThrowingContinuation { continuation in
            if let hello { return continuation.resume(returning: hello) }
            if let closedError { return continuation.resume(throwing: closedError) }
            helloWaiter = continuation
        }
    }

    private func abandon(_ id: String) {
        pending.removeValue(forKey: id)?.resume(throwing: ClientError(kind: .timeout, message: "No reply in time"))
    }

    private func abandonHello() {
        helloWaiter?.resume(throwing: ClientError(kind: .timeout, message: "No hello from the server in time"))
        helloWaiter = nil
        outgoingSink.finish()
        runTask?.cancel()
    }

    private func receive(_ data: Data) {
        let decoder = WireCoding.makeDecoder()
        guard let header = try? decoder.decode(FrameHeader.self, from: data) else { return }
        if header.isReply {
            if let id = header.replyTo, let continuation = pending.removeValue(forKey: id) {
                continuation.resume(returning: data)
            } else if !rawWaiters.isEmpty {
                rawWaiters.removeFirst().resume(returning: data)
            } else {
                // The reply's id and size only: a frame can carry message text, which logs never hold.
                logger.debug("Reply without a pending command", metadata: ["replyTo": "\(header.replyTo ?? "-")", "bytes": "\(data.count)"])
            }
            return
        }
        guard let event = try? decoder.decode(ServerEvent.self, from: data) else { return }
        if case .hello(let hello) = event {
            self.hello = hello
            helloWaiter?.resume(returning: hello)
            helloWaiter = nil
        } else {
            eventSink.yield(event)
        }
    }

    private func finish(_ error: ClientError, closeCode: Int? = nil) {
        if closedError == nil {
            closedError = error
            self.closeCode = closeCode
        }
        helloWaiter?.resume(throwing: error)
        helloWaiter = nil
        for continuation in pending.values { continuation.resume(throwing: error) }
        pending.removeAll()
        for continuation in rawWaiters { continuation.resume(throwing: error) }
        rawWaiters.removeAll()
        eventSink.finish()
        outgoingSink.finish()
    }
}

/// Runs `body`, failing with `.timeout` if it takes longer than `timeout`.
func withTimeout<T: Sendable>(
    _ timeout: Duration, onTimeout: @escaping @Sendable () async -> Void = {},
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            await onTimeout()
            throw ClientError(kind: .timeout, message: "No answer within \(timeout)")
        }
        defer { group.cancelAll() }
        return try await group.next()!
    }
}
