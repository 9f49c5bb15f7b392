import Foundation
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing

/// Which address a request counts as (per-address limits: login guessing, registrations):
/// `AddressRange` parsing and matching, and `X-Forwarded-For` read behind trusted proxies
/// only, so that nobody can choose their own address, or escape a limit, by sending the header.
@Suite struct ServerForwardedForTests {
    // MARK: AddressRange

    /// What an operator may write as a trusted proxy, and what is refused at start.
    @Test(arguments: [
        ("10.0.0.5", 4, 32), ("10.0.0.0/8", 4, 8), ("0.0.0.0/0", 4, 0), ("192.168.1.0/24", 4, 24), ("10.0.0.0/12", 4, 12),
        ("::1", 16, 128), ("fd00::/8", 16, 8), ("::/0", 16, 0), ("2001:db8::/32", 16, 32), ("2001:db8::1/128", 16, 128),
        ("::ffff:10.0.0.5", 4, 32), ("::ffff:10.0.0.0/8", 4, 8),
    ])
    func rangesParse(text: String, bytes: Int, prefix: Int) throws {
        let range = try #require(AddressRange(text))
        #expect(range.bytes.count == bytes && range.prefixLength == prefix)
    }

    @Test(arguments: [
        "", "example.com", "10.0.0.0/33", "::/129", "10.0.0.0/-1", "10.0.0.0/x", "10.0.0.0/8/9", "/8", "10.0.0.256", "10.0.0",
        "1.2.3.4.5", "fe80::1%eth0", "[::1]", "10.0.0.1:80", "::ffff:10.0.0.0/104", " 10.0.0.1", "10.0.0.0/ 8", "gggg::1",
    ])
    func badRangesAreRefused(text: String) {
        #expect(AddressRange(text) == nil)
    }

    /// Matching follows the prefix bit by bit, also off byte boundaries; an address of the
    /// other family, or garbage, is never in a range.
    @Test(arguments: [
        ("10.0.0.0/12", "10.15.255.255", true), ("10.0.0.0/12", "10.16.0.0", false), ("10.0.0.0/12", "10.0.0.0", true),
        ("10.0.0.0/8", "11.0.0.1", false), ("10.0.0.5", "10.0.0.5", true), ("10.0.0.5", "10.0.0.6", false),
        ("192.168.128.0/17", "192.168.127.255", false), ("192.168.128.0/17", "192.168.200.1", true),
        ("0.0.0.0/0", "203.0.113.9", true), ("0.0.0.0/0", "2001:db8::1", false), ("::/0", "2001:db8::1", true),
        ("::/0", "10.0.0.1", false), ("::/0", "::ffff:10.0.0.1", false), ("fd00::/8", "fdff::1", true), ("fd00::/8", "fe00::1", false),
        ("fd00::/7", "fc00::1", true), ("fd00::/7", "fe00::1", false), ("2001:db8::/33", "2001:db8:7fff::1", true),
        ("2001:db8::/33", "2001:db8:8000::1", false), ("10.0.0.0/8", "::ffff:10.1.2.3", true),
        ("::ffff:10.0.0.0/8", "10.200.0.1", true), ("127.0.0.1", "::1", false), ("::1", "127.0.0.1", false),
        ("10.0.0.0/8", "not-an-address", false), ("10.0.0.0/8", "", false), ("10.0.0.0/8", "10.0.0.1 ", false),
        ("10.0.0.0/8", "10.0.0.1/8", false),
    ])
    func rangesMatchBitByBit(range: String, address: String, inside: Bool) throws {
        #expect(try #require(AddressRange(range)).contains(address) == inside)
    }

    /// The host bits written in a range do not matter (10.1.2.3/8 is 10.0.0.0/8).
    @Test func hostBitsOfARangeAreIgnored() throws {
        let range = try #require(AddressRange("10.1.2.3/8"))
        #expect(range.contains("10.200.0.1") && !range.contains("11.1.2.3"))
    }

    // MARK: The client's address

    static let trusted = ["10.0.0.0/8", "192.168.0.1", "fd00::/8"].compactMap(AddressRange.init)

    static func client(_ peer: String?, _ header: [String]) -> String? {
        ClientAddressMiddleware.client(peer: peer, forwardedFor: header, trusted: trusted)
    }

    /// An untrusted peer keeps its own address whatever it writes in the header.
    @Test(arguments: [
        ["198.51.100.7"], ["10.0.0.1"], ["1.1.1.1, 2.2.2.2"], ["garbage"], [""], ["127.0.0.1"], ["fd00::1", "10.0.0.2"],
    ])
    func anUntrustedPeerCannotNameAnotherAddress(header: [String]) {
        #expect(Self.client("203.0.113.50", header) == "203.0.113.50")
        #expect(Self.client("2001:db8::50", header) == "2001:db8::50")
        #expect(Self.client("127.0.0.1", header) == "127.0.0.1", "loopback is not trusted here")
    }

