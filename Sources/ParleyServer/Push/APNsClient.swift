import AsyncHTTPClient
import Foundation
import JWTKit
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import ParleyProtocol
import ParleyStorage

/// One notification for one device.
struct APNsRequest: Sendable {
    var deviceToken: String
    var environment: PushEnvironment
    /// The JSON payload (at most 4 KB).
    var payload: [UInt8]
    /// Notifications with the same id replace each other on the device (one per conversation).
    var collapseId: String?
    /// 10: now (alerts); 5: when convenient.
    var priority: Int = 10
}

/// What APNs did with a notification, after retries.
enum APNsOutcome: Sendable, Equatable {
    /// 200: accepted for delivery.
    case delivered
    /// 410 Unregistered or 400 BadDeviceToken: the token is dead and must be removed.
    case deviceGone(status: Int, reason: String)
    /// Another 4xx: this notification will never be accepted as it is (kept device, logged).
    case rejected(status: Int, reason: String)
    /// 429, 5xx or network errors, on every attempt.
    case failed(status: Int?, reason: String)
}

/// The provider authentication token: an ES256 JWT (`kid` = key id, `iss` = team id, `iat`)
/// reused until it is `refreshInterval` old, as APNs asks (not more than one new token per 20
/// minutes, none older than an hour).
actor ProviderToken {
    private struct Claims: JWTPayload {
        var iss: IssuerClaim
        var iat: IssuedAtClaim
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    private let keys = JWTKeyCollection()
    private let keyId: String
    private let teamId: String
    private let refreshInterval: TimeInterval
    private let now: @Sendable () -> Date
    private var current: (token: String, issuedAt: Date)?
    /// Tokens signed so far (for metrics and tests).
    private(set) var signedCount = 0

    init(configuration: APNsConfiguration, now: @escaping @Sendable () -> Date) async throws {
        let key: ES256PrivateKey
        do {
            key = try ES256PrivateKey(pem: configuration.privateKeyPEM)
        } catch {
            throw ServerStartError("The APNs key is not a P-256 private key: \(error)")
        }
        await keys.add(ecdsa: key, kid: JWKIdentifier(string: configuration.keyId))
        keyId = configuration.keyId
        teamId = configuration.teamId
        refreshInterval = configuration.tokenRefreshInterval.timeInterval
        self.now = now
    }

    /// The token to send now: the cached one, or a new one when it is too old.
    func token() async throws -> String {
        let date = now()
        if let current, date.timeIntervalSince(current.issuedAt) < refreshInterval, date >= current.issuedAt {
            return current.token
        }
        // Whole seconds: APNs reads `iat` as an integer.
        let issuedAt = Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
        let token = try await keys.sign(
            Claims(iss: .init(value: teamId), iat: .init(value: issuedAt)), kid: JWKIdentifier(string: keyId))
        current = (token, issuedAt)
        signedCount += 1
        return token
    }

    /// APNs called `token` expired: the next `token()` signs a new one (once, however many
    /// requests failed with the same token).
    func expire(_ token: String) {
        if current?.token == token { current = nil }
    }
}

/// Sends notifications to APNs over HTTP/2 (async-http-client negotiates h2 by ALPN) with
/// token-based authentication, and interprets its answers.
final class APNsClient: Sendable {
    private let configuration: APNsConfiguration
    private let http: HTTPClient
    private let providerToken: ProviderToken
    private let metrics: Metrics
    private let logger: Logger

    init(configuration: APNsConfiguration, metrics: Metrics, logger: Logger, now: @escaping @Sendable () -> Date = Date.init) async throws {
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
        providerToken = try await ProviderToken(configuration: configuration, now: now)
        var tls = TLSConfiguration.makeClientConfiguration()
        if !configuration.additionalTrustRootsPEM.isEmpty {
            let certificates = try configuration.additionalTrustRootsPEM.flatMap {
                try NIOSSLCertificate.fromPEMBytes(Array($0.utf8))
            }
            tls.additionalTrustRoots = [.certificates(certificates)]
        }
        var httpConfiguration = HTTPClient.Configuration(tlsConfiguration: tls)
        httpConfiguration.httpVersion = .automatic
        httpConfiguration.timeout = .init(connect: .seconds(10), read: .seconds(Int64(configuration.requestTimeout.timeInterval)))
        http = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: httpConfiguration)
    }

    /// Sends one notification, retrying 429 and 5xx (and network errors) with backoff and
    /// jitter up to `maxRetries` times, and refreshing an expired provider token once.
    func send(_ request: APNsRequest) async -> APNsOutcome {
        var attempt = 0
        var refreshedToken = false
        while true {
            let answer = await attemptOnce(request)
            switch answer {
            case .answered(200, _, _):
                metrics.increment("parley_push_notifications_total", labels: ["outcome": "delivered"])
                return .delivered
            case .answered(let status, let reason, _) where status == 410 || (status == 400 && reason == "BadDeviceToken"):
                metrics.increment("parley_push_notifications_total", labels: ["outcome": "device_gone"])
                log(.info, "APNs says the device is gone", request, status: status, reason: reason)
                return .deviceGone(status: status, reason: reason)
            case .answered(403, "ExpiredProviderToken", let token) where !refreshedToken:
                refreshedToken = true
                await providerToken.expire(token)
                metrics.increment("parley_push_provider_token_refreshes_total")
                log(.notice, "APNs provider token expired; signing a new one", request, status: 403, reason: "ExpiredProviderToken")
                continue
            case .answered(let status, let reason, _) where status == 429 || status >= 500:
                if attempt < configuration.maxRetries {
                    attempt += 1
                    metrics.increment("parley_push_retries_total", labels: ["status": "\(status)"])
                    log(.debug, "APNs asked to retry", request, status: status, reason: reason)
                    await backoff(attempt: attempt)
                    continue
                }
                metrics.increment("parley_push_notifications_total", labels: ["outcome": "failed"])
                log(.warning, "APNs kept refusing; giving up", request, status: status, reason: reason)
                return .failed(status: status, reason: reason)
            case .answered(let status, let reason, _):
                metrics.increment("parley_push_notifications_total", labels: ["outcome": "rejected"])
                log(.warning, "APNs rejected a notification", request, status: status, reason: reason)
                return .rejected(status: status, reason: reason)
            case .unreachable(let reason):
                if attempt < configuration.maxRetries {
                    attempt += 1
                    metrics.increment("parley_push_retries_total", labels: ["status": "network"])
                    await backoff(attempt: attempt)
                    continue
                }
                metrics.increment("parley_push_notifications_total", labels: ["outcome": "failed"])
                log(.warning, "APNs unreachable; giving up", request, status: nil, reason: reason)
                return .failed(status: nil, reason: reason)
            }
        }
    }

    /// Closes the HTTP/2 connections.
    func shutdown() async {
        try? await http.shutdown()
    }

    private enum Answer {
        case answered(Int, String, token: String)
        case unreachable(String)
    }

    private func attemptOnce(_ request: APNsRequest) async -> Answer {
        let token: String
        do {
            token = try await providerToken.token()
        } catch {
            return .unreachable("could not sign the provider token: \(error)")
        }
        var http = HTTPClientRequest(
            url: configuration.baseURL(for: request.environment).appendingPathComponent("3/device/\(request.deviceToken)").absoluteString)
        http.method = .POST
        http.headers.add(name: "authorization", value: "bearer \(token)")
        http.headers.add(name: "apns-topic", value: configuration.topic)
        http.headers.add(name: "apns-push-type", value: "alert")
        http.headers.add(name: "apns-priority", value: "\(request.priority)")
        let expiration = Int(Date().timeIntervalSince1970 + configuration.expiration.timeInterval)
        http.headers.add(name: "apns-expiration", value: "\(expiration)")
        if let collapseId = request.collapseId { http.headers.add(name: "apns-collapse-id", value: collapseId) }
        http.headers.add(name: "content-type", value: "application/json")
        http.body = .bytes(ByteBuffer(bytes: request.payload))
        do {
            let response = try await self.http.execute(http, timeout: .seconds(Int64(configuration.requestTimeout.timeInterval)))
            let body = try await response.body.collect(upTo: 16 * 1024)
            let status = Int(response.status.code)
            var reason = ""
            if status != 200, let json = try? JSONSerialization.jsonObject(with: Data(buffer: body)) as? [String: Any] {
                reason = json["reason"] as? String ?? ""
            }
            return .answered(status, reason, token: token)
        } catch {
            return .unreachable("\(error)")
        }
    }

    private func backoff(attempt: Int) async {
        let base = configuration.retryBaseDelay.timeInterval * pow(2, Double(attempt - 1))
        let delay = base * Double.random(in: 0.5...1.5)
        try? await Task.sleep(for: .seconds(delay))
    }

    /// Logs an outcome with the token's tail only and never the message text.
    private func log(_ level: Logger.Level, _ message: Logger.Message, _ request: APNsRequest, status: Int?, reason: String) {
        logger.log(level: level, message, metadata: [
            "device": "…\(request.deviceToken.suffix(8))", "environment": "\(request.environment.rawValue)",
            "status": "\(status.map(String.init) ?? "none")", "reason": "\(reason)",
        ])
    }
}
