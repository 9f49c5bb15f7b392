import Crypto
import Foundation
import Hummingbird
import NIOCore
import NIOPosix
import ParleyProtocol

/// Resumable uploads in chunks, for flaky mobile networks and upload progress:
/// `POST /attachments/uploads` opens one, `PUT /attachments/uploads/{id}?offset=` appends a
/// chunk at exactly the bytes received so far, `GET` says how far it got (to resume after a
/// drop), `POST .../complete` turns it into an attachment. An upload is a folder on disk, so it
/// survives a server restart.
struct ResumableUploads: Sendable {
    let attachments: AttachmentController
    /// Largest chunk accepted in one request.
    static let maxChunk = 4 * 1024 * 1024

    struct Meta: Codable {
        var uploaderId: EntityID
        var organizationId: EntityID
        var name: String
        var contentType: String
        var size: Int64
    }

    func addRoutes(to group: RouterGroup<ParleyRequestContext>) {
        group.post("attachments/uploads", use: open)
        group.get("attachments/uploads/:upload", use: status)
        group.put("attachments/uploads/:upload", use: append)
        group.post("attachments/uploads/:upload/complete", use: complete)
    }

    private var root: String { "\(attachments.directory)/uploads" }

    @Sendable func open(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let identity = try context.requireIdentity()
        let body = try await request.decodeJSON(UploadRequest.self)
        let meta = Meta(
            uploaderId: identity.userId, organizationId: identity.organizationId, name: try AttachmentController.fileName(body.name),
            contentType: try AttachmentController.contentType(body.contentType), size: body.size)
        guard meta.size > 0 else { throw APIError.invalid("size must be positive") }
        guard meta.size <= attachments.maxBytes else {
            throw APIError(.payloadTooLarge, "Attachments are at most \(attachments.maxBytes) bytes")
        }
        try attachments.limits?.enforce(.uploadBytes, identity.userId.description, cost: Double(meta.size))
        let id = EntityID()
        let folder = "\(root)/\(id)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try WireCoding.makeEncoder().encode(meta).write(to: URL(fileURLWithPath: "\(folder)/meta.json"))
        FileManager.default.createFile(atPath: "\(folder)/data", contents: nil)
        return try JSONResponse.make(UploadStatus(uploadId: id, received: 0, size: meta.size), status: .created)
    }

    @Sendable func status(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let (id, meta) = try load(context)
        return try JSONResponse.make(UploadStatus(uploadId: id, received: try received(id), size: meta.size))
    }

    @Sendable func append(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let (id, meta) = try load(context)
        guard let offset = try request.integerQuery("offset") else { throw APIError.invalid("offset is required") }
        let have = try received(id)
        guard offset == have else {
            throw APIError(.conflict, "This upload has \(have) bytes; send the chunk at offset \(have)")
        }
        let chunk: ByteBuffer
        do {
            chunk = try await request.collectBody(upTo: Self.maxChunk)
        } catch is NIOTooManyBytesError {
            throw APIError(.payloadTooLarge, "A chunk is at most \(Self.maxChunk) bytes")
        }
        guard offset + Int64(chunk.readableBytes) <= meta.size else {
            throw APIError.invalid("The chunk goes past the declared size \(meta.size)")
        }
        let path = "\(root)/\(id)/data"
        try await NIOThreadPool.singleton.runIfActive {
            guard let handle = FileHandle(forWritingAtPath: path) else { throw APIError(.internal, "upload file missing") }
            defer { try? handle.close() }
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(buffer: chunk))
        }
        return try JSONResponse.make(UploadStatus(uploadId: id, received: offset + Int64(chunk.readableBytes), size: meta.size))
    }

    @Sendable func complete(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let (id, meta) = try load(context)
        let folder = "\(root)/\(id)"
        let have = try received(id)
        guard have == meta.size else { throw APIError(.conflict, "Only \(have) of \(meta.size) bytes were received") }
        let (digest, head) = try await NIOThreadPool.singleton.runIfActive { () throws -> (String, [UInt8]) in
            guard let handle = FileHandle(forReadingAtPath: "\(folder)/data") else { throw APIError(.internal, "upload file missing") }
            defer { try? handle.close() }
            var hasher = SHA256()
            var head: [UInt8] = []
            while let block = try handle.read(upToCount: 1 << 20), !block.isEmpty {
                hasher.update(data: block)
                if head.count < 65_536 { head += block.prefix(65_536 - head.count) }
            }
            return (hasher.finalize().map { String(format: "%02x", $0) }.joined(), head)
        }
        let attachment = try await attachments.finalize(
            temporary: "\(folder)/data", digest: digest, size: have, head: head, contentType: meta.contentType,
            name: meta.name, identity: identity)
        try? FileManager.default.removeItem(atPath: folder)
        return try JSONResponse.make(attachment.wire, status: .created)
    }

    /// The upload, if it is the caller's (anyone else's is "not found").
    private func load(_ context: ParleyRequestContext) throws -> (EntityID, Meta) {
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("upload", what: "Upload")
        guard let data = FileManager.default.contents(atPath: "\(root)/\(id)/meta.json"),
            let meta = try? WireCoding.makeDecoder().decode(Meta.self, from: data), meta.uploaderId == identity.userId
        else { throw APIError.notFound("Upload") }
        return (id, meta)
    }

    private func received(_ id: EntityID) throws -> Int64 {
        let attributes = try FileManager.default.attributesOfItem(atPath: "\(root)/\(id)/data")
        return (attributes[.size] as? NSNumber)?.int64Value ?? 0
    }
}
