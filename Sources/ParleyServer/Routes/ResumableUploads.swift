import Crypto
import Foundation
import Hummingbird
import NIOCore
import NIOPosix
import ParleyProtocol
import ParleyStorage

/// Resumable uploads in chunks, for flaky mobile networks and upload progress:
/// `POST /attachments/uploads` opens one, `PUT /attachments/uploads/{id}?offset=` appends a
/// chunk at exactly the bytes received so far, `GET` says how far it got (to resume after a
/// drop), `POST .../complete` turns it into an attachment. An upload lives in the blob store
/// (files, or PostgreSQL), so it survives a restart and, on PostgreSQL, continues on any node.
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

    private var blobs: any AttachmentBlobs { attachments.blobs }

    @Sendable func open(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let identity = try context.requireIdentity()
        let body = try await request.decodeJSON(UploadRequest.self)
        let meta = Meta(
            uploaderId: identity.userId, organizationId: identity.organizationId, name: try AttachmentController.fileName(body.name),
            contentType: try AttachmentController.contentType(body.contentType), size: body.size)
        guard meta.size > 0 else { throw ChatError.invalid("size must be positive") }
        guard meta.size <= attachments.maxBytes else {
            throw ChatError(.payloadTooLarge, "Attachments are at most \(attachments.maxBytes) bytes")
        }
        try attachments.limits?.enforce(.uploadBytes, identity.userId.description, cost: Double(meta.size))
        let id = EntityID()
        // The bytes first: an upload is found by its description, which then has its data.
        _ = try await blobs.append(ByteBuffer(), to: BlobName.upload(id), at: 0)
        _ = try await blobs.append(ByteBuffer(bytes: try WireCoding.makeEncoder().encode(meta)), to: BlobName.uploadMeta(id), at: 0)
        return try JSONResponse.make(UploadStatus(uploadId: id, received: 0, size: meta.size), status: .created)
    }

    @Sendable func status(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let (id, meta) = try await load(context)
        return try JSONResponse.make(UploadStatus(uploadId: id, received: try await received(id), size: meta.size))
    }

    @Sendable func append(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        var request = request
        let (id, meta) = try await load(context)
        guard let offset = try request.integerQuery("offset") else { throw ChatError.invalid("offset is required") }
        let have = try await received(id)
        guard offset == have else { throw Self.wrongOffset(have) }
        let chunk: ByteBuffer
        do {
            chunk = try await request.collectBody(upTo: Self.maxChunk)
        } catch is NIOTooManyBytesError {
            throw ChatError(.payloadTooLarge, "A chunk is at most \(Self.maxChunk) bytes")
        }
        guard offset + Int64(chunk.readableBytes) <= meta.size else {
            throw ChatError.invalid("The chunk goes past the declared size \(meta.size)")
        }
        do {
            // Checked again where it is written: another request (or node) may have won.
            let received = try await blobs.append(chunk, to: BlobName.upload(id), at: offset)
            return try JSONResponse.make(UploadStatus(uploadId: id, received: received, size: meta.size))
        } catch BlobError.offsetMismatch(let actual) {
            throw Self.wrongOffset(actual)
        }
    }

    static func wrongOffset(_ have: Int64) -> ChatError {
        ChatError(.conflict, "This upload has \(have) bytes; send the chunk at offset \(have)")
    }

    @Sendable func complete(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let (id, meta) = try await load(context)
        let have = try await received(id)
        guard have == meta.size else { throw ChatError(.conflict, "Only \(have) of \(meta.size) bytes were received") }
        let (digest, head) = try await blobs.digest(of: BlobName.upload(id))
        let attachment = try await attachments.finalize(
            staged: BlobName.upload(id), digest: digest, size: have, head: head, contentType: meta.contentType,
            name: meta.name, identity: identity)
        try? await blobs.remove(BlobName.uploadMeta(id))
        try? await blobs.remove(BlobName.upload(id))
        return try JSONResponse.make(attachment.wire, status: .created)
    }

    /// The upload, if it is the caller's (anyone else's is "not found").
    private func load(_ context: ParleyRequestContext) async throws -> (EntityID, Meta) {
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("upload", what: "Upload")
        guard let data = try await blobs.contents(of: BlobName.uploadMeta(id)),
            let meta = try? WireCoding.makeDecoder().decode(Meta.self, from: data), meta.uploaderId == identity.userId
        else { throw ChatError.notFound("Upload") }
        return (id, meta)
    }

    private func received(_ id: EntityID) async throws -> Int64 {
        try await blobs.length(of: BlobName.upload(id)) ?? 0
    }
}
