import Hummingbird
import Logging
import ParleyProtocol
import ParleyStorage

/// Turns every error into the contract's error body, so no answer leaks internals.
///
/// `ChatError`s pass through as they are; Hummingbird's own errors (unknown route, body too
/// large) map by status; anything else is logged and answered as `internal`.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Told of storage trouble (which answers `503 unavailable`, not `500`).
    var health: StoreHealth?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as ChatError {
            return try error.response(from: request, context: context)
        } catch let error as HTTPError {
            let code = ErrorCode(httpStatus: Int(error.status.code))
            let message = switch code {
            case .notFound: "No such route: \(request.method.rawValue) \(request.uri.path)"
            case .payloadTooLarge: ChatError.payloadTooLarge.message
            default: error.body ?? error.status.reasonPhrase
            }
            return try ChatError(code, message).response(from: request, context: context)
        } catch let error as any HTTPResponseError {
            let code = ErrorCode(httpStatus: Int(error.status.code))
            let message = code == .payloadTooLarge ? ChatError.payloadTooLarge.message : error.status.reasonPhrase
            return try ChatError(code, message).response(from: request, context: context)
        } catch where StorageTrouble.matches(error) {
            health?.report(error)
            return try ChatError.unavailable.response(from: request, context: context)
        } catch {
            context.logger.error("Unhandled error", metadata: ["error": "\(String(reflecting: error))", "path": "\(request.uri.path)"])
            return try ChatError(.internal, "Internal server error").response(from: request, context: context)
        }
    }
}
