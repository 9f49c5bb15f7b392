import Foundation
import Hummingbird
import NIOCore
import ParleyProtocol
import ParleyStorage

/// Builds JSON answers with the wire coders (lowercase ids, millisecond ISO dates).
enum JSONResponse {
    static func make(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try WireCoding.makeEncoder().encode(value)
        return Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func noContent() -> Response { Response(status: .noContent) }
}

extension Request {
    /// Reads and decodes a JSON body of at most `Limits.maxPayloadBytes`.
    ///
    /// Oversized bodies are `payload_too_large`; empty, malformed or mistyped ones are
    /// `invalid_request` with a message naming the offending key.
    /// The JSON body as ``decodeJSON(_:)`` reads it, or `absent` when the request has none
    /// (no length and no chunked body: routes whose body is optional).
    mutating func decodeOptionalJSON<T: Decodable>(_ type: T.Type, absent: T) async throws -> T {
        let hasBody = (headers[.contentLength].flatMap(Int.init) ?? 0) > 0 || headers[.transferEncoding] != nil
        return hasBody ? try await decodeJSON(type) : absent
    }

    mutating func decodeJSON<T: Decodable>(_ type: T.Type) async throws -> T {
        let buffer: ByteBuffer
        do {
            buffer = try await collectBody(upTo: Limits.maxPayloadBytes)
        } catch is NIOTooManyBytesError {
            throw ChatError.payloadTooLarge
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw ChatError.payloadTooLarge
        }
        guard buffer.readableBytes > 0 else { throw ChatError.invalid("A JSON body is required") }
        // The decoder checks the UTF-8 of the strings it decodes only: invalid bytes in a key it
        // skips would otherwise let a malformed body through.
        guard String(validating: buffer.readableBytesView, as: UTF8.self) != nil else {
            throw ChatError.invalid("The body is not valid UTF-8")
        }
        do {
            return try WireCoding.makeDecoder().decode(T.self, from: Data(buffer: buffer))
        } catch let error as DecodingError {
            throw ChatError.invalid(error.wireDescription)
        }
    }
}

extension DecodingError {
    /// A short description that names the key at fault, without echoing the whole input.
    var wireDescription: String {
        func path(_ codingPath: [any CodingKey]) -> String {
            let joined = codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
                .joined(separator: ".")
            return joined.isEmpty ? "body" : "`\(joined)`"
        }
        switch self {
        case .keyNotFound(let key, let context):
            let parent = context.codingPath.isEmpty ? "" : " in \(path(context.codingPath))"
            return "Missing key `\(key.stringValue)`\(parent)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "Wrong type or null for \(path(context.codingPath))"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty { return "The body is not valid JSON" }
            return "Invalid value for \(path(context.codingPath)): \(context.debugDescription.prefix(120))"
        @unknown default:
            return "Invalid request body"
        }
    }
}
