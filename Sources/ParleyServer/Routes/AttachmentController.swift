import Crypto
import Foundation
import Hummingbird
import NIOCore
import ParleyProtocol
import Synchronization
import ParleyStorage
import ParleyRules

/// `POST /attachments` (streamed to disk, content-addressed) and `GET /attachments/{id}`
/// (with byte ranges), for the uploader and the participants of conversations it was sent in.
struct AttachmentController: Sendable {
    let store: any ParleyStore
    /// Where the bytes go: files, or PostgreSQL for a cluster.
    let blobs: any AttachmentBlobs
    let maxBytes: Int64
    let now: @Sendable () -> Date
    /// Upload bytes per user per minute (nil: none).
    var limits: RateLimiter? = nil

    /// What may be uploaded; anything else is refused rather than served back later.
    static let allowedTypes: Set<String> = [
        "image/png", "image/jpeg", "image/gif", "image/webp", "image/heic",
        "video/mp4", "video/quicktime", "audio/mpeg", "audio/mp4", "audio/aac", "audio/ogg", "audio/wav",
        "application/pdf", "application/zip", "text/plain", "application/octet-stream",
    ]

    func addRoutes(to group: RouterGroup<ParleyRequestContext>) {
        group.post("attachments", use: upload)
        group.get("attachments/:id", use: download)
        ResumableUploads(attachments: self).addRoutes(to: group)
    }

    @Sendable func upload(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let contentType = try Self.contentType(request.headers[.contentType])
        let name = try Self.fileName(request.uri.queryParameters.get("name"))
        if let declared = request.headers[.contentLength].flatMap(Int64.init), declared > maxBytes {
            throw ChatError(.payloadTooLarge, "Attachments are at most \(maxBytes) bytes")
        }
        // Counted by what the upload declares (a chunked one by the limit it may reach).
        let declared = request.headers[.contentLength].flatMap(Int64.init) ?? maxBytes
        try limits?.enforce(.uploadBytes, identity.userId.description, cost: Double(declared))
        let staged = BlobName.staged(EntityID())
        let meter = UploadMeter(limit: maxBytes)
        do {
            // Streamed into the blob store a piece at a time while it is counted and hashed.
            var written: Int64 = 0
            var pending = ByteBuffer()
            for try await buffer in request.body {
                pending.writeImmutableBuffer(try meter.consume(buffer))
                if pending.readableBytes >= Self.writeSize {
                    written = try await blobs.append(pending, to: staged, at: written)
                    pending.clear()
                }
            }
            _ = try await blobs.append(pending, to: staged, at: written)
        } catch {
            try? await blobs.remove(staged)
            if meter.exceeded { throw ChatError(.payloadTooLarge, "Attachments are at most \(maxBytes) bytes") }
            throw error
        }
        let (digest, size, head) = meter.result
        let attachment = try await finalize(
            staged: staged, digest: digest, size: size, head: head, contentType: contentType, name: name, identity: identity)
        return try JSONResponse.make(attachment.wire, status: .created)
    }

    /// How much of a streamed upload is gathered before it is written to the blob store.
    static let writeSize = 1 << 20

    /// Checks the content, moves the staged bytes to their content-addressed name and records
    /// the attachment; a refused upload leaves nothing behind.
    func finalize(
        staged: String, digest: String, size: Int64, head: [UInt8], contentType: String, name: String, identity: Identity
    ) async throws -> StoredAttachment {
        guard size > 0 else {
            try? await blobs.remove(staged)
            throw ChatError.invalid("The upload is empty")
        }
        let sniffed = ImageSniffer.inspect(head)
        if contentType.hasPrefix("image/"), contentType != "image/heic", sniffed?.contentType != contentType {
            try? await blobs.remove(staged)
            throw ChatError.invalid("The content is not \(contentType)")
        }
        try await blobs.move(staged, to: BlobName.content(digest))
        let attachment = StoredAttachment(
            id: EntityID(), uploaderId: identity.userId, organizationId: identity.organizationId, name: name,
            contentType: contentType, size: size, sha256: digest, width: sniffed?.width, height: sniffed?.height,
            createdAt: now().wholeMilliseconds)
        try await store.createAttachment(attachment)
        return attachment
    }

    /// The checked `Content-Type` of an upload.
    static func contentType(_ header: String?) throws -> String {
        let contentType = (header ?? "").split(separator: ";").first
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        guard allowedTypes.contains(contentType) else {
            throw ChatError.invalid("Content-Type \(contentType.isEmpty ? "(none)" : contentType) is not accepted")
        }
        return contentType
    }

    /// A file name: 1–200 characters, no slashes, no control characters or bidirectional
    /// overrides (which would disguise its extension).
    static func fileName(_ text: String?) throws -> String {
        let name = Limits.trimmed(text ?? "attachment")
        guard (1...200).contains(name.count), !name.contains("/"), !name.contains("\\"), !Limits.containsUnsafeCharacters(name) else {
            throw ChatError.invalid("name must be 1–200 characters without slashes, control characters or bidirectional overrides")
        }
        return name
    }

