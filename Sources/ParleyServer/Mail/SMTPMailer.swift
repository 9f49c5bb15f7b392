import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL

/// One email: plain text, to one address.
public struct MailMessage: Sendable, Equatable {
    /// The recipient's address.
    public var to: String
    /// The subject line (one line; no control characters).
    public var subject: String
    /// The body, plain text.
    public var body: String

    /// A message with these parts.
    public init(to: String, subject: String, body: String) {
        self.to = to
        self.subject = subject
        self.body = body
    }
}

/// Sends mail (verification links). The server has one when `--smtp-url` is set.
public protocol Mailer: Sendable {
    /// Hands the message to the mail server; throws when it was not accepted.
    func send(_ message: MailMessage) async throws
}

/// Where and how mail is sent: `smtp://[user:password@]host[:port]` (plain, port 25; for a
/// relay on the same host or network) or `smtps://…` (TLS from the first byte, port 465), with
/// AUTH PLAIN when a user is given, and the `From` address.
public struct SMTPConfiguration: Sendable, Equatable {
    /// The mail server's host.
    public var host: String
    /// Its port.
    public var port: Int
    /// TLS from the start (`smtps`).
    public var implicitTLS: Bool
    /// AUTH PLAIN user and password, when the server wants them.
    public var username: String?
    /// The password for `username`.
    public var password: String?
    /// The sender, e.g. `Parley <no-reply@example.com>` or a bare address.
    public var from: String

    /// A configuration from an `smtp://` or `smtps://` URL and the sender.
    public init(url text: String, from: String) throws {
        guard let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(), scheme == "smtp" || scheme == "smtps",
            let host = url.host, !host.isEmpty
        else { throw SMTPError("the mail server must be an smtp:// or smtps:// URL with a host, got \(text)") }
        implicitTLS = scheme == "smtps"
        self.host = host
        port = url.port ?? (implicitTLS ? 465 : 25)
        // Foundation's `user` and `password` are already decoded: decoding again turned
        // "100%25sure" into nothing and "a%2541" into "aA".
        username = url.user
        password = url.password
        guard Self.address(in: from) != nil else { throw SMTPError("the sender must be an email address, got \(from)") }
        self.from = from
    }

    /// The bare address of `Name <addr>` or `addr`.
    static func address(in text: String) -> String? {
        var address = text
        if let open = text.lastIndex(of: "<"), let close = text.lastIndex(of: ">"), open < close {
            address = String(text[text.index(after: open)..<close])
        }
        address = address.trimmingCharacters(in: .whitespaces)
        guard address.contains("@"), !address.contains(where: { $0.isWhitespace || $0 == "<" || $0 == ">" || $0.isNewline }) else {
            return nil
        }
        return address
    }
}

/// What went wrong talking to the mail server.
public struct SMTPError: Error, CustomStringConvertible, Sendable {
    /// What happened.
    public var description: String
    init(_ description: String) { self.description = description }
}

/// A small SMTP client (RFC 5321) over SwiftNIO: one connection per message, EHLO, optional
/// AUTH PLAIN, MAIL FROM, RCPT TO, DATA with dot-stuffing, QUIT. Every reply is checked; a
/// refusal or a silence longer than ``timeout`` throws.
public struct SMTPMailer: Mailer {
    let configuration: SMTPConfiguration
    /// How long the whole conversation with the mail server may take.
    let timeout: Duration
    let logger: Logger

    /// A mailer for this server.
    public init(configuration: SMTPConfiguration, timeout: Duration = .seconds(15), logger: Logger) {
        self.configuration = configuration
        self.timeout = timeout
        self.logger = logger
    }

