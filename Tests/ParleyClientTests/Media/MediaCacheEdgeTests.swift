import Foundation
@testable import ParleyClient
import ParleyProtocol
import Synchronization
import Testing

/// The media cache's edges, with the bytes served from memory by the cache's own `fetch` hook
/// (the server side is covered in ``MediaCacheTests``): the exact ranges asked for at piece
/// boundaries, servers that stop short or send other bytes, failures that must not stick, a
/// sign-out during a download, and attachments too big for memory or disk.
@Suite struct MediaCacheEdgeTests {
    /// Files by URL, the ranges asked for, and ways to misbehave.
    final class Origin: Sendable {
        struct State {
            var files: [String: Data] = [:]
            var requests: [ClosedRange<Int64>?] = []
            var failuresLeft = 0
            var stopAfter: Int?
            var etag: String??
        }

        let state = Mutex(State())

        func add(_ data: Data, name: String = "a") -> ParleyProtocol.Attachment {
            let id = EntityID()
            let url = "/api/v1/attachments/\(id)"
            state.withLock { $0.files[url] = data }
            return ParleyProtocol.Attachment(id: id, name: name, contentType: "application/octet-stream", size: Int64(data.count), url: url)
        }

        var requests: [ClosedRange<Int64>?] { state.withLock { $0.requests } }

        func fetch(_ url: String, _ range: ClosedRange<Int64>?) throws -> DownloadedPart {
            try state.withLock { state in
                state.requests.append(range)
                if state.failuresLeft > 0 {
                    state.failuresLeft -= 1
                    throw ClientError(kind: .transport, message: "connection reset")
                }
                guard var data = state.files[url] else { throw ClientError(kind: .server, code: .notFound, httpStatus: 404, message: "HTTP 404") }
                let etag = state.etag ?? MediaCache.sha256(data)
                if let stop = state.stopAfter { data = data.prefix(stop) }
                guard let range else { return DownloadedPart(data: data, etag: etag) }
                let lower = Int(min(range.lowerBound, Int64(data.count))), upper = Int(min(range.upperBound + 1, Int64(data.count)))
                return DownloadedPart(data: data.subdata(in: lower..<upper), etag: etag)
            }
        }
    }

