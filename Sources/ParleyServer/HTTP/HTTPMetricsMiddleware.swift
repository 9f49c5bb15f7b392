import Hummingbird

/// Counts every HTTP request by method, route pattern (`/api/v1/conversations/:id`, so ids do
/// not multiply the series) and status, and records its duration in a histogram.
struct HTTPMetricsMiddleware: RouterMiddleware {
    typealias Context = ParleyRequestContext
    let metrics: Metrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        do {
            let response = try await next(request, context)
            record(request, context, status: response.status.code, since: start)
            return response
        } catch {
            record(request, context, status: (error as? any HTTPResponseError)?.status.code ?? 500, since: start)
            throw error
        }
    }

    private func record(_ request: Request, _ context: Context, status: Int, since start: ContinuousClock.Instant) {
        let route = context.endpointPath ?? "unmatched"
        let method = request.method.rawValue
        metrics.increment("parley_http_requests_total", labels: ["method": method, "route": route, "status": "\(status)"])
        metrics.observe("parley_http_request_duration_seconds", labels: ["method": method, "route": route], duration: ContinuousClock.now - start)
    }
}
