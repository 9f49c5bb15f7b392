import Foundation
import Logging

/// The text of `parley serve`'s settings before it is read: what the command line gave, then
/// the environment. Both are keyed by the setting's environment variable (`PARLEY_PORT`), so
/// one name stands for the option and its variable, and an option always wins.
public struct ServerSettings: Sendable {
    /// Values given on the command line, keyed by their environment variable's name.
    public var options: [String: String]
    /// The process environment.
    public var environment: [String: String]

    /// Settings from these options over this environment (the process's by default).
    public init(options: [String: String] = [:], environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.options = options
        self.environment = environment
    }

    /// The option, else the variable unless it is empty (an empty variable is no setting),
    /// else `fallback`.
    public func text(_ name: String, default fallback: String = "") -> String {
        if let option = options[name] { return option }
        if let variable = environment[name], !variable.isEmpty { return variable }
        return fallback
    }

    /// The option or the variable as given, empty or not; nil when neither is there.
    func given(_ name: String) -> String? { options[name] ?? environment[name] }
}

/// A setting `parley serve` cannot run with, in one line for the operator.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    /// The reason, naming the setting.
    public let description: String
    init(_ description: String) { self.description = description }
}

extension ServerConfiguration {
    /// The configuration the settings describe: every flag and variable of `parley serve` is
    /// read, checked and turned into its value here, in a fixed order, and the first one that
    /// cannot be used is refused with a line that names it. Nothing is opened or written.
    public init(settings: ServerSettings) throws(ConfigurationError) {
        self.init()
        try readPlace(settings)
        try readSecurity(settings)
        try readLimits(settings)
        try readFeatures(settings)
        try readEdges(settings)
    }

    /// Only where the data lives (`PARLEY_DATA_DIR`, `PARLEY_ATTACHMENTS_DIR`,
    /// `PARLEY_DATABASE_URL`), as `parley serve` takes it: for the commands that work on a
    /// server's data (`backup`, `restore`, `keys`).
    public init(storageSettings settings: ServerSettings) throws(ConfigurationError) {
        self.init()
        try readStorage(settings)
    }

    private mutating func readStorage(_ settings: ServerSettings) throws(ConfigurationError) {
        dataDirectory = settings.text("PARLEY_DATA_DIR", default: dataDirectory)
        let attachments = settings.text("PARLEY_ATTACHMENTS_DIR")
        attachmentsPath = attachments.isEmpty ? nil : attachments
        let database = settings.text("PARLEY_DATABASE_URL")
        databaseURL = database.isEmpty ? nil : database
        if databaseURL != nil, !usesPostgres {
            throw ConfigurationError("--database must be a postgres:// or postgresql:// URL")
        }
    }

    /// Address, storage and logging.
    private mutating func readPlace(_ settings: ServerSettings) throws(ConfigurationError) {
        host = settings.text("PARLEY_HOST", default: host)
        guard let port = Int(settings.text("PARLEY_PORT", default: "\(port)")), (0...65535).contains(port) else {
            throw ConfigurationError("port must be a number from 0 to 65535")
        }
        self.port = port
        try readStorage(settings)
        guard let level = Logger.Level(rawValue: settings.text("PARLEY_LOG_LEVEL", default: "info")) else {
            throw ConfigurationError("log level must be one of trace, debug, info, notice, warning, error, critical")
        }
        logLevel = level
        guard let tracing = TracingExport(rawValue: settings.text("PARLEY_TRACING", default: "off").lowercased()) else {
            throw ConfigurationError("--tracing is off or otlp")
        }
        self.tracing = tracing
    }

