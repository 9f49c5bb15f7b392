import Foundation
#if os(Linux)
import Glibc
import Synchronization
#endif

/// The id of anything Parley stores: a UUID written as a lowercase string on the wire.
///
/// Foundation's `UUID` encodes upper case; the contract says lower case, so every id goes
/// through this type. Decoding accepts either case.
public struct EntityID: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// The underlying UUID.
    public let uuid: UUID

    /// A new random id (a version 4 UUID: 122 random bits).
    public init() { uuid = Self.randomUUID() }

    /// A new id that sorts after the ids made before it (a version 7 UUID: 48 bits of Unix
    /// time in milliseconds, then 74 random bits), for messages.
    ///
    /// A store keeps messages in an index by id: random ids land on a random page of it
    /// each, so a group commit of a hundred sends rewrote about a hundred pages of that index
    /// (and the WAL and the checkpoint copied them); ids in time order fill its last page.
    /// They tell no more than the message's `createdAt` already does, and stay unguessable.
    public static func timeOrdered(at date: Date) -> EntityID {
        var bytes = randomUUID().uuid
        let milliseconds = UInt64(max(0, date.millisecondsSince1970))  // as the message's createdAt
        bytes.0 = UInt8(truncatingIfNeeded: milliseconds >> 40)
        bytes.1 = UInt8(truncatingIfNeeded: milliseconds >> 32)
        bytes.2 = UInt8(truncatingIfNeeded: milliseconds >> 24)
        bytes.3 = UInt8(truncatingIfNeeded: milliseconds >> 16)
        bytes.4 = UInt8(truncatingIfNeeded: milliseconds >> 8)
        bytes.5 = UInt8(truncatingIfNeeded: milliseconds)
        bytes.6 = (bytes.6 & 0x0F) | 0x70  // version 7
        return EntityID(UUID(uuid: bytes))
    }

    /// Foundation's `UUID()` on Linux opens, reads and closes `/dev/urandom` for every id:
    /// three system calls on the store's writer thread for each message (13 % of the insert
    /// under `bench durable`). Here the bytes come from one read per 256 ids.
    private static func randomUUID() -> UUID {
        #if os(Linux)
        guard var bytes = idRandomness.withLock({ $0.take16() }) else { return UUID() }
        bytes.6 = (bytes.6 & 0x0F) | 0x40  // version 4
        bytes.8 = (bytes.8 & 0x3F) | 0x80  // RFC 4122 variant
        return UUID(uuid: bytes)
        #else
        return UUID()  // arc4random on Apple platforms: no system call
        #endif
    }

    /// The id of a UUID.
    public init(_ uuid: UUID) { self.uuid = uuid }

    /// Parses an id in either case; nil when the text is not a UUID (`8-4-4-4-12` hex digits).
    ///
    /// A hand-written parser: ids are parsed for every row a store or a cache reads, and
    /// Foundation's `UUID(uuidString:)` costs several times more.
    public init?(_ text: String) {
        self.init(utf8: text.utf8)
    }

    /// Parses an id from its UTF-8 bytes (a slice of a larger text, read in place), with no
    /// allocation; nil when they are not a UUID.
    public init?<Bytes: Collection<UInt8>>(utf8 text: Bytes) {
        let found = text.withContiguousStorageIfAvailable { Self.parse($0) } ?? Array(text).withUnsafeBufferPointer { Self.parse($0) }
        guard let found else { return nil }
        uuid = found
    }

    /// `8-4-4-4-12` hex digits in either case, or nil.
    private static func parse(_ text: UnsafeBufferPointer<UInt8>) -> UUID? {
        guard text.count == 36 else { return nil }
        var value: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &value) { bytes -> Bool in
            var position = 0
            for index in 0..<16 {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    guard text[position] == UInt8(ascii: "-") else { return false }
                    position += 1
                }
                guard let high = hexDigitValue(text[position]), let low = hexDigitValue(text[position + 1]) else { return false }
                bytes[index] = high << 4 | low
                position += 2
            }
            return true
        }
        return parsed ? UUID(uuid: value) : nil
    }

    /// The lowercase string form the wire and the stores use.
    ///
    /// Written by hand: Foundation's `uuidString` formats with `snprintf` and the result then
    /// had to be lowercased, and every id of every row and frame goes through here.
    public var description: String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            withUnsafeBytes(of: uuid.uuid) { bytes in Self.writeHex(bytes, into: buffer.baseAddress!) }
            return 36
        }
    }

    /// Appends the 36 bytes of the lowercase form to `output` (the fast JSON writer's path).
    public func appendDescription(to output: inout [UInt8]) {
        let start = output.count
        output.append(contentsOf: repeatElement(0, count: 36))
        output.withUnsafeMutableBufferPointer { buffer in
            withUnsafeBytes(of: uuid.uuid) { bytes in Self.writeHex(bytes, into: buffer.baseAddress! + start) }
        }
    }

    private static let hexDigits: StaticString = "0123456789abcdef"

    /// Writes `8-4-4-4-12` lowercase hex digits of 16 bytes.
    private static func writeHex(_ bytes: UnsafeRawBufferPointer, into output: UnsafeMutablePointer<UInt8>) {
        let digits = hexDigits.utf8Start
        var position = 0
        for index in 0..<16 {
            if index == 4 || index == 6 || index == 8 || index == 10 {
                output[position] = UInt8(ascii: "-")
                position += 1
            }
            let byte = bytes[index]
            output[position] = digits[Int(byte >> 4)]
            output[position + 1] = digits[Int(byte & 0x0F)]
            position += 2
        }
    }

    /// Decodes an id from a string in either case; throws when the string is not a UUID.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let id = EntityID(text) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "Expected a UUID, got \"\(text.prefix(64))\"")
        }
        self = id
    }

    /// Encodes the id as its lowercase string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// The order of the lowercase strings, compared on the bytes (the same order: hex digits
    /// sort as the nibbles they stand for).
    public static func < (lhs: EntityID, rhs: EntityID) -> Bool {
        withUnsafeBytes(of: lhs.uuid.uuid) { left in
            withUnsafeBytes(of: rhs.uuid.uuid) { right in left.lexicographicallyPrecedes(right) }
        }
    }
}

/// The value of an ASCII hex digit in either case (ids, JSON's `\u` escapes); nil otherwise.
func hexDigitValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}

#if os(Linux)
/// Random bytes for new ids, read from `/dev/urandom` (the kernel's CSPRNG) 4 KiB at a time.
private let idRandomness = Mutex(RandomBytes())

private struct RandomBytes {
    private let file = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
    private var buffer = [UInt8](repeating: 0, count: 4096)
    private var used = 4096

    /// The next 16 bytes; nil if the device cannot be read (the caller falls back to `UUID()`).
    mutating func take16() -> uuid_t? {
        if used + 16 > buffer.count {
            guard file >= 0 else { return nil }
            var filled = 0
            while filled < buffer.count {
                let count = buffer.withUnsafeMutableBytes { read(file, $0.baseAddress! + filled, $0.count - filled) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return nil }
                filled += count
            }
            used = 0
        }
        defer { used += 16 }
        return buffer.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: used, as: uuid_t.self) }
    }
}
#endif
