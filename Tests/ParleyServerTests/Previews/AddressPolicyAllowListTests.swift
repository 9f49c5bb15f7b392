import Foundation
@testable import ParleyServer
import Testing

/// What an operator's `--link-preview-allow` opens, and nothing more (`AddressPolicy`): an
/// IPv4 range also opens its addresses written inside IPv6 (mapped, NAT64, 6to4), since they
/// reach the same hosts; opening IPv6 never opens private IPv4 through a mapped form; the
/// default stays closed around every range that is opened.
@Suite struct AddressPolicyAllowListTests {
    static func permits(_ allow: String, _ address: String) throws -> Bool {
        AddressPolicy(allowed: try AddressPolicy.parseAllowList(allow)).permits(try #require(IPAddressBytes(address)))
    }

    /// An allowed IPv4 range is reached however its addresses are written.
    @Test(arguments: ["10.1.2.3", "::ffff:10.1.2.3", "::ffff:a01:203", "64:ff9b::10.1.2.3", "64:ff9b::a01:203", "2002:a01:203::1"])
    func anAllowedIPv4RangeOpensEveryFormOfItsAddresses(address: String) throws {
        #expect(try Self.permits("10.0.0.0/8", address))
    }

    /// ... and only its own: other private ranges stay closed, in every form.
    @Test(arguments: [
        "100.64.0.1", "172.16.0.1", "192.168.0.1", "::ffff:192.168.0.1", "64:ff9b::192.168.0.1", "2002:c0a8:1::1", "127.0.0.1",
        "169.254.169.254", "::1", "fd00::1",
    ])
    func anAllowedIPv4RangeOpensNothingElse(address: String) throws {
        #expect(try !Self.permits("10.0.0.0/8", address))
    }

    /// Opening all of IPv6 (an operator's intranet) opens no private IPv4 address through its
    /// mapped form: that is IPv4, and judged as such.
    @Test(arguments: ["::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254"])
    func openingIPv6DoesNotOpenMappedPrivateIPv4(address: String) throws {
        #expect(try !Self.permits("::/0", address))
        #expect(try Self.permits("::/0", "fd00::1") && (try Self.permits("::/0", "::1")))
    }

    /// An IPv6 range opens exactly its prefix, bit by bit.
    @Test(arguments: [("fd12:3456::1", true), ("fd12:3500::1", false), ("fd12:3457::1", true), ("fd12:34ff::1", true), ("fe80::1", false), ("fc00::1", false)])
    func anIPv6RangeOpensItsPrefix(address: String, permitted: Bool) throws {
        #expect(try Self.permits("fd12:3400::/24", address) == permitted)
    }

    /// A mapped range written the IPv6 way is the IPv4 range it covers: `::ffff:0:0/96` is all
    /// of IPv4, the same as `0.0.0.0/0`, and opens nothing of IPv6.
    @Test func aMappedRangeIsTheIPv4RangeItCovers() throws {
        let mapped = try #require(CIDR("::ffff:0:0/96"))
        #expect(mapped == CIDR("0.0.0.0/0") && mapped.description == "0.0.0.0/0")
        #expect(try Self.permits("::ffff:0:0/96", "169.254.169.254"))
        #expect(try !Self.permits("::ffff:0:0/96", "::1") && (try !Self.permits("::ffff:0:0/96", "fd00::1")))
        #expect(try #require(CIDR("::ffff:192.168.0.0/112")).description == "192.168.0.0/16")
    }

    /// Several ranges: each opens its own; entries may repeat; the public internet stays open.
    @Test func severalRangesEachOpenTheirOwn() throws {
        let allow = "127.0.0.1, 10.0.0.0/8,10.0.0.0/8 ,fd00::/8"
        for address in ["127.0.0.1", "10.9.9.9", "fd99::1", "8.8.8.8", "2606:4700::1111"] {
            #expect(try Self.permits(allow, address), "\(address)")
        }
        for address in ["127.0.0.2", "172.16.0.1", "fe80::1", "::1", "169.254.169.254"] {
            #expect(try !Self.permits(allow, address), "\(address)")
        }
    }
}
