import Foundation
@testable import ParleyServer
import Testing

/// The streamed ZIP of a data export (`Lifecycle/ZipStream.swift`), read back byte by byte the
/// way an unzip tool does: the end record finds the central directory, which finds each local
/// header; every CRC, size and offset must agree, or the export a user downloads will not open.
@Suite struct ZipStreamTests {
    /// An archive of `entries`, each entry's bytes fed in pieces of `chunk` bytes.
    static func archive(_ entries: [(name: String, bytes: [UInt8])], chunk: Int = 7) throws -> [UInt8] {
        var zip = ZipStream()
        var out: [UInt8] = []
        for entry in entries {
            out += try zip.begin(entry.name)
            var start = 0
            while start < entry.bytes.count {
                let piece = Array(entry.bytes[start..<min(start + chunk, entry.bytes.count)])
                try piece.withUnsafeBytes { try zip.add($0) }
                out += piece
                start += chunk
            }
            out += try zip.finish()
        }
        return out + (try zip.close())
    }

    static func crc(_ text: String) -> UInt32 {
        var crc = CRC32()
        Array(text.utf8).withUnsafeBytes { crc.update($0) }
        return crc.value
    }

    /// One entry as the central directory describes it, checked against its local header,
    /// its data and its descriptor.
    struct ReadEntry: Equatable {
        var name: String
        var bytes: [UInt8]
        var crc: UInt32
    }

