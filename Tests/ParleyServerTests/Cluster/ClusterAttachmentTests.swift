import Foundation
import ParleyClient
import ParleyProtocol
import ParleyServer
import ParleyTestSupport
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Attachments on a cluster: every node on one PostgreSQL serves every attachment (the bytes
/// are chunks in the database, not files on the node that took the upload), with ranges,
/// ETags and resumable uploads that change node half way.
@Suite(.needsPostgres) struct ClusterAttachmentTests {
    /// Bytes that span several 256 KiB pieces and end inside one.
    static let big: Data = {
        var generator = SeededGenerator(seed: 21)
        return Data((0..<(3 * 262_144 + 12_345)).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }()

    @Test func anUploadOnOneNodeIsServedWholeAndInRangesByTheOther() async throws {
        let (a, b) = try await ClusterTests.twoNodes()
        defer { Task { await b.stop(); await a.stop() } }
        let xavier = try await a.register("xavier@x.io")
        let yara = try await b.register("yara@x.io")
        let uploaded = try await a.raw(
            "POST", "attachments?name=data.bin", token: xavier.token, body: Self.big, headers: ["Content-Type": "application/octet-stream"])
        #expect(uploaded.status == 201)
        let attachment = try WireCoding.makeDecoder().decode(Attachment.self, from: uploaded.body)
        let direct = try await xavier.api.createConversation(.init(type: .direct, participantIds: [yara.id]))
        _ = try await xavier.api.send(.init(clientMessageId: "f", text: "", type: .file, attachmentId: attachment.id), to: direct.id)

        // Node B, which never saw the upload, serves it: whole, and in ranges across pieces.
        let path = "attachments/\(attachment.id)"
        let whole = try await b.raw("GET", path, token: yara.token)
        #expect(whole.status == 200 && whole.body == Self.big)
        for (range, expected) in [
            ("bytes=262100-262200", Self.big[262_100...262_200]),
            ("bytes=0-0", Self.big[0...0]),
            ("bytes=-10", Self.big.suffix(10)),
            ("bytes=524288-", Self.big[524_288...]),
            ("bytes=100000-900000", Self.big[100_000...]),
        ] {
            let part = try await b.raw("GET", path, token: yara.token, headers: ["Range": range])
            #expect(part.status == 206 && part.body == Data(expected), "\(range): \(part.status) \(part.body.count) bytes")
        }
        // The same validators on both nodes; a client holding the bytes gets 304.
        let (_, headResponse) = try await Self.fetch(b, path, token: yara.token)
        let etag = try #require(headResponse.value(forHTTPHeaderField: "ETag"))
        #expect(headResponse.value(forHTTPHeaderField: "Cache-Control")?.hasPrefix("private, max-age=") == true)
        let (_, fromA) = try await Self.fetch(a, path, token: xavier.token)
        #expect(fromA.value(forHTTPHeaderField: "ETag") == etag)
        let (cachedBody, cached) = try await Self.fetch(b, path, token: yara.token, headers: ["If-None-Match": etag])
        #expect(cached.statusCode == 304 && cachedBody.isEmpty)
        // Still only for those who may see it, on every node.
        let outsider = try await b.register("zed@x.io")
        #expect(try await b.raw("GET", path, token: outsider.token).status == 404)
    }

    @Test func aResumableUploadBegunOnOneNodeFinishesOnTheOther() async throws {
        let (a, b) = try await ClusterTests.twoNodes()
        defer { Task { await b.stop(); await a.stop() } }
        let xavier = try await a.register("xavier@x.io")
        let onB = try await b.api().login(LoginRequest(organization: "acme", email: "xavier@x.io", password: TestUser.password))
        let decoder = WireCoding.makeDecoder()
        let opened = try await a.raw(
            "POST", "attachments/uploads", token: xavier.token,
            json: #"{"name":"data.bin","contentType":"application/octet-stream","size":\#(Self.big.count)}"#)
        #expect(opened.status == 201)
        let upload = "attachments/uploads/\(try decoder.decode(UploadStatus.self, from: opened.body).uploadId)"
        let first = try await a.raw("PUT", "\(upload)?offset=0", token: xavier.token, body: Self.big.prefix(300_000))
        #expect(first.status == 200)
        // The connection drops; the app comes back through the other node and asks where it was.
        let status = try decoder.decode(UploadStatus.self, from: try await b.raw("GET", upload, token: onB.token).body)
        #expect(status.received == 300_000)
        // Both nodes take a chunk at the same offset at once: exactly one is appended.
        let chunk = Self.big[300_000..<700_000]
        async let left = a.raw("PUT", "\(upload)?offset=300000", token: xavier.token, body: chunk)
        async let right = b.raw("PUT", "\(upload)?offset=300000", token: onB.token, body: chunk)
        let statuses = [try await left.status, try await right.status].sorted()
        #expect(statuses == [200, 409], "\(statuses)")
        let rest = try await b.raw("PUT", "\(upload)?offset=700000", token: onB.token, body: Self.big.dropFirst(700_000))
        #expect(rest.status == 200)
        let done = try await b.raw("POST", "\(upload)/complete", token: onB.token)
        #expect(done.status == 201)
        let attachment = try decoder.decode(Attachment.self, from: done.body)
        #expect(attachment.size == Int64(Self.big.count))
        #expect(try await a.raw("GET", "attachments/\(attachment.id)", token: xavier.token).body == Self.big)
        #expect(try await a.raw("GET", upload, token: xavier.token).status == 404, "a finished upload is gone on every node")
    }

    /// A single-node PostgreSQL deployment from before kept its attachments as files in the
    /// data directory: after the upgrade they are still served.
    @Test func filesFromBeforeTheMoveAreStillServed() async throws {
        let old = try await TestServer.start(store: .postgres) { configuration in
            configuration.attachmentsPath = configuration.attachmentsDirectory
        }
        let alice = try await old.register("alice@x.io")
        let uploaded = try await old.raw(
            "POST", "attachments?name=a.png", token: alice.token, body: Fixtures.png, headers: ["Content-Type": "image/png"])
        let attachment = try WireCoding.makeDecoder().decode(Attachment.self, from: uploaded.body)
        let url = try #require(old.database?.url)
        await old.stop(dropDatabase: false)
        let upgraded = try await TestServer.start(dataDirectory: old.dataDirectory) { $0.databaseURL = url }
        defer { Task { await upgraded.stop(); await old.database?.drop() } }
        let part = try await upgraded.raw("GET", "attachments/\(attachment.id)", token: alice.token, headers: ["Range": "bytes=8-15"])
        #expect(part.status == 206 && part.body == Fixtures.png[8...15])
        // New uploads go to the database, identical content included.
        let again = try await upgraded.raw(
            "POST", "attachments?name=b.png", token: alice.token, body: Fixtures.png, headers: ["Content-Type": "image/png"])
        #expect(again.status == 201)
        let second = try WireCoding.makeDecoder().decode(Attachment.self, from: again.body)
        #expect(try await upgraded.raw("GET", "attachments/\(second.id)", token: alice.token).body == Fixtures.png)
    }

    static func fetch(_ server: TestServer, _ path: String, token: String, headers: [String: String] = [:]) async throws -> (Data, HTTPURLResponse) {
        var request = URLRequest(url: URL(string: "\(server.baseURL.absoluteString)/api/v1/\(path)")!)
        request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        for (key, value) in headers { request.setValue(value, forHTTPHeaderField: key) }
        let (data, response) = try await URLSession.shared.data(for: request)
        return (data, response as! HTTPURLResponse)
    }
}
