import Foundation
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing

/// `parley serve`'s settings read in one place (``ServerConfiguration/init(settings:)``): each
/// wrong value refused with a line naming it, an option beating its variable, an empty
/// variable counting as none, and every value landing where the server reads it.
@Suite struct ServerSettingsTests {
    /// One refused setting: options (by variable name), environment, and the line.
    struct Refusal: Sendable, CustomTestStringConvertible {
        var options: [String: String] = [:]
        var environment: [String: String] = [:]
        var message: String
        var testDescription: String {
            (options.map { "option \($0.key)=\($0.value)" } + environment.map { "\($0.key)=\($0.value)" }).sorted().joined(separator: " ")
        }
    }

    static let refusals: [Refusal] = [
        Refusal(options: ["PARLEY_PORT": "70000"], message: "port must be a number from 0 to 65535"),
        Refusal(environment: ["PARLEY_PORT": "http"], message: "port must be a number from 0 to 65535"),
        Refusal(options: ["PARLEY_DATABASE_URL": "mysql://db/parley"], message: "--database must be a postgres:// or postgresql:// URL"),
        Refusal(environment: ["PARLEY_DATABASE_URL": "sqlite:///tmp/x"], message: "--database must be a postgres:// or postgresql:// URL"),
        Refusal(options: ["PARLEY_LOG_LEVEL": "loud"], message: "log level must be one of trace, debug, info, notice, warning, error, critical"),
        Refusal(options: ["PARLEY_BCRYPT_COST": "3"], message: "bcrypt cost must be 4 to 31"),
        Refusal(options: ["PARLEY_BCRYPT_COST": "32"], message: "bcrypt cost must be 4 to 31"),
        Refusal(options: ["PARLEY_HEARTBEAT_SECONDS": "0"], message: "heartbeat must be at least 1 second"),
        Refusal(options: ["PARLEY_ACCESS_TOKEN_MINUTES": "0"], message: "access token minutes must be 1 to 1440"),
        Refusal(environment: ["PARLEY_ACCESS_TOKEN_MINUTES": "1441"], message: "access token minutes must be 1 to 1440"),
        Refusal(options: ["PARLEY_REFRESH_TOKEN_DAYS": "366"], message: "refresh token days must be 1 to 365"),
        Refusal(options: ["PARLEY_DOMAIN_JOINS": "maybe"], message: "domain joins must be verify or trust"),
        Refusal(options: ["PARLEY_PUBLIC_URL": "ftp://chat.example.com"], message: "public URL must be an http(s) URL, got ftp://chat.example.com"),
        Refusal(options: ["PARLEY_MAX_ATTACHMENT_BYTES": "0"], message: "max attachment bytes must be a positive number"),
        Refusal(options: ["PARLEY_REQUEST_HEAD_TIMEOUT": "0"], message: "request head timeout must be 0 to 86400 seconds"),
        Refusal(options: ["PARLEY_IDLE_TIMEOUT": "86401"], message: "idle timeout must be 0 to 86400 seconds"),
        Refusal(environment: ["PARLEY_BODY_TIMEOUT": "soon"], message: "body timeout must be 0 to 86400 seconds"),
        Refusal(options: ["PARLEY_MAX_CONNECTIONS": "0"], message: "max connections must be a positive number"),
        Refusal(options: ["PARLEY_LARGE_GROUP_SIZE": "1"], message: "large group size must be a number of at least 2"),
        Refusal(options: ["PARLEY_RATE_LIMITS": "maybe"], message: "--rate-limits is on or off"),
        Refusal(options: ["PARLEY_LOGIN_LIMIT": "10"], message: "PARLEY_LOGIN_LIMIT must be COUNT/SECONDS (for example 10/60) or off, not 10"),
        Refusal(environment: ["PARLEY_UPLOAD_LIMIT": "1/0"],
                message: "PARLEY_UPLOAD_LIMIT must be COUNT/SECONDS (for example 10/60) or off, not 1/0"),
        Refusal(options: ["PARLEY_DRAIN_SECONDS": "601"], message: "drain seconds must be a number from 0 to 600"),
        Refusal(environment: ["PARLEY_DRAIN_SECONDS": "-1"], message: "drain seconds must be a number from 0 to 600"),
        Refusal(environment: ["PARLEY_JWT_SECRET": "too short"], message: "PARLEY_JWT_SECRET must be at least 32 bytes"),
        Refusal(options: ["PARLEY_APNS_KEY_ID": "KEY"],
                message: "push needs all of --apns-key-file, --apns-key-id, --apns-team-id and --apns-topic"),
        Refusal(options: ["PARLEY_LINK_PREVIEWS": "sometimes"], message: "--link-previews is on or off"),
        Refusal(options: ["PARLEY_RETENTION_INTERVAL": "0"], message: "--retention-interval is a number of seconds from 0.1 to 86400"),
        Refusal(options: ["PARLEY_TLS_CERT": "/nonexistent/cert.pem"], message: "--tls-cert and --tls-key go together"),
        Refusal(environment: ["PARLEY_TLS_KEY": "/nonexistent/key.pem"], message: "--tls-cert and --tls-key go together"),
        Refusal(options: ["PARLEY_TRUSTED_PROXIES": "10.0.0.0/8,10.0.0.0/99"],
                message: "--trusted-proxy 10.0.0.0/99 is not an address or CIDR range"),
        Refusal(environment: ["PARLEY_TRUSTED_PROXIES": "127.0.0.1, proxy.local"],
                message: "--trusted-proxy proxy.local is not an address or CIDR range"),
        Refusal(environment: ["PARLEY_WEB_CLIENT": "no"], message: "PARLEY_WEB_CLIENT is on or off"),
        Refusal(options: ["PARLEY_DATABASE_URL": "postgres://u@db/parley", "PARLEY_NODE_ID": "node 1"],
                message: "node id may hold letters, digits, - and _ only"),
        // An option beats its variable: the bad variable is never read, and the next check speaks.
        Refusal(options: ["PARLEY_LOG_LEVEL": "info", "PARLEY_BCRYPT_COST": "3"], environment: ["PARLEY_LOG_LEVEL": "loud"],
                message: "bcrypt cost must be 4 to 31"),
        Refusal(options: ["PARLEY_PORT": "0", "PARLEY_HEARTBEAT_SECONDS": "0"], environment: ["PARLEY_PORT": "http"],
                message: "heartbeat must be at least 1 second"),
        // An empty variable is no setting: the default applies.
        Refusal(options: ["PARLEY_MAX_CONNECTIONS": "-3"], environment: ["PARLEY_PORT": "", "PARLEY_LOG_LEVEL": ""],
                message: "max connections must be a positive number"),
    ]

