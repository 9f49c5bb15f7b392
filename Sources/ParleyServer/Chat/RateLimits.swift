import Foundation
import ParleyProtocol
import Synchronization
import ParleyStorage

/// A token bucket's shape: `burst` tokens at most, refilled at `perSecond`.
public struct RateLimit: Sendable, Equatable {
    /// The most tokens the bucket holds (a new bucket starts full).
    public var burst: Double
    /// The tokens added back each second.
    public var perSecond: Double

    /// A bucket of `burst` tokens refilled at `perSecond`.
    public init(burst: Double, perSecond: Double) {
        self.burst = burst
        self.perSecond = perSecond
    }

    /// `count` per `seconds`, all of them available at once.
    public static func count(_ count: Double, per seconds: Double) -> RateLimit {
        RateLimit(burst: count, perSecond: count / seconds)
    }

    /// Parses "BURST/SECONDS" ("10/60": ten a minute); anything else, "off" included, is nil
    /// (the caller reads "off" as no limit).
    public init?(parsing text: String) {
        let parts = text.split(separator: "/")
        guard parts.count == 2, let count = Double(parts[0]), let seconds = Double(parts[1]), count > 0, seconds > 0 else { return nil }
        self = .count(count, per: seconds)
    }
}

/// Per-node limits (each node counts on its own). Why these defaults:
/// - Logins: 10 failures a minute per account and 30 per client address stop password guessing
///   (a person mistyping never gets there) and do not lock an account for longer than a minute.
/// - Registrations: 10 an hour per address, enough for a team signing up together behind one
///   office address.
/// - Sends: 20 a second per user with a burst of 100. No human types faster, an integration bot
///   posting several a second fits, and a phone coming back online flushes an outbox of up to
///   100 queued messages at once; beyond that the SDK waits `retryAfter` and goes on. Matrix's
///   0.2/s with a burst of 10 is meant for federation spam and throttles a busy bot here.
/// - Per-address limits skip loopback: that is the machine itself (local tools and tests), or a
///   proxy in front of Parley, which would lump every client together.
/// - Typing: 5 a second (the SDK sends one every few seconds while typing), receipts 20 a second.
/// - Uploads: 200 MB a minute per user (eight 25 MB files).
public struct RateLimitSettings: Sendable, Equatable {
    /// `false` turns every limit off (benchmarks).
    public var enabled = true
    /// Failed logins per account from one client address (nil: no limit).
    public var loginFailuresPerAccount: RateLimit? = .count(10, per: 60)
    /// Failed logins per client address (nil: no limit).
    public var loginFailuresPerAddress: RateLimit? = .count(30, per: 60)
    /// Registrations per client address (nil: no limit).
    public var registrationsPerAddress: RateLimit? = .count(10, per: 3600)
    /// Message sends per user (nil: no limit).
    public var sendsPerUser: RateLimit? = RateLimit(burst: 100, perSecond: 20)
    /// Typing commands per user (nil: no limit).
    public var typingPerUser: RateLimit? = RateLimit(burst: 10, perSecond: 5)
    /// Read and delivery receipts per user (nil: no limit).
    public var receiptsPerUser: RateLimit? = RateLimit(burst: 40, perSecond: 20)
    /// Uploaded bytes per user (nil: no limit).
    public var uploadBytesPerUser: RateLimit? = .count(200 * 1024 * 1024, per: 60)

    /// Every limit on, at its default.
    public init() {}

    /// Every limit off.
    public static var off: RateLimitSettings {
        var settings = RateLimitSettings()
        settings.enabled = false
        return settings
    }
}

/// What a limit counts.
enum RateKind: String, Sendable {
    case loginAccount, loginAddress, registration, send, typing, receipt, uploadBytes
}