    static func u16(_ bytes: [UInt8], _ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
    static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << (8 * UInt32($1)) }
    }

    /// Reads the archive as an unzip tool does, recording anything inconsistent.
    static func read(_ zip: [UInt8]) throws -> [ReadEntry] {
        try #require(zip.count >= 22)
        let end = zip.count - 22
        #expect(u32(zip, end) == 0x0605_4b50, "end of central directory record last")
        let count = u16(zip, end + 10)
        #expect(u16(zip, end + 8) == count, "entries on this disk and in all")
        let directorySize = Int(u32(zip, end + 12)), directoryStart = Int(u32(zip, end + 16))
        #expect(directoryStart + directorySize == end, "the directory ends where the end record starts")
        var entries: [ReadEntry] = []
        var at = directoryStart
        for _ in 0..<count {
            try #require(at + 46 <= end && u32(zip, at) == 0x0201_4b50, "a central directory header at \(at)")
            #expect(u16(zip, at + 8) == 0x0808 && u16(zip, at + 10) == 0, "descriptor and UTF-8 flags, stored")
            let crc = u32(zip, at + 16), packed = Int(u32(zip, at + 20)), size = Int(u32(zip, at + 24))
            let nameLength = u16(zip, at + 28), extra = u16(zip, at + 30), comment = u16(zip, at + 32)
            let local = Int(u32(zip, at + 42))
            let name = Array(zip[(at + 46)..<(at + 46 + nameLength)])
            #expect(packed == size, "stored: no compression")
            // The local header names the same entry; its data and descriptor follow it.
            try #require(local + 30 <= directoryStart && u32(zip, local) == 0x0403_4b50, "a local header at \(local)")
            #expect(u16(zip, local + 6) == 0x0808 && u16(zip, local + 8) == 0)
            #expect(u16(zip, local + 26) == nameLength && Array(zip[(local + 30)..<(local + 30 + nameLength)]) == name)
            let dataStart = local + 30 + nameLength + u16(zip, local + 28)
            let bytes = Array(zip[dataStart..<(dataStart + size)])
            let descriptor = dataStart + size
            #expect(u32(zip, descriptor) == 0x0807_4b50 && u32(zip, descriptor + 4) == crc)
            #expect(Int(u32(zip, descriptor + 8)) == size && Int(u32(zip, descriptor + 12)) == size)
            var check = CRC32()
            bytes.withUnsafeBytes { check.update($0) }
            #expect(check.value == crc, "the stored CRC is the data's")
            entries.append(ReadEntry(name: String(decoding: name, as: UTF8.self), bytes: bytes, crc: crc))
            at += 46 + nameLength + extra + comment
        }
        #expect(at == end, "the directory holds exactly its entries")
        return entries
    }

    // MARK: CRC-32

    /// The published check values of CRC-32 (IEEE 802.3, as ZIP and gzip use).
    @Test(arguments: [
        ("", UInt32(0)), ("a", 0xE8B7_BE43), ("123456789", 0xCBF4_3926), ("The quick brown fox jumps over the lazy dog", 0x414F_A339),
    ])
    func checkValues(text: String, crc: UInt32) {
        #expect(Self.crc(text) == crc)
    }

    /// Bytes fed in any pieces give the sum of all of them at once (the export feeds whatever a
    /// read returned).
    @Test func theSumDoesNotDependOnHowTheBytesArrive() {
        let bytes = (0..<5_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 3) }
        var whole = CRC32()
        bytes.withUnsafeBytes { whole.update($0) }
        for size in [1, 2, 3, 64, 4_999] {
            var pieces = CRC32()
            for start in stride(from: 0, to: bytes.count, by: size) {
                bytes[start..<min(start + size, bytes.count)].withUnsafeBytes { pieces.update($0) }
            }
            #expect(pieces.value == whole.value, "pieces of \(size)")
        }
        var empty = CRC32()
        [UInt8]().withUnsafeBytes { empty.update($0) }
        #expect(empty.value == 0)
    }

    // MARK: Archives

    @Test func anArchiveReadsBackEntryForEntry() throws {
        let big = (0..<100_003).map { UInt8(truncatingIfNeeded: $0 % 251) }
        let entries: [(name: String, bytes: [UInt8])] = [
            ("profile.json", Array(#"{"displayName":"Ada"}"#.utf8)),
            ("empty.txt", []),
            ("attachments/photo.bin", big),
            ("conversations/Café 日本 👍.json", Array("[]".utf8)),
        ]
        let read = try Self.read(try Self.archive(entries, chunk: 4_096))
        #expect(read.map(\.name) == entries.map(\.name), "names in order, UTF-8 intact")
        #expect(read.map(\.bytes) == entries.map(\.bytes))
        #expect(read[1].crc == 0, "an empty entry sums to 0")
    }

    /// The pieces an entry is written in change nothing in the archive.
    @Test func theArchiveDoesNotDependOnHowEntriesAreFed() throws {
        let entries: [(name: String, bytes: [UInt8])] = [("a.txt", Array(String(repeating: "abc", count: 1_000).utf8)), ("b.txt", [1, 2, 3])]
        let reference = try Self.archive(entries, chunk: 1)
        for chunk in [2, 13, 1_000, 10_000] {
            #expect(try Self.archive(entries, chunk: chunk) == reference, "pieces of \(chunk)")
        }
    }

    /// An export with nothing in it is still an archive: just the end record, 22 bytes.
    @Test func anEmptyArchiveIsItsEndRecord() throws {
        var zip = ZipStream()
        let bytes = try zip.close()
        #expect(bytes == [0x50, 0x4b, 0x05, 0x06] + [UInt8](repeating: 0, count: 18))
        #expect(try Self.read(bytes).isEmpty)
    }

    /// What each call returns is exactly the archive's next bytes: a local header of 30 bytes
    /// and the name, a descriptor of 16, and offsets that count everything written before.
    @Test func eachPieceHasItsSizeAndTheOffsetsCountThem() throws {
        var zip = ZipStream()
        let name = "é.txt"
        let header = try zip.begin(name)
        #expect(header.count == 30 + name.utf8.count)
        #expect(Array(header.suffix(name.utf8.count)) == Array(name.utf8))
        let body = Array("hello".utf8)
        try body.withUnsafeBytes { try zip.add($0) }
        let descriptor = try zip.finish()
        #expect(descriptor.count == 16)
        #expect(Self.u32(descriptor, 4) == Self.crc("hello") && Self.u32(descriptor, 8) == 5)
        let second = try zip.begin("b")
        let secondDescriptor = try zip.finish()
        let tail = try zip.close()
        let written = header + body + descriptor + second + secondDescriptor + tail
        let end = written.count - 22
        #expect(Int(Self.u32(written, end + 16)) == header.count + body.count + descriptor.count + second.count + secondDescriptor.count)
        let read = try Self.read(written)
        #expect(read == [
            ReadEntry(name: "é.txt", bytes: body, crc: Self.crc("hello")), ReadEntry(name: "b", bytes: [], crc: 0),
        ])
    }

    /// Every entry carries the same fixed time (1 January 2026), so two exports of the same
    /// data are the same bytes.
    @Test func entriesCarryAFixedDate() throws {
        let zip = try Self.archive([("a", [1]), ("b", [2])])
        let entries: [(name: String, bytes: [UInt8])] = [("a", [1]), ("b", [2])]
        #expect(try Self.archive(entries) == zip)
        let date = Self.u16(zip, 12)
        #expect(date >> 9 == 2026 - 1980 && (date >> 5) & 0xF == 1 && date & 0x1F == 1)
        #expect(Self.u16(zip, 10) == 0, "midnight")
    }

    /// An unzip tool opens the archive, checks every CRC and gives back each entry's bytes.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/unzip")))
    func unzipAcceptsTheArchive() throws {
        let text = String(repeating: "line of an export\n", count: 500)
        let zip = try Self.archive([("export/messages.json", Array(text.utf8)), ("Café.txt", Array("é".utf8))], chunk: 1_000)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-zip-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("export.zip")
        try Data(zip).write(to: file)
        #expect(try Self.unzip(["-tq", file.path]).status == 0)
        #expect(try Self.unzip(["-p", file.path, "export/messages.json"]).output == Data(text.utf8))
    }

    static func unzip(_ arguments: [String]) throws -> (status: Int32, output: Data) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unzip")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }
}
