import Foundation
import Logging
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestParallelism
import ServiceLifecycle
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A real Parley server on a free loopback port, over a real SQLite file in a temporary folder,
/// or (with `store: .postgres`) over a fresh PostgreSQL database dropped again by `stop()`.
public final class TestServer: Sendable {
    /// How many tests this run lets Swift Testing run at once (0: unlimited); see
    /// Tests/Parallelism/parallelism.c.
    public static var parallelizationWidth: Int { Int(parley_test_parallelization_width()) }

    /// The port it listens on.
    public let port: Int
    /// `http://127.0.0.1:<port>`.
    public let baseURL: URL
    /// The data directory (kept after `stop()` so a restart can reuse it).
    public let dataDirectory: String
    /// The running app, for white-box checks.
    public let app: ParleyApp
    /// The PostgreSQL database it runs on, if it does.
    public let database: TestDatabase?
    private let running: RunningServer

    private init(dataDirectory: String, app: ParleyApp, running: RunningServer, database: TestDatabase?) {
        self.database = database
        self.port = running.port
        self.baseURL = URL(string: "http://127.0.0.1:\(running.port)")!
        self.dataDirectory = dataDirectory
        self.app = app
        self.running = running
    }

    /// A new temporary data directory.
    public static func temporaryDirectory() -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("parley-test-\(UUID().uuidString)").path
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Starts a server (on `dataDirectory`, or a new temporary one) and waits until it listens.
    ///
    /// Registration is open (`openOrganizations`), as most tests register several users into
    /// one organization by name; tests of membership turn it off in `configure`.
    ///
    /// With `store: .postgres` the data goes to a new database on `PARLEY_TEST_POSTGRES_URL`
    /// (which must be set); the data directory still keeps the secret and attachments.
    public static func start(
        dataDirectory: String? = nil, port: Int = 0, store: StoreKind = .sqlite,
        configure: (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> TestServer {
        var configuration = ServerConfiguration()
        configuration.openOrganizations = true  // registers many users into one organization by name
        // Tests of allowed domains join at once; EmailVerificationTests prove addresses by mail.
        configuration.domainJoins = .trusted
        // Most tests flood on purpose; RateLimitTests turns the limits on.
        configuration.rateLimits = .off
        configuration.port = port
        configuration.dataDirectory = dataDirectory ?? temporaryDirectory()
        configuration.bcryptCost = 4
        configuration.logLevel = .critical
        let database = store == .postgres ? try await TestDatabase.create() : nil
        configuration.databaseURL = database?.url
        // A loaded machine running the whole suite at once can take long to migrate a fresh database.
        configuration.databaseStartTimeout = .seconds(120)
        configure(&configuration)
        var logger = Logger(label: "parley.test")
        logger.logLevel = configuration.logLevel
        do {
            let app = try await ParleyApp(configuration: configuration, logger: logger)
            // A restart on a given port can find it taken for a moment: on a busy machine the
            // kernel hands the freed port to some test's outgoing connection. Try again then.
            var attempt = 0
            while true {
                do {
                    return TestServer(
                        dataDirectory: configuration.dataDirectory, app: app, running: try await app.startInBackground(), database: database)
                } catch let error as ServerStartError where port != 0 && attempt < 40 {
                    attempt += 1
                    _ = error
                    try await Task.sleep(for: .milliseconds(250))
                }
            }
        } catch {
            await database?.drop()
            throw error
        }
    }

    /// Shuts down gracefully and waits until it has (and drops its PostgreSQL database, if any,
    /// unless `dropDatabase` is false: a later server reopens it).
    public func stop(dropDatabase: Bool = true) async {
        await running.stop()
        if let database {
            try? await app.store.close()
            if dropDatabase { await database.drop() }
        }
    }

    /// A REST client, logged in with `token` if given.
    public func api(token: String? = nil) -> ParleyAPI { ParleyAPI(baseURL: baseURL, token: token) }

    /// Runs `body` with a new server on `store`, and stops the server afterwards, also when
    /// `body` throws.
    public static func with(store: StoreKind, _ body: (TestServer) async throws -> Void) async throws {
        let server = try await start(store: store)
        do {
            try await body(server)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// Registers a user with a throwaway password and returns the session.
    public func register(_ email: String, organization: String = "acme", name: String? = nil) async throws -> TestUser {
        let auth = try await api().register(RegisterRequest(
            organization: organization, email: email, password: TestUser.password,
            displayName: name ?? String(email.prefix { $0 != "@" }).capitalized))
        return TestUser(server: self, auth: auth)
    }

    /// Alice and Bob of organization "acme", and their direct conversation: most tests' cast.
    public func directPair() async throws -> (alice: TestUser, bob: TestUser, direct: Conversation) {
        let alice = try await register("alice@x.io")
        let bob = try await register("bob@x.io")
        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        return (alice, bob, direct)
    }

    /// A raw HTTP exchange, for requests the typed client refuses to make (malformed input).
    public func raw(
        _ method: String, _ path: String, token: String? = nil, body: Data? = nil,
        headers: [String: String] = [:]
    ) async throws -> (status: Int, body: Data) {
        let answer = try await exchange(method, path, token: token, body: body, headers: headers)
        return (answer.status, answer.body)
    }

    /// A raw HTTP exchange that also returns the answer's headers (`Retry-After`, `ETag`...).
    public func exchange(
        _ method: String, _ path: String, token: String? = nil, body: Data? = nil,
        headers: [String: String] = [:]
    ) async throws -> (status: Int, headers: [String: String], body: Data) {
        var request = URLRequest(url: URL(string: "\(baseURL.absoluteString)/api/v1/\(path)")!)
        request.httpMethod = method
        request.httpBody = body
        if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (key, value) in headers { request.setValue(value, forHTTPHeaderField: key) }
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = response as! HTTPURLResponse
        var fields: [String: String] = [:]
        for (key, value) in http.allHeaderFields {
            if let key = key as? String, let value = value as? String { fields[key.lowercased()] = value }
        }
        return (http.statusCode, fields, data)
    }

    /// A raw exchange with a JSON string body.
    public func raw(_ method: String, _ path: String, token: String? = nil, json: String) async throws -> (status: Int, body: Data) {
        try await raw(method, path, token: token, body: Data(json.utf8))
    }
}

/// A registered user with a token and clients bound to it.
public struct TestUser: Sendable {
    /// The password every test user has.
    public static let password = "correct horse battery"
    public let server: TestServer
    public let auth: AuthResponse
    public var id: EntityID { auth.user.id }
    public var token: String { auth.token }
    /// A REST client with this user's token.
    public var api: ParleyAPI { server.api(token: token) }

    /// A session from a registration or login answer.
    public init(server: TestServer, auth: AuthResponse) {
        self.server = server
        self.auth = auth
    }

    /// A new, connected WebSocket (after `hello`). The wait is long on purpose: the whole
    /// suite at once on two cores has taken more than the SDK's default 10 s for a `hello`,
    /// and the tests check what arrives, not how fast.
    public func connect() async throws -> RealtimeConnection {
        let connection = RealtimeConnection(serverURL: server.baseURL, token: token)
        _ = try await connection.connect(timeout: .seconds(40))
        return connection
    }
}

/// The error body of a raw answer, if it has one.
public func errorCode(_ body: Data) -> ErrorCode? {
    (try? WireCoding.makeDecoder().decode(ErrorBody.self, from: body))?.error.code
}

/// Records every event a connection receives, so tests can wait for what they expect.
public final class EventRecorder: Sendable {
    private let received = Mutex<[ServerEvent]>([])
    private let finished = Mutex(false)

    /// Starts recording a connection's events.
    public init(_ connection: RealtimeConnection) {
        Task {
            for await event in connection.events { self.received.withLock { $0.append(event) } }
            self.finished.withLock { $0 = true }
        }
    }

    /// Everything received so far.
    public var events: [ServerEvent] { received.withLock { $0 } }

    /// Whether the connection's event stream has ended.
    public var isFinished: Bool { finished.withLock { $0 } }

    /// The `message.created` messages received so far.
    public var createdMessages: [Message] {
        events.compactMap { if case .messageCreated(let event) = $0 { event.message } else { nil } }
    }

    /// Waits until `condition` holds for what was received, failing after `timeout`.
    @discardableResult
    public func wait(
        timeout: Duration = .seconds(10), _ what: String = "events",
        until condition: @Sendable ([ServerEvent]) -> Bool
    ) async throws -> [ServerEvent] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let snapshot = events
            if condition(snapshot) { return snapshot }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw ClientError(kind: .timeout, message: "Timed out waiting for \(what); got \(events.map(\.type))")
    }

    /// Waits until the connection's event stream ends.
    public func waitUntilFinished(timeout: Duration = .seconds(10)) async throws {
        let deadline = ContinuousClock.now + timeout
        while !isFinished {
            guard ContinuousClock.now < deadline else { throw ClientError(kind: .timeout, message: "still open") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
