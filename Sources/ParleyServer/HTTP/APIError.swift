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

    /// An error with a code and a message.
    public init(_ code: ErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The wire form of this error.
    public var info: ErrorInfo { ErrorInfo(code: code, message: message) }

    public var description: String { "\(code.rawValue): \(message)" }

    static func invalid(_ message: String) -> APIError { APIError(.invalidRequest, message) }
    static func notFound(_ what: String) -> APIError { APIError(.notFound, "\(what) not found") }
    static let unauthorized = APIError(.unauthorized, "Missing, invalid or expired token")
    static let payloadTooLarge = APIError(
        .payloadTooLarge, "Body larger than \(Limits.maxPayloadBytes) bytes")
}

extension APIError: HTTPResponseError {
    public var status: HTTPResponse.Status { .init(code: code.httpStatus) }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        try JSONResponse.make(ErrorBody(error: info), status: status)
    }
}
