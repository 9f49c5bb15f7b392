import Crypto
import Foundation
import NIOCore
@testable import ParleyServer
@testable import ParleyStorage
import ParleyTestSupport
import Testing
@testable import ParleyPostgres

/// Attachment bytes, on both backings: files in a directory (SQLite servers) and chunks in
/// PostgreSQL (clusters). An append must land only at the blob's known length (a resumed
/// upload never writes twice or leaves a hole), a read of any range must give exactly those
/// bytes whatever the chunking, and content moves into place without losing identical bytes.
@Suite struct AttachmentBlobsTests {
    /// Runs `body` on the blobs that go with `kind`'s store: files, or PostgreSQL with a files fallback.
    static func withBlobs(_ kind: StoreKind, _ body: (any AttachmentBlobs, FileBlobs) async throws -> Void) async throws {
        let directory = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let files = FileBlobs(directory: directory)
        switch kind {
        case .sqlite:
            try await body(files, files)
        case .postgres:
            try await withStore(.postgres) { store, _ in
                let postgres = try #require(store as? PostgresStore)
                try await body(PostgresBlobs(client: postgres.client, logger: postgres.logger, fallback: files), files)
            }
        }
    }

    /// Bytes that differ at every position (a chunk read at a wrong offset shows).
    static func pattern(_ count: Int, seed: Int = 0) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 31) ^ ($0 >> 8) &+ seed) }
    }

    static func read(_ blobs: any AttachmentBlobs, _ name: String, _ range: ClosedRange<Int64>?) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        try await blobs.read(name, range: range) { bytes += $0.readableBytesView }
        return bytes
    }

    static func mismatch(_ body: () async throws -> Int64) async -> Int64? {
        do {
            _ = try await body()
            return nil
        } catch let BlobError.offsetMismatch(actual) {
            return actual
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test(arguments: StoreKind.available)
    func appendsGrowTheBlobAtItsKnownLength(kind: StoreKind) async throws {
        try await Self.withBlobs(kind) { blobs, _ in
            let name = BlobName.upload(UUID())
            let before = try await blobs.length(of: name)
            #expect(before == nil)
            #expect(try await blobs.contents(of: name) == nil)
            #expect(try await blobs.append(ByteBuffer(string: "héllo "), to: name, at: 0) == 7)
            #expect(try await blobs.append(ByteBuffer(string: "wörld"), to: name, at: 7) == 13)
            #expect(try await blobs.length(of: name) == 13)
            #expect(try await blobs.contents(of: name) == Data("héllo wörld".utf8))
            // An empty append at the end is accepted and changes nothing.
            #expect(try await blobs.append(ByteBuffer(), to: name, at: 13) == 13)
            // An empty blob exists, with no bytes.
            let empty = BlobName.staged(UUID())
            #expect(try await blobs.append(ByteBuffer(), to: empty, at: 0) == 0)
            #expect(try await blobs.length(of: empty) == 0)
            #expect(try await blobs.contents(of: empty) == Data())
        }
    }

    @Test(arguments: StoreKind.available)
    func anAppendAtTheWrongOffsetIsRefusedAndChangesNothing(kind: StoreKind) async throws {
        try await Self.withBlobs(kind) { blobs, _ in
            let name = BlobName.upload(UUID())
            _ = try await blobs.append(ByteBuffer(string: "0123456789"), to: name, at: 0)
            // A retry of the first piece, a piece skipping ahead, and one rewinding: each told the length.
            for offset: Int64 in [0, 4, 11, 10_000] {
                #expect(await Self.mismatch { try await blobs.append(ByteBuffer(string: "XX"), to: name, at: offset) } == 10)
            }
            #expect(try await blobs.contents(of: name) == Data("0123456789".utf8))
            // A piece for an upload that has none yet creates nothing.
            let missing = BlobName.upload(UUID())
            #expect(await Self.mismatch { try await blobs.append(ByteBuffer(string: "late"), to: missing, at: 5) } == 0)
            #expect(try await blobs.length(of: missing) == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func anyRangeReadsExactlyItsBytesAcrossPiecesAndAppends(kind: StoreKind) async throws {
        try await Self.withBlobs(kind) { blobs, _ in
            let name = BlobName.upload(UUID())
            let piece = Int64(PostgresBlobs.pieceSize)
            // Three appends of uneven sizes: pieces start at 0, 100 000, and on every 256 KiB after each.
            let data = Self.pattern(3 * PostgresBlobs.pieceSize + 12_345)
            var offset: Int64 = 0
            for size in [100_000, 2 * PostgresBlobs.pieceSize + 7, data.count - 100_000 - 2 * PostgresBlobs.pieceSize - 7] {
                let chunk = ByteBuffer(bytes: data[Int(offset)..<Int(offset) + size])
                offset = try await blobs.append(chunk, to: name, at: offset)
            }
            let length = Int64(data.count)
            #expect(try await blobs.length(of: name) == length)
            #expect(try await Self.read(blobs, name, nil) == data)
            let ranges: [ClosedRange<Int64>] = [
                0...0, length - 1...length - 1, 99_990...100_010, 100_000 + piece - 3...100_000 + piece + 3,
                piece - 1...piece, 5...length - 6, 100_000...100_000, 0...length - 1,
            ]
            for range in ranges {
                let expected = Array(data[Int(range.lowerBound)...Int(range.upperBound)])
                #expect(try await Self.read(blobs, name, range) == expected, "range \(range)")
            }
            // A range running past the end stops at the end.
            #expect(try await Self.read(blobs, name, length - 4...length + 100) == Array(data.suffix(4)))
            // The digest sees every byte once, in order.
            let digest = try await blobs.digest(of: name, headLength: 10)
            #expect(digest.digest == SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined())
            #expect(digest.head == Array(data.prefix(10)))
        }
    }

    /// Eight first pieces of one upload at once, several rounds (the window is narrow):
    /// exactly one lands, and the blob is its bytes.
    static func raceFirstPieces(_ kind: StoreKind) async throws {
        try await withBlobs(kind) { blobs, _ in
            for round in 0..<20 {
                let name = BlobName.upload(UUID())
                let outcomes = await withTaskGroup(of: (Int, Int64?).self) { group in
                    for index in 0..<8 {
                        group.addTask {
                            let bytes = ByteBuffer(bytes: Self.pattern(1000 + index, seed: index))
                            return (index, try? await blobs.append(bytes, to: name, at: 0))
                        }
                    }
                    return await group.reduce(into: [(Int, Int64?)]()) { $0.append($1) }
                }
                let winners = outcomes.filter { $0.1 != nil }
                let stored = try await Self.read(blobs, name, nil)
                #expect(winners.count == 1, "round \(round): appends at offset 0 that all succeeded: \(winners.map(\.0))")
                guard winners.count == 1, let (index, length) = winners.first else { break }
                #expect(length == Int64(1000 + index))
                #expect(stored == Self.pattern(1000 + index, seed: index), "round \(round): the winner's bytes")
            }
        }
    }

    @Test(.needsPostgres)
    func ofEightFirstPiecesRacingInPostgreSQLOneWins() async throws {
        try await Self.raceFirstPieces(.postgres)
    }

    /// Files: a first piece created its file before taking the lock, so a second one racing it
    /// created the file again over the first's bytes, and both were told they landed.
    @Test func ofEightFirstPiecesRacingOnFilesOneWins() async throws {
        try await Self.raceFirstPieces(.sqlite)
    }

    @Test(arguments: StoreKind.available)
    func movingIntoPlaceKeepsIdenticalContentOnce(kind: StoreKind) async throws {
        try await Self.withBlobs(kind) { blobs, _ in
            let bytes = Self.pattern(300_000)
            let content = BlobName.content(SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined())
            let first = BlobName.staged(UUID()), second = BlobName.staged(UUID())
            for staged in [first, second] { _ = try await blobs.append(ByteBuffer(bytes: bytes), to: staged, at: 0) }
            try await blobs.move(first, to: content)
            #expect(try await blobs.length(of: first) == nil)
            #expect(try await Self.read(blobs, content, nil) == bytes)
            // The same bytes uploaded again: the staged copy goes, the content stays whole.
            try await blobs.move(second, to: content)
            #expect(try await blobs.length(of: second) == nil)
            #expect(try await blobs.length(of: content) == Int64(bytes.count))
            #expect(try await Self.read(blobs, content, nil) == bytes)
        }
    }

    @Test(arguments: StoreKind.available)
    func removedBlobsAreGoneAndReadingOneIsAnError(kind: StoreKind) async throws {
        try await Self.withBlobs(kind) { blobs, files in
            let id = UUID()
            _ = try await blobs.append(ByteBuffer(string: "data"), to: BlobName.upload(id), at: 0)
            _ = try await blobs.append(ByteBuffer(string: "{\"name\":\"x\"}"), to: BlobName.uploadMeta(id), at: 0)
            try await blobs.remove(BlobName.upload(id))
            #expect(try await blobs.length(of: BlobName.upload(id)) == nil)
            // The upload may begin again at 0.
            #expect(try await blobs.append(ByteBuffer(string: "again"), to: BlobName.upload(id), at: 0) == 5)
            try await blobs.remove(BlobName.upload(id))
            try await blobs.remove(BlobName.uploadMeta(id))
            #expect(try await blobs.contents(of: BlobName.uploadMeta(id)) == nil)
            if kind == .sqlite {
                #expect(!FileManager.default.fileExists(atPath: "\(files.directory)/uploads/\(id)"), "the upload's folder goes with it")
            }
            try await blobs.remove(BlobName.staged(UUID()))  // nothing there: no error
            await #expect(throws: BlobError.missing) { try await Self.read(blobs, BlobName.upload(id), nil) }
        }
    }

    @Test(.needsPostgres)
    func contentFromBeforeTheDatabaseIsServedFromTheFilesButNothingElse() async throws {
        try await Self.withBlobs(.postgres) { blobs, files in
            let bytes = Self.pattern(5000)
            let content = BlobName.content(String(repeating: "ab", count: 32))
            _ = try await files.append(ByteBuffer(bytes: bytes), to: content, at: 0)
            #expect(try await blobs.length(of: content) == 5000)
            #expect(try await Self.read(blobs, content, 10...19) == Array(bytes[10...19]))
            // An upload in progress lives only in the database: a stray file does not count.
            let upload = BlobName.upload(UUID())
            _ = try await files.append(ByteBuffer(string: "stray"), to: upload, at: 0)
            #expect(try await blobs.length(of: upload) == nil)
            #expect(try await blobs.append(ByteBuffer(string: "db"), to: upload, at: 0) == 2)
            #expect(try await blobs.contents(of: upload) == Data("db".utf8))
        }
    }
}
