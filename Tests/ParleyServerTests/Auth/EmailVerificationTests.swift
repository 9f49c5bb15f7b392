import Foundation
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import GRDB
import ParleyTestSupport
import Testing
@testable import ParleySQLite

/// Joining an organization by its allowed email domain proves the address: the
/// registration is held and a link goes to the address through a real SMTP conversation (a
/// local sink); only opening it joins. Without a mail server such joins need an invite, and
/// `--domain-joins trust` admits them at once, trusting the address as given.
@Suite struct EmailVerificationTests {
    static func server(
        _ sink: SMTPSink?, store: StoreKind = .sqlite, clock: ManualClock = ManualClock(), joins: DomainJoins = .proven
    ) async throws -> TestServer {
        try await TestServer.start(store: store) {
            $0.openOrganizations = false
            $0.domainJoins = joins
            $0.clock = clock.serverClock
            $0.publicURL = URL(string: "https://chat.corp.test/")
            if let sink {
                $0.smtp = try? SMTPConfiguration(
                    url: sink.url.replacingOccurrences(of: "smtp://", with: "smtp://mailer:s%40cret@"), from: "Parley <no-reply@corp.test>")
            }
        }
    }

    static func register(_ server: TestServer, _ email: String, organization: String = "corp") async throws -> (status: Int, body: Data) {
        try await server.raw(
            "POST", "auth/register",
            json: #"{"organization":"\#(organization)","email":"\#(email)","password":"\#(TestUser.password)","displayName":"Bob"}"#)
    }

    static func verify(_ server: TestServer, _ token: String) async throws -> (status: Int, body: Data) {
        try await server.raw("POST", "auth/verify", json: #"{"token":"\#(token)"}"#)
    }

    /// An organization `corp` whose admin allows `corp.test`.
    static func corp(_ server: TestServer) async throws -> TestUser {
        let admin = try await server.register("admin@corp.test", organization: "corp")
        _ = try await admin.api.setAllowedEmailDomains(["corp.test"])
        return admin
    }

    @Test(arguments: StoreKind.available)
    func aDomainJoinIsHeldUntilTheMailedLinkIsOpened(store: StoreKind) async throws {
        let sink = try await SMTPSink()
        let server = try await Self.server(sink, store: store)
        defer { Task { await server.stop(); await sink.stop() } }
        _ = try await Self.corp(server)

        let held = try await Self.register(server, "Bob@Corp.test")
        #expect(held.status == 202, "\(String(decoding: held.body, as: UTF8.self))")
        let pending = try WireCoding.makeDecoder().decode(VerificationPending.self, from: held.body)
        #expect(pending.email == "bob@corp.test")
        // Nothing joined yet.
        let login = try await server.raw(
            "POST", "auth/login", json: #"{"organization":"corp","email":"bob@corp.test","password":"\#(TestUser.password)"}"#)
        #expect(login.status == 401)

        let mail = try #require(try await sink.waitForMessages(1).first)
        #expect(mail.to == ["bob@corp.test"] && mail.from == "no-reply@corp.test" && mail.user == "mailer")
        #expect(mail.header("Subject") == "Confirm your address to join corp on Parley")
        #expect(mail.header("From") == "Parley <no-reply@corp.test>")
        let token = try #require(SMTPSink.verificationToken(in: mail.body))
        #expect(mail.body.contains("https://chat.corp.test/#verify=\(token)") && mail.body.contains("parley verify \(token)"), "\(mail.body)")

        let joined = try await Self.verify(server, token)
        #expect(joined.status == 201, "\(String(decoding: joined.body, as: UTF8.self))")
        let auth = try WireCoding.makeDecoder().decode(AuthResponse.self, from: joined.body)
        #expect(auth.user.email == "bob@corp.test" && auth.user.role == .member && auth.refreshToken != nil)
        #expect(try await server.api(token: auth.token).me().id == auth.user.id)
        // A link works once.
        #expect(try await Self.verify(server, token).status == 404)
        #expect(try await Self.verify(server, "not-a-token").status == 404)
    }

    @Test func aLinkExpiresIsReplacedByANewOneAndNeedsTheDomainStillAllowed() async throws {
        let sink = try await SMTPSink()
        let clock = ManualClock()
        let server = try await Self.server(sink, clock: clock)
        defer { Task { await server.stop(); await sink.stop() } }
        let admin = try await Self.corp(server)

        #expect(try await Self.register(server, "bob@corp.test").status == 202)
        clock.advance(by: 24 * 3600 + 1)
        let late = try #require(SMTPSink.verificationToken(in: try await sink.waitForMessages(1)[0].body))
        #expect(try await Self.verify(server, late).status == 404, "expired after 24 hours")

        #expect(try await Self.register(server, "bob@corp.test").status == 202)
        #expect(try await Self.register(server, "bob@corp.test").status == 202)
        let mails = try await sink.waitForMessages(3)
        let replaced = try #require(SMTPSink.verificationToken(in: mails[1].body))
        let newest = try #require(SMTPSink.verificationToken(in: mails[2].body))
        #expect(try await Self.verify(server, replaced).status == 404, "a newer link replaces it")
        _ = try await admin.api.setAllowedEmailDomains([])
        let refused = try await Self.verify(server, newest)
        #expect(refused.status == 403 && errorCode(refused.body) == .forbidden, "the domain no longer admits")
    }

    @Test func withoutAMailServerADomainJoinNeedsAnInviteAndTrustKeepsTheOldWay() async throws {
        let server = try await Self.server(nil)
        defer { Task { await server.stop() } }
        let admin = try await Self.corp(server)
        let refused = try await Self.register(server, "bob@corp.test")
        #expect(refused.status == 403 && String(decoding: refused.body, as: UTF8.self).contains("sends no email"))
        let invite = try await admin.api.createInvite(.init(email: "bob@corp.test"))
        let invited = try await server.api().register(
            RegisterRequest(organization: "corp", email: "bob@corp.test", password: TestUser.password, displayName: "Bob", inviteCode: invite.code))
        #expect(invited.user.role == .member)

        let trusting = try await Self.server(nil, joins: .trusted)
        defer { Task { await trusting.stop() } }
        _ = try await Self.corp(trusting)
        #expect(try await Self.register(trusting, "bob@corp.test").status == 201)
    }

    @Test func aMailServerThatRefusesIsAnUnavailableAnswerAndKeepsNothing() async throws {
        let sink = try await SMTPSink(refuseRecipients: true)
        let server = try await Self.server(sink)
        defer { Task { await server.stop(); await sink.stop() } }
        _ = try await Self.corp(server)
        let answer = try await server.exchange(
            "POST", "auth/register",
            body: Data(#"{"organization":"corp","email":"bob@corp.test","password":"\#(TestUser.password)","displayName":"Bob"}"#.utf8))
        #expect(answer.status == 503 && answer.headers["retry-after"] == "60", "\(answer.headers)")
        #expect(String(decoding: answer.body, as: UTF8.self).contains("could not be sent"))
        let sqlite = try #require(server.app.store as? SQLiteStore)
        let kept = try await sqlite.writer.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM pending_registrations") }
        #expect(kept == 0)
    }

    /// The SDK tells a held registration from a finished one; `parley register` says to check
    /// the mail and `parley verify TOKEN` finishes and keeps the session.
    @Test func theSDKAndTheCommandLineFinishAJoinByTheLink() async throws {
        let sink = try await SMTPSink()
        let server = try await Self.server(sink)
        defer { Task { await server.stop(); await sink.stop() } }
        _ = try await Self.corp(server)
        let outcome = try await server.api().registration(
            RegisterRequest(organization: "corp", email: "sdk@corp.test", password: TestUser.password, displayName: "Sid"))
        guard case .verificationSent(let pending) = outcome else { Issue.record("\(outcome)"); return }
        #expect(pending.email == "sdk@corp.test")
        await #expect(throws: ClientError.self) {
            _ = try await server.api().register(
                RegisterRequest(organization: "corp", email: "sdk2@corp.test", password: TestUser.password, displayName: "Sid"))
        }
        let sdkToken = try #require(SMTPSink.verificationToken(in: try await sink.waitForMessages(1)[0].body))
        #expect(try await server.api().verifyEmail(token: sdkToken).user.email == "sdk@corp.test")

        let profile = TestServer.temporaryDirectory() + "/profile"
        let registered = try await CLI.run(
            ["register", "--organization", "corp", "--email", "cli@corp.test", "--name", "Cleo"], profile: profile, server: server.baseURL,
            password: TestUser.password)
        #expect(registered.status == 0 && registered.output.hasPrefix("Check your email: we sent a link to cli@corp.test."), "\(registered.output)")
        #expect(!FileManager.default.fileExists(atPath: profile + "/session.json"))
        let mails = try await sink.waitForMessages(3)
        let token = try #require(mails.last.flatMap { SMTPSink.verificationToken(in: $0.body) })
        let verified = try await CLI.run(["verify", token], profile: profile, server: server.baseURL)
        #expect(verified.status == 0 && verified.output.hasPrefix("Registered Cleo <cli@corp.test>"), "\(verified.output)")
        let listed = try await CLI.run(["users"], profile: profile)
        #expect(listed.status == 0 && listed.output.contains("cli@corp.test"), "\(listed.output)")
    }
}