    static func bytes(_ count: Int, seed: Int = 3) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed &+ $0 >> 7) })
    }

    /// A cache over `origin` in a fresh folder.
    static func cache(_ origin: Origin, limits: MediaCache.Limits = .init(), pieceSize: Int64 = 100, folder: URL? = nil) -> MediaCache {
        let directory = folder ?? FileManager.default.temporaryDirectory.appendingPathComponent("parley-media-\(UUID().uuidString)")
        return MediaCache(directory: directory, limits: limits, pieceSize: pieceSize) { url, range in try origin.fetch(url, range) }
    }

    /// At most a piece: one request for the whole. One byte more: pieces that meet exactly,
    /// the last one short, progress after each and ending at 1.
    @Test func piecesMeetExactlyAtTheBoundaries() async throws {
        let origin = Origin()
        let exact = origin.add(Self.bytes(100)), over = origin.add(Self.bytes(301, seed: 9))
        let cache = Self.cache(origin)
        #expect(try await cache.data(for: exact) == Self.bytes(100))
        #expect(origin.requests == [nil])
        let fractions = Mutex<[Double]>([])
        let data = try await cache.data(for: over) { fraction in fractions.withLock { $0.append(fraction) } }
        #expect(data == Self.bytes(301, seed: 9))
        #expect(origin.requests.dropFirst() == [0...99, 100...199, 200...299, 300...300])
        let seen = fractions.withLock { $0 }
        #expect(seen.first == 0 && seen.last == 1 && seen == seen.sorted() && seen.count == 6, "\(seen)")
        #expect(await cache.downloads == 2)
    }

    /// An empty attachment is a download of nothing, kept like any other.
    @Test func anEmptyAttachmentIsKept() async throws {
        let origin = Origin()
        let empty = origin.add(Data())
        let cache = Self.cache(origin)
        #expect(try await cache.data(for: empty).isEmpty)
        #expect(try await cache.data(for: empty).isEmpty)
        #expect(await cache.downloads == 1)
    }

    /// A server that stops sending partway, or sends bytes that do not match the checksum:
    /// an error, nothing kept, and the next try downloads again and succeeds.
    @Test func shortOrWrongDownloadsFailAndAreNotKept() async throws {
        let origin = Origin()
        let file = origin.add(Self.bytes(250))
        let cache = Self.cache(origin)
        origin.state.withLock { $0.stopAfter = 120 }
        await #expect(throws: ClientError.self) { _ = try await cache.data(for: file) }
        #expect(await cache.cachedData(for: file) == nil)
        origin.state.withLock { $0.stopAfter = nil; $0.etag = .some(MediaCache.sha256(Data("other".utf8))) }
        await #expect(throws: ClientError.self) { _ = try await cache.data(for: file) }
        #expect(await cache.cachedData(for: file) == nil)
        let held = await cache.memoryUsage()
        #expect(held.count == 0)
        // A server that sends no checksum is trusted on size alone.
        origin.state.withLock { $0.etag = .some(nil) }
        #expect(try await cache.data(for: file) == Self.bytes(250))
        #expect(await cache.downloads == 3)
    }

    /// A failed download is not remembered as a failure: the next request tries again, and
    /// everyone who waited on the failed one got the error (not a hang).
    @Test func aFailureDoesNotStickAndReachesEveryWaiter() async throws {
        let origin = Origin()
        let file = origin.add(Self.bytes(50))
        let cache = Self.cache(origin)
        origin.state.withLock { $0.failuresLeft = 1 }
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<4 { group.addTask { (try? await cache.data(for: file)) != nil } }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.count == 4, "nobody hangs")
        #expect(try await cache.data(for: file) == Self.bytes(50))
        #expect(origin.requests.count <= 5 && origin.requests.count >= 2)
        let missing = ParleyProtocol.Attachment(id: EntityID(), name: "gone", contentType: "x", size: 10, url: "/api/v1/attachments/gone")
        do {
            _ = try await cache.data(for: missing)
            Issue.record("a missing attachment downloaded")
        } catch let error as ClientError {
            #expect(error.code == .notFound, "the server's answer reaches the screen")
        }
    }

    /// A picture's address must end in an id: anything else is refused before any request.
    /// A valid one is fetched whole (its size is unknown) and checked against its checksum.
    @Test func picturesAreFetchedWholeByTheirAddress() async throws {
        let origin = Origin()
        let picture = origin.add(Self.bytes(450), name: "me.png")
        let cache = Self.cache(origin)
        for bad in ["", "/", "/api/v1/attachments/", "/api/v1/attachments/not-an-id", "https://evil.example/x.png"] {
            do {
                _ = try await cache.picture(bad)
                Issue.record("\(bad) was fetched")
            } catch let error as ClientError {
                #expect(error.code == .invalidRequest, "\(bad)")
            }
        }
        #expect(origin.requests.isEmpty)
        #expect(try await cache.picture(picture.url) == Self.bytes(450))
        #expect(origin.requests == [nil], "one whole request, though larger than a piece")
        #expect(try await cache.picture(picture.url) == Self.bytes(450))
        #expect(await cache.downloads == 1)
    }

    /// Sign-out during a download: the bytes reach the screen that asked, but memory keeps
    /// nothing of the signed-out user.
    @Test func aPurgeDuringADownloadKeepsNothing() async throws {
        let gate = Mutex<CheckedContinuation<Void, Never>?>(nil)
        let arrived = Mutex(false)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("parley-media-\(UUID().uuidString)")
        let data = Self.bytes(80)
        let attachment = ParleyProtocol.Attachment(id: EntityID(), name: "p", contentType: "image/png", size: 80, url: "/x")
        let cache = MediaCache(directory: folder) { _, _ in
            await withCheckedContinuation { continuation in
                gate.withLock { $0 = continuation }
                arrived.withLock { $0 = true }
            }
            return DownloadedPart(data: data, etag: nil)
        }
        let download = Task { try await cache.data(for: attachment) }
        while !arrived.withLock({ $0 }) { await Task.yield() }
        await cache.purge()
        gate.withLock { $0 }?.resume()
        #expect(try await download.value == data)
        let memory = await cache.memoryUsage()
        #expect(memory.count == 0 && memory.bytes == 0, "not kept in memory after the purge")
    }

    /// An attachment bigger than memory's bytes is read from disk, not held; one bigger than
    /// the disk's bytes is downloaded each time; no memory at all still works from disk.
    @Test func attachmentsTooBigForATierSkipIt() async throws {
        let origin = Origin()
        let big = origin.add(Self.bytes(600)), small = origin.add(Self.bytes(40))
        let cache = Self.cache(origin, limits: .init(memoryCount: 8, memoryBytes: 500, diskBytes: 10_000))
        _ = try await cache.data(for: big)
        _ = try await cache.data(for: small)
        let held = await cache.memoryUsage()
        #expect(held == (1, 40))
        #expect(try await cache.data(for: big) == Self.bytes(600))
        #expect(await cache.downloads == 2, "the big one came from disk")

        let tinyDisk = Self.cache(origin, limits: .init(memoryCount: 0, memoryBytes: 1 << 20, diskBytes: 100))
        _ = try await tinyDisk.data(for: big)
        _ = try await tinyDisk.data(for: big)
        #expect(await tinyDisk.downloads == 2, "neither memory nor disk can hold it")
        #expect(await tinyDisk.diskUsage() == 0)
        _ = try await tinyDisk.data(for: small)
        _ = try await tinyDisk.data(for: small)
        let none = await tinyDisk.memoryUsage()
        #expect(await tinyDisk.downloads == 3, "no memory: the disk serves it")
        #expect(none.count == 0)
    }
}
