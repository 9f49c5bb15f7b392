import Hummingbird
import ParleyProtocol

/// The one error type of the server: a stable wire code and a message safe to show the caller.
///
/// Everything the server throws on purpose is an `APIError`; anything else becomes `internal`
/// at the edge (``ErrorMiddleware``) and its details go to the log only.
public struct APIError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The stable code of the wire contract.
    public var code: ErrorCode
    /// A message for people; never names another tenant's data.
    public var message: String
    /// Seconds to wait before trying again (`rate_limited`, `unavailable`).
    public var retryAfter: Int?

    /// An error with a code and a message.
    public init(_ code: ErrorCode, _ message: String, retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    /// The wire form of this error.
    public var info: ErrorInfo { ErrorInfo(code: code, message: message, retryAfter: retryAfter) }

    /// The store cannot write now: 503 with `Retry-After`, nothing stored.
    public static let unavailable = APIError(
        .unavailable, "The server cannot store anything right now (storage trouble); nothing was stored, try again later",
        retryAfter: StoreHealth.retryAfterSeconds)

    /// The code and the message, as `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }

    /// Too many requests of one kind: 429 with `Retry-After`, nothing done.
    static func rateLimited(retryAfter seconds: Int) -> APIError {
        APIError(.rateLimited, "Too many requests; try again in \(seconds) s", retryAfter: seconds)
    }

    static func invalid(_ message: String) -> APIError { APIError(.invalidRequest, message) }
    static func notFound(_ what: String) -> APIError { APIError(.notFound, "\(what) not found") }
    static let unauthorized = APIError(.unauthorized, "Missing, invalid or expired token")
    static let payloadTooLarge = APIError(
        .payloadTooLarge, "Body larger than \(Limits.maxPayloadBytes) bytes")
}

extension APIError: HTTPResponseError {
    /// The HTTP status of the code.
    public var status: HTTPResponse.Status { .init(code: code.httpStatus) }

    /// The response: the JSON error body with this status, plus `Retry-After` when set.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = try JSONResponse.make(ErrorBody(error: info), status: status)
        if let retryAfter { response.headers[.retryAfter] = "\(retryAfter)" }
        return response
    }
}
