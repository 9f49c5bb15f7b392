import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Two `parley serve` processes on one PostgreSQL, driven from outside: one is killed with
/// SIGKILL mid-conversation; its users are expired and announced offline by the survivor, and
/// a client that moves to the survivor ends with every message exactly once, in order.
@Suite(.enabled(if: TestDatabase.serverURL != nil)) struct MultiProcessClusterTests {
    /// A `parley serve` child process.
    final class Node: Sendable {
        let process: Process
        let url: URL
        let name: String

        init(name: String, databaseURL: String, secret: String) throws {
            let binary = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(".build/debug/parley")
            guard FileManager.default.isExecutableFile(atPath: binary.path) else {
                throw ClientError(kind: .transport, message: "\(binary.path) is missing: run swift build first")
            }
            let port = try Self.freePort()
            let process = Process()
            process.executableURL = binary
            process.arguments = [
                "serve", "--port", "\(port)", "--data-dir", TestServer.temporaryDirectory(), "--log-level", "warning",
                "--node-id", name,
            ]
            var environment = ProcessInfo.processInfo.environment
            environment["PARLEY_DATABASE_URL"] = databaseURL
            environment["PARLEY_JWT_SECRET"] = secret
            environment["PARLEY_BCRYPT_COST"] = "4"
            environment["PARLEY_CLUSTER_HEARTBEAT_MS"] = "200"
            environment["PARLEY_CLUSTER_DEAD_AFTER_MS"] = "1500"
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            self.process = process
            self.url = URL(string: "http://127.0.0.1:\(port)")!
            self.name = name
        }

        /// Waits until the node answers its health check.
        func waitUntilReady() async throws {
            try await waitFor("\(name) to listen", timeout: .seconds(60)) {
                var request = URLRequest(url: self.url.appendingPathComponent("api/v1/health"))
                request.timeoutInterval = 1
                return (try? await URLSession.shared.data(for: request)).map { ($0.1 as? HTTPURLResponse)?.statusCode == 200 } ?? false
            }
        }

        func kill() {
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }

        func stop() {
            guard process.isRunning else { return }
            process.terminate()
            process.waitUntilExit()
        }

        private static func freePort() throws -> Int {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
            }
            guard bound else { throw ClientError(kind: .transport, message: "no free port") }
            return Int(UInt16(bigEndian: address.sin_port))
        }
    }

    @Test func aNodeKilledMidConversationLosesNothing() async throws {
        let database = try await TestDatabase.create()
        let secret = String(repeating: "multi-process-secret-", count: 3)
        let a = try Node(name: "node-a", databaseURL: database.url, secret: secret)
        let b = try Node(name: "node-b", databaseURL: database.url, secret: secret)
        defer {
            a.stop()
            b.stop()
            Task { await database.drop() }
        }
        try await a.waitUntilReady()
        try await b.waitUntilReady()

        let apiA = ParleyAPI(baseURL: a.url), apiB = ParleyAPI(baseURL: b.url)
        let alice = try await apiA.register(RegisterRequest(organization: "acme", email: "alice@x.io", password: TestUser.password, displayName: "Alice"))
        let bob = try await apiB.register(RegisterRequest(organization: "acme", email: "bob@x.io", password: TestUser.password, displayName: "Bob"))
        let aliceAPI = ParleyAPI(baseURL: a.url, token: alice.token)
        let direct = try await aliceAPI.createConversation(.init(type: .direct, participantIds: [bob.user.id]))

        // Alice watches on A; Bob's app is connected to B.
        let aliceSocket = RealtimeConnection(serverURL: a.url, token: alice.token)
        _ = try await aliceSocket.connect()
        let aliceEvents = EventRecorder(aliceSocket)
        let bobPath = TestServer.temporaryDirectory() + "/bob.sqlite"
        let bobOnB = ChatClient(
            transport: LiveTransport(serverURL: b.url, token: bob.token), database: try LocalDatabase.open(path: bobPath),
            userId: bob.user.id)
        await bobOnB.start()
        _ = try await bobOnB.openConversation(direct.id)
        try await aliceEvents.wait("Bob online (through B)") { events in
            events.contains { if case .presence(let p) = $0 { p.userId == bob.user.id && p.isOnline } else { false } }
        }
        // Live across processes: sent to A, received by Bob's app on B.
        for n in 1...10 {
            _ = try await aliceSocket.sendMessage(SendMessageRequest(conversationId: direct.id, clientMessageId: "before-\(n)", text: "before \(n)"))
        }
        try await waitFor("Bob's app to have the first ten") {
            try await bobOnB.database.messages(in: direct.id, viewer: bob.user.id).count == 10
        }

        // B dies without a word; Alice keeps writing through A.
        b.kill()
        await bobOnB.stop()
        for n in 1...20 {
            _ = try await aliceSocket.sendMessage(SendMessageRequest(conversationId: direct.id, clientMessageId: "during-\(n)", text: "during \(n)"))
        }
        // A expires B and tells Alice that Bob is gone.
        try await aliceEvents.wait(timeout: .seconds(20), "Bob offline after B's expiry") { events in
            events.contains { if case .presence(let p) = $0 { p.userId == bob.user.id && !p.isOnline && p.lastSeenAt != nil } else { false } }
        }
        let bobSeenByAlice = try await aliceAPI.users().first { $0.id == bob.user.id }
        #expect(bobSeenByAlice?.isOnline == false)

        // Bob's app reconnects (through the load balancer) to A with the same database.
        let bobOnA = ChatClient(
            transport: LiveTransport(serverURL: a.url, token: bob.token), database: try LocalDatabase.open(path: bobPath),
            userId: bob.user.id)
        await bobOnA.start()
        try await waitFor("Bob's app to catch up on A", timeout: .seconds(20)) {
            try await bobOnA.database.messages(in: direct.id, viewer: bob.user.id).count == 30
        }
        let messages = try await bobOnA.database.messages(in: direct.id, viewer: bob.user.id, limit: 100)
        #expect(messages.map(\.text) == (1...10).map { "before \($0)" } + (1...20).map { "during \($0)" })
        #expect(messages.compactMap(\.seq) == Array(1...30))
        try await aliceEvents.wait("Bob online again (through A)") { events in
            events.filter { if case .presence(let p) = $0 { p.userId == bob.user.id && p.isOnline } else { false } }.count >= 2
        }
        await bobOnA.stop()
        await aliceSocket.close()
    }
}
