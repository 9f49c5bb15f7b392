import Foundation
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing

/// The token buckets of `Chat/RateLimits.swift` alone, on a clock moved by hand: how many a
/// bucket lets through, exactly when it refills, what a refusal costs and says, and which
/// requests share a bucket. Quarter seconds and power-of-two rates keep the arithmetic exact.
@Suite struct ServerRateLimitRulesTests {
    static let start = Date(timeIntervalSince1970: 1_760_000_000)

    /// A limiter with every limit off except `kind`'s, which is `limit`.
    static func limiter(_ clock: ManualClock, send limit: RateLimit?, adjust: (inout RateLimitSettings) -> Void = { _ in }) -> RateLimiter {
        var settings = RateLimitSettings()
        settings.sendsPerUser = limit
        adjust(&settings)
        return RateLimiter(settings: settings, now: { clock.now() })
    }

    /// Takes `count` times and returns the answers (nil: let through, n: refused, wait n s).
    static func takes(_ limiter: RateLimiter, _ count: Int, key: String = "u", cost: Double = 1) -> [Int?] {
        (0..<count).map { _ in limiter.take(.send, key, cost: cost) }
    }

    /// A bucket lets exactly its burst through at once; the next is told to wait one refill.
    @Test func aNewBucketLetsExactlyTheBurstThrough() {
        let clock = ManualClock(start: Self.start)
        let limiter = Self.limiter(clock, send: RateLimit(burst: 5, perSecond: 0.5))
        #expect(Self.takes(limiter, 5) == [nil, nil, nil, nil, nil])
        #expect(limiter.take(.send, "u") == 2, "one token every 2 s")
        #expect(limiter.take(.send, "u") == 2, "asking again does not change the answer")
    }

    /// The wait a refusal announces is the exact time until the token is back (rounded up,
    /// never 0), for several rates: a client that waits `retryAfter` is let through, and one
    /// that comes back a quarter second earlier is not.
    @Test(arguments: [
        (perSecond: 0.5, wait: 2), (perSecond: 0.25, wait: 4), (perSecond: 1.0 / 32, wait: 32), (perSecond: 4.0, wait: 1),
        (perSecond: 64.0, wait: 1),
    ])
    func retryAfterIsTheTimeUntilTheNextToken(perSecond: Double, wait: Int) {
        let clock = ManualClock(start: Self.start)
        let limiter = Self.limiter(clock, send: RateLimit(burst: 2, perSecond: perSecond))
        #expect(Self.takes(limiter, 2) == [nil, nil])
        #expect(limiter.take(.send, "u") == wait)
        let exact = 1 / perSecond
        if exact >= 0.5 {
            clock.advance(by: exact - 0.25)
            #expect(limiter.take(.send, "u") != nil, "a quarter second early is still refused")
            clock.advance(by: 0.25)
        } else {
            clock.advance(by: exact)
        }
        #expect(limiter.take(.send, "u") == nil, "on time it goes")
        #expect(limiter.take(.send, "u") != nil, "and only the one")
    }

    /// Part of a token already back: the wait is what is left, rounded up.
    @Test func aPartlyRefilledTokenShortensTheWait() {
        let clock = ManualClock(start: Self.start)
        let limiter = Self.limiter(clock, send: RateLimit(burst: 1, perSecond: 0.125))
        #expect(limiter.take(.send, "u") == nil)
        #expect(limiter.take(.send, "u") == 8)
        clock.advance(by: 3)
        #expect(limiter.take(.send, "u") == 5)
        clock.advance(by: 4.5)
        #expect(limiter.take(.send, "u") == 1, "half a second left is announced as one")
        clock.advance(by: 0.5)
        #expect(limiter.take(.send, "u") == nil)
    }