    /// Behind trusted proxies the client is the rightmost hop that is not one of them; what
    /// the client itself put further left never counts.
    @Test(arguments: [
        (["198.51.100.7"], "198.51.100.7"),
        (["6.6.6.6, 198.51.100.7"], "198.51.100.7"),
        (["6.6.6.6, 198.51.100.7, 10.2.2.2"], "198.51.100.7"),
        (["6.6.6.6", "198.51.100.7, 10.2.2.2, 192.168.0.1"], "198.51.100.7"),
        (["  198.51.100.7  ,\t10.2.2.2"], "198.51.100.7"),
        (["10.9.9.9, 2001:db8::7"], "2001:db8::7"),
        (["::ffff:198.51.100.7"], "::ffff:198.51.100.7"),
        (["::ffff:10.2.2.2, 198.51.100.7"], "198.51.100.7"),
        (["198.51.100.7, ::ffff:10.2.2.2"], "198.51.100.7"),
        (["10.1.1.1, 10.2.2.2"], "10.1.1.1"),
        ([], "10.0.0.1"),
        ([""], "10.0.0.1"),
        (["garbage"], "10.0.0.1"),
        (["198.51.100.7, garbage"], "10.0.0.1"),
        (["198.51.100.7:4711"], "10.0.0.1"),
        (["[2001:db8::7]"], "10.0.0.1"),
        (["garbage, 198.51.100.7"], "198.51.100.7"),
        (["6.6.6.6, 10.2.2.2, garbage, 10.3.3.3"], "10.0.0.1"),
        (["198.51.100.7,,10.2.2.2"], "198.51.100.7"),
    ] as [([String], String)])
    func aTrustedProxysChainIsReadFromTheRight(header: [String], expected: String) {
        #expect(Self.client("10.0.0.1", header) == expected)
    }

    @Test func noPeerStaysNoAddress() {
        #expect(Self.client(nil, ["198.51.100.7"]) == nil)
    }

    /// Seeded chains: a real client behind 0-4 trusted proxies, with anything at all put in
    /// front of it by the client (addresses, trusted ones, garbage). The answer is always the
    /// real client; sent straight from an untrusted peer, always the peer.
    @Test(arguments: [11, 12, 13, 14, 15, 16] as [UInt64])
    func seededSpoofedChainsNeverWin(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        func octet() -> Int { Int.random(in: 1...254, using: &random) }
        func untrusted() -> String {
            Bool.random(using: &random)
                ? "203.0.\(octet()).\(octet())" : "2001:db8:\(String(octet(), radix: 16))::\(String(octet(), radix: 16))"
        }
        func proxy() -> String {
            Bool.random(using: &random) ? "10.\(octet()).\(octet()).\(octet())" : "fd00::\(String(octet(), radix: 16))"
        }
        func forged() -> String {
            switch Int.random(in: 0..<5, using: &random) {
            case 0: untrusted()
            case 1: proxy()
            case 2: "not an address"
            case 3: "127.0.0.1"
            default: "::ffff:\(octet()).\(octet()).\(octet()).\(octet())"
            }
        }
        for round in 0..<200 {
            let real = untrusted()
            let proxies = (0..<Int.random(in: 0...4, using: &random)).map { _ in proxy() }
            let front = (0..<Int.random(in: 0...4, using: &random)).map { _ in forged() }
            // The last proxy is the peer; the ones before it appended what they saw.
            let hops = front + [real] + proxies
            let peer = proxy()
            // Split over one to three header lines, as proxies may.
            var lines: [String] = []
            var rest = hops[...]
            while !rest.isEmpty {
                let take = Int.random(in: 1...max(1, min(3, rest.count)), using: &random)
                lines.append(rest.prefix(take).joined(separator: Bool.random(using: &random) ? ", " : ","))
                rest = rest.dropFirst(take)
            }
            #expect(Self.client(peer, lines) == real, "seed \(seed) round \(round): \(lines) via \(peer)")
            let direct = untrusted()
            #expect(Self.client(direct, lines) == direct, "seed \(seed) round \(round): untrusted peer")
        }
    }

    // MARK: Through a real server

    static func register(_ server: TestServer, _ email: String, forwardedFor: String) async throws -> Int {
        try await server.exchange(
            "POST", "auth/register",
            body: Data(#"{"organization":"acme","email":"\#(email)","password":"\#(TestUser.password)","displayName":"X"}"#.utf8),
            headers: ["X-Forwarded-For": forwardedFor]
        ).status
    }

    /// The test client connects from loopback, which is not a trusted proxy here: its
    /// `X-Forwarded-For` is not believed, so it cannot pin the registration limit on someone
    /// else's address (loopback itself is not limited: all four register).
    @Test func aSpoofedHeaderFromAnUntrustedPeerIsNotBelieved() async throws {
        let server = try await TestServer.start {
            $0.rateLimits = RateLimitSettings()
            $0.rateLimits.registrationsPerAddress = .count(3, per: 3600)
            $0.trustedProxies = ["10.0.0.0/8"]
        }
        defer { Task { await server.stop() } }
        var statuses: [Int] = []
        for n in 0..<4 { statuses.append(try await Self.register(server, "s\(n)@x.io", forwardedFor: "203.0.113.7")) }
        #expect(statuses == [201, 201, 201, 201])
    }

    /// Behind a trusted proxy, a client that varies what it puts in front of its address in
    /// `X-Forwarded-For` is still one address: the fourth registration is refused, while
    /// another real client behind the same proxy is not.
    @Test func forgedLeftPartsDoNotEscapeAPerAddressLimit() async throws {
        let server = try await TestServer.start {
            $0.rateLimits = RateLimitSettings()
            $0.rateLimits.registrationsPerAddress = .count(3, per: 3600)
            $0.trustedProxies = ["127.0.0.1"]
        }
        defer { Task { await server.stop() } }
        var statuses: [Int] = []
        for n in 0..<4 {
            statuses.append(try await Self.register(server, "f\(n)@x.io", forwardedFor: "198.51.100.\(n + 1), 203.0.113.7"))
        }
        #expect(statuses == [201, 201, 201, 429])
        #expect(try await Self.register(server, "f4@x.io", forwardedFor: "203.0.113.8") == 201)
        #expect(try await Self.register(server, "f5@x.io", forwardedFor: "garbage") == 201, "garbage: the proxy's own address, unlimited loopback")
    }
}
