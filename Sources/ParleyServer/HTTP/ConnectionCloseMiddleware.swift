import Hummingbird

/// Says `Connection: close` on the answer to a request that asked for it.
///
/// Hummingbird closes such a connection after the answer but does not say so, and HTTP/1.1
/// asks a server to (RFC 9112, 9.6). A proxy that pools connections (nginx with `keepalive`)
/// reads the answer's header to decide whether it may reuse the connection: without it, it
/// pooled one Parley was closing, sent the next request on it and answered 502 for a POST it
/// could not retry. The condition is the one Hummingbird closes on, so the header never
/// promises a close that does not happen.
struct ConnectionCloseMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        if request.headers[.connection] == "close" { response.headers[.connection] = "close" }
        return response
    }
}
