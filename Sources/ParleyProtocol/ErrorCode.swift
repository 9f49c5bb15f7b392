/// The stable error codes of the wire contract; each maps to one HTTP status.
public enum ErrorCode: String, Codable, Sendable, CaseIterable {
    case invalidRequest = "invalid_request"
    case unauthorized
    case forbidden
    case notFound = "not_found"
    case conflict
    case payloadTooLarge = "payload_too_large"
    case rateLimited = "rate_limited"
    /// The store cannot write now (disk full, database down): try again after `retryAfter`.
    case unavailable
    case `internal`

    /// The HTTP status that carries this code.
    public var httpStatus: Int {
        switch self {
        case .invalidRequest: 400
        case .unauthorized: 401
        case .forbidden: 403
        case .notFound: 404
        case .conflict: 409
        case .payloadTooLarge: 413
        case .rateLimited: 429
        case .unavailable: 503
        case .internal: 500
        }
    }

    /// The code an HTTP status stands for, for errors that did not come with a body.
    public init(httpStatus: Int) {
        switch httpStatus {
        case 400: self = .invalidRequest
        case 401: self = .unauthorized
        case 403: self = .forbidden
        case 404, 405: self = .notFound
        case 409: self = .conflict
        case 413: self = .payloadTooLarge
        case 429: self = .rateLimited
        case 503: self = .unavailable
        case 400..<500: self = .invalidRequest
        default: self = .internal
        }
    }
}

/// The `error` object of an error body: a stable code and a message for people.
public struct ErrorInfo: Codable, Sendable, Equatable, Error {
    /// The stable code.
    public var code: ErrorCode
    /// A message for people; never carries another tenant's data.
    public var message: String
    /// For `rate_limited` and `unavailable`: seconds to wait before trying again (over HTTP
    /// also the `Retry-After` header).
    public var retryAfter: Int?

    /// An error with a code and a message.
    public init(code: ErrorCode, message: String, retryAfter: Int? = nil) {
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }
}

/// The body of every HTTP error answer: `{"error": {"code", "message"}}`.
public struct ErrorBody: Codable, Sendable, Equatable {
    /// The error.
    public var error: ErrorInfo

    /// A body around an error.
    public init(error: ErrorInfo) {
        self.error = error
    }
}
