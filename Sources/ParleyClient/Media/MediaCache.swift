import Crypto
import Foundation
import ParleyProtocol

/// Attachments kept so a picture shown twice is downloaded once: in memory (bounded by count
/// and bytes, least recently used out first) and on disk (an LRU bounded by bytes, 200 MB by
/// default), keyed by attachment id. Concurrent requests for one attachment share one download;
/// downloads go in ranged pieces with the current token and report their progress; a file on
/// disk whose size or SHA-256 does not match (a crash mid-write, a damaged disk) is fetched
/// again. ``purge()`` (done by ``ChatClient/logout(keepLocalData:)``) forgets everything.
public actor MediaCache {
    /// How much the cache may hold.
    public struct Limits: Sendable, Equatable {
        /// Attachments kept in memory at most.
        public var memoryCount: Int
        /// Bytes kept in memory at most (a single larger attachment is not kept in memory).
        public var memoryBytes: Int
        /// Bytes kept on disk at most.
        public var diskBytes: Int64

        /// Limits of these values; by default 64 attachments and 32 MB in memory, 200 MB on disk.
        public init(memoryCount: Int = 64, memoryBytes: Int = 32 << 20, diskBytes: Int64 = 200 << 20) {
            self.memoryCount = memoryCount
            self.memoryBytes = memoryBytes
            self.diskBytes = diskBytes
        }
    }

    /// Fetches `range` of an attachment's bytes (the whole when nil), authorized with the
    /// user's current token.
    public typealias Fetch = @Sendable (_ url: String, _ range: ClosedRange<Int64>?) async throws -> DownloadedPart

    /// The folder the disk cache lives in.
    public nonisolated let directory: URL
    /// How much the cache may hold.
    public nonisolated let limits: Limits
    /// Bytes asked of the server per request: progress moves after each piece.
    public nonisolated let pieceSize: Int64
    private let fetch: Fetch
    private var memory: [EntityID: (data: Data, used: UInt64)] = [:]
    private var memoryBytes = 0
    private var clock: UInt64 = 0
    private var inFlight: [EntityID: Task<Data, any Error>] = [:]
    private var listeners: [EntityID: [@Sendable (Double) -> Void]] = [:]
    /// Bumped by ``purge()``: a download that began before it is not kept.
    private var epoch = 0
    /// Downloads from the server (not answered from memory or disk), for tests and diagnostics.
    public private(set) var downloads = 0

    /// A cache on disk in `directory` that downloads through `fetch`, `pieceSize` bytes at a time
    /// (at least 1).
    public init(directory: URL, limits: Limits = .init(), pieceSize: Int64 = 512 * 1024, fetch: @escaping Fetch) {
        self.directory = directory
        self.limits = limits
        self.pieceSize = max(pieceSize, 1)
        self.fetch = fetch
    }

    /// The attachment's bytes: from memory, from disk, or downloaded once (however many ask at
    /// once). `progress` hears 0…1 while it downloads.
    public func data(for attachment: Attachment, progress: (@Sendable (Double) -> Void)? = nil) async throws -> Data {
        if let hit = memory[attachment.id] {
            clock += 1
            memory[attachment.id]?.used = clock
            touch(attachment.id)
            return hit.data
        }
        if let progress { listeners[attachment.id, default: []].append(progress) }
        if let task = inFlight[attachment.id] { return try await task.value }
        let started = epoch
        let task = Task { try await self.load(attachment) }
        inFlight[attachment.id] = task
        defer {
            inFlight[attachment.id] = nil
            listeners[attachment.id] = nil
        }
        let data = try await task.value
        if started == epoch { remember(attachment.id, data) }
        return data
    }

    /// A person's picture (``User/avatarUrl``), kept like an attachment: its size is not known
    /// beforehand, so it is fetched whole and checked against its SHA-256 ETag.
    public func picture(_ url: String) async throws -> Data {
        guard let last = url.split(separator: "/").last, let id = EntityID(String(last)) else {
            throw ClientError(kind: .server, code: .invalidRequest, message: "Not a picture's address: \(url)")
        }
        return try await data(for: Attachment(id: id, name: "picture", contentType: "image/*", size: Self.unknownSize, url: url))
    }

    /// The size of a picture before it is downloaded.
    static let unknownSize: Int64 = -1

    /// What is cached for an attachment, without downloading (nil when nothing sound is kept).
    public func cachedData(for attachment: Attachment) -> Data? {
        if let hit = memory[attachment.id] { return hit.data }
        return readFromDisk(attachment)
    }

    /// Forgets everything, in memory and on disk (sign-out).
    public func purge() {
        epoch += 1
        memory = [:]
        memoryBytes = 0
        try? FileManager.default.removeItem(at: directory)
    }

    /// What memory holds now: how many attachments and their bytes.
    public func memoryUsage() -> (count: Int, bytes: Int) {
        (memory.count, memoryBytes)
    }

    /// Bytes the disk cache holds now.
    public func diskUsage() -> Int64 {
        entries().reduce(0) { $0 + $1.size }
    }

    // MARK: Loading

    private func load(_ attachment: Attachment) async throws -> Data {
        if let data = readFromDisk(attachment) { return data }
        downloads += 1
        let started = epoch
        let data = try await download(attachment)
        // A sign-out (``purge()``) while it downloaded: the bytes go to whoever asked, but
        // nothing is written back into the folder the purge removed for the next user.
        if started == epoch { writeToDisk(attachment, data) }
        return data
    }

    /// In ranged pieces for progress; checked against the size and (when the server sent one)
    /// the SHA-256 ETag, so a damaged transfer is not kept.
    private func download(_ attachment: Attachment) async throws -> Data {
        let size = attachment.size
        var data = Data()
        var etag: String?
        report(attachment.id, 0)
        if size <= pieceSize {  // a picture's unknown size included
            let part = try await fetch(attachment.url, nil)
            data = part.data
            etag = part.etag
        } else {
            while Int64(data.count) < size {
                let start = Int64(data.count)
                let part = try await fetch(attachment.url, start...min(start + pieceSize, size) - 1)
                guard !part.data.isEmpty else { break }
                data.append(part.data)
                etag = etag ?? part.etag
                report(attachment.id, Double(data.count) / Double(size))
            }
        }
        guard size == Self.unknownSize || Int64(data.count) == size else {
            throw ClientError(kind: .transport, message: "The download of \(attachment.name) stopped at \(data.count) of \(size) bytes")
        }
        if let etag, Self.sha256(data) != etag {
            throw ClientError(kind: .transport, message: "The download of \(attachment.name) does not match its checksum")
        }
        report(attachment.id, 1)
        return data
    }

    private func report(_ id: EntityID, _ fraction: Double) {
        for listener in listeners[id] ?? [] { listener(fraction) }
    }

    private func remember(_ id: EntityID, _ data: Data) {
        guard data.count <= limits.memoryBytes, limits.memoryCount > 0 else { return }
        clock += 1
        if let old = memory[id] { memoryBytes -= old.data.count }
        memory[id] = (data, clock)
        memoryBytes += data.count
        while memory.count > limits.memoryCount || memoryBytes > limits.memoryBytes {
            guard let oldest = memory.min(by: { $0.value.used < $1.value.used }) else { break }
            memory[oldest.key] = nil
            memoryBytes -= oldest.value.data.count
        }
    }

    // MARK: Disk

    private func file(_ id: EntityID) -> URL { directory.appendingPathComponent(id.description) }
    private func checksumFile(_ id: EntityID) -> URL { directory.appendingPathComponent("\(id).sha256") }

    private func readFromDisk(_ attachment: Attachment) -> Data? {
        let url = file(attachment.id)
        guard let data = try? Data(contentsOf: url) else { return nil }
        let recorded = try? String(contentsOf: checksumFile(attachment.id), encoding: .utf8)
        let sized = attachment.size == Self.unknownSize || Int64(data.count) == attachment.size
        guard sized, recorded == Self.sha256(data) else {
            // Partial or damaged: drop it, the caller downloads again.
            try? FileManager.default.removeItem(at: url)
            try? FileManager.default.removeItem(at: checksumFile(attachment.id))
            return nil
        }
        touch(attachment.id)
        return data
    }

    /// Marks the file on disk as just used (the disk's LRU order follows every use, memory hits too).
    private func touch(_ id: EntityID) {
        try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: file(id).path)
    }

    /// Written to a temporary file and moved into place, its checksum beside it, then the
    /// least recently used files go until the cache is within its bytes.
    private func writeToDisk(_ attachment: Attachment, _ data: Data) {
        guard Int64(data.count) <= limits.diskBytes else { return }
        let manager = FileManager.default
        try? manager.createDirectory(at: directory, withIntermediateDirectories: true)
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        // Downloaded again when needed: not worth a place in the user's backups.
        var folder = directory
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        try? folder.setResourceValues(values)
        #endif
        let temporary = directory.appendingPathComponent(".tmp-\(UUID().uuidString)")
        do {
            try data.write(to: temporary)
            try Self.sha256(data).write(to: checksumFile(attachment.id), atomically: true, encoding: .utf8)
            _ = try? manager.removeItem(at: file(attachment.id))
            try manager.moveItem(at: temporary, to: file(attachment.id))
        } catch {
            try? manager.removeItem(at: temporary)
            return
        }
        var entries = entries()
        var total = entries.reduce(0) { $0 + $1.size }
        entries.sort { $0.used < $1.used }
        for entry in entries where total > limits.diskBytes {
            try? manager.removeItem(at: entry.url)
            try? manager.removeItem(at: directory.appendingPathComponent("\(entry.url.lastPathComponent).sha256"))
            total -= entry.size
        }
    }

    private func entries() -> [(url: URL, size: Int64, used: Date)] {
        let keys: [URLResourceKey] = [.fileSizeKey, .contentModificationDateKey]
        let files = (try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: keys)) ?? []
        return files.filter { EntityID($0.lastPathComponent) != nil }.map { url in
            let values = try? url.resourceValues(forKeys: Set(keys))
            return (url, Int64(values?.fileSize ?? 0), values?.contentModificationDate ?? .distantPast)
        }
    }

    static func sha256(_ data: Data) -> String {
        SHA256.hash(data: data).map { String(format: "%02x", $0) }.joined()
    }
}

/// A piece of a download: its bytes and the attachment's checksum (the server's ETag).
public struct DownloadedPart: Sendable {
    /// The bytes received.
    public var data: Data
    /// The SHA-256 in hex, without quotes, when the server sent it.
    public var etag: String?

    /// A piece of these bytes, with the checksum if the server sent one.
    public init(data: Data, etag: String?) {
        self.data = data
        self.etag = etag
    }
}
