import Foundation
import ParleyStorage

/// Which addresses the link-preview fetcher may connect to.
///
/// A preview fetch goes wherever a message's sender points it, so without this anyone who can
/// send a message could make the server read its own loopback, the private network it runs in
/// or a cloud metadata service (169.254.169.254). Every address a name resolves to is judged,
/// also after each redirect; only public ones pass, unless the operator allows a range with
/// `--link-preview-allow` (a preview of an intranet wiki, tests on loopback).
///
/// IPv6 is public only inside 2000::/3, the one block IANA hands out for global unicast, and
/// outside the special blocks in it; addresses that carry an IPv4 address (mapped, NAT64, 6to4)
/// are judged by that IPv4 address.
public struct AddressPolicy: Sendable {
    /// Ranges fetched even though they are not public; empty allows none.
    public var allowed: [CIDR]

    /// A policy that also allows `allowed`.
    public init(allowed: [CIDR] = []) {
        self.allowed = allowed
    }

    /// Reads `--link-preview-allow`: comma-separated addresses or CIDR ranges, spaces around
    /// them ignored. Throws, naming the entry, on the first one that is neither, so a typo stops
    /// the start instead of silently allowing nothing.
    public static func parseAllowList(_ text: String) throws -> [CIDR] {
        var ranges: [CIDR] = []
        for entry in text.split(separator: ",", omittingEmptySubsequences: false) {
            let trimmed = entry.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            guard let range = CIDR(trimmed) else {
                throw ServerStartError("\"\(trimmed)\" is not an IP address or CIDR range (like 10.0.0.0/8 or fd00::/8)")
            }
            ranges.append(range)
        }
        return ranges
    }

    /// Whether the fetcher may connect to `address`: a public address, or one the operator allowed.
    public func permits(_ address: IPAddressBytes) -> Bool {
        if allowed.contains(where: { $0.contains(address) }) { return true }
        switch address.unmapped {
        case .v4(let bytes):
            guard bytes.count == 4 else { return false }
            return !Self.nonPublicV4.contains { $0.contains(.v4(bytes)) }
        case .v6(let bytes):
            guard bytes.count == 16 else { return false }
            // NAT64 and 6to4 reach the IPv4 address they carry: judge (and allow) that one.
            if Self.nat64.contains(.v6(bytes)) { return permits(.v4(Array(bytes[12..<16]))) }
            if Self.sixToFour.contains(.v6(bytes)) { return permits(.v4(Array(bytes[2..<6]))) }
            guard Self.globalUnicast.contains(.v6(bytes)) else { return false }
            return !Self.nonPublicV6.contains { $0.contains(.v6(bytes)) }
        }
    }

    /// IPv4 blocks that are not the public internet (IANA's special-purpose registry).
    static let nonPublicV4 = ranges([
        "0.0.0.0/8",  // "this network"
        "10.0.0.0/8",  // private
        "100.64.0.0/10",  // carrier-grade NAT
        "127.0.0.0/8",  // loopback
        "169.254.0.0/16",  // link-local, cloud metadata
        "172.16.0.0/12",  // private
        "192.0.0.0/24",  // IETF protocol assignments
        "192.0.2.0/24",  // documentation
        "192.88.99.0/24",  // 6to4 relay anycast
        "192.168.0.0/16",  // private
        "198.18.0.0/15",  // benchmarking
        "198.51.100.0/24",  // documentation
        "203.0.113.0/24",  // documentation
        "224.0.0.0/4",  // multicast
        "240.0.0.0/4",  // reserved
        "255.255.255.255/32",  // broadcast
    ])

    /// IPv6 blocks that are not the public internet. Those outside 2000::/3 are refused by
    /// ``globalUnicast`` already; they are listed so that the list reads as the registry does.
    static let nonPublicV6 = ranges([
        "::/128",  // unspecified
        "::1/128",  // loopback
        "100::/64",  // discard-only
        "64:ff9b:1::/48",  // local-use NAT64
        "2001::/23",  // IETF protocol assignments (Teredo, benchmarking, ORCHID)
        "2001:db8::/32",  // documentation
        "3fff::/20",  // documentation
        "fc00::/7",  // unique local
        "fe80::/10",  // link-local
        "fec0::/10",  // site-local (deprecated)
        "ff00::/8",  // multicast
    ])

