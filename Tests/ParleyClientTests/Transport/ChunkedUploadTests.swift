import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Synchronization
import Testing

/// Resumable uploads against a real server: pieces that meet exactly at chunk boundaries,
/// progress that only rises and ends at 1, a remembered upload the server no longer knows (or
/// of another file) replaced by a fresh one instead of failing the send, and a file that
/// cannot be read refused for good.
@Suite struct ChunkedUploadTests {
    /// A file of `count` distinct-looking bytes in a fresh folder.
    static func file(_ count: Int) throws -> (url: URL, data: Data) {
        let data = Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 8 &+ 5) })
        let folder = URL(fileURLWithPath: TestServer.temporaryDirectory(), isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent("clip.bin")
        try data.write(to: url)
        return (url, data)
    }

    /// Uploads `file` as `user` in `chunk`-byte pieces; the attachment, the progress reported
    /// and the upload ids opened.
    static func upload(
        _ user: TestUser, _ file: URL, chunk: Int, resuming: EntityID? = nil
    ) async throws -> (attachment: ParleyProtocol.Attachment, progress: [Double], opened: [EntityID]) {
        let progress = Mutex<[Double]>([]), opened = Mutex<[EntityID]>([])
        let attachment = try await user.api.uploadInChunks(
            file: file, name: "clip.bin", contentType: "application/octet-stream", chunkSize: chunk, resuming: resuming,
            onOpened: { id in opened.withLock { $0.append(id) } }, progress: { fraction in progress.withLock { $0.append(fraction) } })
        return (attachment, progress.withLock { $0 }, opened.withLock { $0 })
    }

    @Test(arguments: [(3000, 1000, 3), (3001, 1000, 4), (999, 1000, 1), (1, 1000, 1)])
    func piecesCoverTheFileExactlyAndProgressEndsAtOne(size: Int, chunk: Int, pieces: Int) async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let (alice, bob, direct) = try await server.directPair()
        let (url, data) = try Self.file(size)
        let (attachment, progress, opened) = try await Self.upload(alice, url, chunk: chunk)
        #expect(attachment.size == Int64(size) && attachment.name == "clip.bin")
        #expect(opened.count == 1, "one upload opened, its id told before any byte")
        #expect(progress.count == pieces && progress == progress.sorted() && progress.last == 1, "\(progress)")
        _ = try await alice.api.send(.init(clientMessageId: "f", text: "", type: .file, attachmentId: attachment.id), to: direct.id)
        #expect(try await bob.api.download(attachment.url) == data, "the pieces put together are the file")
    }

    /// The upload id saved before a restart is unknown to the server now (it expired, or the
    /// server was replaced): a new upload begins and the send goes on.
    @Test func aRememberedUploadTheServerForgotStartsAgain() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let (url, data) = try Self.file(2500)
        let stale = EntityID()
        let (attachment, progress, opened) = try await Self.upload(alice, url, chunk: 1000, resuming: stale)
        #expect(opened.count == 1 && opened.first != stale)
        #expect(progress.first.map { $0 < 0.5 } == true, "it began from nothing: \(progress)")
        #expect(try await alice.api.download(attachment.url) == data)
    }

    /// A remembered upload of another size (the file was replaced before the restart) is not
    /// continued: its bytes would be spliced into the wrong file.
    @Test func aRememberedUploadOfAnotherSizeIsNotContinued() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let earlier = try WireCoding.makeDecoder().decode(UploadStatus.self, from: try await server.raw(
            "POST", "attachments/uploads", token: alice.token,
            json: #"{"name":"clip.bin","contentType":"application/octet-stream","size":2000}"#).body)
        _ = try await server.raw("PUT", "attachments/uploads/\(earlier.uploadId)?offset=0", token: alice.token, body: Data(repeating: 0xEE, count: 1000))
        let (url, data) = try Self.file(2400)
        let (attachment, _, opened) = try await Self.upload(alice, url, chunk: 1000, resuming: earlier.uploadId)
        #expect(opened.count == 1 && opened.first != earlier.uploadId)
        #expect(try await alice.api.download(attachment.url) == data, "none of the old upload's bytes")
    }

    /// A remembered upload of this file continues where the server is.
    @Test func aRememberedUploadOfThisFileContinues() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let (url, data) = try Self.file(3000)
        let earlier = try WireCoding.makeDecoder().decode(UploadStatus.self, from: try await server.raw(
            "POST", "attachments/uploads", token: alice.token,
            json: #"{"name":"clip.bin","contentType":"application/octet-stream","size":3000}"#).body)
        _ = try await server.raw("PUT", "attachments/uploads/\(earlier.uploadId)?offset=0", token: alice.token, body: data.prefix(2000))
        let (attachment, progress, opened) = try await Self.upload(alice, url, chunk: 1000, resuming: earlier.uploadId)
        #expect(opened.isEmpty, "no new upload")
        #expect(progress.count == 2 && abs(progress[0] - 2.0 / 3.0) < 1e-9 && progress[1] == 1, "\(progress)")
        #expect(try await alice.api.download(attachment.url) == data)
    }

    @Test func aFileThatCannotBeReadIsRefusedForGood() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let missing = URL(fileURLWithPath: TestServer.temporaryDirectory()).appendingPathComponent("gone.bin")
        do {
            _ = try await Self.upload(alice, missing, chunk: 1000)
            Issue.record("a missing file was uploaded")
        } catch let error as ClientError {
            #expect(error.kind == .decoding && !error.isTransient, "retrying cannot bring the file back")
        }
    }
}
