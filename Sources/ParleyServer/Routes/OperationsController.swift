import Hummingbird
import NIOCore
import Synchronization
import ParleyStorage
import ParleySQLite

/// The routes an operator and a load balancer use: alive (`/health`), able to write and not
/// draining (`/ready`), the counters (`/metrics`), and the API's description (`/api/v1/openapi.json`).
final class OperationsController: Sendable {
    let health: StoreHealth
    let drain: DrainState
    let metrics: Metrics
    let fanOut: FanOut
    /// The orderer's and the heartbeat's running totals at the last scrape: each scrape adds
    /// only what happened since.
    private let orderSeen = Mutex((held: 0, fetched: 0, late: 0))
    private let heartbeatsSeen = Mutex((pings: 0, closed: 0))

    init(health: StoreHealth, drain: DrainState, metrics: Metrics, fanOut: FanOut) {
        self.health = health
        self.drain = drain
        self.metrics = metrics
        self.fanOut = fanOut
    }

    func addRoutes(to router: Router<ParleyRequestContext>, api: RouterGroup<ParleyRequestContext>) {
        api.get("health") { _, _ in try JSONResponse.make(["status": "ok"]) }
        api.get("openapi.json") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/json; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: OpenAPIDocument.json)))
        }
        router.get("health") { _, _ in try JSONResponse.make(["status": "ok"]) }
        router.get("ready", use: ready)
        router.get("metrics", use: scrape)
    }

    @Sendable func ready(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        if drain.isDraining {
            return try ChatError(.unavailable, "Draining before shutdown", retryAfter: 1).response(from: request, context: context)
        }
        guard await health.canWrite() else { return try ChatError.unavailable.response(from: request, context: context) }
        return try JSONResponse.make(["status": "ready"])
    }

    /// The counters in Prometheus' text format; values kept elsewhere (the orderer, the
    /// heartbeat, the connections' queues) are brought in at scrape time.
    @Sendable func scrape(_ request: Request, context: ParleyRequestContext) async throws -> Response {
        let stats = fanOut.order.stats
        let seen = orderSeen.withLock { seen in
            defer { seen = (stats.held, stats.fetched, stats.late) }
            return seen
        }
        metrics.increment("parley_order_held_total", by: stats.held - seen.held)
        metrics.increment("parley_order_fetched_total", by: stats.fetched - seen.fetched)
        metrics.increment("parley_order_late_total", by: stats.late - seen.late)
        let beats = fanOut.heartbeats
        let beatsSeen = heartbeatsSeen.withLock { seen in
            defer { seen = beats }
            return seen
        }
        metrics.increment("parley_websocket_pings_total", by: beats.pings - beatsSeen.pings)
        metrics.increment("parley_websocket_silent_closed_total", by: beats.closed - beatsSeen.closed)
        let depths = fanOut.queueDepths
        metrics.set("parley_websocket_connections", to: depths.count)
        metrics.set("parley_websocket_queued_frames", to: depths.reduce(0, +))
        metrics.set("parley_websocket_queue_depth_max", to: depths.max() ?? 0)
        metrics.set("parley_websocket_sends_awaiting_commit", to: fanOut.sendsAwaitingCommit)
        metrics.set("parley_sqlite_memory_bytes", to: ProcessMemory.sqliteBytes)
        if let heap = ProcessMemory.allocator {
            metrics.set("parley_malloc_in_use_bytes", to: heap.inUse)
            metrics.set("parley_malloc_free_kept_bytes", to: heap.freeKept)
        }
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
            body: .init(byteBuffer: ByteBuffer(string: metrics.prometheusText())))
    }
}
