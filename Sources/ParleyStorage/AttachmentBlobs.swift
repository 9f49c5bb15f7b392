import Crypto
import Foundation
import NIOCore
import NIOFoundationCompat
import NIOPosix

/// Where attachment bytes live: files in a directory (SQLite, or several nodes on shared
/// storage with `--attachments-dir`), or chunks in PostgreSQL (every node of a cluster serves
/// every attachment). A store of named byte strings, written only by appending at the known
/// length and read in ranges, so nothing ever holds a whole file in memory.
///
/// Names: an upload being received (`upload/<id>`, with its description at `upload/<id>.meta`),
/// a streamed upload before it is checked (`staged/<uuid>`), and a stored attachment's content,
/// named by its SHA-256 (`sha256/<hex>`: identical uploads share it).
package protocol AttachmentBlobs: Sendable {
    /// Appends `bytes` to the blob `name` (created when `offset` is 0), whose length must be
    /// `offset`: otherwise `BlobError.offsetMismatch` with the actual length, and nothing changes.
    /// Returns the new length.
    func append(_ bytes: ByteBuffer, to name: String, at offset: Int64) async throws -> Int64
    /// The length of a blob, or nil when there is none.
    func length(of name: String) async throws -> Int64?
    /// Reads `range` (all when nil) of a blob in pieces of at most about 1 MiB.
    func read(_ name: String, range: ClosedRange<Int64>?, _ body: (ByteBuffer) async throws -> Void) async throws
    /// Renames `name` to `target`; when `target` exists already (identical content) `name` is
    /// just removed.
    func move(_ name: String, to target: String) async throws
    /// Removes a blob (nothing when there is none).
    func remove(_ name: String) async throws
}

package enum BlobError: Error, Equatable {
    case offsetMismatch(actual: Int64)
    case missing
}

/// The names blobs go by.
package enum BlobName {
    /// A stored attachment's content, by its SHA-256 in hex.
    package static func content(_ digest: String) -> String { "sha256/\(digest)" }
    /// The bytes of a resumable upload.
    package static func upload(_ id: some CustomStringConvertible) -> String { "upload/\(id)" }
    /// The description (`ResumableUploads.Meta`) of a resumable upload.
    package static func uploadMeta(_ id: some CustomStringConvertible) -> String { "upload/\(id).meta" }
    /// A streamed upload before it is checked.
    package static func staged(_ id: some CustomStringConvertible) -> String { "staged/\(id)" }
}

extension AttachmentBlobs {
    /// A whole (small) blob, such as an upload's description.
    package func contents(of name: String) async throws -> Data? {
        guard try await length(of: name) != nil else { return nil }
        var data = Data()
        try await read(name, range: nil) { data.append(contentsOf: $0.readableBytesView) }
        return data
    }

    /// The SHA-256 of a blob and its first `headLength` bytes (to sniff image types).
    package func digest(of name: String, headLength: Int = 65_536) async throws -> (digest: String, head: [UInt8]) {
        var hasher = SHA256()
        var head: [UInt8] = []
        try await read(name, range: nil) { buffer in
            buffer.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            if head.count < headLength {
                head += buffer.getBytes(at: buffer.readerIndex, length: min(buffer.readableBytes, headLength - head.count)) ?? []
            }
        }
        return (hasher.finalize().map { String(format: "%02x", $0) }.joined(), head)
    }

}

/// Blobs as files under a directory, in the layout Parley has always used: `<dir>/ab/abcdef…`
/// for content, `<dir>/uploads/<id>/data` and `meta.json` for uploads, `<dir>/tmp-<uuid>` for
/// staged ones. An append holds an exclusive `flock` on the file while it checks the length and
/// writes, so two requests (or two nodes on one shared local file system) cannot interleave.
package struct FileBlobs: AttachmentBlobs {
    package let directory: String
    private let pool = NIOThreadPool.singleton

    package init(directory: String) {
        self.directory = directory
    }

    package func path(_ name: String) -> String {
        let parts = name.split(separator: "/", maxSplits: 1).map(String.init)
        guard parts.count == 2 else { return "\(directory)/invalid" }
        switch parts[0] {
        case "sha256": return "\(directory)/\(parts[1].prefix(2))/\(parts[1])"
        case "upload" where parts[1].hasSuffix(".meta"): return "\(directory)/uploads/\(parts[1].dropLast(5))/meta.json"
        case "upload": return "\(directory)/uploads/\(parts[1])/data"
        default: return "\(directory)/tmp-\(parts[1])"
        }
    }

    package func append(_ bytes: ByteBuffer, to name: String, at offset: Int64) async throws -> Int64 {
        let path = path(name)
        return try await pool.runIfActive {
            // The first piece creates the file, never truncates it: of two first pieces racing,
            // the second finds the first's bytes under the lock and is refused, where creating
            // over it would have emptied what the first had written (both told they landed).
            if offset == 0 {
                try FileManager.default.createDirectory(
                    atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            }
            let descriptor = open(path, offset == 0 ? O_WRONLY | O_CREAT : O_WRONLY, 0o644)
            guard descriptor >= 0 else { throw BlobError.offsetMismatch(actual: 0) }
            let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: false)
            defer { try? handle.close() }
            guard flock(handle.fileDescriptor, LOCK_EX) == 0 else { throw BlobError.missing }
            defer { flock(handle.fileDescriptor, LOCK_UN) }
            let end = Int64(try handle.seekToEnd())
            guard end == offset else { throw BlobError.offsetMismatch(actual: end) }
            try handle.write(contentsOf: bytes.readableBytesView)
            return end + Int64(bytes.readableBytes)
        }
    }

    package func length(of name: String) async throws -> Int64? {
        let attributes = try? FileManager.default.attributesOfItem(atPath: path(name))
        return (attributes?[.size] as? NSNumber)?.int64Value
    }

    package func read(_ name: String, range: ClosedRange<Int64>?, _ body: (ByteBuffer) async throws -> Void) async throws {
        guard let handle = FileHandle(forReadingAtPath: path(name)) else { throw BlobError.missing }
        defer { try? handle.close() }
        var position = range?.lowerBound ?? 0
        let end = range.map { $0.upperBound + 1 } ?? Int64.max
        try handle.seek(toOffset: UInt64(position))
        while position < end {
            let count = Int(min(1 << 20, end - position))
            let block = try await pool.runIfActive { try handle.read(upToCount: count) ?? Data() }
            if block.isEmpty { break }
            position += Int64(block.count)
            try await body(ByteBuffer(bytes: block))
        }
    }

    package func move(_ name: String, to target: String) async throws {
        let from = path(name), to = path(target)
        try await pool.runIfActive {
            let manager = FileManager.default
            try manager.createDirectory(atPath: (to as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            if manager.fileExists(atPath: to) {
                try manager.removeItem(atPath: from)
            } else {
                try manager.moveItem(atPath: from, toPath: to)
            }
        }
    }

    package func remove(_ name: String) async throws {
        let path = path(name)
        try? FileManager.default.removeItem(atPath: path)
        // An upload's folder goes with its data.
        if name.hasPrefix("upload/"), !name.hasSuffix(".meta") {
            try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
        }
    }
}