    /// Sends one message over a new connection; throws ``SMTPError`` when the mail server
    /// refuses any step, closes, or does not finish within ``timeout``.
    public func send(_ message: MailMessage) async throws {
        guard let recipient = SMTPConfiguration.address(in: message.to),
            let sender = SMTPConfiguration.address(in: configuration.from)
        else { throw SMTPError("not an email address: \(message.to)") }
        let configuration = self.configuration
        let tls: NIOSSLContext? = configuration.implicitTLS
            ? try NIOSSLContext(configuration: TLSConfiguration.makeClientConfiguration()) : nil
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .connect(host: configuration.host, port: configuration.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        let handler = try NIOSSLClientHandler(context: tls, serverHostname: configuration.host)
                        try channel.pipeline.syncOperations.addHandler(handler)
                    }
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        let text = Self.data(message, from: configuration.from, to: recipient)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                try await channel.executeThenClose { inbound, outbound in
                    var replies = ReplyReader(inbound.makeAsyncIterator())
                    func expect(_ codes: ClosedRange<Int>, after command: String?) async throws {
                        if let command { try await outbound.write(ByteBuffer(string: command + "\r\n")) }
                        let (code, text) = try await replies.next()
                        guard codes.contains(code) else {
                            throw SMTPError("the mail server answered \(code) \(text) to \(command?.split(separator: " ").first ?? "the greeting")")
                        }
                    }
                    try await expect(220...220, after: nil)
                    try await expect(250...250, after: "EHLO parley")
                    if let user = configuration.username {
                        let token = Data("\0\(user)\0\(configuration.password ?? "")".utf8).base64EncodedString()
                        try await expect(235...235, after: "AUTH PLAIN \(token)")
                    }
                    try await expect(250...250, after: "MAIL FROM:<\(sender)>")
                    try await expect(250...251, after: "RCPT TO:<\(recipient)>")
                    try await expect(354...354, after: "DATA")
                    try await expect(250...250, after: text + "\r\n.")
                    try? await expect(221...221, after: "QUIT")
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw SMTPError("the mail server did not answer in time")
            }
            defer { group.cancelAll() }
            try await group.next()
        }
        logger.debug("Sent mail", metadata: ["to": "\(recipient)"])
    }

    /// The message as sent after DATA: headers, a blank line, the body with CRLF line ends and
    /// leading dots doubled (the end of data is a line holding one dot).
    static func data(_ message: MailMessage, from: String, to: String) -> String {
        let subject = message.subject.filter { !$0.isNewline && !($0.asciiValue.map { $0 < 0x20 } ?? false) }
        let encodedSubject = subject.allSatisfy(\.isASCII)
            ? subject : "=?UTF-8?B?\(Data(subject.utf8).base64EncodedString())?="
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        let headers = [
            "From: \(from)", "To: <\(to)>", "Subject: \(encodedSubject)", "Date: \(formatter.string(from: Date()))",
            "Message-ID: <\(UUID().uuidString.lowercased())@parley>", "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: 8bit",
        ]
        let body = message.body.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix(".") ? "." + $0 : String($0) }
        return (headers + [""] + body).joined(separator: "\r\n")
    }
}

/// Reads SMTP replies (`250-…` continuation lines, then `250 …`) from a byte stream.
struct ReplyReader {
    var iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator
    var pending = ""

    init(_ iterator: NIOAsyncChannelInboundStream<ByteBuffer>.AsyncIterator) { self.iterator = iterator }

    /// The next whole reply: its code and the text of its last line.
    mutating func next() async throws -> (Int, String) {
        while true {
            let line = try await nextLine()
            guard line.count >= 3, let code = Int(line.prefix(3)) else { throw SMTPError("not an SMTP reply: \(line.prefix(80))") }
            let rest = line.dropFirst(3)
            if rest.first == "-" { continue }
            return (code, String(rest.drop { $0 == " " }))
        }
    }

    private mutating func nextLine() async throws -> String {
        while true {
            if let end = pending.range(of: "\r\n") {
                let line = String(pending[..<end.lowerBound])
                pending.removeSubrange(..<end.upperBound)
                return line
            }
            guard pending.utf8.count < 64 * 1024 else { throw SMTPError("the mail server sent an overlong line") }
            guard var chunk = try await iterator.next() else { throw SMTPError("the mail server closed the connection") }
            pending += chunk.readString(length: chunk.readableBytes) ?? ""
        }
    }
}
