import Foundation
import ParleyClient
import ParleyProtocol
import ParleyTestSupport
import Testing

/// Uploads stream to content-addressed files; downloads are for the uploader and participants.
@Suite struct AttachmentTests {
    static let png = Fixtures.png

    func upload(_ server: TestServer, _ user: TestUser, _ data: Data, type: String, name: String = "photo.png") async throws -> (status: Int, body: Data) {
        try await server.raw("POST", "attachments?name=\(name)", token: user.token, body: data, headers: ["Content-Type": type])
    }

    @Test func uploadSendAndDownloadWithRanges() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let carol = try await server.register("carol@x.io")
        let mallory = try await server.register("mallory@x.io", organization: "evil")
        let answer = try await upload(server, alice, Self.png, type: "image/png")
        #expect(answer.status == 201)
        let attachment = try WireCoding.makeDecoder().decode(Attachment.self, from: answer.body)
        #expect(attachment.size == Int64(Self.png.count) && attachment.width == 640 && attachment.height == 480)
        #expect(attachment.url == "/api/v1/attachments/\(attachment.id)" && attachment.contentType == "image/png")

        let path = "attachments/\(attachment.id)"
        #expect(try await server.raw("GET", path, token: alice.token).body == Self.png, "the uploader can fetch it")
        #expect(try await server.raw("GET", path, token: bob.token).status == 404, "not shared yet")

        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        let message = try await alice.api.send(
            .init(clientMessageId: "img", text: "look", type: .image, attachmentId: attachment.id), to: direct.id)
        #expect(message.attachment == attachment && message.type == .image)
        #expect(try await bob.api.messages(direct.id).messages.first?.attachment == attachment)

        let full = try await server.raw("GET", path, token: bob.token)
        #expect(full.status == 200 && full.body == Self.png)
        let part = try await server.raw("GET", path, token: bob.token, headers: ["Range": "bytes=100-199"])
        #expect(part.status == 206 && part.body == Self.png[100..<200])
        let tail = try await server.raw("GET", path, token: bob.token, headers: ["Range": "bytes=-10"])
        #expect(tail.status == 206 && tail.body == Self.png.suffix(10))
        let beyond = try await server.raw("GET", path, token: bob.token, headers: ["Range": "bytes=999999999-"])
        #expect(beyond.status == 416)
        for outsider in [carol, mallory] {
            #expect(try await server.raw("GET", path, token: outsider.token).status == 404)
        }
        // Deleting the message takes the attachment back from the participants.
        _ = try await server.raw("DELETE", "conversations/\(direct.id)/messages/\(message.id)", token: alice.token)
        #expect(try await server.raw("GET", path, token: bob.token).status == 404)
        #expect(try await server.raw("GET", path, token: alice.token).status == 200)
    }

    @Test func identicalContentIsStoredOnce() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let a = try WireCoding.makeDecoder().decode(Attachment.self, from: try await upload(server, alice, Self.png, type: "image/png").body)
        let b = try WireCoding.makeDecoder().decode(Attachment.self, from: try await upload(server, bob, Self.png, type: "image/png").body)
        #expect(a.id != b.id)
        let root = server.dataDirectory + "/attachments"
        let files = try FileManager.default.subpathsOfDirectory(atPath: root).filter { !$0.hasPrefix("tmp") && $0.count > 3 }
        #expect(files.count == 1, "\(files)")
    }

    @Test func refusedUploadsLeaveNothingBehind() async throws {
        let server = try await TestServer.start { $0.maxAttachmentBytes = 100_000 }
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        #expect(try await upload(server, alice, Self.png, type: "image/png").status == 413)
        #expect(try await upload(server, alice, Data("MZ...".utf8), type: "application/x-msdownload").status == 400)
        #expect(try await upload(server, alice, Data("not a png at all".utf8), type: "image/png").status == 400)
        #expect(try await upload(server, alice, Data(), type: "text/plain").status == 400)
        #expect(try await upload(server, alice, Data("x".utf8), type: "text/plain", name: "a%2Fb").status == 400)
        let root = server.dataDirectory + "/attachments"
        let left = (try? FileManager.default.subpathsOfDirectory(atPath: root)) ?? []
        #expect(left.isEmpty, "\(left)")
        let pdf = try await upload(server, alice, Data("%PDF-1.4 tiny".utf8), type: "application/pdf", name: "doc.pdf")
        #expect(pdf.status == 201)
        let attachment = try WireCoding.makeDecoder().decode(Attachment.self, from: pdf.body)
        let bob = try await server.register("bob@x.io")
        let direct = try await alice.api.createConversation(.init(type: .direct, participantIds: [bob.id]))
        let mismatch = try await server.raw(
            "POST", "conversations/\(direct.id)/messages", token: alice.token,
            json: #"{"clientMessageId":"p","text":"","type":"image","attachmentId":"\#(attachment.id)"}"#)
        #expect(mismatch.status == 400, "an image message needs an image")
        let notMine = try await server.raw(
            "POST", "conversations/\(direct.id)/messages", token: bob.token,
            json: #"{"clientMessageId":"q","text":"","type":"file","attachmentId":"\#(attachment.id)"}"#)
        #expect(notMine.status == 400, "only the uploader can send it")
        let file = try await alice.api.send(.init(clientMessageId: "f", text: "", type: .file, attachmentId: attachment.id), to: direct.id)
        #expect(file.attachment?.name == "doc.pdf")
    }
}

/// Chunked, resumable uploads.
@Suite struct ResumableUploadTests {
    @Test func chunksAppendAtTheReceivedOffsetAndCompleteIntoAnAttachment() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let alice = try await server.register("alice@x.io")
        let bob = try await server.register("bob@x.io")
        let png = Fixtures.png
        let decoder = WireCoding.makeDecoder()
        let opened = try await server.raw(
            "POST", "attachments/uploads", token: alice.token,
            json: #"{"name":"big.png","contentType":"image/png","size":\#(png.count)}"#)
        #expect(opened.status == 201)
        let status = try decoder.decode(UploadStatus.self, from: opened.body)
        let path = "attachments/uploads/\(status.uploadId)"
        let first = try await server.raw("PUT", "\(path)?offset=0", token: alice.token, body: png.prefix(100_000))
        #expect(try decoder.decode(UploadStatus.self, from: first.body).received == 100_000)
        let wrong = try await server.raw("PUT", "\(path)?offset=0", token: alice.token, body: png.prefix(10))
        #expect(wrong.status == 409, "a chunk must start where the server is")
        #expect(try await server.raw("GET", path, token: bob.token).status == 404, "someone else's upload is invisible")
        let early = try await server.raw("POST", "\(path)/complete", token: alice.token)
        #expect(early.status == 409)
        let resumed = try decoder.decode(UploadStatus.self, from: try await server.raw("GET", path, token: alice.token).body)
        #expect(resumed.received == 100_000)
        _ = try await server.raw("PUT", "\(path)?offset=100000", token: alice.token, body: png.dropFirst(100_000))
        let done = try await server.raw("POST", "\(path)/complete", token: alice.token)
        #expect(done.status == 201)
        let attachment = try decoder.decode(Attachment.self, from: done.body)
        #expect(attachment.size == Int64(png.count) && attachment.width == 640)
        #expect(try await server.raw("GET", "attachments/\(attachment.id)", token: alice.token).body == png)
        let tooBig = try await server.raw(
            "POST", "attachments/uploads", token: alice.token, json: #"{"name":"x","contentType":"text/plain","size":999999999999}"#)
        #expect(tooBig.status == 413)
    }
}
