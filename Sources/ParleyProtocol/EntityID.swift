import Foundation

/// The id of anything Parley stores: a UUID written as a lowercase string on the wire.
///
/// Foundation's `UUID` encodes upper case; the contract says lower case, so every id goes
/// through this type. Decoding accepts either case.
public struct EntityID: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The underlying UUID.
    public let uuid: UUID

    /// A new random id.
    public init() { uuid = UUID() }

    /// The id of a UUID.
    public init(_ uuid: UUID) { self.uuid = uuid }

    /// Parses an id in either case; nil when the text is not a UUID (`8-4-4-4-12` hex digits).
    ///
    /// A hand-written parser: ids are parsed for every row a store or a cache reads, and
    /// Foundation's `UUID(uuidString:)` costs several times more.
    public init?(_ text: String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        var high: UInt8?
        var count = 0
        for byte in text.utf8 {
            count += 1
            if count == 9 || count == 14 || count == 19 || count == 24 {
                guard byte == UInt8(ascii: "-") else { return nil }
                continue
            }
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let pending = high {
                bytes.append(pending << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        guard count == 36, bytes.count == 16 else { return nil }
        uuid = UUID(uuid: (
            bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
            bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    /// The lowercase string form the wire and the stores use.
    public var description: String { uuid.uuidString.lowercased() }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let id = EntityID(text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "Expected a UUID, got \"\(text.prefix(64))\"")
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    public static func < (lhs: EntityID, rhs: EntityID) -> Bool {
        lhs.description < rhs.description
    }
}