/// Token buckets by key, in memory. A refused take changes nothing and says how long to wait.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var at: Double
    }

    let settings: RateLimitSettings
    private let now: @Sendable () -> Date
    private let metrics: Metrics?
    private let buckets = Mutex<[String: Bucket]>([:])
    /// Consecutive failed logins per key and when the last one was.
    private let loginFailures = Mutex<[String: (count: Int, last: Double)]>([:])
    /// The longest a login waits however often it failed (an hour).
    static let maxLoginBackoff = 3600

    init(settings: RateLimitSettings, now: @escaping @Sendable () -> Date, metrics: Metrics? = nil) {
        self.settings = settings
        self.now = now
        self.metrics = metrics
    }

    /// The key for a per-address limit; nil (no limit) for loopback and unknown peers.
    static func addressKey(_ address: String?) -> String? {
        guard let address, address != "::1", !address.hasPrefix("127."), !address.hasPrefix("::ffff:127.") else { return nil }
        return address
    }

    func limit(_ kind: RateKind) -> RateLimit? {
        guard settings.enabled else { return nil }
        return switch kind {
        case .loginAccount: settings.loginFailuresPerAccount
        case .loginAddress: settings.loginFailuresPerAddress
        case .registration: settings.registrationsPerAddress
        case .send: settings.sendsPerUser
        case .typing: settings.typingPerUser
        case .receipt: settings.receiptsPerUser
        case .uploadBytes: settings.uploadBytesPerUser
        }
    }

    /// Takes `cost` tokens, or returns the seconds until they are there (nothing taken).
    func take(_ kind: RateKind, _ key: String, cost: Double = 1) -> Int? {
        wait(kind, key, cost: cost, taking: true)
    }

    /// The seconds until `cost` tokens are there, without taking any; nil when they are.
    func check(_ kind: RateKind, _ key: String, cost: Double = 1) -> Int? {
        wait(kind, key, cost: cost, taking: false)
    }

    /// Counts a refusal made by the caller (a login refused after ``check(_:_:cost:)``).
    func counted(_ kind: RateKind) {
        metrics?.increment("parley_rate_limited_total", labels: ["kind": kind.rawValue])
    }

    /// Takes the tokens or throws `rate_limited` with `retryAfter`.
    func enforce(_ kind: RateKind, _ key: String, cost: Double = 1) throws {
        if let seconds = take(kind, key, cost: cost) {
            metrics?.increment("parley_rate_limited_total", labels: ["kind": kind.rawValue])
            throw ChatError.rateLimited(retryAfter: seconds)
        }
    }

    private func wait(_ kind: RateKind, _ key: String, cost: Double, taking: Bool) -> Int? {
        guard let limit = limit(kind) else { return nil }
        let t = now().timeIntervalSince1970
        let id = kind.rawValue + ":" + key
        return buckets.withLock { buckets in
            var bucket = buckets[id] ?? Bucket(tokens: limit.burst, at: t)
            bucket.tokens = min(limit.burst, bucket.tokens + max(0, t - bucket.at) * limit.perSecond)
            // Never back: a clock stepped back must not have the same time counted again.
            bucket.at = max(bucket.at, t)
            // A cost above the burst (one huge upload) is let through when the bucket is full.
            let needed = min(cost, limit.burst)
            guard bucket.tokens >= needed else {
                buckets[id] = bucket
                return max(1, Int(((needed - bucket.tokens) / limit.perSecond).rounded(.up)))
            }
            if taking { bucket.tokens -= cost }
            buckets[id] = bucket
            if buckets.count > 100_000 { Self.forgetFull(&buckets, at: t, limiter: self) }
            return nil
        }
    }

    /// Seconds a login for `key` must still wait after its consecutive failures, or nil: beyond
    /// the per-account allowance (`--login-limit`'s count) each further failure doubles the wait
    /// (2 s, 4 s, 8 s … up to an hour), so guessing slows down exponentially while the bucket
    /// alone would allow a steady trickle. A success clears it.
    func loginBackoff(_ key: String) -> Int? {
        guard let limit = limit(.loginAccount) else { return nil }
        let t = now().timeIntervalSince1970
        return loginFailures.withLock { failures in
            guard let entry = failures[key] else { return nil }
            let beyond = entry.count - Int(limit.burst)
            guard beyond > 0 else { return nil }
            let wait = Double(min(Self.maxLoginBackoff, 1 << min(beyond, 20)))
            let left = entry.last + wait - t
            return left > 0 ? max(1, Int(left.rounded(.up))) : nil
        }
    }

    /// Counts a failed login for `key` (see ``loginBackoff(_:)``).
    func loginFailed(_ key: String) {
        guard limit(.loginAccount) != nil else { return }
        let t = now().timeIntervalSince1970
        loginFailures.withLock { failures in
            let count = (failures[key]?.count ?? 0) + 1
            failures[key] = (count, max(failures[key]?.last ?? t, t))
            // Forget keys idle for a day (their wait is long over).
            if failures.count > 100_000 { failures = failures.filter { t - $0.value.last < 86_400 } }
        }
    }

    /// A successful login: its key starts afresh.
    func loginSucceeded(_ key: String) {
        _ = loginFailures.withLock { $0.removeValue(forKey: key) }
    }

    /// Drops buckets that have refilled (they are the same as no bucket).
    private static func forgetFull(_ buckets: inout [String: Bucket], at t: Double, limiter: RateLimiter) {
        buckets = buckets.filter { id, bucket in
            guard let kind = RateKind(rawValue: String(id.prefix { $0 != ":" })), let limit = limiter.limit(kind) else { return false }
            return bucket.tokens + (t - bucket.at) * limit.perSecond < limit.burst
        }
    }
}
