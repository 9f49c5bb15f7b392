import ArgumentParser
import Foundation
import ParleyClient
import ParleyProtocol

/// Where a terminal user's session lives: the server and tokens from the last login or renewal.
struct Profile: Codable {
    var server: String
    var token: String
    var user: User
    /// Renews the session; each renewal replaces it (nil: a profile from before refresh tokens).
    var refreshToken: String?
    /// When `token` expires.
    var expiresAt: Date?

    init(server: String, token: String, user: User, refreshToken: String? = nil, expiresAt: Date? = nil) {
        self.server = server
        self.token = token
        self.user = user
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
    }

    /// The profile of a login or registration.
    init(server: String, auth: AuthResponse) {
        self.init(server: server, token: auth.token, user: auth.user, refreshToken: auth.refreshToken, expiresAt: auth.expiresAt)
    }

    var tokens: SessionTokens { SessionTokens(token: token, refreshToken: refreshToken, expiresAt: expiresAt) }

    static func directory(_ option: String?) -> String {
        let home = FileManager.default.homeDirectoryForCurrentUser.path
        return setting(option, env: "PARLEY_PROFILE", default: (home as NSString).appendingPathComponent(".parley"))
    }

    static func load(from directory: String) throws -> Profile {
        let path = (directory as NSString).appendingPathComponent("session.json")
        guard let data = FileManager.default.contents(atPath: path) else {
            throw fail("not logged in (no \(path)); run `parley login` or `parley register` first")
        }
        do {
            return try WireCoding.makeDecoder().decode(Profile.self, from: data)
        } catch {
            throw fail("unreadable session file \(path); log in again")
        }
    }

    func save(to directory: String) throws {
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = (directory as NSString).appendingPathComponent("session.json")
        let data = try WireCoding.makeEncoder().encode(self)
        // The token is a credential: only the owner may read it.
        guard FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: 0o600]) else {
            throw fail("cannot write \(path)")
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
    }
}

/// The profile as where renewed tokens are kept. Commands run at once (`parley tail` in one
/// pane, `parley send` in another) share it: a renewal happens under a lock on the folder and
/// first reads what another command may have saved, so no command presents a spent refresh token.
struct ProfileCredentials: CredentialStorage {
    let directory: String

    func loadTokens() -> SessionTokens? { (try? Profile.load(from: directory))?.tokens }

    func saveTokens(_ tokens: SessionTokens) throws {
        var profile = try Profile.load(from: directory)
        profile.token = tokens.token
        profile.refreshToken = tokens.refreshToken
        profile.expiresAt = tokens.expiresAt
        try profile.save(to: directory)
    }

    func exclusively<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        let path = (directory as NSString).appendingPathComponent("session.lock")
        let descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw fail("cannot open \(path)") }
        defer { close(descriptor) }
        // Without blocking a thread: try, and wait a little between tries.
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            try await Task.sleep(for: .milliseconds(20))
        }
        defer { flock(descriptor, LOCK_UN) }
        return try await body()
    }
}

/// Options every client command takes.
struct ClientOptions: ParsableArguments {
    @Option(help: "Server URL (env PARLEY_SERVER; default http://127.0.0.1:8080).") var server: String?
    @Option(help: "Profile folder keeping the session (env PARLEY_PROFILE; default ~/.parley).") var profile: String?
    @Option(name: .customLong("ca-file"), help: "Also trust the certificate authorities in this PEM file for an https server (env PARLEY_CA_FILE; a test or company CA).")
    var caFile: String?

    /// The extra trust `--ca-file` names, if any.
    func trust() throws -> ServerTrust? {
        let path = setting(caFile, env: "PARLEY_CA_FILE", default: "")
        guard !path.isEmpty else { return nil }
        do {
            return try ServerTrust(pemFile: URL(fileURLWithPath: path))
        } catch {
            throw fail("--ca-file \(path): no PEM certificate there")
        }
    }

    /// A REST client for `url` with the extra trust.
    func api(_ url: URL, token: String? = nil) throws -> ParleyAPI {
        ParleyAPI(baseURL: url, token: token, trust: try trust())
    }

    var profileDirectory: String { Profile.directory(profile) }

    func serverURL() throws -> URL {
        let text = setting(server, env: "PARLEY_SERVER", default: "http://127.0.0.1:8080")
        guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw fail("server must be an http(s) URL, got \(text)")
        }
        return url
    }

    /// The logged-in session and an API client for it; `--server` overrides the saved server.
    func session() throws -> (profile: Profile, api: ParleyAPI) {
        let profile = try Profile.load(from: profileDirectory)
        let url = server != nil || ProcessInfo.processInfo.environment["PARLEY_SERVER"] != nil
            ? try serverURL() : URL(string: profile.server)!
        let credentials = SessionCredentials(profile.tokens, storage: ProfileCredentials(directory: profileDirectory))
        return (profile, ParleyAPI(baseURL: url, credentials: credentials, trust: try trust()))
    }
}

/// The SDK over the profile's local database.
struct SDKSession {
    let profile: Profile
    let api: ParleyAPI
    let client: ChatClient

    /// Caches the directory so offline screens can show names.
    func refreshDirectory() async throws {
        try await client.database.store(users: try await api.users())
    }
}

extension ClientOptions {
    /// The session with an SDK client whose database lives in the profile folder.
    func sdkSession() throws -> SDKSession {
        let (profile, api) = try session()
        let path = (profileDirectory as NSString).appendingPathComponent("cache.sqlite")
        let client = try ChatClient(
            transport: LiveTransport(serverURL: api.baseURL, credentials: api.credentials!, trust: api.trust),
            database: LocalDatabase.open(path: path), userId: profile.user.id)
        let session = SDKSession(profile: profile, api: api, client: client)
        return session
    }
}

extension SDKSession {
    /// Opens the session and remembers the signed-in user's own name for offline screens.
    static func open(_ options: ClientOptions) async throws -> SDKSession {
        let session = try options.sdkSession()
        try await session.client.database.store(users: [session.profile.user])
        return session
    }
}

/// Runs a client call, turning SDK errors into one line on stderr and a non-zero exit.
func clientCall<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as ClientError {
        throw fail(error.description, code: error.kind == .server ? 1 : 2)
    }
}