    /// Hammering a refused bucket neither costs tokens nor pushes the refill back: the token
    /// is there exactly one refill after the last accepted request, however many were refused.
    @Test func refusalsTakeNothingAndDoNotDelayTheRefill() {
        let clock = ManualClock(start: Self.start)
        let limiter = Self.limiter(clock, send: RateLimit(burst: 3, perSecond: 0.25))
        #expect(Self.takes(limiter, 3) == [nil, nil, nil])
        for _ in 0..<15 {
            clock.advance(by: 0.25)
            #expect(limiter.take(.send, "u") != nil)
        }
        clock.advance(by: 0.25)  // 4 s in all: one token
        #expect(limiter.take(.send, "u") == nil)
        #expect(limiter.take(.send, "u") == 4)
    }

    /// A long quiet spell refills up to the burst, never beyond: an idle hour does not buy
    /// an hour's worth of sends at once.
    @Test func refillStopsAtTheBurst() {
        let clock = ManualClock(start: Self.start)
        let limiter = Self.limiter(clock, send: RateLimit(burst: 4, perSecond: 2))
        #expect(Self.takes(limiter, 4).allSatisfy { $0 == nil })
        clock.advance(by: 3600)
        #expect(Self.takes(limiter, 5) == [nil, nil, nil, nil, 1])
    }

    /// The clock stepping back (an NTP correction) mints no tokens: time is counted once.
    @Test func aClockSteppingBackMintsNoTokens() {
        let clock = ManualClock(start: Self.start)
        let limiter = Self.limiter(clock, send: RateLimit(burst: 2, perSecond: 0.25))
        #expect(Self.takes(limiter, 2) == [nil, nil])
        clock.advance(by: -60)
        #expect(limiter.take(.send, "u") != nil, "no refill for a step back")
        clock.advance(by: 60)
        #expect(limiter.take(.send, "u") != nil, "back where it was: still no time has passed")
        clock.advance(by: 4)
        #expect(limiter.take(.send, "u") == nil, "one refill later, one token")
        #expect(limiter.take(.send, "u") != nil)
    }

