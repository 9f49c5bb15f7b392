import Foundation
import Logging
import NIOCore
import NIOPosix
@testable import ParleyServer
import ParleyTestSupport
import Synchronization
import Testing

/// The mail client the server sends verification links with (`Mail/SMTPMailer.swift`): what an
/// operator's `--smtp-url` means, what a message looks like on the wire (no header a subject
/// could inject, no early end of data a body could forge), and a real SMTP conversation on
/// loopback, with every refusal, silence and garbage answer ending the send with an error.
@Suite struct SMTPMailerTests {
    static func mailer(_ url: String, from: String = "Parley <no-reply@parley.test>", timeout: Duration = .seconds(5)) throws -> SMTPMailer {
        SMTPMailer(configuration: try SMTPConfiguration(url: url, from: from), timeout: timeout, logger: Logger(label: "parley.test.smtp"))
    }

    static let mail = MailMessage(to: "ada@corp.test", subject: "Verify", body: "Open the link.")

    // MARK: The operator's URL

    @Test(arguments: [
        ("smtp://mail.corp.test", "mail.corp.test", 25, false), ("smtps://mail.corp.test", "mail.corp.test", 465, true),
        ("smtp://mail.corp.test:2525", "mail.corp.test", 2525, false), ("SMTPS://Relay.test:10465", "Relay.test", 10465, true),
        ("smtp://127.0.0.1:1025", "127.0.0.1", 1025, false),
    ])
    func theSchemeChoosesTLSAndTheDefaultPort(url: String, host: String, port: Int, tls: Bool) throws {
        let configuration = try SMTPConfiguration(url: url, from: "no-reply@parley.test")
        #expect(configuration.host == host && configuration.port == port && configuration.implicitTLS == tls)
        #expect(configuration.username == nil && configuration.password == nil)
    }

    /// Credentials come percent-decoded once, as URLs write them: `@` and `:` in a user name or
    /// password must be escaped to be written at all.
    @Test func credentialsAreReadFromTheURL() throws {
        let configuration = try SMTPConfiguration(url: "smtp://mailer%40corp.test:s3cr%3At@mail.corp.test", from: "no-reply@parley.test")
        #expect(configuration.username == "mailer@corp.test")
        #expect(configuration.password == "s3cr:t")
        let bare = try SMTPConfiguration(url: "smtp://mailer@mail.corp.test", from: "no-reply@parley.test")
        #expect(bare.username == "mailer" && bare.password == nil)
    }

    /// A typo stops the start with a message naming what was given.
    @Test(arguments: ["http://mail.corp.test", "mail.corp.test", "smtp://", "smtp:///relay", "", "smtp:mail.corp.test"])
    func aURLThatIsNotAMailServerIsRefused(url: String) {
        let error = #expect(throws: SMTPError.self) { try SMTPConfiguration(url: url, from: "no-reply@parley.test") }
        #expect(error?.description.contains("smtp://") == true)
    }

    @Test(arguments: ["", "Parley", "Parley <>", "two words@parley.test", "Parley <no reply@parley.test>"])
    func aSenderThatIsNotAnAddressIsRefused(from: String) {
        let error = #expect(throws: SMTPError.self) { try SMTPConfiguration(url: "smtp://mail.corp.test", from: from) }
        #expect(error?.description.contains("sender") == true)
    }

    /// The bare address of `Name <address>` or of a bare address; nil for anything that could
    /// not follow `MAIL FROM:` or `RCPT TO:` as one token.
    @Test(arguments: [
        ("no-reply@parley.test", "no-reply@parley.test"), ("  ada@corp.test ", "ada@corp.test"),
        ("Parley <no-reply@parley.test>", "no-reply@parley.test"), ("\"Team <a>\" <b@corp.test>", "b@corp.test"),
        ("Ada Lovelace", nil), ("<>", nil), ("Ada <>", nil), ("a b@corp.test", nil), ("ada@corp.test\r\n", nil),
        ("Parley <no-reply@parley.test", nil), ("ada@corp.test>", nil),
    ] as [(String, String?)])
    func theAddressOfAMailbox(text: String, address: String?) {
        #expect(SMTPConfiguration.address(in: text) == address)
    }

    // MARK: The message on the wire

    static func headers(of data: String) -> [String] {
        data.components(separatedBy: "\r\n\r\n").first?.components(separatedBy: "\r\n") ?? []
    }

    /// A subject is one header line: its line breaks and controls go, so a subject built from
    /// what a user typed cannot add a `Bcc:` or end the headers early.
    @Test func aSubjectCannotInjectAHeader() {
        let message = MailMessage(to: "ada@corp.test", subject: "Hi\r\nBcc: eve@evil.test\n\nbody\tand\u{7}more", body: "b")
        let headers = Self.headers(of: SMTPMailer.data(message, from: "no-reply@parley.test", to: "ada@corp.test"))
        #expect(headers.contains("Subject: HiBcc: eve@evil.testbodyandmore"))
        #expect(!headers.contains { $0.hasPrefix("Bcc:") })
        #expect(headers.filter { $0.hasPrefix("Subject:") }.count == 1)
    }

