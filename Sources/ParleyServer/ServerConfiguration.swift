import Foundation
import Logging

/// Everything `parley serve` can be told, with the defaults a fresh machine runs on.
public struct ServerConfiguration: Sendable {
    /// Address to listen on.
    public var host: String = "127.0.0.1"
    /// Port to listen on; 0 picks a free one (tests).
    public var port: Int = 8080
    /// Where the database file and the generated secret live.
    public var dataDirectory: String = "./parley-data"
    /// A PostgreSQL URL (`postgres://user[:password]@host:port/db`) to keep the data in;
    /// nil (the default) keeps it in SQLite in the data directory.
    public var databaseURL: String?
    /// The HS256 secret; when nil, read from (or generated into) `<data-dir>/jwt-secret`.
    public var jwtSecret: String?
    /// How long an access token is valid.
    public var tokenLifetime: Duration = .seconds(30 * 24 * 3600)
    /// bcrypt cost for new password hashes.
    public var bcryptCost: UInt8 = 10
    /// Sent in `hello`; a connection silent for twice as long is dropped.
    public var heartbeatSeconds: Int = 30
    /// How long after the last `isTyping=true` the server sends `false` itself.
    public var typingTimeout: Duration = .seconds(3)
    /// Largest attachment upload, in bytes (25 MB).
    public var maxAttachmentBytes: Int64 = 25 * 1024 * 1024
    /// Log level of the server's logger.
    public var logLevel: Logger.Level = .info
    /// APNs credentials; nil turns push off (the server says so once at start).
    public var apns: APNsConfiguration?
    /// The clock the server's timers run on (tests drive it by hand).
    public var clock: ServerClock = .system
    /// New activity in a conversation is announced at once, then folded for this long.
    public var activityWindow: Duration = .milliseconds(200)
    /// Several nodes on one PostgreSQL; nil for a single node.
    public var cluster: ClusterConfiguration?

    /// The defaults.
    public init() {}

    /// Where uploaded files live; nil means `<data-dir>/attachments`. Nodes of one cluster
    /// serve each other's uploads when this is shared storage.
    public var attachmentsPath: String?

    /// The folder of uploaded files.
    public var attachmentsDirectory: String {
        attachmentsPath ?? (dataDirectory as NSString).appendingPathComponent("attachments")
    }

    /// The path of the SQLite database file.
    public var databasePath: String { (dataDirectory as NSString).appendingPathComponent("parley.sqlite") }

    /// The secret from configuration, or from the data directory, generated there (mode 0600) on first start.
    func resolveSecret() throws -> [UInt8] {
        if let jwtSecret { return Array(jwtSecret.utf8) }
        let path = (dataDirectory as NSString).appendingPathComponent("jwt-secret")
        if let existing = FileManager.default.contents(atPath: path) {
            let text = String(decoding: existing, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return Array(text.utf8)
        }
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<48).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let secret = Data(bytes).base64EncodedString()
        guard FileManager.default.createFile(atPath: path, contents: Data(secret.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw ServerStartError("Could not write the JWT secret to \(path)")
        }
        return Array(secret.utf8)
    }
}

/// Why the server could not start, in words for the operator.
public struct ServerStartError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