    /// `check` answers like `take` but takes nothing (a login is checked first and counted only
    /// when it fails); a refused check still says how long.
    @Test func checkTakesNothing() {
        let clock = ManualClock(start: Self.start)
        let limiter = Self.limiter(clock, send: RateLimit(burst: 2, perSecond: 0.5))
        for _ in 0..<10 { #expect(limiter.check(.send, "u") == nil) }
        #expect(Self.takes(limiter, 3) == [nil, nil, 2])
        #expect(limiter.check(.send, "u") == 2)
        clock.advance(by: 2)
        #expect(limiter.check(.send, "u") == nil)
        #expect(limiter.check(.send, "u") == nil, "checking twice still leaves the token")
        #expect(limiter.take(.send, "u") == nil)
        #expect(limiter.check(.send, "u") == 2)
    }

    /// One upload larger than the whole budget goes through on a full bucket (else it could
    /// never go), and is then paid for: the next one waits until the debt is refilled.
    @Test func aCostAboveTheBurstGoesOnAFullBucketAndIsPaidFor() {
        let clock = ManualClock(start: Self.start)
        let limiter = Self.limiter(clock, send: RateLimit(burst: 100, perSecond: 10))
        #expect(limiter.take(.send, "u", cost: 250) == nil)
        #expect(limiter.take(.send, "u", cost: 1) == 16, "150 in debt plus 1: 15.1 s")
        clock.advance(by: 15)
        #expect(limiter.take(.send, "u", cost: 1) == 1, "at 0 tokens, still short")
        clock.advance(by: 1)
        #expect(limiter.take(.send, "u", cost: 1) == nil)
        clock.advance(by: 10)
        // Not full: a big one waits until the bucket is (the burst is what it needs).
        #expect(limiter.take(.send, "u", cost: 50) == nil)
        #expect(limiter.take(.send, "u", cost: 250) == 5, "50 tokens, 100 needed: 5 s")
        #expect(limiter.take(.send, "u", cost: 40) == nil, "a smaller one still fits")
    }

    /// Buckets are per key and per kind: one user's flood does not throttle another, and a
    /// flood of sends leaves the same user's typing, receipts and logins alone.
    @Test func keysAndKindsHaveTheirOwnBuckets() throws {
        let clock = ManualClock(start: Self.start)
        let limiter = Self.limiter(clock, send: RateLimit(burst: 2, perSecond: 1)) {
            $0.typingPerUser = RateLimit(burst: 1, perSecond: 1)
            $0.receiptsPerUser = RateLimit(burst: 1, perSecond: 1)
            $0.loginFailuresPerAccount = RateLimit(burst: 1, perSecond: 1)
        }
        #expect(Self.takes(limiter, 3, key: "alice") == [nil, nil, 1])
        #expect(Self.takes(limiter, 3, key: "bob") == [nil, nil, 1])
        #expect(Self.takes(limiter, 1, key: "alice:x") == [nil], "a key with a colon is another key")
        for kind in [RateKind.typing, .receipt, .loginAccount] {
            #expect(limiter.take(kind, "alice") == nil, "\(kind)")
            #expect(limiter.take(kind, "alice") == 1, "\(kind) has its own small bucket")
        }
        #expect(limiter.take(.uploadBytes, "alice", cost: 1_000_000) == nil, "the default upload budget is untouched")
    }

    /// `enforce` throws `rate_limited` with the wait, and only when `take` would refuse.
    @Test func enforceThrowsRateLimitedWithTheWait() throws {
        let clock = ManualClock(start: Self.start)
        let limiter = Self.limiter(clock, send: RateLimit(burst: 1, perSecond: 1.0 / 16))
        try limiter.enforce(.send, "u")
        let error = #expect(throws: ChatError.self) { try limiter.enforce(.send, "u") }
        #expect(error?.code == .rateLimited && error?.retryAfter == 16)
        clock.advance(by: 16)
        try limiter.enforce(.send, "u")
    }

    /// Limits turned off, or one limit set to nil, never refuse, however many.
    @Test func limitsThatAreOffNeverRefuse() {
        let clock = ManualClock(start: Self.start)
        let off = RateLimiter(settings: .off, now: { clock.now() })
        let unset = Self.limiter(clock, send: nil)
        for _ in 0..<1000 {
            #expect(off.take(.send, "u") == nil && off.take(.loginAccount, "u") == nil)
            #expect(unset.take(.send, "u") == nil)
        }
        #expect(off.limit(.send) == nil && off.limit(.registration) == nil)
        #expect(unset.limit(.typing) == RateLimit(burst: 10, perSecond: 5), "the others keep their defaults")
    }

    /// The defaults as documented: 100 sends at once then 20 a second; 10 failed logins per
    /// account a minute; 10 registrations an hour; typing 10 then 5 a second.
    @Test func theDefaultsAreTheDocumentedOnes() {
        let clock = ManualClock(start: Self.start)
        let limiter = RateLimiter(settings: RateLimitSettings(), now: { clock.now() })
        #expect((0..<100).allSatisfy { _ in limiter.take(.send, "u") == nil })
        #expect(limiter.take(.send, "u") == 1)
        clock.advance(by: 1)
        #expect((0..<20).allSatisfy { _ in limiter.take(.send, "u") == nil })
        #expect(limiter.take(.send, "u") == 1)
        #expect((0..<10).allSatisfy { _ in limiter.take(.loginAccount, "a") == nil })
        #expect(limiter.take(.loginAccount, "a") == 6)
        #expect((0..<10).allSatisfy { _ in limiter.take(.registration, "203.0.113.1") == nil })
        #expect(limiter.take(.registration, "203.0.113.1") == 360)
        #expect((0..<10).allSatisfy { _ in limiter.take(.typing, "u") == nil })
        #expect(limiter.take(.typing, "u") == 1)
        #expect(limiter.limit(.receipt) == RateLimit(burst: 40, perSecond: 20))
        #expect(limiter.limit(.uploadBytes) == .count(200 * 1024 * 1024, per: 60))
        #expect(limiter.limit(.loginAddress) == .count(30, per: 60))
    }

    /// Seeded runs against a plain model of a token bucket: every answer (let through, or the
    /// exact wait) matches after any mix of waits, single takes, checks and costly takes.
    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func seededRunsMatchTheModel(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let rates: [Double] = [0.125, 0.25, 0.5, 1, 2, 4]
        let limit = RateLimit(burst: Double(Int.random(in: 1...8, using: &random)), perSecond: rates.randomElement(using: &random)!)
        let clock = ManualClock(start: Self.start)
        let limiter = Self.limiter(clock, send: limit)
        var tokens = limit.burst
        for step in 0..<400 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<3:
                let elapsed = Double(Int.random(in: 1...16, using: &random)) / 4
                clock.advance(by: elapsed)
                tokens = min(limit.burst, tokens + elapsed * limit.perSecond)
            case 3:
                let expected: Int? = tokens >= 1 ? nil : max(1, Int(((1 - tokens) / limit.perSecond).rounded(.up)))
                #expect(limiter.check(.send, "k") == expected, "seed \(seed) step \(step): check")
            default:
                let cost = Double(Int.random(in: 1...3, using: &random))
                let needed = min(cost, limit.burst)
                let expected: Int? = tokens >= needed ? nil : max(1, Int(((needed - tokens) / limit.perSecond).rounded(.up)))
                #expect(limiter.take(.send, "k", cost: cost) == expected, "seed \(seed) step \(step): take \(cost) of \(tokens)")
                if expected == nil { tokens -= cost }
            }
        }
    }

    /// With more than 100,000 buckets the full ones are forgotten, but a bucket still being
    /// paid for is kept: spraying other keys cannot reset a guesser's login bucket.
    @Test func forgettingFullBucketsKeepsTheOnesInUse() {
        let clock = ManualClock(start: Self.start)
        let limiter = Self.limiter(clock, send: RateLimit(burst: 4, perSecond: 64)) {
            $0.loginFailuresPerAccount = RateLimit(burst: 2, perSecond: 0.25)
        }
        #expect(limiter.take(.loginAccount, "victim") == nil && limiter.take(.loginAccount, "victim") == nil)
        for n in 0..<100_001 { _ = limiter.take(.send, "spray\(n)") }
        clock.advance(by: 2)
        #expect(limiter.take(.send, "one more") == nil, "this take sweeps the full buckets")
        #expect(limiter.take(.loginAccount, "victim") == 2, "half a token back, still 2 s to wait")
        #expect(Self.takes(limiter, 5, key: "spray7") == [nil, nil, nil, nil, 1], "a forgotten bucket is a full one")
    }

    /// Per-address limits skip the machine itself (and a proxy on it); every other address,
    /// IPv4-mapped ones included, has its own key.
    @Test(arguments: [
        ("127.0.0.1", nil), ("127.8.9.10", nil), ("::1", nil), ("::ffff:127.0.0.1", nil), ("203.0.113.9", "203.0.113.9"),
        ("2001:db8::127", "2001:db8::127"), ("::ffff:203.0.113.9", "::ffff:203.0.113.9"), ("10.127.0.1", "10.127.0.1"),
    ] as [(String, String?)])
    func addressKeysSkipOnlyLoopback(address: String, key: String?) {
        #expect(RateLimiter.addressKey(address) == key)
    }

    @Test func anUnknownPeerHasNoAddressKey() {
        #expect(RateLimiter.addressKey(nil) == nil)
    }

    /// `--send-limit` and friends: "COUNT/SECONDS", both positive numbers; anything else is nil.
    @Test(arguments: [
        ("10/60", RateLimit(burst: 10, perSecond: 10.0 / 60)), ("1/1", RateLimit(burst: 1, perSecond: 1)),
        ("2.5/0.5", RateLimit(burst: 2.5, perSecond: 5)), ("100/1", RateLimit(burst: 100, perSecond: 100)),
        ("off", nil), ("", nil), ("10", nil), ("10/", nil), ("/60", nil), ("10/60/1", nil), ("-1/60", nil), ("10/-60", nil),
        ("0/60", nil), ("10/0", nil), (" 10/60", nil), ("ten/60", nil), ("nan/60", nil),
    ] as [(String, RateLimit?)])
    func limitsParse(text: String, limit: RateLimit?) {
        #expect(RateLimit(parsing: text) == limit)
    }
}
