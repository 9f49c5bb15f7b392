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

    /// Parses an id in either case; nil when the text is not a UUID.
    public init?(_ text: String) {
        guard let uuid = UUID(uuidString: text) else { return nil }
        self.uuid = uuid
    }

    /// The lowercase string form the wire and the stores use.
    public var description: String { uuid.uuidString.lowercased() }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let uuid = UUID(uuidString: text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "Expected a UUID, got \"\(text.prefix(64))\"")
        }
        self.uuid = uuid
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    public static func < (lhs: EntityID, rhs: EntityID) -> Bool {
        lhs.description < rhs.description
    }
}
