import Foundation
import ParleyProtocol
import ParleyStorage

/// How the server reaches Apple Push Notification service (token-based authentication).
///
/// With no configuration push is off: messages still reach connected devices and the outbox
/// of each client catches up on the next start; nothing is queued for APNs.
public struct APNsConfiguration: Sendable {
    /// The team's signing key, the PEM contents of the `.p8` file from the developer account.
    public var privateKeyPEM: String
    /// The key's id (10 characters), sent as the JWT's `kid`.
    public var keyId: String
    /// The developer team id, sent as the JWT's `iss`.
    public var teamId: String
    /// The app's bundle id, sent as `apns-topic`.
    public var topic: String
    /// Where sandbox devices (debug builds) are reached.
    public var sandboxURL: URL = URL(string: "https://api.sandbox.push.apple.com")!
    /// Where production devices are reached.
    public var productionURL: URL = URL(string: "https://api.push.apple.com")!
    /// Extra roots to trust besides the system's (tests with a local APNs).
    public var additionalTrustRootsPEM: [String] = []
    /// How long APNs keeps trying to deliver a notification to a device that is off.
    public var expiration: Duration = .seconds(24 * 3600)
    /// After a notification to a device for a conversation, later messages of that conversation
    /// within this window are merged into one follow-up notification (latest text and a count).
    public var coalesceWindow: Duration = .seconds(2)
    /// Requests to APNs in flight at once.
    public var maxConcurrentRequests: Int = 16
    /// Notifications waiting to be sent; beyond it the oldest are dropped (and counted).
    public var queueLimit: Int = 10_000
    /// Further attempts after a 429 or 5xx answer.
    public var maxRetries: Int = 3
    /// The first retry waits about this long (doubled each attempt, with jitter).
    public var retryBaseDelay: Duration = .milliseconds(500)
    /// The provider token is reused and signed again once it is this old (APNs refuses
    /// tokens older than an hour and too frequent renewals).
    public var tokenRefreshInterval: Duration = .seconds(50 * 60)
    /// How long one request to APNs may take.
    public var requestTimeout: Duration = .seconds(10)

    /// A configuration from the key and the app's identifiers.
    public init(privateKeyPEM: String, keyId: String, teamId: String, topic: String) {
        self.privateKeyPEM = privateKeyPEM
        self.keyId = keyId
        self.teamId = teamId
        self.topic = topic
    }

    /// The host for a device registered in `environment`.
    func baseURL(for environment: PushEnvironment) -> URL {
        environment == .production ? productionURL : sandboxURL
    }

    /// A configuration from a `.p8` key file, or an operator-readable error.
    public static func load(keyFile: String, keyId: String, teamId: String, topic: String) throws -> APNsConfiguration {
        guard let data = FileManager.default.contents(atPath: keyFile) else {
            throw ServerStartError("Cannot read the APNs key file \(keyFile)")
        }
        let pem = String(decoding: data, as: UTF8.self)
        guard pem.contains("PRIVATE KEY") else {
            throw ServerStartError("\(keyFile) is not a PEM private key (.p8)")
        }
        for (name, value) in [("key id", keyId), ("team id", teamId), ("topic", topic)] where value.isEmpty {
            throw ServerStartError("The APNs \(name) is empty")
        }
        return APNsConfiguration(privateKeyPEM: pem, keyId: keyId, teamId: teamId, topic: topic)
    }
}
