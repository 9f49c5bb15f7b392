import Hummingbird
import ParleyProtocol
import ParleyStorage

/// How the server answers a ``ChatError``: its code's HTTP status and the JSON error body.
extension ChatError: HTTPResponseError {
    /// The HTTP status of the code.
    public var status: HTTPResponse.Status { .init(code: code.httpStatus) }

    /// The response: the JSON error body with this status, plus `Retry-After` when set.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var response = try JSONResponse.make(ErrorBody(error: info), status: status)
        if let retryAfter { response.headers[.retryAfter] = "\(retryAfter)" }
        return response
    }
}
