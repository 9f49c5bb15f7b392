import ArgumentParser
import Foundation
import Logging
import ParleyServer

/// `parley serve`: the server on its embedded SQLite store.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the Parley server (SQLite in the data directory, or PostgreSQL with --database).",
        discussion: """
            Every option can also be set by its environment variable; the option wins over the variable. \
            The first start creates the data directory, the database and the key that signs access tokens \
            (kept in the database; see `parley keys`).

            Environment only: PARLEY_JWT_SECRET (at least 32 bytes) signs tokens with that one secret \
            instead of the keys in the database. PARLEY_CLUSTER_HEARTBEAT_MS (default 2000) and \
            PARLEY_CLUSTER_DEAD_AFTER_MS (default 10000): how often a node of a PostgreSQL cluster says \
            it is alive, and how long the others wait before they count a silent node as dead.
            """)

    @Option(help: "Address to listen on (env PARLEY_HOST; default 127.0.0.1).") var host: String?
    @Option(help: "Port to listen on (env PARLEY_PORT; default 8080).") var port: Int?
    @Option(name: .customLong("data-dir"), help: "Folder of the SQLite database (parley.sqlite) and, on SQLite, of uploaded files (attachments/); created on first start (env PARLEY_DATA_DIR; default ./parley-data).")
    var dataDirectory: String?
    @Option(
        name: .customLong("database"),
        help: """
            PostgreSQL URL postgres://user[:password]@host[:port]/db[?sslmode=disable|prefer|require] \
            (env PARLEY_DATABASE_URL; default: SQLite in the data directory). TLS is off for loopback hosts \
            and preferred otherwise unless sslmode says.
            """)
    var databaseURL: String?
    @Option(help: "trace, debug, info, notice, warning, error or critical (env PARLEY_LOG_LEVEL; default info).")
    var logLevel: String?
    @Option(help: """
        off, or otlp: spans of each message's path (command, rules, commit, fan-out, relay to another node)         exported over OTLP/HTTP to the collector OTEL_EXPORTER_OTLP_ENDPOINT names (default http://localhost:4318;         the other OTEL_* variables apply too), and a trace_id in the logs (env PARLEY_TRACING; default off).
        """)
    var tracing: String?
    @Option(help: "bcrypt cost for new passwords (env PARLEY_BCRYPT_COST; default 10).") var bcryptCost: UInt8?
    @Option(name: .customLong("access-token-minutes"), help: "How long an access token is valid, in minutes; clients renew it with their refresh token (env PARLEY_ACCESS_TOKEN_MINUTES; default 15).")
    var accessTokenMinutes: Int?
    @Option(name: .customLong("refresh-token-days"), help: "How long a refresh token lasts unused, in days; each renewal starts it again (env PARLEY_REFRESH_TOKEN_DAYS; default 30).")
    var refreshTokenDays: Int?
    @Option(name: .customLong("domain-joins"), help: "verify: joining an organization by an allowed email domain mails a link to the address first; trust: joins at once, as before (env PARLEY_DOMAIN_JOINS; default verify).")
    var domainJoins: String?
    @Option(name: .customLong("smtp-url"), help: "Mail server for those links: smtp://[user:password@]host[:port] or smtps://... (env PARLEY_SMTP_URL; default: none, so domain joins need an invite).")
    var smtpURL: String?
    @Option(name: .customLong("smtp-from"), help: "Sender of the mail (env PARLEY_SMTP_FROM; default Parley <parley@localhost>).")
    var smtpFrom: String?
    @Option(name: .customLong("public-url"), help: "The server as people reach it, for links in mail, e.g. https://chat.example.com (env PARLEY_PUBLIC_URL; default http://HOST:PORT).")
    var publicURL: String?
    @Option(help: "Heartbeat announced to clients, in seconds (env PARLEY_HEARTBEAT_SECONDS; default 30).")
    var heartbeatSeconds: Int?

    @Option(help: "Largest attachment upload in bytes (env PARLEY_MAX_ATTACHMENT_BYTES; default 26214400).")
    var maxAttachmentBytes: Int64?

    @Option(name: .customLong("request-head-timeout"), help: "Seconds a new connection has to send a whole request head (env PARLEY_REQUEST_HEAD_TIMEOUT; default 10).")
    var requestHeadTimeout: Double?
    @Option(name: .customLong("idle-timeout"), help: "Seconds an HTTP connection may idle between requests (env PARLEY_IDLE_TIMEOUT; default 60).")
    var idleTimeout: Double?
    @Option(name: .customLong("body-timeout"), help: "Seconds a request body may stall before it is dropped (env PARLEY_BODY_TIMEOUT; default 30).")
    var bodyTimeout: Double?
    @Option(name: .customLong("max-connections"), help: "Open connections at most; more are refused at once (env PARLEY_MAX_CONNECTIONS; default: from the descriptor limit, raised to its hard limit).")
    var maxConnections: Int?

    @Option(name: .customLong("large-group-size"), help: "Above this many members a group is large: member lists left out of its conversations, receipts and typing summarized (env PARLEY_LARGE_GROUP_SIZE; default 100).")
    var largeGroupSize: Int?

    @Option(name: .customLong("drain-seconds"), help: "After SIGTERM, seconds /ready answers 503 before connections close, so a load balancer stops sending first (env PARLEY_DRAIN_SECONDS; default 5; Ctrl-C does not wait).")
    var drainSeconds: Double?

    @Option(name: .customLong("link-previews"), help: "on, or off to never fetch links for previews (env PARLEY_LINK_PREVIEWS; default on).")
    var linkPreviews: String?
    @Option(name: .customLong("link-preview-allow"), help: "Non-public ranges link previews may fetch from, CIDR[,CIDR], e.g. 10.0.0.0/8 for an intranet (env PARLEY_LINK_PREVIEW_ALLOW; default none: loopback, private and link-local addresses are never fetched).")
    var linkPreviewAllow: String?

    @Option(name: .customLong("retention-interval"), help: "Seconds between retention sweeps: an organization's messages are deleted within this long of passing its messageRetentionDays (env PARLEY_RETENTION_INTERVAL; default 3600).")
    var retentionInterval: Double?

    @Option(name: .customLong("rate-limits"), help: "on, or off to turn every rate limit off, e.g. for benchmarks (env PARLEY_RATE_LIMITS; default on).")
    var rateLimits: String?
    @Option(name: .customLong("login-limit"), help: "Failed logins per account from one address, COUNT/SECONDS or off (env PARLEY_LOGIN_LIMIT; default 10/60).")
    var loginLimit: String?
    @Option(name: .customLong("login-address-limit"), help: "Failed logins per client address (env PARLEY_LOGIN_ADDRESS_LIMIT; default 30/60).")
    var loginAddressLimit: String?
    @Option(name: .customLong("register-limit"), help: "Registrations per client address (env PARLEY_REGISTER_LIMIT; default 10/3600).")
    var registerLimit: String?
    @Option(name: .customLong("send-limit"), help: "Messages per user: a burst, then the rate, BURST/SECONDS-FOR-THE-BURST (env PARLEY_SEND_LIMIT; default 100/5: 100 at once, 20 a second).")
    var sendLimit: String?
    @Option(name: .customLong("typing-limit"), help: "Typing commands per user (env PARLEY_TYPING_LIMIT; default 10/2).")
    var typingLimit: String?
    @Option(name: .customLong("receipt-limit"), help: "Read and delivered receipts per user (env PARLEY_RECEIPT_LIMIT; default 40/2).")
    var receiptLimit: String?
    @Option(name: .customLong("upload-limit"), help: "Upload bytes per user (env PARLEY_UPLOAD_LIMIT; default 209715200/60: 200 MB a minute).")
    var uploadLimit: String?

    @Flag(name: .customLong("open-organizations"), help: "Let anyone join an existing organization by its name (env PARLEY_OPEN_ORGANIZATIONS=1; default off: joining needs an invite or an allowed email domain; demos and tests only).")
    var openOrganizations = false

    @Option(name: .customLong("attachments-dir"), help: "Keep uploaded files in this folder (env PARLEY_ATTACHMENTS_DIR; default <data-dir>/attachments on SQLite, the database itself on PostgreSQL; shared storage for several nodes).")
    var attachmentsDirectory: String?

    @Option(name: .customLong("tls-cert"), help: "Serve HTTPS and WSS with this PEM certificate chain (env PARLEY_TLS_CERT; with --tls-key; reloaded on SIGHUP).")
    var tlsCertificate: String?
    @Option(name: .customLong("tls-key"), help: "The certificate's PEM private key (env PARLEY_TLS_KEY; with --tls-cert; reloaded on SIGHUP).")
    var tlsKey: String?
    @Option(name: .customLong("trusted-proxy"), help: "A reverse proxy (address or CIDR range, repeatable; env PARLEY_TRUSTED_PROXIES, comma-separated) whose X-Forwarded-For names the client for per-address limits (default: none; the header is ignored).")
    var trustedProxies: [String] = []

    @Option(name: .customLong("web-root"), help: "Serve the web client from this folder, read again on every request, instead of the built-in files (env PARLEY_WEB_ROOT; for working on the client).")
    var webRoot: String?
    @Flag(name: .customLong("no-web-client"), help: "Serve the API only, without the web client at / (env PARLEY_WEB_CLIENT=off; default: the web client is served at /).")
    var noWebClient = false

    @Option(name: .customLong("node-id"), help: "This node's name in a PostgreSQL cluster, letters, digits, - and _ (env PARLEY_NODE_ID; default node- and 8 random characters; unused on SQLite).")
    var nodeId: String?

    @Option(name: .customLong("apns-key-file"), help: "APNs .p8 signing key; with key id, team id and topic turns push on (env PARLEY_APNS_KEY_FILE; default: push off).")
    var apnsKeyFile: String?
    @Option(name: .customLong("apns-key-id"), help: "The APNs key's id (env PARLEY_APNS_KEY_ID).") var apnsKeyId: String?
    @Option(name: .customLong("apns-team-id"), help: "The Apple developer team id (env PARLEY_APNS_TEAM_ID).") var apnsTeamId: String?
    @Option(name: .customLong("apns-topic"), help: "The app's bundle id (env PARLEY_APNS_TOPIC).") var apnsTopic: String?
    @Option(name: .customLong("apns-sandbox-url"), help: "The sandbox APNs server, an https:// URL, e.g. a test APNs (env PARLEY_APNS_SANDBOX_URL; default https://api.sandbox.push.apple.com).")
    var apnsSandboxURL: String?
    @Option(name: .customLong("apns-production-url"), help: "The production APNs server, an https:// URL (env PARLEY_APNS_PRODUCTION_URL; default https://api.push.apple.com).")
    var apnsProductionURL: String?
    @Option(name: .customLong("apns-ca-file"), help: "Also trust the PEM root certificate in this file for the APNs server, for a test APNs (env PARLEY_APNS_CA_FILE).")
    var apnsCAFile: String?

    /// The options given, keyed by the environment variable each stands for.
    var options: [String: String] {
        var given: [String: String?] = [
            "PARLEY_HOST": host, "PARLEY_PORT": port.map(String.init), "PARLEY_DATA_DIR": dataDirectory,
            "PARLEY_DATABASE_URL": databaseURL, "PARLEY_LOG_LEVEL": logLevel, "PARLEY_TRACING": tracing, "PARLEY_BCRYPT_COST": bcryptCost.map(String.init),
            "PARLEY_ACCESS_TOKEN_MINUTES": accessTokenMinutes.map(String.init), "PARLEY_REFRESH_TOKEN_DAYS": refreshTokenDays.map(String.init),
            "PARLEY_DOMAIN_JOINS": domainJoins, "PARLEY_SMTP_URL": smtpURL, "PARLEY_SMTP_FROM": smtpFrom, "PARLEY_PUBLIC_URL": publicURL,
            "PARLEY_HEARTBEAT_SECONDS": heartbeatSeconds.map(String.init), "PARLEY_MAX_ATTACHMENT_BYTES": maxAttachmentBytes.map(String.init),
            "PARLEY_REQUEST_HEAD_TIMEOUT": requestHeadTimeout.map { "\($0)" }, "PARLEY_IDLE_TIMEOUT": idleTimeout.map { "\($0)" },
            "PARLEY_BODY_TIMEOUT": bodyTimeout.map { "\($0)" }, "PARLEY_MAX_CONNECTIONS": maxConnections.map(String.init),
            "PARLEY_LARGE_GROUP_SIZE": largeGroupSize.map(String.init), "PARLEY_DRAIN_SECONDS": drainSeconds.map { "\($0)" },
            "PARLEY_LINK_PREVIEWS": linkPreviews, "PARLEY_LINK_PREVIEW_ALLOW": linkPreviewAllow,
            "PARLEY_RETENTION_INTERVAL": retentionInterval.map { "\($0)" }, "PARLEY_RATE_LIMITS": rateLimits,
            "PARLEY_LOGIN_LIMIT": loginLimit, "PARLEY_LOGIN_ADDRESS_LIMIT": loginAddressLimit, "PARLEY_REGISTER_LIMIT": registerLimit,
            "PARLEY_SEND_LIMIT": sendLimit, "PARLEY_TYPING_LIMIT": typingLimit, "PARLEY_RECEIPT_LIMIT": receiptLimit,
            "PARLEY_UPLOAD_LIMIT": uploadLimit, "PARLEY_ATTACHMENTS_DIR": attachmentsDirectory,
            "PARLEY_TLS_CERT": tlsCertificate, "PARLEY_TLS_KEY": tlsKey, "PARLEY_WEB_ROOT": webRoot, "PARLEY_NODE_ID": nodeId,
            "PARLEY_APNS_KEY_FILE": apnsKeyFile, "PARLEY_APNS_KEY_ID": apnsKeyId, "PARLEY_APNS_TEAM_ID": apnsTeamId,
            "PARLEY_APNS_TOPIC": apnsTopic, "PARLEY_APNS_SANDBOX_URL": apnsSandboxURL,
            "PARLEY_APNS_PRODUCTION_URL": apnsProductionURL, "PARLEY_APNS_CA_FILE": apnsCAFile,
        ]
        if openOrganizations { given["PARLEY_OPEN_ORGANIZATIONS"] = "1" }
        if noWebClient { given["PARLEY_WEB_CLIENT"] = "off" }
        if !trustedProxies.isEmpty { given["PARLEY_TRUSTED_PROXIES"] = trustedProxies.joined(separator: ",") }
        return given.compactMapValues { $0 }
    }

    func run() async throws {
        let configuration: ServerConfiguration
        do {
            configuration = try ServerConfiguration(settings: ServerSettings(options: options))
        } catch {
            throw fail(error.description)
        }
        // Spans first: the logs then carry the trace id of the span they were written in.
        let exporter = try configuration.tracing == .otlp ? SpanExport.start(configuration) : nil
        LoggingSystem.bootstrap({ label, metadataProvider in
            var handler = StreamLogHandler.standardError(label: label, metadataProvider: metadataProvider)
            handler.logLevel = configuration.logLevel
            return handler
        }, metadataProvider: exporter?.metadataProvider)
        let logger = Logger(label: "parley")
        let app: ParleyApp
        do {
            app = try await buildApplication(configuration, logger: logger)
        } catch {
            throw fail("cannot start: \(error)")
        }
        logger.info("Parley starting", metadata: [
            "database": "\(configuration.databaseDescription)", "host": "\(configuration.host)", "port": "\(configuration.port)",
        ])
        do {
            try await app.run(alongside: exporter.map { [$0.service] } ?? [])
        } catch {
            throw fail("server stopped: \(ServeFailure.describe(error, host: configuration.host, port: configuration.port))")
        }
        logger.info("Parley stopped")
    }
}
