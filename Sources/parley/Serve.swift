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
    @Flag(name: .customLong("no-web-client"), help: "Serve the API only, without the web client at / (default: the web client is served at /).")
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

    func run() async throws {
        var configuration = ServerConfiguration()
        configuration.host = setting(host, env: "PARLEY_HOST", default: configuration.host)
        guard let port = Int(setting(port.map(String.init), env: "PARLEY_PORT", default: "\(configuration.port)")),
            (0...65535).contains(port)
        else { throw fail("port must be a number from 0 to 65535") }
        configuration.port = port
        configuration.dataDirectory = setting(dataDirectory, env: "PARLEY_DATA_DIR", default: configuration.dataDirectory)
        let database = setting(databaseURL, env: "PARLEY_DATABASE_URL", default: "")
        configuration.databaseURL = database.isEmpty ? nil : database
        if configuration.databaseURL != nil, !configuration.usesPostgres {
            throw fail("--database must be a postgres:// or postgresql:// URL")
        }
        guard let level = Logger.Level(rawValue: setting(logLevel, env: "PARLEY_LOG_LEVEL", default: "info")) else {
            throw fail("log level must be one of trace, debug, info, notice, warning, error, critical")
        }
        configuration.logLevel = level
        guard let cost = UInt8(setting(bcryptCost.map(String.init), env: "PARLEY_BCRYPT_COST", default: "10")), (4...31).contains(cost) else {
            throw fail("bcrypt cost must be 4 to 31")
        }
        configuration.bcryptCost = cost
        guard let heartbeat = Int(setting(heartbeatSeconds.map(String.init), env: "PARLEY_HEARTBEAT_SECONDS", default: "30")),
            heartbeat >= 1
        else { throw fail("heartbeat must be at least 1 second") }
        configuration.heartbeatSeconds = heartbeat
        guard let accessMinutes = Int(setting(accessTokenMinutes.map(String.init), env: "PARLEY_ACCESS_TOKEN_MINUTES", default: "15")),
            (1...1440).contains(accessMinutes)
        else { throw fail("access token minutes must be 1 to 1440") }
        configuration.tokenLifetime = .seconds(accessMinutes * 60)
        guard let refreshDays = Int(setting(refreshTokenDays.map(String.init), env: "PARLEY_REFRESH_TOKEN_DAYS", default: "30")),
            (1...365).contains(refreshDays)
        else { throw fail("refresh token days must be 1 to 365") }
        configuration.refreshTokenLifetime = .seconds(refreshDays * 86400)
        guard let joins = DomainJoins(rawValue: setting(domainJoins, env: "PARLEY_DOMAIN_JOINS", default: "verify")) else {
            throw fail("domain joins must be verify or trust")
        }
        configuration.domainJoins = joins
        let smtp = setting(smtpURL, env: "PARLEY_SMTP_URL", default: "")
        if !smtp.isEmpty {
            do {
                configuration.smtp = try SMTPConfiguration(
                    url: smtp, from: setting(smtpFrom, env: "PARLEY_SMTP_FROM", default: "Parley <parley@localhost>"))
            } catch let error as SMTPError {
                throw fail(error.description)
            }
        }
        let publicText = setting(publicURL, env: "PARLEY_PUBLIC_URL", default: "")
        if !publicText.isEmpty {
            guard let url = URL(string: publicText), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                throw fail("public URL must be an http(s) URL, got \(publicText)")
            }
            configuration.publicURL = url
        }
        guard let attachmentLimit = Int64(setting(
            maxAttachmentBytes.map(String.init), env: "PARLEY_MAX_ATTACHMENT_BYTES", default: String(configuration.maxAttachmentBytes))),
            attachmentLimit > 0
        else { throw fail("max attachment bytes must be a positive number") }
        configuration.maxAttachmentBytes = attachmentLimit
        try readConnectionLimits(into: &configuration.connectionLimits)
        let large = setting(largeGroupSize.map(String.init), env: "PARLEY_LARGE_GROUP_SIZE", default: "")
        if !large.isEmpty {
            guard let value = Int(large), value >= 2 else { throw fail("large group size must be a number of at least 2") }
            configuration.largeGroupSize = value
        }
        try readRateLimits(into: &configuration.rateLimits)
        guard let drain = Double(setting(drainSeconds.map { String($0) }, env: "PARLEY_DRAIN_SECONDS", default: "5")), drain >= 0, drain <= 600
        else { throw fail("drain seconds must be a number from 0 to 600") }
        configuration.drainDelay = .milliseconds(Int64(drain * 1000))
        configuration.openOrganizations = openOrganizations || ["1", "true", "yes"].contains(ProcessInfo.processInfo.environment["PARLEY_OPEN_ORGANIZATIONS"]?.lowercased() ?? "")
        if let secret = ProcessInfo.processInfo.environment["PARLEY_JWT_SECRET"], !secret.isEmpty {
            guard secret.utf8.count >= 32 else { throw fail("PARLEY_JWT_SECRET must be at least 32 bytes") }
            configuration.jwtSecret = secret
        }

        configuration.apns = try apnsConfiguration()
        switch setting(linkPreviews, env: "PARLEY_LINK_PREVIEWS", default: "on").lowercased() {
        case "on": configuration.linkPreviews = true
        case "off": configuration.linkPreviews = false
        default: throw fail("--link-previews is on or off")
        }
        let retention = setting(retentionInterval.map { String($0) }, env: "PARLEY_RETENTION_INTERVAL", default: "3600")
        guard let retentionSeconds = Double(retention), retentionSeconds >= 0.1, retentionSeconds <= 86_400 else {
            throw fail("--retention-interval is a number of seconds from 0.1 to 86400")
        }
        configuration.retentionInterval = .milliseconds(Int64(retentionSeconds * 1000))
        let allow = setting(linkPreviewAllow, env: "PARLEY_LINK_PREVIEW_ALLOW", default: "")
        if !allow.isEmpty {
            do {
                configuration.linkPreviewAllow = try AddressPolicy.parseAllowList(allow)
            } catch {
                throw fail("--link-preview-allow: \(error)")
            }
        }
        if let path = attachmentsDirectory ?? ProcessInfo.processInfo.environment["PARLEY_ATTACHMENTS_DIR"], !path.isEmpty {
            configuration.attachmentsPath = path
        }
        let environment = ProcessInfo.processInfo.environment
        let certificate = tlsCertificate ?? environment["PARLEY_TLS_CERT"].flatMap { $0.isEmpty ? nil : $0 }
        let key = tlsKey ?? environment["PARLEY_TLS_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        switch (certificate, key) {
        case (let certificate?, let key?): configuration.tls = TLSFiles(certificatePath: certificate, keyPath: key)
        case (nil, nil): break
        default: throw fail("--tls-cert and --tls-key go together")
        }
        let proxies = trustedProxies.isEmpty
            ? (environment["PARLEY_TRUSTED_PROXIES"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            : trustedProxies
        for proxy in proxies where AddressRange(proxy) == nil {
            throw fail("--trusted-proxy \(proxy) is not an address or CIDR range")
        }
        configuration.trustedProxies = proxies
        if let path = webRoot ?? ProcessInfo.processInfo.environment["PARLEY_WEB_ROOT"], !path.isEmpty {
            configuration.webRoot = path
        }
        configuration.servesWebClient = !noWebClient
        if configuration.usesPostgres, let url = configuration.databaseURL {
            var cluster = try ClusterConfiguration(url: url)
            if let id = nodeId ?? ProcessInfo.processInfo.environment["PARLEY_NODE_ID"], !id.isEmpty {
                guard id.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                    throw fail("node id may hold letters, digits, - and _ only")
                }
                cluster.nodeId = id
            }
            // Heartbeat and expiry, for tests and operators who want faster failover.
            let env = ProcessInfo.processInfo.environment
            if let ms = env["PARLEY_CLUSTER_HEARTBEAT_MS"].flatMap(Int.init), ms > 0 { cluster.heartbeatInterval = .milliseconds(ms) }
            if let ms = env["PARLEY_CLUSTER_DEAD_AFTER_MS"].flatMap(Int.init), ms > 0 { cluster.deadAfter = .milliseconds(ms) }
            configuration.cluster = cluster
        }

        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "parley")
        let app: ParleyApp
        do {
            app = try await ParleyApp(configuration: configuration, logger: logger)
        } catch {
            throw fail("cannot start: \(error)")
        }
        logger.info("Parley starting", metadata: [
            "database": "\(configuration.databaseDescription)", "host": "\(configuration.host)", "port": "\(configuration.port)",
        ])
        do {
            try await app.run()
        } catch {
            throw fail("server stopped: \(ServeFailure.describe(error, host: configuration.host, port: configuration.port))")
        }
        logger.info("Parley stopped")
    }

    /// Timeouts and the connection cap from flags and environment.
    private func readConnectionLimits(into limits: inout ConnectionLimits) throws {
        func seconds(_ value: Double?, _ env: String, _ current: Duration, _ name: String) throws -> Duration {
            let text = setting(value.map { "\($0)" }, env: env, default: "")
            guard !text.isEmpty else { return current }
            guard let seconds = Double(text), seconds > 0, seconds <= 86_400 else { throw fail("\(name) must be 0 to 86400 seconds") }
            return .milliseconds(Int64(seconds * 1000))
        }
        limits.requestHeadTimeout = try seconds(requestHeadTimeout, "PARLEY_REQUEST_HEAD_TIMEOUT", limits.requestHeadTimeout, "request head timeout")
        limits.idleTimeout = try seconds(idleTimeout, "PARLEY_IDLE_TIMEOUT", limits.idleTimeout, "idle timeout")
        limits.bodyTimeout = try seconds(bodyTimeout, "PARLEY_BODY_TIMEOUT", limits.bodyTimeout, "body timeout")
        let cap = setting(maxConnections.map(String.init), env: "PARLEY_MAX_CONNECTIONS", default: "")
        if !cap.isEmpty {
            guard let value = Int(cap), value >= 1 else { throw fail("max connections must be a positive number") }
            limits.maxConnections = value
        }
    }

    /// Push settings from flags and environment: all four of key file, key id, team id and
    /// topic turn it on; none leaves it off; some is a mistake worth stopping for.
    private func apnsConfiguration() throws -> APNsConfiguration? {
        let env = ProcessInfo.processInfo.environment
        let keyFile = apnsKeyFile ?? env["PARLEY_APNS_KEY_FILE"]
        let keyId = apnsKeyId ?? env["PARLEY_APNS_KEY_ID"]
        let teamId = apnsTeamId ?? env["PARLEY_APNS_TEAM_ID"]
        let topic = apnsTopic ?? env["PARLEY_APNS_TOPIC"]
        let given = [keyFile, keyId, teamId, topic].compactMap { $0 }.filter { !$0.isEmpty }
        if given.isEmpty { return nil }
        guard let keyFile, let keyId, let teamId, let topic, given.count == 4 else {
            throw fail("push needs all of --apns-key-file, --apns-key-id, --apns-team-id and --apns-topic")
        }
        var apns: APNsConfiguration
        do {
            apns = try APNsConfiguration.load(keyFile: keyFile, keyId: keyId, teamId: teamId, topic: topic)
        } catch {
            throw fail("\(error)")
        }
        if let text = apnsSandboxURL ?? env["PARLEY_APNS_SANDBOX_URL"] {
            guard let url = URL(string: text), url.scheme == "https" else { throw fail("the APNs sandbox URL must be https://") }
            apns.sandboxURL = url
        }
        if let text = apnsProductionURL ?? env["PARLEY_APNS_PRODUCTION_URL"] {
            guard let url = URL(string: text), url.scheme == "https" else { throw fail("the APNs production URL must be https://") }
            apns.productionURL = url
        }
        if let path = apnsCAFile ?? env["PARLEY_APNS_CA_FILE"] {
            guard let data = FileManager.default.contents(atPath: path) else { throw fail("cannot read \(path)") }
            apns.additionalTrustRootsPEM = [String(decoding: data, as: UTF8.self)]
        }
        return apns
    }

    /// The rate limit options: "off" for all, or each as COUNT/SECONDS (or "off").
    func readRateLimits(into settings: inout RateLimitSettings) throws {
        switch setting(rateLimits, env: "PARLEY_RATE_LIMITS", default: "on").lowercased() {
        case "on": break
        case "off":
            settings.enabled = false
            return
        default: throw fail("--rate-limits is on or off")
        }
        let options: [(String?, String, WritableKeyPath<RateLimitSettings, RateLimit?>)] = [
            (loginLimit, "PARLEY_LOGIN_LIMIT", \.loginFailuresPerAccount),
            (loginAddressLimit, "PARLEY_LOGIN_ADDRESS_LIMIT", \.loginFailuresPerAddress),
            (registerLimit, "PARLEY_REGISTER_LIMIT", \.registrationsPerAddress),
            (sendLimit, "PARLEY_SEND_LIMIT", \.sendsPerUser),
            (typingLimit, "PARLEY_TYPING_LIMIT", \.typingPerUser),
            (receiptLimit, "PARLEY_RECEIPT_LIMIT", \.receiptsPerUser),
            (uploadLimit, "PARLEY_UPLOAD_LIMIT", \.uploadBytesPerUser),
        ]
        for (option, env, path) in options {
            let text = setting(option, env: env, default: "")
            if text.isEmpty { continue }
            if text.lowercased() == "off" {
                settings[keyPath: path] = nil
            } else if let limit = RateLimit(parsing: text) {
                settings[keyPath: path] = limit
            } else {
                throw fail("\(env) must be COUNT/SECONDS (for example 10/60) or off, not \(text)")
            }
        }
    }
}
