import Foundation

/// Writes a ZIP archive as a stream (for the data export): each entry's bytes go out as they are
/// read, stored without compression, its CRC-32 and size in a data descriptor after it, and
/// the central directory at the end. Nothing is held but the entries' names and sums, so an
/// export of any size costs the same memory.
///
/// Without ZIP64, an archive stops at 4 GiB: ``add(_:)`` throws ``TooLarge`` before passing it.
struct ZipStream {
    private struct Entry {
        var name: [UInt8]
        var crc: UInt32
        var size: UInt32
        var offset: UInt32
    }

    /// The archive would pass 4 GiB.
    struct TooLarge: Error {}

    private var entries: [Entry] = []
    private var offset: UInt64 = 0
    private var current: (name: [UInt8], offset: UInt32, crc: CRC32, size: UInt64)?
    /// A fixed time for every entry: 1 January 2026, 00:00 (DOS format).
    private static let dosDate: UInt16 = UInt16((2026 - 1980) << 9 | 1 << 5 | 1)

    /// The local header of a new entry (the previous one must be finished).
    mutating func begin(_ name: String) throws -> [UInt8] {
        precondition(current == nil, "finish the previous entry first")
        let nameBytes = Array(name.utf8)
        var header: [UInt8] = []
        header.le32(0x0403_4b50)
        header.le16(20)  // version needed
        header.le16(0x0808)  // data descriptor follows; names are UTF-8
        header.le16(0)  // stored
        header.le16(0)  // time
        header.le16(Self.dosDate)
        header.le32(0)  // CRC, sizes: in the descriptor
        header.le32(0)
        header.le32(0)
        header.le16(UInt16(nameBytes.count))
        header.le16(0)
        header += nameBytes
        current = (nameBytes, try checked(offset), CRC32(), 0)
        try advance(header.count)
        return header
    }

    /// Counts a piece of the current entry's bytes (the caller writes them as they are).
    mutating func add(_ bytes: UnsafeRawBufferPointer) throws {
        guard current != nil else { preconditionFailure("begin an entry first") }
        current!.crc.update(bytes)
        current!.size += UInt64(bytes.count)
        try advance(bytes.count)
    }

    /// The data descriptor that ends the current entry.
    mutating func finish() throws -> [UInt8] {
        guard let entry = current else { preconditionFailure("no entry to finish") }
        current = nil
        let crc = entry.crc.value
        var descriptor: [UInt8] = []
        descriptor.le32(0x0807_4b50)
        descriptor.le32(crc)
        descriptor.le32(try checked(entry.size))
        descriptor.le32(try checked(entry.size))
        entries.append(Entry(name: entry.name, crc: crc, size: try checked(entry.size), offset: entry.offset))
        try advance(descriptor.count)
        return descriptor
    }

    /// The central directory and its end record: the archive's last bytes.
    mutating func close() throws -> [UInt8] {
        let start = try checked(offset)
        var directory: [UInt8] = []
        for entry in entries {
            directory.le32(0x0201_4b50)
            directory.le16(20)  // made by
            directory.le16(20)  // needed
            directory.le16(0x0808)
            directory.le16(0)
            directory.le16(0)
            directory.le16(Self.dosDate)
            directory.le32(entry.crc)
            directory.le32(entry.size)
            directory.le32(entry.size)
            directory.le16(UInt16(entry.name.count))
            directory.le16(0)  // extra
            directory.le16(0)  // comment
            directory.le16(0)  // disk
            directory.le16(0)  // internal attributes
            directory.le32(0)  // external attributes
            directory.le32(entry.offset)
            directory += entry.name
        }
        var end: [UInt8] = []
        end.le32(0x0605_4b50)
        end.le16(0)
        end.le16(0)
        end.le16(UInt16(min(entries.count, 0xFFFF)))
        end.le16(UInt16(min(entries.count, 0xFFFF)))
        end.le32(UInt32(directory.count))
        end.le32(start)
        end.le16(0)
        return directory + end
    }

    private mutating func advance(_ count: Int) throws {
        offset += UInt64(count)
        _ = try checked(offset)
    }

    private func checked(_ value: UInt64) throws -> UInt32 {
        guard value < 0xFFFF_FFFF else { throw TooLarge() }
        return UInt32(value)
    }
}

/// CRC-32 (IEEE 802.3, as ZIP uses), a byte at a time through a table.
struct CRC32 {
    private static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }
    private var state: UInt32 = 0xFFFF_FFFF

    /// Takes more bytes in.
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        var c = state
        Self.table.withUnsafeBufferPointer { table in
            for byte in bytes { c = table[Int((c ^ UInt32(byte)) & 0xFF)] ^ (c >> 8) }
        }
        state = c
    }

    /// The sum of the bytes so far.
    var value: UInt32 { state ^ 0xFFFF_FFFF }
}

extension [UInt8] {
    fileprivate mutating func le16(_ value: UInt16) {
        append(UInt8(value & 0xFF))
        append(UInt8(value >> 8))
    }

    fileprivate mutating func le32(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { append(UInt8((value >> UInt32(shift)) & 0xFF)) }
    }
}
