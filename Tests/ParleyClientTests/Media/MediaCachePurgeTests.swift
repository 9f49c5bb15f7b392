import Foundation
@testable import ParleyClient
import ParleyProtocol
import Synchronization
import Testing

/// `MediaCache.purge()` (sign-out) during a download: `data(for:)` checked the purge epoch
/// before keeping the bytes in memory, but `load(_:)` wrote them to disk after `download`
/// returned, re-creating the folder `purge()` had just removed: the signed-out user's
/// attachment stayed on disk, and a later cache on the same folder (the next user of the
/// device) served it without a download.
@Suite struct MediaCachePurgeTests {
    @Test func aPurgeDuringADownloadLeavesNothingOnDisk() async throws {
        let gate = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("parley-media-\(UUID().uuidString)")
        let data = Data((0..<80).map { UInt8($0) })
        let attachment = ParleyProtocol.Attachment(id: EntityID(), name: "p", contentType: "image/png", size: 80, url: "/x")
        let cache = MediaCache(directory: folder) { _, _ in
            await withCheckedContinuation { continuation in gate.withLock { $0 = continuation } }
            return DownloadedPart(data: data, etag: nil)
        }
        let download = Task { try await cache.data(for: attachment) }
        while gate.withLock({ $0 == nil }) { await Task.yield() }
        await cache.purge()
        gate.withLock { $0 }?.resume()
        _ = try await download.value
        #expect(await cache.cachedData(for: attachment) == nil, "the signed-out user's file is on disk")
        let nextUser = MediaCache(directory: folder) { _, _ in DownloadedPart(data: Data(), etag: nil) }
        #expect(await nextUser.cachedData(for: attachment) == nil)
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent(attachment.id.description).path))
    }
}
