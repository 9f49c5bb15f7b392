import Foundation
@testable import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Synchronization
import Testing

/// The SDK's media cache against a real server: one download however many ask, bounds in
/// memory and on disk, damaged files fetched again, progress, purge on logout; and uploads
/// that resume at the server's offset after a restart.
@Suite struct MediaCacheTests {
    /// Bytes that are not all alike, so a damaged copy cannot pass.
    static func bytes(_ count: Int, seed: UInt8 = 1) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ Int(seed) &* 17 &+ ($0 >> 9)) })
    }

    /// Uploads `data` as Alice and sends it to Bob; returns the attachment.
    static func shared(_ server: TestServer, _ alice: TestUser, _ direct: Conversation, _ data: Data, name: String) async throws -> ParleyProtocol.Attachment {
        let (status, body) = try await server.raw(
            "POST", "attachments?name=\(name)", token: alice.token, body: data, headers: ["Content-Type": "application/octet-stream"])
        #expect(status == 201)
        let attachment = try WireCoding.makeDecoder().decode(ParleyProtocol.Attachment.self, from: body)
        _ = try await alice.api.send(.init(clientMessageId: name, text: "", type: .file, attachmentId: attachment.id), to: direct.id)
        return attachment
    }

    static func cache(_ user: TestUser, directory: URL, limits: MediaCache.Limits = .init(), pieceSize: Int64 = 512 * 1024) -> MediaCache {
        let transport = LiveTransport(serverURL: user.server.baseURL, token: user.token)
        return MediaCache(directory: directory, limits: limits, pieceSize: pieceSize) { url, range in
            try await transport.download(url, range: range)
        }
    }

    static func folder() -> URL {
        URL(fileURLWithPath: TestServer.temporaryDirectory(), isDirectory: true).appendingPathComponent("media")
    }

    @Test func concurrentRequestsDownloadOnceAndProgressIsReported() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let data = Self.bytes(2_000_000)
        let attachment = try await Self.shared(server, alice, direct, data, name: "big.bin")
        let cache = Self.cache(bob, directory: Self.folder(), pieceSize: 256 * 1024)
        let seen = Mutex<[Double]>([])
        let record: @Sendable (Double) -> Void = { fraction in seen.withLock { $0.append(fraction) } }
        let results: [Data] = try await withThrowingTaskGroup(of: Data.self) { group in
            for index in 0..<8 {
                let progress: (@Sendable (Double) -> Void)? = index == 0 ? record : nil
                group.addTask { try await cache.data(for: attachment, progress: progress) }
            }
            var all: [Data] = []
            for try await data in group { all.append(data) }
            return all
        }
        #expect(results.count == 8 && results.allSatisfy { $0 == data })
        #expect(await cache.downloads == 1, "eight requests, one download")
        let fractions = seen.withLock { $0 }
        #expect(fractions.count >= 8 && fractions == fractions.sorted() && fractions.last == 1, "\(fractions)")
        // Shown again: no network at all.
        _ = try await cache.data(for: attachment)
        #expect(await cache.downloads == 1)
    }

    @Test func memoryAndDiskStayWithinTheirBoundsLeastRecentlyUsedFirst() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        var attachments: [ParleyProtocol.Attachment] = []
        for index in 0..<4 {
            attachments.append(try await Self.shared(server, alice, direct, Self.bytes(100_000, seed: UInt8(index)), name: "f\(index).bin"))
        }
        let folder = Self.folder()
        let limits = MediaCache.Limits(memoryCount: 2, memoryBytes: 1 << 20, diskBytes: 250_000)
        let cache = Self.cache(bob, directory: folder, limits: limits)
        for attachment in attachments.prefix(2) { _ = try await cache.data(for: attachment) }
        _ = try await cache.data(for: attachments[0])  // the first is now the most recently used
        _ = try await cache.data(for: attachments[2])  // memory holds two: the second goes
        #expect(await cache.downloads == 3)
        #expect(await cache.diskUsage() <= 250_000, "the disk is trimmed to its bound")
        _ = try await cache.data(for: attachments[0])
        #expect(await cache.downloads == 3, "the most recently used stayed in memory")
        #expect(await cache.memoryUsage().count == 2)
        // Bounded by bytes as well: room for two of these files, however many are allowed.
        let byBytes = Self.cache(bob, directory: Self.folder(), limits: .init(memoryCount: 10, memoryBytes: 250_000))
        for attachment in attachments.prefix(3) { _ = try await byBytes.data(for: attachment) }
        let held = await byBytes.memoryUsage()
        #expect(held.count == 2 && held.bytes == 200_000, "\(held)")
        _ = try await byBytes.data(for: attachments[2])
        _ = try await byBytes.data(for: attachments[1])
        #expect(await byBytes.downloads == 3, "the two most recent stayed in memory (the disk holds all three too)")
        // A fresh cache on the same folder (a relaunch): what the disk kept is read, not downloaded.
        let relaunched = Self.cache(bob, directory: folder, limits: limits)
        #expect(await relaunched.cachedData(for: attachments[2]) == Self.bytes(100_000, seed: 2))
        #expect(await relaunched.cachedData(for: attachments[1]) == nil, "the least recently used left the disk")
        _ = try await relaunched.data(for: attachments[2])
        #expect(await relaunched.downloads == 0)
    }

    @Test func damagedOrPartialFilesAreFetchedAgainAndBadDownloadsAreNotKept() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let data = Self.bytes(300_000)
        let attachment = try await Self.shared(server, alice, direct, data, name: "photo.bin")
        let folder = Self.folder()
        _ = try await Self.cache(bob, directory: folder).data(for: attachment)
        let file = folder.appendingPathComponent(attachment.id.description)
        // Same size, one byte flipped.
        var damaged = try Data(contentsOf: file)
        damaged[1000] ^= 0xff
        try damaged.write(to: file)
        let afterDamage = Self.cache(bob, directory: folder)
        #expect(try await afterDamage.data(for: attachment) == data)
        #expect(await afterDamage.downloads == 1)
        // Cut short (a crash while it was written).
        try data.prefix(1000).write(to: file)
        let afterCrash = Self.cache(bob, directory: folder)
        #expect(try await afterCrash.data(for: attachment) == data)
        #expect(await afterCrash.downloads == 1)
        // A transfer damaged on the way fails the checksum and leaves nothing behind.
        let transport = LiveTransport(serverURL: server.baseURL, token: bob.token)
        let elsewhere = Self.folder()
        let corrupting = MediaCache(directory: elsewhere) { url, range in
            var part = try await transport.download(url, range: range)
            part.data[0] ^= 0x01
            return part
        }
        await #expect(throws: ClientError.self) { _ = try await corrupting.data(for: attachment) }
        #expect(await corrupting.cachedData(for: attachment) == nil)
        // Someone who may not see it gets the server's refusal, and nothing is cached.
        let carol = try await server.register("carol@x.io")
        let outsider = Self.cache(carol, directory: Self.folder())
        await #expect(throws: ClientError.self) { _ = try await outsider.data(for: attachment) }
    }

    @Test func theChatModelShowsDownloadProgressAndLogoutPurges() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let data = Self.bytes(4_000_000)  // eight pieces of 512 KiB: progress between them
        _ = try await Self.shared(server, alice, direct, data, name: "clip.bin")
        let path = TestServer.temporaryDirectory() + "/bob.sqlite"
        let client = try ChatClient(serverURL: server.baseURL, token: bob.token, userId: bob.id, databasePath: path)
        await client.start()
        let model = await ChatModel(client: client, conversationId: direct.id)
        await model.start()
        try await waitFor("the file message") { await model.messages.contains { $0.attachment != nil } }
        let message = try #require(await model.messages.first { $0.attachment != nil })
        // What a progress bar bound to the model sees while the bytes come.
        let done = Mutex(false)
        let download = Task {
            let bytes = await model.attachmentData(for: message)
            done.withLock { $0 = true }
            return bytes
        }
        var seen: [Double] = []
        while !done.withLock({ $0 }) {
            if let fraction = await model.downloadProgress[message.id], fraction != seen.last { seen.append(fraction) }
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(await download.value == data)
        #expect(seen.contains { $0 > 0 } && seen.allSatisfy { $0 >= 0 && $0 < 1 } && seen == seen.sorted(), "progress shown: \(seen)")
        #expect(await model.downloadProgress.isEmpty, "no progress left once the bytes are there")
        #expect(await client.media.diskUsage() == 4_000_000)
        #expect(FileManager.default.fileExists(atPath: path + "-media"))
        #expect(await client.media.memoryUsage().count == 1)
        await model.stop()
        try await client.logout()
        let afterLogout = await client.media.memoryUsage()
        #expect(afterLogout.count == 0 && afterLogout.bytes == 0, "memory is purged too")
        #expect(await client.media.diskUsage() == 0)
        #expect(!FileManager.default.fileExists(atPath: path + "-media"))
    }

    /// An upload cut off (the app was killed) goes on from the server's offset when the outbox
    /// runs the preparation again.
    @Test func anInterruptedUploadResumesAtTheServersOffset() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, _, direct) = try await server.directPair()
        let data = Self.bytes(1_000_000)
        let file = URL(fileURLWithPath: TestServer.temporaryDirectory()).appendingPathComponent("video.bin")
        try data.write(to: file)
        // The first run: the upload opens (its id is saved) and 600,000 bytes arrive.
        let saved = Mutex<[String: String]>([:])
        var first = PreparedMessage(
            request: .init(clientMessageId: "v1", text: "", type: .file), context: ["file": file.path], conversationId: direct.id)
        first.saveContext = { context in saved.withLock { $0 = context } }
        let upload = AttachmentUpload(api: alice.api)
        let uploadId = try await { () async throws -> EntityID in
            let status: UploadStatus = try WireCoding.makeDecoder().decode(UploadStatus.self, from: try await server.raw(
                "POST", "attachments/uploads", token: alice.token,
                json: #"{"name":"video.bin","contentType":"application/octet-stream","size":1000000}"#).body)
            await first.saveContext(first.context.merging(["uploadId": status.uploadId.description]) { $1 })
            _ = try await server.raw("PUT", "attachments/uploads/\(status.uploadId)?offset=0", token: alice.token, body: data.prefix(600_000))
            return status.uploadId
        }()
        // After the restart: the saved context names the upload; only the rest is sent.
        let fractions = Mutex<[Double]>([])
        let resumed = PreparedMessage(
            request: first.request, context: saved.withLock { $0 }, conversationId: direct.id,
            reportProgress: { fraction in fractions.withLock { $0.append(fraction) } })
        let prepared = try await upload.prepare(resumed)
        #expect(fractions.withLock { $0.first } == 0.6, "it began where the server was")
        let attachmentId = try #require(prepared.request.attachmentId)
        #expect(try await server.raw("GET", "attachments/\(attachmentId)", token: alice.token).body == data)
        #expect(try await server.raw("GET", "attachments/uploads/\(uploadId)", token: alice.token).status == 404, "the same upload finished")
        // A fresh upload records its id before sending a byte.
        let recorded = Mutex<[String: String]>([:])
        var fresh = PreparedMessage(
            request: .init(clientMessageId: "v2", text: "", type: .file), context: ["file": file.path], conversationId: direct.id)
        fresh.saveContext = { context in recorded.withLock { $0 = context } }
        _ = try await upload.prepare(fresh)
        #expect(recorded.withLock { $0["uploadId"] }.flatMap(EntityID.init) != nil)
    }
}