    @Test(arguments: refusals)
    func aWrongSettingIsRefusedWithALineNamingIt(_ refusal: Refusal) {
        #expect(throws: ConfigurationError(refusal.message)) {
            try ServerConfiguration(settings: ServerSettings(options: refusal.options, environment: refusal.environment))
        }
    }

    @Test func nothingGivenIsTheDefaults() throws {
        let read = try ServerConfiguration(settings: ServerSettings(environment: [:]))
        let defaults = ServerConfiguration()
        #expect(read.host == defaults.host && read.port == defaults.port && read.dataDirectory == defaults.dataDirectory)
        #expect(read.databaseURL == nil && read.cluster == nil && read.jwtSecret == nil && read.apns == nil && read.tls == nil)
        #expect(read.bcryptCost == defaults.bcryptCost && read.heartbeatSeconds == defaults.heartbeatSeconds)
        #expect(read.tokenLifetime == defaults.tokenLifetime && read.refreshTokenLifetime == defaults.refreshTokenLifetime)
        #expect(read.rateLimits == defaults.rateLimits && read.drainDelay == defaults.drainDelay)
        #expect(read.connectionLimits.maxConnections == nil && read.connectionLimits.idleTimeout == defaults.connectionLimits.idleTimeout)
        #expect(read.servesWebClient && read.linkPreviews && !read.openOrganizations && read.trustedProxies.isEmpty)
        #expect(read.domainJoins == .proven && read.smtp == nil && read.publicURL == nil && read.webRoot == nil)
        #expect(read.attachmentsPath == nil && read.retentionInterval == defaults.retentionInterval)
    }

    /// A container's environment alone sets every value where the server reads it.
    @Test func everyVariableLandsWhereTheServerReadsIt() throws {
        let environment = [
            "PARLEY_HOST": "0.0.0.0", "PARLEY_PORT": "9000", "PARLEY_DATA_DIR": "/srv/parley", "PARLEY_LOG_LEVEL": "debug",
            "PARLEY_BCRYPT_COST": "4", "PARLEY_HEARTBEAT_SECONDS": "20", "PARLEY_ACCESS_TOKEN_MINUTES": "5",
            "PARLEY_REFRESH_TOKEN_DAYS": "7", "PARLEY_DOMAIN_JOINS": "trust", "PARLEY_SMTP_URL": "smtp://mail.example.com:2525",
            "PARLEY_SMTP_FROM": "Chat <chat@example.com>", "PARLEY_PUBLIC_URL": "https://chat.example.com",
            "PARLEY_MAX_ATTACHMENT_BYTES": "1024", "PARLEY_REQUEST_HEAD_TIMEOUT": "2.5", "PARLEY_IDLE_TIMEOUT": "90",
            "PARLEY_BODY_TIMEOUT": "12", "PARLEY_MAX_CONNECTIONS": "500", "PARLEY_LARGE_GROUP_SIZE": "50",
            "PARLEY_SEND_LIMIT": "10/2", "PARLEY_TYPING_LIMIT": "off", "PARLEY_DRAIN_SECONDS": "0.5",
            "PARLEY_OPEN_ORGANIZATIONS": "YES", "PARLEY_JWT_SECRET": String(repeating: "s", count: 32),
            "PARLEY_LINK_PREVIEWS": "off", "PARLEY_LINK_PREVIEW_ALLOW": "10.0.0.0/8", "PARLEY_RETENTION_INTERVAL": "60",
            "PARLEY_ATTACHMENTS_DIR": "/mnt/shared", "PARLEY_TLS_CERT": "/etc/c.pem", "PARLEY_TLS_KEY": "/etc/k.pem",
            "PARLEY_TRUSTED_PROXIES": "10.1.0.0/16, 192.168.1.1", "PARLEY_WEB_ROOT": "/srv/web", "PARLEY_WEB_CLIENT": "off",
            "PARLEY_DATABASE_URL": "postgres://parley@db.internal:5433/chat", "PARLEY_NODE_ID": "node-a",
            "PARLEY_CLUSTER_HEARTBEAT_MS": "250", "PARLEY_CLUSTER_DEAD_AFTER_MS": "1500",
        ]
        let read = try ServerConfiguration(settings: ServerSettings(environment: environment))
        #expect(read.host == "0.0.0.0" && read.port == 9000 && read.dataDirectory == "/srv/parley" && read.logLevel == .debug)
        #expect(read.bcryptCost == 4 && read.heartbeatSeconds == 20)
        #expect(read.tokenLifetime == .seconds(300) && read.refreshTokenLifetime == .seconds(7 * 86400))
        #expect(read.domainJoins == .trusted && read.smtp?.host == "mail.example.com" && read.smtp?.port == 2525)
        #expect(read.publicURL?.absoluteString == "https://chat.example.com" && read.maxAttachmentBytes == 1024)
        #expect(read.connectionLimits.requestHeadTimeout == .milliseconds(2500) && read.connectionLimits.idleTimeout == .seconds(90))
        #expect(read.connectionLimits.bodyTimeout == .seconds(12) && read.connectionLimits.maxConnections == 500)
        #expect(read.largeGroupSize == 50 && read.rateLimits.enabled)
        #expect(read.rateLimits.sendsPerUser == RateLimit(parsing: "10/2") && read.rateLimits.typingPerUser == nil)
        #expect(read.rateLimits.receiptsPerUser == RateLimitSettings().receiptsPerUser, "a limit not given keeps its default")
        #expect(read.drainDelay == .milliseconds(500) && read.openOrganizations && read.jwtSecret?.utf8.count == 32)
        #expect(!read.linkPreviews && read.linkPreviewAllow.map(\.description) == ["10.0.0.0/8"])
        #expect(read.retentionInterval == .seconds(60) && read.attachmentsPath == "/mnt/shared")
        #expect(read.tls == TLSFiles(certificatePath: "/etc/c.pem", keyPath: "/etc/k.pem"))
        #expect(read.trustedProxies == ["10.1.0.0/16", "192.168.1.1"] && read.webRoot == "/srv/web" && !read.servesWebClient)
        #expect(read.usesPostgres && read.cluster?.nodeId == "node-a")
        #expect(read.cluster?.heartbeatInterval == .milliseconds(250) && read.cluster?.deadAfter == .milliseconds(1500))
    }

    @Test func anOptionBeatsItsVariableAndAnEmptyVariableIsNone() throws {
        let read = try ServerConfiguration(settings: ServerSettings(
            options: ["PARLEY_PORT": "8081", "PARLEY_RATE_LIMITS": "off"],
            environment: ["PARLEY_PORT": "9000", "PARLEY_RATE_LIMITS": "on", "PARLEY_HOST": "", "PARLEY_SEND_LIMIT": "bad"]))
        #expect(read.port == 8081 && read.host == ServerConfiguration().host)
        #expect(!read.rateLimits.enabled, "with the limits off, a bad limit is not read")
    }

    /// `backup`, `restore` and `keys` find the data where `serve` keeps it.
    @Test func theStorageCommandsReadThePlaceAsServeDoes() throws {
        let environment = ["PARLEY_DATA_DIR": "/srv/parley", "PARLEY_ATTACHMENTS_DIR": "/mnt/files", "PARLEY_PORT": "nonsense"]
        let storage = try ServerConfiguration(storageSettings: ServerSettings(environment: environment))
        #expect(storage.dataDirectory == "/srv/parley" && storage.attachmentsDirectory == "/mnt/files")
        #expect(storage.databasePath == "/srv/parley/parley.sqlite" && storage.databaseURL == nil)
        let served = try ServerConfiguration(settings: ServerSettings(options: ["PARLEY_PORT": "1"], environment: environment))
        #expect(served.databasePath == storage.databasePath && served.attachmentsDirectory == storage.attachmentsDirectory)
        #expect(throws: ConfigurationError("--database must be a postgres:// or postgresql:// URL")) {
            try ServerConfiguration(storageSettings: ServerSettings(options: ["PARLEY_DATABASE_URL": "mysql://x/y"], environment: [:]))
        }
    }

    /// Every variable the reader knows is one `parley serve` documents, so an option is not
    /// added to one side only.
    @Test func everySettingReadIsOneServeDocuments() throws {
        func names(in path: String) throws -> Set<String> {
            let text = try String(contentsOf: Repository.url(path), encoding: .utf8)
            let pattern = try NSRegularExpression(pattern: "PARLEY_[A-Z_]+[A-Z]")
            return Set(pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)).map {
                String(text[Range($0.range, in: text)!])
            })
        }
        let read = try names(in: "Sources/ParleyServer/ServerSettings.swift")
        let documented = try names(in: "Sources/parley/Serve.swift")
        #expect(read.count > 40)
        #expect(read.subtracting(documented).isEmpty, "read but not documented by serve: \(read.subtracting(documented).sorted())")
        #expect(documented.subtracting(read).isEmpty, "documented by serve but never read: \(documented.subtracting(read).sorted())")
    }
}