    /// Passwords, tokens and joining.
    private mutating func readSecurity(_ settings: ServerSettings) throws(ConfigurationError) {
        guard let cost = UInt8(settings.text("PARLEY_BCRYPT_COST", default: "10")), (4...31).contains(cost) else {
            throw ConfigurationError("bcrypt cost must be 4 to 31")
        }
        bcryptCost = cost
        guard let heartbeat = Int(settings.text("PARLEY_HEARTBEAT_SECONDS", default: "30")), heartbeat >= 1 else {
            throw ConfigurationError("heartbeat must be at least 1 second")
        }
        heartbeatSeconds = heartbeat
        guard let accessMinutes = Int(settings.text("PARLEY_ACCESS_TOKEN_MINUTES", default: "15")), (1...1440).contains(accessMinutes) else {
            throw ConfigurationError("access token minutes must be 1 to 1440")
        }
        tokenLifetime = .seconds(accessMinutes * 60)
        guard let refreshDays = Int(settings.text("PARLEY_REFRESH_TOKEN_DAYS", default: "30")), (1...365).contains(refreshDays) else {
            throw ConfigurationError("refresh token days must be 1 to 365")
        }
        refreshTokenLifetime = .seconds(refreshDays * 86400)
        guard let joins = DomainJoins(rawValue: settings.text("PARLEY_DOMAIN_JOINS", default: "verify")) else {
            throw ConfigurationError("domain joins must be verify or trust")
        }
        domainJoins = joins
        let smtpURL = settings.text("PARLEY_SMTP_URL")
        if !smtpURL.isEmpty {
            do {
                smtp = try SMTPConfiguration(url: smtpURL, from: settings.text("PARLEY_SMTP_FROM", default: "Parley <parley@localhost>"))
            } catch {
                throw ConfigurationError("\(error)")
            }
        }
        let publicText = settings.text("PARLEY_PUBLIC_URL")
        if !publicText.isEmpty {
            guard let url = URL(string: publicText), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                throw ConfigurationError("public URL must be an http(s) URL, got \(publicText)")
            }
            publicURL = url
        }
    }

    /// Sizes, timeouts, the connection cap and the rate limits.
    private mutating func readLimits(_ settings: ServerSettings) throws(ConfigurationError) {
        guard let attachmentLimit = Int64(settings.text("PARLEY_MAX_ATTACHMENT_BYTES", default: String(maxAttachmentBytes))),
            attachmentLimit > 0
        else { throw ConfigurationError("max attachment bytes must be a positive number") }
        maxAttachmentBytes = attachmentLimit
        try connectionLimits.read(settings)
        let large = settings.text("PARLEY_LARGE_GROUP_SIZE")
        if !large.isEmpty {
            guard let value = Int(large), value >= 2 else { throw ConfigurationError("large group size must be a number of at least 2") }
            largeGroupSize = value
        }
        try rateLimits.read(settings)
        guard let drain = Double(settings.text("PARLEY_DRAIN_SECONDS", default: "5")), drain >= 0, drain <= 600 else {
            throw ConfigurationError("drain seconds must be a number from 0 to 600")
        }
        drainDelay = .milliseconds(Int64(drain * 1000))
    }

    /// Joining by name, the token secret, push, link previews and retention.
    private mutating func readFeatures(_ settings: ServerSettings) throws(ConfigurationError) {
        openOrganizations = ["1", "true", "yes"].contains(settings.text("PARLEY_OPEN_ORGANIZATIONS").lowercased())
        let secret = settings.text("PARLEY_JWT_SECRET")
        if !secret.isEmpty {
            guard secret.utf8.count >= 32 else { throw ConfigurationError("PARLEY_JWT_SECRET must be at least 32 bytes") }
            jwtSecret = secret
        }
        apns = try APNsConfiguration.read(settings)
        switch settings.text("PARLEY_LINK_PREVIEWS", default: "on").lowercased() {
        case "on": linkPreviews = true
        case "off": linkPreviews = false
        default: throw ConfigurationError("--link-previews is on or off")
        }
        guard let retentionSeconds = Double(settings.text("PARLEY_RETENTION_INTERVAL", default: "3600")),
            retentionSeconds >= 0.1, retentionSeconds <= 86_400
        else { throw ConfigurationError("--retention-interval is a number of seconds from 0.1 to 86400") }
        retentionInterval = .milliseconds(Int64(retentionSeconds * 1000))
        let allow = settings.text("PARLEY_LINK_PREVIEW_ALLOW")
        if !allow.isEmpty {
            do {
                linkPreviewAllow = try AddressPolicy.parseAllowList(allow)
            } catch {
                throw ConfigurationError("--link-preview-allow: \(error)")
            }
        }
    }

    /// TLS, proxies, the web client and the cluster.
    private mutating func readEdges(_ settings: ServerSettings) throws(ConfigurationError) {
        let certificate = settings.text("PARLEY_TLS_CERT"), key = settings.text("PARLEY_TLS_KEY")
        switch (certificate.isEmpty, key.isEmpty) {
        case (false, false): tls = TLSFiles(certificatePath: certificate, keyPath: key)
        case (true, true): break
        default: throw ConfigurationError("--tls-cert and --tls-key go together")
        }
        let proxies = settings.text("PARLEY_TRUSTED_PROXIES").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        for proxy in proxies where AddressRange(proxy) == nil {
            throw ConfigurationError("--trusted-proxy \(proxy) is not an address or CIDR range")
        }
        trustedProxies = proxies
        let root = settings.text("PARLEY_WEB_ROOT")
        webRoot = root.isEmpty ? nil : root
        switch settings.text("PARLEY_WEB_CLIENT", default: "on").lowercased() {
        case "on": servesWebClient = true
        case "off": servesWebClient = false
        default: throw ConfigurationError("PARLEY_WEB_CLIENT is on or off")
        }
        if usesPostgres, let databaseURL {
            var cluster: ClusterConfiguration
            do {
                cluster = try ClusterConfiguration(url: databaseURL)
            } catch {
                throw ConfigurationError("--database: \(error)")
            }
            let id = settings.text("PARLEY_NODE_ID")
            if !id.isEmpty {
                guard id.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                    throw ConfigurationError("node id may hold letters, digits, - and _ only")
                }
                cluster.nodeId = id
            }
            // Faster failover for tests and operators who want it: how often a node says it is
            // alive, and how long the others wait for it.
            if let ms = Int(settings.text("PARLEY_CLUSTER_HEARTBEAT_MS")), ms > 0 { cluster.heartbeatInterval = .milliseconds(ms) }
            if let ms = Int(settings.text("PARLEY_CLUSTER_DEAD_AFTER_MS")), ms > 0 { cluster.deadAfter = .milliseconds(ms) }
            self.cluster = cluster
        }
    }
}

