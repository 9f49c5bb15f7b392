import Foundation
import ParleyBench
import ParleyClient
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Parley behind a reverse proxy: the nginx configuration shipped in `deploy/nginx` runs for
/// real (nginx from Debian's package, which `.ci/run` installs) in front of a real server, and
/// `--trusted-proxy` decides whose `X-Forwarded-For` counts.
@Suite(.needs("nginx")) struct NginxProxyTests {
    static var nginx: String? {
        ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts nginx with the shipped file, its listen port and upstream pointed at the test ports.
    static func startNginx(upstreamPort: Int) throws -> (process: ChildProcess, url: URL, prefix: String) {
        let binary = try #require(nginx, "nginx is not installed (apt-get install nginx; .ci/run does)")
        let repository = Repository.root
        var site = try String(contentsOf: repository.appendingPathComponent("deploy/nginx/parley.conf"), encoding: .utf8)
        let port = try freeLoopbackPort()
        #expect(site.contains("listen 80;") && site.contains("server 127.0.0.1:8080;"))
        site = site.replacingOccurrences(of: "listen 80;", with: "listen 127.0.0.1:\(port);")
            .replacingOccurrences(of: "server 127.0.0.1:8080;", with: "server 127.0.0.1:\(upstreamPort);")
        let prefix = TestServer.temporaryDirectory()
        try site.write(toFile: "\(prefix)/parley.conf", atomically: true, encoding: .utf8)
        let main = """
            worker_processes 1;
            error_log \(prefix)/error.log warn;
            pid \(prefix)/nginx.pid;
            events { worker_connections 256; }
            http {
                access_log off;
                client_body_temp_path \(prefix)/body;
                proxy_temp_path \(prefix)/proxy;
                fastcgi_temp_path \(prefix)/fastcgi;
                uwsgi_temp_path \(prefix)/uwsgi;
                scgi_temp_path \(prefix)/scgi;
                include \(prefix)/parley.conf;
            }
            """
        try main.write(toFile: "\(prefix)/nginx.conf", atomically: true, encoding: .utf8)
        let process = try ChildProcess(
            executable: binary, arguments: ["-p", prefix, "-c", "\(prefix)/nginx.conf", "-g", "daemon off;" + (getuid() == 0 ? " user root;" : "")],
            environment: ProcessInfo.processInfo.environment)
        return (process, URL(string: "http://127.0.0.1:\(port)")!, prefix)
    }

    /// Waits until nginx answers on `url` and passes a health check on: the answer must come
    /// through nginx (its `Server` header), not from something else that took the port.
    static func waitForNginx(_ url: URL) async throws {
        try await waitFor("nginx to pass requests on") {
            guard let (_, response) = try? await URLSession.shared.data(from: url.appendingPathComponent("health")),
                let http = response as? HTTPURLResponse
            else { return false }
            return http.statusCode == 200 && (http.value(forHTTPHeaderField: "Server") ?? "").hasPrefix("nginx")
        }
    }

    @Test(.heavy) func theShippedConfigurationCarriesRESTTheWebSocketAndUploads() async throws {
        let server = try await TestServer.start { $0.trustedProxies = ["127.0.0.1"] }
        defer { Task { await server.stop() } }
        let (nginx, url, prefix) = try Self.startNginx(upstreamPort: server.port)
        defer { nginx.terminate(); nginx.waitUntilExit() }
        try await Self.waitForNginx(url)
        let alice = try? await ParleyAPI(baseURL: url).register(
            .init(organization: "acme", email: "alice@x.io", password: TestUser.password, displayName: "Alice"))
        let aliceAuth = try #require(alice, "nginx error log: \((try? String(contentsOfFile: "\(prefix)/error.log", encoding: .utf8)) ?? "")")
        let bob = try await server.register("bob@x.io")
        let direct = try await ParleyAPI(baseURL: url, token: aliceAuth.token).createConversation(.init(type: .direct, participantIds: [bob.id]))
        // The WebSocket upgrade goes through, both ways.
        let aliceSocket = RealtimeConnection(serverURL: url, token: aliceAuth.token)
        _ = try await aliceSocket.connect()
        let bobSocket = try await bob.connect()
        _ = try await bobSocket.sendMessage(.init(conversationId: direct.id, clientMessageId: "b1", text: "through the proxy?"))
        var received: Message?
        for await event in aliceSocket.events {
            if case .messageCreated(let created) = event { received = created.message; break }
        }
        #expect(received?.text == "through the proxy?")
        _ = try await aliceSocket.sendMessage(.init(conversationId: direct.id, clientMessageId: "a1", text: "yes"))
        #expect(try await bob.api.messages(direct.id).messages.map(\.text) == ["through the proxy?", "yes"])
        // A 3 MB upload streams through.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("nginx-\(UUID()).bin")
        let bytes = Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try bytes.write(to: file)
        let api = ParleyAPI(baseURL: url, token: aliceAuth.token)
        let attachment = try await api.upload(file: file, name: "big.bin", contentType: "application/octet-stream")
        #expect(try await api.download(attachment.url) == bytes)
        await aliceSocket.close()
        await bobSocket.close()
    }

    /// nginx keeps its connections to Parley open and reuses them: 40 POSTs in a row ride on
    /// one or two connections, and none is answered 502. The shipped file must not send
    /// `Connection: close` upstream while pooling: every request would open a connection that
    /// Parley then closes, and under load a POST would go out on one already closing (a 502).
    @Test(.heavy) func theProxyReusesItsConnectionsToParley() async throws {
        let server = try await TestServer.start { $0.trustedProxies = ["127.0.0.1"] }
        defer { Task { await server.stop() } }
        let (nginx, url, prefix) = try Self.startNginx(upstreamPort: server.port)
        defer { nginx.terminate(); nginx.waitUntilExit() }
        try await Self.waitForNginx(url)
        let accepted = { server.app.metrics.value("parley_connections_accepted_total") }
        let before = accepted()
        var statuses: [Int] = []
        for n in 0..<40 {
            var request = URLRequest(url: url.appendingPathComponent("api/v1/auth/login"))
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(#"{"organization":"acme","email":"nobody\#(n)@x.io","password":"wrong-password"}"#.utf8)
            let (_, response) = try await URLSession.shared.data(for: request)
            statuses.append((response as? HTTPURLResponse)?.statusCode ?? 0)
        }
        let errorLog = (try? String(contentsOfFile: "\(prefix)/error.log", encoding: .utf8)) ?? ""
        #expect(statuses == Array(repeating: 401, count: 40), "\(statuses); nginx: \(errorLog)")
        #expect(accepted() - before <= 2, "40 requests opened \(accepted() - before) connections to Parley")
    }

    /// Per-address login limits see the client's address through a trusted proxy, and only then.
    @Test(.heavy) func perAddressLimitsCountTheClientBehindATrustedProxy() async throws {
        func failedLogins(_ url: URL, from address: String, times: Int) async throws -> [Int] {
            var statuses: [Int] = []
            for n in 0..<times {
                var request = URLRequest(url: url.appendingPathComponent("api/v1/auth/login"))
                request.httpMethod = "POST"
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.setValue(address, forHTTPHeaderField: "X-Forwarded-For")
                // A different account each time: only the per-address limit can trip.
                request.httpBody = Data(#"{"organization":"acme","email":"nobody\#(n)@x.io","password":"wrong-password"}"#.utf8)
                let (_, response) = try await URLSession.shared.data(for: request)
                statuses.append((response as? HTTPURLResponse)?.statusCode ?? 0)
            }
            return statuses
        }
        func limited(_ configuration: inout ServerConfiguration) {
            configuration.rateLimits = RateLimitSettings()
            configuration.rateLimits.loginFailuresPerAddress = .count(3, per: 60)
        }
        let trusting = try await TestServer.start {
            limited(&$0)
            $0.trustedProxies = ["127.0.0.1"]
        }
        defer { Task { await trusting.stop() } }
        let (nginx, url, prefix) = try Self.startNginx(upstreamPort: trusting.port)
        defer { nginx.terminate(); nginx.waitUntilExit() }
        try await Self.waitForNginx(url)
        let errorLog = { (try? String(contentsOfFile: "\(prefix)/error.log", encoding: .utf8)) ?? "" }
        let first = try await failedLogins(url, from: "203.0.113.9", times: 4)
        #expect(first == [401, 401, 401, 429], "\(first); nginx: \(errorLog())")
        let other = try await failedLogins(url, from: "203.0.113.10", times: 1)
        #expect(other == [401], "another client has its own bucket: \(other); nginx: \(errorLog())")

        // Not trusted: the header is ignored (loopback peers are exempt from address limits).
        let untrusting = try await TestServer.start(configure: limited)
        defer { Task { await untrusting.stop() } }
        #expect(try await failedLogins(untrusting.baseURL, from: "203.0.113.9", times: 4) == [401, 401, 401, 401])
    }

    @Test func theClientAddressIsReadFromTheRightSkippingTrustedProxies() {
        let trusted = ["10.0.0.0/8", "127.0.0.1", "fd00::/8"].compactMap(AddressRange.init)
        func client(_ peer: String, _ header: [String]) -> String? {
            ClientAddressMiddleware.client(peer: peer, forwardedFor: header, trusted: trusted)
        }
        #expect(client("10.1.2.3", ["198.51.100.7"]) == "198.51.100.7")
        #expect(client("10.1.2.3", ["6.6.6.6, 198.51.100.7, 10.9.9.9"]) == "198.51.100.7", "a forged left part does not count")
        #expect(client("198.51.100.1", ["6.6.6.6"]) == "198.51.100.1", "an untrusted peer cannot name another address")
        #expect(client("10.1.2.3", ["not-an-address, 198.51.100.7"]) == "198.51.100.7")
        #expect(client("10.1.2.3", ["198.51.100.7, garbage"]) == "10.1.2.3", "garbage next to us: believe none of it")
        #expect(client("fd12::1", ["2001:db8::5"]) == "2001:db8::5")
        #expect(client("::ffff:127.0.0.1", ["198.51.100.7"]) == "198.51.100.7", "an IPv4-mapped peer is its IPv4 address")
        #expect(client("10.1.2.3", []) == "10.1.2.3")
        #expect(AddressRange("10.0.0.0/33") == nil && AddressRange("example.com") == nil && AddressRange("::/0") != nil)
        #expect(AddressRange("192.168.0.0/16")?.contains("192.168.255.1") == true)
        #expect(AddressRange("192.168.0.0/16")?.contains("192.169.0.1") == false)
    }
}
