import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// A mail server on a loopback port that accepts every message and keeps it: it speaks SMTP
/// (greeting, multi-line EHLO, AUTH PLAIN, MAIL, RCPT, DATA with dot-stuffing, QUIT) so the
/// server's real SMTP client is what talks to it. `refuseRecipients` answers RCPT with 550.
public final class SMTPSink: Sendable {
    /// One message as received.
    public struct Received: Sendable {
        /// The MAIL FROM address.
        public var from: String
        /// The RCPT TO addresses.
        public var to: [String]
        /// What came after DATA, dots unstuffed, CRLF line ends.
        public var data: String
        /// The AUTH PLAIN user, if the client authenticated.
        public var user: String?

        /// The body: what follows the headers' blank line.
        public var body: String {
            guard let range = data.range(of: "\r\n\r\n") else { return "" }
            return String(data[range.upperBound...]).replacingOccurrences(of: "\r\n", with: "\n")
        }

        /// A header's value.
        public func header(_ name: String) -> String? {
            let head = data.components(separatedBy: "\r\n\r\n").first ?? ""
            for line in head.components(separatedBy: "\r\n") where line.lowercased().hasPrefix(name.lowercased() + ":") {
                return String(line.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespaces)
            }
            return nil
        }
    }

    private let channel: any Channel
    private let received = Mutex<[Received]>([])
    /// The port it listens on (127.0.0.1).
    public let port: Int
    /// Answer 550 to every recipient (a mail server refusing).
    public let refuseRecipients: Bool

    /// Starts listening on a free loopback port.
    public init(refuseRecipients: Bool = false) async throws {
        self.refuseRecipients = refuseRecipients
        let box = Mutex<SMTPSink?>(nil)
        let refuse = refuseRecipients
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(
                        SMTPSinkHandler(refuse: refuse) { message in box.withLock { $0?.record(message) } })
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress?.port ?? 0
        box.withLock { $0 = self }
    }

    /// `smtp://127.0.0.1:PORT`.
    public var url: String { "smtp://127.0.0.1:\(port)" }

    /// The messages received so far.
    public var messages: [Received] { received.withLock { $0 } }

    /// Waits until `count` messages have arrived (fails after `timeout`).
    public func waitForMessages(_ count: Int, timeout: Duration = .seconds(30)) async throws -> [Received] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let now = messages
            if now.count >= count { return now }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw CancellationError()
    }

    /// Stops listening.
    public func stop() async { try? await channel.close() }

    fileprivate func record(_ message: Received) { received.withLock { $0.append(message) } }

    /// The token of the first `#verify=` link in a message body.
    public static func verificationToken(in body: String) -> String? {
        guard let range = body.range(of: "#verify=") else { return nil }
        return String(body[range.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
    }
}

/// One SMTP conversation, line by line.
private final class SMTPSinkHandler: ChannelInboundHandler, @unchecked Sendable {
    // SAFETY: used only on its channel's event loop.
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let refuse: Bool
    private let deliver: @Sendable (SMTPSink.Received) -> Void
    private var pending = ""
    private var inData = false
    private var data: [String] = []
    private var from = ""
    private var to: [String] = []
    private var user: String?

    init(refuse: Bool, deliver: @escaping @Sendable (SMTPSink.Received) -> Void) {
        self.refuse = refuse
        self.deliver = deliver
    }

    func channelActive(context: ChannelHandlerContext) {
        send("220 parley-test-sink ESMTP", context: context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        pending += buffer.readString(length: buffer.readableBytes) ?? ""
        while let end = pending.range(of: "\r\n") {
            let line = String(pending[..<end.lowerBound])
            pending.removeSubrange(..<end.upperBound)
            handle(line, context: context)
        }
    }

    private func handle(_ line: String, context: ChannelHandlerContext) {
        if inData {
            if line == "." {
                inData = false
                deliver(SMTPSink.Received(from: from, to: to, data: data.joined(separator: "\r\n"), user: user))
                data = []
                send("250 2.0.0 queued", context: context)
            } else {
                data.append(line.hasPrefix("..") ? String(line.dropFirst()) : line)
            }
            return
        }
        let upper = line.uppercased()
        if upper.hasPrefix("EHLO") || upper.hasPrefix("HELO") {
            send("250-parley-test-sink\r\n250-8BITMIME\r\n250 AUTH PLAIN", context: context)
        } else if upper.hasPrefix("AUTH PLAIN ") {
            let decoded = Data(base64Encoded: String(line.dropFirst(11))).map { String(decoding: $0, as: UTF8.self) } ?? ""
            user = decoded.split(separator: "\0", omittingEmptySubsequences: false).dropFirst().first.map(String.init)
            send("235 2.7.0 authenticated", context: context)
        } else if upper.hasPrefix("MAIL FROM:") {
            from = Self.address(line)
            to = []
            send("250 2.1.0 ok", context: context)
        } else if upper.hasPrefix("RCPT TO:") {
            if refuse {
                send("550 5.1.1 no such mailbox", context: context)
            } else {
                to.append(Self.address(line))
                send("250 2.1.5 ok", context: context)
            }
        } else if upper == "DATA" {
            inData = true
            send("354 end with .", context: context)
        } else if upper == "QUIT" {
            send("221 bye", context: context)
            context.close(promise: nil)
        } else {
            send("502 5.5.2 not implemented", context: context)
        }
    }

    private static func address(_ line: String) -> String {
        guard let open = line.firstIndex(of: "<"), let close = line.lastIndex(of: ">"), open < close else { return "" }
        return String(line[line.index(after: open)..<close])
    }

    private func send(_ text: String, context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: text + "\r\n")), promise: nil)
    }
}
