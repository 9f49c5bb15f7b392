import Foundation
import HTTPTypes
import Hummingbird

/// An IP address or a CIDR range of them (`10.0.0.5`, `10.0.0.0/8`, `::1`, `fd00::/8`).
/// IPv4-mapped IPv6 addresses (`::ffff:10.0.0.5`) count as their IPv4 address.
public struct AddressRange: Sendable, Equatable {
    let bytes: [UInt8]
    let prefixLength: Int

    /// Parses `address` or `address/prefix`; nil for a bad address or a prefix out of range.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let first = parts.first, let address = Self.parse(first) else { return nil }
        let bits = address.count * 8
        var prefix = bits
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...bits).contains(length) else { return nil }
            prefix = length
        }
        bytes = address
        prefixLength = prefix
    }

    /// The address's bytes: 4 for IPv4 (mapped IPv6 included), 16 for IPv6.
    static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xff && bytes[11] == 0xff { return Array(bytes[12...]) }
        return bytes
    }

    /// Whether `address` (text) lies in this range.
    public func contains(_ address: String) -> Bool {
        guard let other = Self.parse(address), other.count == bytes.count else { return false }
        var remaining = prefixLength
        for index in bytes.indices where remaining > 0 {
            let take = min(8, remaining)
            let mask = UInt8(truncatingIfNeeded: 0xff << (8 - take))
            if bytes[index] & mask != other[index] & mask { return false }
            remaining -= take
        }
        return true
    }
}

/// The client's address behind trusted reverse proxies: `X-Forwarded-For` read from the right,
/// skipping the proxies the operator trusts; the first address that is not one of them is the
/// client. A request whose peer is not a trusted proxy keeps its peer address, so nobody can
/// pick their own address by sending the header.
struct ClientAddressMiddleware: RouterMiddleware {
    typealias Context = ParleyRequestContext
    let trusted: [AddressRange]

    init(trusted: [String]) {
        self.trusted = trusted.compactMap(AddressRange.init)
    }

    static func client(peer: String?, forwardedFor: [String], trusted: [AddressRange]) -> String? {
        guard let peer, trusted.contains(where: { $0.contains(peer) }) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() {
            guard AddressRange.parse(hop) != nil else { return peer }  // garbage: believe no more of it
            if !trusted.contains(where: { $0.contains(hop) }) { return hop }
        }
        return hops.first ?? peer
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard !trusted.isEmpty else { return try await next(request, context) }
        var context = context
        context.clientAddress = Self.client(
            peer: context.clientAddress, forwardedFor: request.headers[values: .xForwardedFor], trusted: trusted)
        return try await next(request, context)
    }
}

extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}