extension ConnectionLimits {
    /// The timeouts and the connection cap.
    mutating func read(_ settings: ServerSettings) throws(ConfigurationError) {
        func seconds(_ name: String, _ current: Duration, _ label: String) throws(ConfigurationError) -> Duration {
            let text = settings.text(name)
            guard !text.isEmpty else { return current }
            guard let seconds = Double(text), seconds > 0, seconds <= 86_400 else { throw ConfigurationError("\(label) must be 0 to 86400 seconds") }
            return .milliseconds(Int64(seconds * 1000))
        }
        requestHeadTimeout = try seconds("PARLEY_REQUEST_HEAD_TIMEOUT", requestHeadTimeout, "request head timeout")
        idleTimeout = try seconds("PARLEY_IDLE_TIMEOUT", idleTimeout, "idle timeout")
        bodyTimeout = try seconds("PARLEY_BODY_TIMEOUT", bodyTimeout, "body timeout")
        let cap = settings.text("PARLEY_MAX_CONNECTIONS")
        if !cap.isEmpty {
            guard let value = Int(cap), value >= 1 else { throw ConfigurationError("max connections must be a positive number") }
            maxConnections = value
        }
    }
}

extension RateLimitSettings {
    /// "off" for all, or each limit as COUNT/SECONDS (or "off").
    mutating func read(_ settings: ServerSettings) throws(ConfigurationError) {
        switch settings.text("PARLEY_RATE_LIMITS", default: "on").lowercased() {
        case "on": break
        case "off":
            enabled = false
            return
        default: throw ConfigurationError("--rate-limits is on or off")
        }
        let limits: [(String, WritableKeyPath<RateLimitSettings, RateLimit?>)] = [
            ("PARLEY_LOGIN_LIMIT", \.loginFailuresPerAccount),
            ("PARLEY_LOGIN_ADDRESS_LIMIT", \.loginFailuresPerAddress),
            ("PARLEY_REGISTER_LIMIT", \.registrationsPerAddress),
            ("PARLEY_SEND_LIMIT", \.sendsPerUser),
            ("PARLEY_TYPING_LIMIT", \.typingPerUser),
            ("PARLEY_RECEIPT_LIMIT", \.receiptsPerUser),
            ("PARLEY_UPLOAD_LIMIT", \.uploadBytesPerUser),
        ]
        for (name, path) in limits {
            let text = settings.text(name)
            if text.isEmpty { continue }
            if text.lowercased() == "off" {
                self[keyPath: path] = nil
            } else if let limit = RateLimit(parsing: text) {
                self[keyPath: path] = limit
            } else {
                throw ConfigurationError("\(name) must be COUNT/SECONDS (for example 10/60) or off, not \(text)")
            }
        }
    }
}

extension APNsConfiguration {
    /// Push settings: all four of key file, key id, team id and topic turn it on; none leaves
    /// it off; some is a mistake worth stopping for. Reads the key file and the CA file.
    static func read(_ settings: ServerSettings) throws(ConfigurationError) -> APNsConfiguration? {
        let keyFile = settings.given("PARLEY_APNS_KEY_FILE"), keyId = settings.given("PARLEY_APNS_KEY_ID")
        let teamId = settings.given("PARLEY_APNS_TEAM_ID"), topic = settings.given("PARLEY_APNS_TOPIC")
        let given = [keyFile, keyId, teamId, topic].compactMap { $0 }.filter { !$0.isEmpty }
        if given.isEmpty { return nil }
        guard let keyFile, let keyId, let teamId, let topic, given.count == 4 else {
            throw ConfigurationError("push needs all of --apns-key-file, --apns-key-id, --apns-team-id and --apns-topic")
        }
        var apns: APNsConfiguration
        do {
            apns = try APNsConfiguration.load(keyFile: keyFile, keyId: keyId, teamId: teamId, topic: topic)
        } catch {
            throw ConfigurationError("\(error)")
        }
        if let text = settings.given("PARLEY_APNS_SANDBOX_URL") {
            guard let url = URL(string: text), url.scheme == "https" else { throw ConfigurationError("the APNs sandbox URL must be https://") }
            apns.sandboxURL = url
        }
        if let text = settings.given("PARLEY_APNS_PRODUCTION_URL") {
            guard let url = URL(string: text), url.scheme == "https" else { throw ConfigurationError("the APNs production URL must be https://") }
            apns.productionURL = url
        }
        if let path = settings.given("PARLEY_APNS_CA_FILE") {
            guard let data = FileManager.default.contents(atPath: path) else { throw ConfigurationError("cannot read \(path)") }
            apns.additionalTrustRootsPEM = [String(decoding: data, as: UTF8.self)]
        }
        return apns
    }
}