    /// `Content-Disposition` for a download (RFC 6266): `filename` is an ASCII stand-in (other
    /// characters, quotes and backslashes become "_") for old clients, `filename*` the name in
    /// UTF-8 (RFC 8187). Controls and bidirectional overrides stored before names were checked
    /// are neutralised in both, so "invoice\u{202E}gnp.exe" cannot pass for a picture.
    static func contentDisposition(fileName: String) -> String {
        let name = Limits.neutralized(fileName)
        let fallback = String(String.UnicodeScalarView(name.unicodeScalars.map { scalar in
            (0x20...0x7E).contains(scalar.value) && scalar != "\"" && scalar != "\\" ? scalar : "_"
        }))
        // attr-char of RFC 8187: ALPHA / DIGIT / "!#$&+-.^_`|~"; everything else percent-encoded.
        var encoded = ""
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            case _ where "!#$&+-.^_`|~".utf8.contains(byte):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                encoded += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return "attachment; filename=\"\(fallback)\"; filename*=UTF-8''\(encoded)"
    }

    @Sendable func download(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let identity = try context.requireIdentity()
        let id = try context.parameters.entityID("id", what: "Attachment")
        guard let attachment = try await store.attachment(id: id, viewer: identity.userId) else {
            throw ChatError.notFound("Attachment")
        }
        let content = BlobName.content(attachment.sha256)
        var headers: HTTPFields = [
            .contentType: attachment.contentType, .acceptRanges: "bytes", .eTag: "\"\(attachment.sha256)\"",
            .cacheControl: "private, max-age=31536000, immutable",
            .contentDisposition: Self.contentDisposition(fileName: attachment.name),
            // Never rendered as what it claims or seems to be: the browser saves it, a type it
            // would guess from the bytes is not used, and were it opened anyway it runs nothing.
            .xContentTypeOptions: "nosniff",
            .contentSecurityPolicy: "default-src 'none'; sandbox",
        ]
        if let tags = request.headers[.ifNoneMatch], tags.split(separator: ",").contains(where: {
            let tag = $0.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == "\"\(attachment.sha256)\"" || tag == "W/\"\(attachment.sha256)\""
        }) {
            // The client has these bytes already (an attachment never changes).
            return Response(status: .notModified, headers: headers)
        }
        let size = Int(attachment.size)
        guard let rangeHeader = request.headers[.range] else {
            return Response(status: .ok, headers: headers, body: blobs.responseBody(content, range: nil, length: attachment.size))
        }
        guard let range = ByteRange.parse(rangeHeader, size: size) else {
            headers[.contentRange] = "bytes */\(size)"
            return Response(
                status: .rangeNotSatisfiable, headers: headers,
                body: .init(byteBuffer: ByteBuffer(bytes: try WireCoding.makeEncoder().encode(
                    ErrorBody(error: ErrorInfo(code: .invalidRequest, message: "Range not satisfiable"))))))
        }
        headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(size)"
        return Response(
            status: .partialContent, headers: headers,
            body: blobs.responseBody(content, range: Int64(range.lowerBound)...Int64(range.upperBound), length: attachment.size))
    }

}

/// Counts, hashes and keeps the first bytes of an upload as it streams to disk.
final class UploadMeter: Sendable {
    private let state: Mutex<(hasher: SHA256, size: Int64, head: [UInt8], exceeded: Bool)>
    private let limit: Int64

    init(limit: Int64) {
        self.limit = limit
        state = Mutex((SHA256(), 0, [], false))
    }

    func consume(_ buffer: ByteBuffer) throws -> ByteBuffer {
        try state.withLock { state in
            state.size += Int64(buffer.readableBytes)
            guard state.size <= limit else {
                state.exceeded = true
                throw ChatError.payloadTooLarge
            }
            buffer.withUnsafeReadableBytes { state.hasher.update(bufferPointer: $0) }
            if state.head.count < 65_536 {
                state.head += buffer.getBytes(at: buffer.readerIndex, length: min(buffer.readableBytes, 65_536 - state.head.count)) ?? []
            }
        }
        return buffer
    }

    var exceeded: Bool { state.withLock { $0.exceeded } }

    var result: (digest: String, size: Int64, head: [UInt8]) {
        state.withLock { state in
            let digest = state.hasher.finalize().map { String(format: "%02x", $0) }.joined()
            return (digest, state.size, state.head)
        }
    }
}

/// `Range: bytes=a-b`, `bytes=a-`, `bytes=-n` (one range).
enum ByteRange {
    static func parse(_ header: String, size: Int) -> ClosedRange<Int>? {
        guard size > 0, header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard spec.count == 2 else { return nil }
        let start = Int(spec[0].trimmingCharacters(in: .whitespaces))
        let end = Int(spec[1].trimmingCharacters(in: .whitespaces))
        switch (start, end) {
        case (let start?, let end?) where start <= end && start < size: return start...min(end, size - 1)
        case (let start?, nil) where spec[1].isEmpty && start < size: return start...(size - 1)
        case (nil, let suffix?) where spec[0].isEmpty && suffix > 0: return max(size - suffix, 0)...(size - 1)
        default: return nil
        }
    }
}