    /// A subject outside ASCII goes as an RFC 2047 encoded word, which every mail reader decodes.
    @Test func aSubjectOutsideASCIIIsEncoded() throws {
        let subject = "Vérifiez votre adresse ✉️"
        let message = MailMessage(to: "ada@corp.test", subject: subject, body: "b")
        let headers = Self.headers(of: SMTPMailer.data(message, from: "no-reply@parley.test", to: "ada@corp.test"))
        let line = try #require(headers.first { $0.hasPrefix("Subject: ") })
        let word = String(line.dropFirst("Subject: ".count))
        #expect(word.hasPrefix("=?UTF-8?B?") && word.hasSuffix("?="))
        let payload = try #require(Data(base64Encoded: String(word.dropFirst(10).dropLast(2))))
        #expect(String(decoding: payload, as: UTF8.self) == subject)
        #expect(word.allSatisfy { $0.isASCII })
    }

    /// Lines end in CRLF whatever the body used, and a line starting with a dot gets a second one,
    /// so a body holding a line `.` cannot end the data and smuggle in commands.
    @Test func theBodyIsDotStuffedWithCRLFLineEnds() throws {
        let message = MailMessage(to: "ada@corp.test", subject: "s", body: "one\r\ntwo\n.\nMAIL FROM:<eve@evil.test>\n..two dots\n")
        let data = SMTPMailer.data(message, from: "Parley <no-reply@parley.test>", to: "ada@corp.test")
        let parts = data.components(separatedBy: "\r\n\r\n")
        let body = try #require(parts.count >= 2 ? parts.dropFirst().joined(separator: "\r\n\r\n") : nil)
        #expect(body == "one\r\ntwo\r\n..\r\nMAIL FROM:<eve@evil.test>\r\n...two dots\r\n")
        #expect(!data.components(separatedBy: "\r\n").contains("."))
        let headers = Self.headers(of: data)
        #expect(headers.contains("From: Parley <no-reply@parley.test>") && headers.contains("To: <ada@corp.test>"))
        #expect(headers.contains("Content-Type: text/plain; charset=utf-8"))
    }

    // MARK: Talking to a mail server

    /// The whole conversation against a real SMTP server: AUTH PLAIN with the URL's user, the
    /// envelope with bare addresses, and the body as written (dots and all) once unstuffed.
    @Test func aMessageReachesTheMailServerWhole() async throws {
        let sink = try await SMTPSink()
        defer { Task { await sink.stop() } }
        let mailer = try Self.mailer("smtp://mailer:pw@127.0.0.1:\(sink.port)")
        let body = "Hello Ada,\n.\n.leading dot\nbye"
        try await mailer.send(MailMessage(to: "Ada <ada@corp.test>", subject: "Verify your address", body: body))
        let received = try #require(sink.messages.first)
        #expect(sink.messages.count == 1)
        #expect(received.user == "mailer")
        #expect(received.from == "no-reply@parley.test" && received.to == ["ada@corp.test"])
        #expect(received.body == body)
        #expect(received.header("Subject") == "Verify your address")
        #expect(received.header("To") == "<ada@corp.test>")
    }

    @Test func withoutAUserThereIsNoAuthentication() async throws {
        let sink = try await SMTPSink()
        defer { Task { await sink.stop() } }
        try await Self.mailer(sink.url).send(Self.mail)
        #expect(sink.messages.count == 1 && sink.messages.first?.user == nil)
    }

    /// A recipient the mail server refuses is an error naming the answer, not a silent success.
    @Test func aRefusedRecipientFailsTheSend() async throws {
        let sink = try await SMTPSink(refuseRecipients: true)
        defer { Task { await sink.stop() } }
        let error = await #expect(throws: SMTPError.self) { try await Self.mailer(sink.url).send(Self.mail) }
        #expect(error?.description.contains("550") == true && error?.description.contains("RCPT") == true, "\(String(describing: error))")
        #expect(sink.messages.isEmpty)
    }

