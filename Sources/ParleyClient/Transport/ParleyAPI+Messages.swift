import Foundation
import ParleyProtocol
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension ParleyAPI {
    // MARK: Messages

    /// Sends a message; safe to retry with the same clientMessageId.
    public func send(_ body: SendMessageRequest, to conversationId: EntityID) async throws -> Message {
        try await request("POST", "conversations/\(conversationId)/messages", body: body)
    }

    /// A page of history ascending by seq.
    public func messages(_ conversationId: EntityID, before: Int64? = nil, after: Int64? = nil, limit: Int? = nil) async throws -> MessagesPage {
        try await request(
            "GET", "conversations/\(conversationId)/messages",
            query: ["before": before.map(String.init), "after": after.map(String.init), "limit": limit.map(String.init)])
    }

    /// The catch-up feed from `since`.
    public func changes(_ conversationId: EntityID, since: Int64, limit: Int? = nil) async throws -> ChangesPage {
        try await request(
            "GET", "conversations/\(conversationId)/changes",
            query: ["since": String(since), "limit": limit.map(String.init)])
    }

    /// Deletes one of the caller's messages (a tombstone stays).
    public func deleteMessage(_ messageId: EntityID, in conversationId: EntityID) async throws -> Message {
        try await request("DELETE", "conversations/\(conversationId)/messages/\(messageId)")
    }

    /// Edits the text of one of the caller's messages; answers the message as changed.
    public func editMessage(_ messageId: EntityID, in conversationId: EntityID, text: String) async throws -> Message {
        try await request("PATCH", "conversations/\(conversationId)/messages/\(messageId)", body: EditMessageRequest(text: text))
    }

    /// Adds the caller's reaction to a message (adding it again changes nothing).
    public func react(_ messageId: EntityID, in conversationId: EntityID, emoji: String) async throws -> Message {
        try await request("POST", "conversations/\(conversationId)/messages/\(messageId)/reactions", body: ReactionRequest(emoji: emoji))
    }

    /// Takes the caller's reaction back.
    public func unreact(_ messageId: EntityID, in conversationId: EntityID, emoji: String) async throws -> Message {
        // The path is percent-encoded on the way out (the server decodes the emoji).
        try await request("DELETE", "conversations/\(conversationId)/messages/\(messageId)/reactions/\(emoji)")
    }

    /// Full-text search over the caller's conversations (or one of them), newest first.
    public func search(_ query: String, in conversationId: EntityID? = nil, limit: Int? = nil, offset: Int? = nil) async throws -> SearchResponse {
        try await request(
            "GET", "search",
            query: ["q": query, "conversationId": conversationId?.description, "limit": limit.map(String.init), "offset": offset.map(String.init)])
    }

    /// Uploads a file as an attachment (streamed from disk).
    public func upload(file: URL, name: String, contentType: String) async throws -> Attachment {
        var components = URLComponents(url: baseURL.appendingPathComponent("api/v1/attachments"), resolvingAgainstBaseURL: false)!
        components.queryItems = [URLQueryItem(name: "name", value: name)]
        let (data, response) = try await authorizedExchange(components.url!, method: "POST", prepare: { request in
            request.timeoutInterval = 300  // a whole file in one request
            request.setValue(contentType, forHTTPHeaderField: "Content-Type")
        }) { [session] request in
            do {
                return try await session.upload(for: request, fromFile: file)
            } catch {
                throw ClientError(kind: .transport, message: "Upload failed: \(error.localizedDescription)")
            }
        }
        return try decode(Attachment.self, data: data, response: response)
    }

    /// Uploads a file in chunks through a resumable upload, reporting the fraction the server
    /// has after each chunk; a chunk that failed is resent from the server's count.
    ///
    /// `resuming` continues an upload begun earlier (before a restart) from the bytes the server
    /// has; when the server no longer knows it, a new one begins. `onOpened` hears a new
    /// upload's id before any byte goes, so the caller can remember it.
    public func uploadInChunks(
        file: URL, name: String, contentType: String, chunkSize: Int = 256 * 1024,
        resuming uploadId: EntityID? = nil, onOpened: @Sendable (EntityID) async -> Void = { _ in },
        progress: @escaping @Sendable (Double) -> Void = { _ in }
    ) async throws -> Attachment {
        guard let handle = try? FileHandle(forReadingFrom: file) else {
            throw ClientError(kind: .decoding, message: "Cannot read \(file.path)")
        }
        defer { try? handle.close() }
        let size = Int64(try handle.seekToEnd())
        var status: UploadStatus
        if let uploadId, let earlier: UploadStatus = try? await request("GET", "attachments/uploads/\(uploadId)"), earlier.size == size {
            status = earlier
            progress(Double(status.received) / Double(max(size, 1)))
        } else {
            status = try await request("POST", "attachments/uploads", body: UploadRequest(name: name, contentType: contentType, size: size))
            await onOpened(status.uploadId)
        }
        var failures = 0
        while status.received < size {
            try handle.seek(toOffset: UInt64(status.received))
            let chunk = try handle.read(upToCount: chunkSize) ?? Data()
            do {
                status = try await send(chunk: chunk, upload: status.uploadId, offset: status.received)
                failures = 0
                progress(Double(status.received) / Double(size))
            } catch let error as ClientError where error.isTransient || error.code == .conflict {
                failures += 1
                guard failures <= 5 else { throw error }
                // Ask how far it got; the server's count is the truth.
                status = try await request("GET", "attachments/uploads/\(status.uploadId)")
            }
        }
        return try await request("POST", "attachments/uploads/\(status.uploadId)/complete")
    }

    private func send(chunk: Data, upload: EntityID, offset: Int64) async throws -> UploadStatus {
        var components = URLComponents(
            url: baseURL.appendingPathComponent("api/v1/attachments/uploads/\(upload)"), resolvingAgainstBaseURL: false)!
        components.queryItems = [URLQueryItem(name: "offset", value: String(offset))]
        let (data, response) = try await authorizedExchange(components.url!, method: "PUT", prepare: { request in
            request.httpBody = chunk
            request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
        }) { [session] request in
            do {
                return try await session.data(for: request)
            } catch {
                throw ClientError(kind: .transport, message: "Upload failed: \(error.localizedDescription)")
            }
        }
        return try decode(UploadStatus.self, data: data, response: response)
    }

    /// Downloads an attachment by its `url` (`/api/v1/attachments/{id}`).
    public func download(_ url: String) async throws -> Data {
        try await download(url, range: nil).data
    }

    /// Downloads `range` of an attachment (all of it when nil), with its checksum (the ETag).
    public func download(_ url: String, range: ClosedRange<Int64>?) async throws -> DownloadedPart {
        guard let full = URL(string: url, relativeTo: baseURL) else { throw ClientError(kind: .decoding, message: "Bad url \(url)") }
        let (data, response) = try await authorizedExchange(full, method: "GET", prepare: { request in
            if let range { request.setValue("bytes=\(range.lowerBound)-\(range.upperBound)", forHTTPHeaderField: "Range") }
        }) { [session] request in
            do {
                return try await session.data(for: request)
            } catch {
                throw ClientError(kind: .transport, message: "Download failed: \(error.localizedDescription)")
            }
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard (200..<300).contains(status) else {
            _ = try decode(EmptyPayload.self, data: data, response: response)
            throw ClientError(kind: .server, code: ErrorCode(httpStatus: status), httpStatus: status, message: "HTTP \(status)")
        }
        let etag = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "ETag")?
            .trimmingCharacters(in: CharacterSet(charactersIn: "\"W/"))
        return DownloadedPart(data: data, etag: etag)
    }

    /// Downloads an API path's answer into `file` a block at a time (an export), with progress.
    func download(path: String, to file: URL, progress: @Sendable (Int64) -> Void) async throws -> Int64 {
        let url = baseURL.appendingPathComponent("api/v1/" + path)
        var request = URLRequest(url: url)
        request.httpMethod = "GET"
        request.timeoutInterval = 3600
        if let bearer = try await credentials?.validToken(using: self) ?? token {
            request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization")
        }
        let (failure, response): (Data?, URLResponse)
        do {
            (failure, response) = try await session.download(for: request, to: file, progress: progress)
        } catch let error as ClientError {
            throw error
        } catch {
            throw ClientError(kind: .transport, message: "Download failed: \(error.localizedDescription)")
        }
        if let failure {
            _ = try decode(EmptyPayload.self, data: failure, response: response)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            throw ClientError(kind: .server, code: ErrorCode(httpStatus: status), httpStatus: status, message: "HTTP \(status)")
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber)?.int64Value
        return size ?? 0
    }
}
