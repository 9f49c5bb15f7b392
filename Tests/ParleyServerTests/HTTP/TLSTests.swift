import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Synchronization
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `parley serve --tls-cert --tls-key`: HTTPS and WSS on one port, reached by the SDK with a
/// test CA; refused without it and over plain HTTP; the certificate reloaded without dropping
/// the connections that are open.
@Suite struct TLSTests {
    static func files(_ authority: TestCertificateAuthority) throws -> (directory: String, files: TLSFiles) {
        let directory = TestServer.temporaryDirectory()
        let (certificate, key) = try authority.writeServerFiles(into: directory)
        return (directory, TLSFiles(certificatePath: certificate, keyPath: key))
    }

    /// What is measured is who gets in, not how fast: a CI machine running the whole suite on
    /// two cores once took more than the default 10 s for a handshake and its `hello`.
    static let connectTimeout: Duration = .seconds(40)

    /// By name: a certificate names its host, and TLS sends no IP address as the server name.
    static func https(_ server: TestServer) -> URL { URL(string: "https://localhost:\(server.port)")! }

    @Test func theSDKTalksHTTPSAndWSSWithATestCAAndNothingElseGetsIn() async throws {
        let authority = try TestCertificateAuthority()
        let (_, files) = try Self.files(authority)
        let server = try await TestServer.start { $0.tls = files }
        defer { Task { await server.stop() } }
        let url = Self.https(server)
        let trust = try ServerTrust(pem: Data(authority.certificatePEM.utf8))

        let alice = try await ParleyAPI(baseURL: url, trust: trust).register(
            .init(organization: "acme", email: "alice@x.io", password: TestUser.password, displayName: "Alice"))
        let bob = try await ParleyAPI(baseURL: url, trust: trust).register(
            .init(organization: "acme", email: "bob@x.io", password: TestUser.password, displayName: "Bob"))
        let aliceAPI = ParleyAPI(baseURL: url, token: alice.token, trust: trust)
        let direct = try await aliceAPI.createConversation(.init(type: .direct, participantIds: [bob.user.id]))

        // WSS: Bob's socket receives what Alice sends over hers.
        let bobSocket = RealtimeConnection(serverURL: url, token: bob.token, trust: trust)
        _ = try await bobSocket.connect(timeout: Self.connectTimeout)
        let aliceSocket = RealtimeConnection(serverURL: url, token: alice.token, trust: trust)
        _ = try await aliceSocket.connect(timeout: Self.connectTimeout)
        let sent = try await aliceSocket.sendMessage(.init(conversationId: direct.id, clientMessageId: "tls-1", text: "over TLS"))
        var received: Message?
        for await event in bobSocket.events {
            if case .messageCreated(let created) = event { received = created.message; break }
        }
        #expect(received?.id == sent.id && received?.text == "over TLS")

        // A file up and down over HTTPS (streamed upload).
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tls-\(UUID()).bin")
        let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try bytes.write(to: file)
        let attachment = try await aliceAPI.upload(file: file, name: "blob.bin", contentType: "application/octet-stream")
        #expect(try await aliceAPI.download(attachment.url) == bytes)

        // Without the CA: refused, REST and WebSocket alike.
        await #expect(throws: ClientError.self) { _ = try await ParleyAPI(baseURL: url, token: alice.token).me() }
        await #expect(throws: ClientError.self) { _ = try await RealtimeConnection(serverURL: url, token: alice.token).connect(timeout: .seconds(5)) }
        // Plain HTTP on the TLS port gets no answer.
        var plain = URLRequest(url: URL(string: "http://127.0.0.1:\(server.port)/api/v1/health")!)
        plain.timeoutInterval = 5
        let answer = try? await URLSession.shared.data(for: plain)
        #expect(answer == nil, "no HTTP answer at all, not even an error page: \(String(describing: answer?.1))")
        await aliceSocket.close()
        await bobSocket.close()
    }

    @Test func aReloadServesTheNewCertificateAndKeepsOpenConnections() async throws {
        let first = try TestCertificateAuthority(name: "First CA")
        let second = try TestCertificateAuthority(name: "Second CA")
        let (directory, files) = try Self.files(first)
        let server = try await TestServer.start { $0.tls = files }
        defer { Task { await server.stop() } }
        let url = Self.https(server)
        let oldTrust = try ServerTrust(pem: Data(first.certificatePEM.utf8))
        let newTrust = try ServerTrust(pem: Data(second.certificatePEM.utf8))
        let alice = try await ParleyAPI(baseURL: url, trust: oldTrust).register(
            .init(organization: "acme", email: "alice@x.io", password: TestUser.password, displayName: "Alice"))
        let bob = try await ParleyAPI(baseURL: url, trust: oldTrust).register(
            .init(organization: "acme", email: "bob@x.io", password: TestUser.password, displayName: "Bob"))
        let direct = try await ParleyAPI(baseURL: url, token: alice.token, trust: oldTrust)
            .createConversation(.init(type: .direct, participantIds: [bob.user.id]))
        let bobSocket = RealtimeConnection(serverURL: url, token: bob.token, trust: oldTrust)
        _ = try await bobSocket.connect(timeout: Self.connectTimeout)

        // The operator renews the certificate (from another CA, so the tests can tell) and reloads.
        try second.writeServerFiles(into: directory)
        try server.app.reloadTLS()
        await #expect(throws: ClientError.self, "new connections get the new certificate") {
            _ = try await RealtimeConnection(serverURL: url, token: alice.token, trust: oldTrust).connect(timeout: .seconds(5))
        }
        let aliceSocket = RealtimeConnection(serverURL: url, token: alice.token, trust: newTrust)
        _ = try await aliceSocket.connect(timeout: Self.connectTimeout)
        _ = try await aliceSocket.sendMessage(.init(conversationId: direct.id, clientMessageId: "after-reload", text: "still here?"))
        // Bob's connection, opened before the reload, was not dropped.
        var received: Message?
        for await event in bobSocket.events {
            if case .messageCreated(let created) = event { received = created.message; break }
        }
        #expect(received?.clientMessageId == "after-reload")