    /// A recipient that is not one address is refused before any connection is made.
    @Test func aRecipientThatIsNotAnAddressIsNeverSent() async throws {
        let sink = try await SMTPSink()
        defer { Task { await sink.stop() } }
        let mailer = try Self.mailer(sink.url)
        for to in ["nobody", "a b@corp.test", "", "Ada <>", "ada@corp.test\r\nBcc: eve@evil.test"] {
            await #expect(throws: SMTPError.self, "\(to.debugDescription)") {
                try await mailer.send(MailMessage(to: to, subject: "s", body: "b"))
            }
        }
        #expect(sink.messages.isEmpty)
    }

    /// Only the bare address travels: a display name holding a line break and a `Bcc:` reaches
    /// neither the envelope nor the headers.
    @Test func aDisplayNameCannotAddARecipient() async throws {
        let sink = try await SMTPSink()
        defer { Task { await sink.stop() } }
        try await Self.mailer(sink.url).send(MailMessage(to: "Ada\r\nBcc: eve@evil.test <ada@corp.test>", subject: "s", body: "b"))
        let received = try #require(sink.messages.first)
        #expect(received.to == ["ada@corp.test"])
        #expect(received.header("Bcc") == nil && !received.data.contains("eve@evil.test"))
    }

    @Test func noMailServerListeningFailsTheSend() async throws {
        let closed = try await ScriptedSMTPServer(greeting: nil, replies: [])
        let port = closed.port
        await closed.stop()
        await #expect(throws: (any Error).self) { try await Self.mailer("smtp://127.0.0.1:\(port)").send(Self.mail) }
    }

    /// A server that accepts and never speaks ends the send at the timeout, not never.
    @Test func aSilentServerTimesOut() async throws {
        let silent = try await ScriptedSMTPServer(greeting: nil, replies: [])
        defer { Task { await silent.stop() } }
        let mailer = try Self.mailer("smtp://127.0.0.1:\(silent.port)", timeout: .milliseconds(300))
        let started = ContinuousClock.now
        let error = await #expect(throws: SMTPError.self) { try await mailer.send(Self.mail) }
        #expect(error?.description.contains("in time") == true, "\(String(describing: error))")
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    /// Each step's refusal stops the conversation at that step and says which.
    @Test(arguments: [
        (["554 no service"], [String](), "554", "greeting"),
        (["220 hi"], ["500 what"], "500", "EHLO"),
        (["220 hi"], ["250-first\r\n250 AUTH PLAIN", "535 bad credentials"], "535", "AUTH"),
        (["220 hi"], ["250 ok", "235 ok", "553 sender refused"], "553", "MAIL"),
        (["220 hi"], ["250 ok", "235 ok", "250 ok", "250 ok", "451 try later"], "451", "DATA"),
    ])
    func aRefusalAtAnyStepFailsTheSend(greeting: [String], replies: [String], code: String, step: String) async throws {
        let server = try await ScriptedSMTPServer(greeting: greeting.first, replies: replies)
        defer { Task { await server.stop() } }
        let mailer = try Self.mailer("smtp://mailer:pw@127.0.0.1:\(server.port)")
        let error = await #expect(throws: SMTPError.self) { try await mailer.send(Self.mail) }
        #expect(error?.description.contains(code) == true && error?.description.contains(step) == true, "\(String(describing: error))")
    }

    /// An answer that is not SMTP (another protocol on the port) is an error, not a hang.
    @Test func aServerSpeakingAnotherProtocolFailsTheSend() async throws {
        let server = try await ScriptedSMTPServer(greeting: "HTTP/1.1 400 Bad Request", replies: [])
        defer { Task { await server.stop() } }
        let error = await #expect(throws: SMTPError.self) { try await Self.mailer("smtp://127.0.0.1:\(server.port)").send(Self.mail) }
        #expect(error?.description.contains("not an SMTP reply") == true, "\(String(describing: error))")
    }
}

/// A loopback server that says `greeting` (or nothing) and answers each line it reads with the
/// next of `replies` (each may be several lines joined by CRLF), then stays silent.
final class ScriptedSMTPServer: Sendable {
    private let channel: any Channel
    let port: Int

    init(greeting: String?, replies: [String]) async throws {
        channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { child in
                child.eventLoop.makeCompletedFuture {
                    try child.pipeline.syncOperations.addHandler(ScriptedSMTPHandler(greeting: greeting, replies: replies))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress?.port ?? 0
    }

    func stop() async { try? await channel.close() }
}

private final class ScriptedSMTPHandler: ChannelInboundHandler, @unchecked Sendable {
    // SAFETY: used only on its channel's event loop.
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let greeting: String?
    private var replies: [String]
    private var pending = ""

    init(greeting: String?, replies: [String]) {
        self.greeting = greeting
        self.replies = replies
    }

    func channelActive(context: ChannelHandlerContext) {
        if let greeting { send(greeting, context: context) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        pending += buffer.readString(length: buffer.readableBytes) ?? ""
        while let end = pending.range(of: "\r\n") {
            pending.removeSubrange(..<end.upperBound)
            guard !replies.isEmpty else { continue }
            send(replies.removeFirst(), context: context)
        }
    }

    private func send(_ text: String, context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(ByteBuffer(string: text + "\r\n")), promise: nil)
    }
}