    /// The only IPv6 block with public unicast addresses.
    static let globalUnicast = CIDR(network: .v6([0x20] + [UInt8](repeating: 0, count: 15)), prefixLength: 3)
    /// NAT64's well-known prefix: the last 4 bytes are the IPv4 address reached.
    static let nat64 = CIDR(network: .v6([0, 0x64, 0xff, 0x9b] + [UInt8](repeating: 0, count: 12)), prefixLength: 96)
    /// 6to4: bytes 2 to 5 are the IPv4 address of the site's relay.
    static let sixToFour = CIDR(network: .v6([0x20, 0x02] + [UInt8](repeating: 0, count: 14)), prefixLength: 16)

    /// The tables above as ranges (each entry is checked by a test with an address inside it).
    private static func ranges(_ texts: [String]) -> [CIDR] {
        texts.compactMap { CIDR($0) }
    }
}

/// An IP address as bytes, so that what a name resolved to is compared, not how it was written
/// (`::ffff:7f00:1`, `::ffff:127.0.0.1` and `0:0:0:0:0:ffff:7f00:1` are one address).
public enum IPAddressBytes: Sendable, Equatable, CustomStringConvertible {
    /// An IPv4 address: 4 bytes.
    case v4([UInt8])
    /// An IPv6 address: 16 bytes, network order.
    case v6([UInt8])

    /// Parses dotted IPv4 (`192.0.2.1`, four decimal parts, no leading zeros, which some parsers
    /// read as octal) or IPv6 (`::` compression, an IPv4 tail as in `::ffff:1.2.3.4`, optional
    /// `[...]` brackets and `%zone`, which is dropped). Nil for anything else, host names included.
    public init?(_ text: String) {
        if text.hasPrefix("["), text.hasSuffix("]"), text.count >= 2 {
            guard let bytes = Self.parseV6(text.dropFirst().dropLast()) else { return nil }
            self = .v6(bytes)
        } else if text.contains(":") {
            let address = text.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)[0]
            guard let bytes = Self.parseV6(address) else { return nil }
            self = .v6(bytes)
        } else {
            guard let bytes = Self.parseV4(Substring(text)) else { return nil }
            self = .v4(bytes)
        }
    }

    /// The address as logs show it: dotted IPv4, IPv6 in its shortest form (RFC 5952).
    public var description: String {
        switch self {
        case .v4(let bytes):
            return bytes.map { String($0) }.joined(separator: ".")
        case .v6(let bytes):
            guard bytes.count == 16 else { return bytes.map { String($0, radix: 16) }.joined(separator: ":") }
            if case .v4(let mapped) = unmapped { return "::ffff:" + IPAddressBytes.v4(mapped).description }
            let groups = stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
            // The longest run of two or more zero groups (the first of equals) becomes `::`.
            var best = 0..<0
            var runStart: Int?
            for index in 0...8 {
                if index < 8, groups[index] == "0" {
                    if runStart == nil { runStart = index }
                } else if let start = runStart {
                    if index - start > best.count { best = start..<index }
                    runStart = nil
                }
            }
            guard best.count >= 2 else { return groups.joined(separator: ":") }
            return groups[..<best.lowerBound].joined(separator: ":") + "::" + groups[best.upperBound...].joined(separator: ":")
        }
    }

    /// The IPv4 address an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) stands for; otherwise itself.
    var unmapped: IPAddressBytes {
        guard case .v6(let bytes) = self, bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }),
              bytes[10] == 0xff, bytes[11] == 0xff
        else { return self }
        return .v4(Array(bytes[12..<16]))
    }

    /// Four decimal parts of 0 to 255.
    static func parseV4(_ text: Substring) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.utf8.count), part.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  part.utf8.count == 1 || part.utf8.first != 0x30,
                  let value = UInt8(part)
            else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    /// Eight groups of 1 to 4 hex digits, `::` standing for one or more zero groups, the last
    /// two groups possibly written as an IPv4 address.
    static func parseV6(_ text: Substring) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.count <= 45 else { return nil }
        let written = String(text)
        let groups: [UInt16]
        if let gap = written.range(of: "::") {
            guard let head = groupValues(written[..<gap.lowerBound], ipv4Tail: false),
                  let tail = groupValues(written[gap.upperBound...], ipv4Tail: true),
                  head.count + tail.count <= 7
            else { return nil }
            groups = head + [UInt16](repeating: 0, count: 8 - head.count - tail.count) + tail
        } else {
            guard let all = groupValues(Substring(written), ipv4Tail: true), all.count == 8 else { return nil }
            groups = all
        }
        return groups.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
    }

    /// The colon-separated groups of one side of `::` (empty: none).
    private static func groupValues(_ text: Substring, ipv4Tail: Bool) -> [UInt16]? {
        guard !text.isEmpty else { return [] }
        let pieces = text.split(separator: ":", omittingEmptySubsequences: false)
        var values: [UInt16] = []
        for (index, piece) in pieces.enumerated() {
            if piece.contains(".") {
                guard ipv4Tail, index == pieces.count - 1, let v4 = parseV4(piece) else { return nil }
                values.append(UInt16(v4[0]) << 8 | UInt16(v4[1]))
                values.append(UInt16(v4[2]) << 8 | UInt16(v4[3]))
            } else {
                guard (1...4).contains(piece.utf8.count), piece.utf8.allSatisfy(Self.isHexDigit),
                      let value = UInt16(piece, radix: 16)
                else { return nil }
                values.append(value)
            }
        }
        return values
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }
}

