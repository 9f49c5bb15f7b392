import Foundation
import Logging
import ParleyStorage

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
    /// How long the start waits for PostgreSQL to answer and migrate before giving up.
    public var databaseStartTimeout: Duration = .seconds(30)
    /// How long a write to the SQLite file waits for a lock held by another connection or
    /// process (a backup, an operator's `sqlite3` shell) before it fails as storage trouble
    /// (503, retried by clients). Ten seconds by default.
    public var sqliteBusyTimeout: Duration = .seconds(10)
    /// A fixed HS256 secret (`PARLEY_JWT_SECRET`); when nil, the signing keys live in the store,
    /// shared by every node on it, and can be rotated (`parley keys`).
    public var jwtSecret: String?
    /// How long an access token is valid (15 minutes): clients renew it with their refresh
    /// token, so a stolen access token is worth minutes.
    public var tokenLifetime: Duration = .seconds(15 * 60)
    /// How long a refresh token lasts unused (30 days): each renewal starts it again, so a
    /// device in use stays signed in and one left unused for this long signs in again.
    public var refreshTokenLifetime: Duration = .seconds(30 * 24 * 3600)
    /// Whether joining an organization by its allowed email domain must prove the address with
    /// a mailed link (the default), or trusts it as given (`trusted`: anyone who types an address of the domain joins).
    public var domainJoins: DomainJoins = .proven
    /// The mail server for verification links; nil: no mail (domain joins then need an invite
    /// unless they are `trusted`).
    public var smtp: SMTPConfiguration?
    /// The server's address as people reach it (`https://chat.example.com`), for links in mail;
    /// nil: `http://HOST:PORT` as configured.
    public var publicURL: URL?
    /// Sends the mail instead of an SMTP server built from ``smtp`` (tests).
    public var mailer: (any Mailer)?
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
    /// Where spans go: `.off`, or `.otlp` (OTLP/HTTP to the collector the standard
    /// `OTEL_EXPORTER_OTLP_*` variables name; `http://localhost:4318` by default).
    public var tracing: TracingExport = .off
    /// APNs credentials; nil turns push off (the server says so once at start).
    public var apns: APNsConfiguration?
    /// Whether stored messages' links are previewed (`--link-previews off` turns it off).
    public var linkPreviews = true
    /// Non-public address ranges link previews may fetch from (`--link-preview-allow`); none by default.
    public var linkPreviewAllow: [CIDR] = []
    /// The most a link preview's fetch may take, redirects included (the contract's 5 s).
    public var linkPreviewTimeout: Duration = .seconds(5)
    /// How often the retention sweep runs (`--retention-interval`): messages are gone
    /// within this long of passing their organization's limit.
    public var retentionInterval: Duration = .seconds(3600)
    /// The clock the server's timers run on (tests drive it by hand).
    public var clock: ServerClock = .system
    /// Above this many members a group is large: its conversations leave out the member
    /// lists, receipts become `receipt.summary` and typing beyond three typists `typing.summary`.
    public var largeGroupSize: Int = 100
    /// How far before a list sync token `changedSince` looks again: a change stamped
    /// just before the token's clock reading may commit just after it. Tests set it to zero.
    public var listSyncOverlap: Duration = .seconds(10)
    /// How often a large group's `receipt.summary` and `typing.summary` go out at most.
    public var summaryInterval: Duration = .seconds(2)
    /// New activity in a conversation is announced at once, then folded for this long.
    public var activityWindow: Duration = .milliseconds(200)
    /// How long an event of a conversation waits for an earlier one (committed but not yet
    /// announced here, e.g. by another node) before the missing ones are read from the store.
    public var orderHoldBound: Duration = .milliseconds(200)
    /// v1's open registration: anyone joins an existing organization by its name. For demos
    /// and tests only (off by default; logged at start when on).
    public var openOrganizations = false
    /// How long SIGTERM drains before closing connections: `/ready` answers 503 meanwhile, so a
    /// load balancer stops sending new clients first (SIGINT does not wait).
    public var drainDelay: Duration = .seconds(5)
    /// Per-node rate limits (logins, registrations, sends, typing, receipts, upload bytes).
    public var rateLimits = RateLimitSettings()
    /// Timeouts and the cap that keep stalled or piled-up connections from starving the server.
    public var connectionLimits = ConnectionLimits()
    /// Several nodes on one PostgreSQL; nil for a single node.
    public var cluster: ClusterConfiguration?

    /// The defaults.
    public init() {}

    /// Where uploaded files live; nil means `<data-dir>/attachments` on SQLite and the database
    /// itself on PostgreSQL. Set it to shared storage mounted on every node to keep files there.
    public var attachmentsPath: String?

    /// Serve HTTPS and WSS with this certificate and key (nil: plain HTTP, e.g. behind a proxy
    /// that terminates TLS).
    public var tls: TLSFiles?

    /// Proxies whose `X-Forwarded-For` names the client (per-address rate limits then count
    /// the client, not the proxy). Exact addresses or CIDR ranges; empty trusts no one.
    public var trustedProxies: [String] = []

    /// Serve the web client at `/` (on by default).
    public var servesWebClient = true
    /// A folder the web client's files are read from on every request, in place of the ones
    /// built into the server (for working on the client); nil serves the built-in files.
    public var webRoot: String?

    /// The folder of uploaded files.
    public var attachmentsDirectory: String {
        attachmentsPath ?? (dataDirectory as NSString).appendingPathComponent("attachments")
    }

    /// The path of the SQLite database file.
    public var databasePath: String { (dataDirectory as NSString).appendingPathComponent("parley.sqlite") }

    /// The SQLite server's files, as a backup and a restore take them.
    public var sqliteFiles: SQLiteFiles {
        SQLiteFiles(dataDirectory: dataDirectory, databasePath: databasePath, attachmentsDirectory: attachmentsDirectory)
    }

    /// The secret an older version generated into `<data-dir>/jwt-secret`, if there is one:
    /// imported as the first signing key, so the tokens it signed stay valid.
    func legacySecret() -> [UInt8]? {
        let path = (dataDirectory as NSString).appendingPathComponent("jwt-secret")
        guard let existing = FileManager.default.contents(atPath: path) else { return nil }
        let text = String(decoding: existing, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.utf8.count >= 32 ? Array(text.utf8) : nil
    }

    /// The token keys: the configured secret alone when there is one; otherwise the keys the
    /// store shares with every node, created on the first start (from a legacy secret file
    /// when the data directory has one).
    func makeTokenService(store: any ParleyStore, now: Date) async throws -> TokenService {
        if let jwtSecret {
            return try await TokenService(secret: Array(jwtSecret.utf8), lifetime: tokenLifetime)
        }
        let candidate = legacySecret().map { SigningKey.derived(from: $0, now: now) } ?? SigningKey.generate(now: now)
        let keys = try await store.ensureSigningKey(candidate)
        return try await TokenService(keys: keys, lifetime: tokenLifetime, reload: { try await store.signingKeys() })
    }
}


/// How a registration that joins by its email's domain is admitted.
public enum DomainJoins: String, Sendable, Equatable {
    /// A link is mailed to the address; opening it joins.
    case proven = "verify"
    /// Joined at once, trusting the address as given.
    case trusted = "trust"
}

/// Whether and where `parley serve` exports its spans (see ``ServerTracing``).
public enum TracingExport: String, Sendable, Equatable {
    /// No spans: no per-message cost.
    case off
    /// Spans exported over OTLP/HTTP.
    case otlp
}