        // Files that do not load keep the current certificate.
        try "not a certificate".write(toFile: files.certificatePath, atomically: true, encoding: .utf8)
        #expect(throws: (any Error).self) { try server.app.reloadTLS() }
        let again = RealtimeConnection(serverURL: url, token: alice.token, trust: newTrust)
        _ = try await again.connect(timeout: Self.connectTimeout)
        await again.close()
        await aliceSocket.close()
        await bobSocket.close()
    }

    /// TLS 1.2 and 1.3 only: a client offering at most TLS 1.0 or 1.1 is refused by the server
    /// itself (its "protocol version" alert, number 70, proves the old version was offered and
    /// turned down, not that the client gave up), while 1.2 and 1.3 handshake. OpenSSL's
    /// command-line client, at security level 0 so that it does offer the old versions.
    @Test(.heavy, .needs("openssl")) func onlyTLS12AndNewerAreAccepted() async throws {
        let openssl = try #require(
            ["/usr/bin/openssl", "/usr/local/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) },
            "openssl is not installed (.ci/run installs it)")
        let authority = try TestCertificateAuthority()
        let (directory, files) = try Self.files(authority)
        let server = try await TestServer.start { $0.tls = files }
        defer { Task { await server.stop() } }
        func handshake(_ version: String) async throws -> String {
            let path = "\(directory)/s_client-\(version).txt"
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            defer { close(fd) }
            let client = try ChildProcess(
                executable: openssl,
                arguments: ["s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "localhost", "-\(version)", "-cipher", "DEFAULT:@SECLEVEL=0"],
                environment: ProcessInfo.processInfo.environment, output: fd)
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async { _ = client.waitUntilExit(); continuation.resume() }
            }
            return try String(contentsOfFile: path, encoding: .utf8)
        }
        for old in ["tls1", "tls1_1"] {
            let output = try await handshake(old)
            #expect(output.contains("alert protocol version"), "\(old): \(output)")
            #expect(!output.contains("Cipher is ECDHE") && !output.contains("Cipher is TLS_"), "\(old) got a cipher: \(output)")
        }
        #expect(try await handshake("tls1_2").contains("New, TLSv1.2, Cipher is"))
        #expect(try await handshake("tls1_3").contains("New, TLSv1.3, Cipher is"))
    }

    /// The real binary: `parley serve --tls-cert --tls-key` and SIGHUP.
    @Test(.heavy) func parleyServeReloadsOnSIGHUP() async throws {
        let first = try TestCertificateAuthority(name: "First CA")
        let second = try TestCertificateAuthority(name: "Second CA")
        let (directory, files) = try Self.files(first)
        let node = try ServeProcess(
            name: "tls", arguments: ["--tls-cert", files.certificatePath, "--tls-key", files.keyPath], scheme: "https", host: "localhost")
        defer { node.stop() }
        let oldTrust = try ServerTrust(pem: Data(first.certificatePEM.utf8))
        let newTrust = try ServerTrust(pem: Data(second.certificatePEM.utf8))
        let registered = Mutex<AuthResponse?>(nil)
        try? await waitFor("the TLS node to answer", timeout: .seconds(60)) {
            let answer = try? await ParleyAPI(baseURL: node.url, trust: oldTrust).register(
                .init(organization: "acme", email: "carol@x.io", password: TestUser.password, displayName: "Carol"))
            registered.withLock { $0 = answer }
            return answer != nil
        }
        let token = try #require(registered.withLock { $0 }?.token, "the TLS node never answered")
        try second.writeServerFiles(into: directory)
        node.process.signal(SIGHUP)
        try await waitFor("the new certificate after SIGHUP") {
            let connection = RealtimeConnection(serverURL: node.url, token: token, trust: newTrust)
            guard (try? await connection.connect(timeout: .seconds(2))) != nil else { return false }
            await connection.close()
            return true
        }
        #expect(node.process.isRunning, "SIGHUP reloads; it does not stop the server")
    }
}