/// A range of IP addresses written as `address/prefix` (`10.0.0.0/8`, `fd00::/8`); a bare address
/// is a range of one. What the operator allows with `--link-preview-allow`.
///
/// The bits past the prefix are cleared (`10.1.2.3/8` is `10.0.0.0/8`). An IPv4-mapped range
/// (`::ffff:10.0.0.0/104`) is kept as the IPv4 range it covers, so it and `10.0.0.0/8` match the
/// same addresses, written either way.
public struct CIDR: Sendable, Equatable, CustomStringConvertible {
    /// The first address of the range.
    public let network: IPAddressBytes
    /// How many leading bits an address shares with ``network`` to be inside.
    public let prefixLength: Int

    /// The range as the operator would write it (`10.0.0.0/8`, `fd00::/8`), for the start's log.
    public var description: String {
        "\(network)/\(prefixLength)"
    }

    /// Parses `address` or `address/prefix` (0 to 32 for IPv4, 0 to 128 for IPv6); nil for
    /// anything else, spaces included.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard !text.contains("%"), !text.contains("["), let address = IPAddressBytes(String(parts[0])) else { return nil }
        let bits: Int
        switch address {
        case .v4: bits = 32
        case .v6: bits = 128
        }
        var prefix = bits
        if parts.count == 2 {
            let digits = parts[1]
            guard (1...3).contains(digits.utf8.count), digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let length = Int(digits), length <= bits
            else { return nil }
            prefix = length
        }
        if case .v4 = address.unmapped, case .v6 = address, prefix >= 96 {
            self.init(network: address.unmapped, prefixLength: prefix - 96)
        } else {
            self.init(network: address, prefixLength: prefix)
        }
    }

    /// A range from its parts; bits of `network` past `prefixLength` are cleared.
    init(network: IPAddressBytes, prefixLength: Int) {
        switch network {
        case .v4(let bytes): self.network = .v4(Self.masked(bytes, prefixLength))
        case .v6(let bytes): self.network = .v6(Self.masked(bytes, prefixLength))
        }
        self.prefixLength = prefixLength
    }

    /// Whether `address` lies in the range. An IPv4-mapped IPv6 address is judged as its IPv4
    /// address; otherwise an address of the other family is never inside.
    public func contains(_ address: IPAddressBytes) -> Bool {
        switch (network, address.unmapped) {
        case (.v4(let range), .v4(let bytes)), (.v6(let range), .v6(let bytes)):
            return bytes.count == range.count && Self.masked(bytes, prefixLength) == range
        default:
            return false
        }
    }

    /// `bytes` with every bit past the first `prefixLength` cleared.
    private static func masked(_ bytes: [UInt8], _ prefixLength: Int) -> [UInt8] {
        var remaining = max(0, prefixLength)
        return bytes.map { byte in
            let keep = min(8, remaining)
            remaining -= keep
            return byte & UInt8(truncatingIfNeeded: 0xff << (8 - keep))
        }
    }
}
