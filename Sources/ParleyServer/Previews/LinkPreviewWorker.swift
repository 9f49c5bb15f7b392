import Foundation
import Logging
import ParleyProtocol
import ServiceLifecycle
import Synchronization
import ParleyStorage
import ParleyRules

/// Reads link previews for stored messages in the background, never on a send's path.
///
/// `messageStored` only enqueues (a bounded queue: when full the newest is dropped and
/// counted). A fixed number of workers fetch with ``PreviewFetcher`` (5 s, 1 MiB, 3 redirects,
/// `text/html`, addresses checked by the ``AddressPolicy``), and a URL's outcome, preview or
/// failure, is kept 10 minutes: the same URL is fetched at most once in that time on this node.
/// `parley_link_previews_total{outcome}` counts every outcome.
public final class LinkPreviewWorker: Service, Sendable {
    /// What a fetched preview is handed to (the chat service writes it and tells the participants).
    typealias Handler = @Sendable (LinkPreview, Message) async throws -> Void

    private struct Job: Sendable {
        var message: Message
        var url: URL
        var text: String
    }

    private let fetcher: PreviewFetcher
    private let metrics: Metrics
    private let logger: Logger
    private let concurrency: Int
    private let cacheLifetime: TimeInterval
    private let jobs: AsyncStream<Job>
    private let sink: AsyncStream<Job>.Continuation
    private let cache = Mutex<[String: (preview: LinkPreview?, at: Date)]>([:])
    /// Fetches under way by URL: a second job for the same URL waits for the first's outcome
    /// instead of fetching it again (two sends of one link, read by two workers at once).
    private let inFlight = Mutex<[String: Task<LinkPreview?, Never>]>([:])
    let handler = HandlerSlot<Handler>()

    /// A worker fetching with `policy`'s addresses allowed; `concurrency` fetches at once.
    public init(
        policy: AddressPolicy, metrics: Metrics, logger: Logger, concurrency: Int = 4, queueLimit: Int = 1000,
        timeout: Duration = .seconds(5), cacheLifetime: TimeInterval = 600
    ) {
        fetcher = PreviewFetcher(policy: policy, timeout: timeout)
        self.metrics = metrics
        self.logger = logger
        self.concurrency = concurrency
        self.cacheLifetime = cacheLifetime
        (jobs, sink) = AsyncStream.makeStream(of: Job.self, bufferingPolicy: .bufferingOldest(queueLimit))
    }

    /// A message was stored: if its text has an http(s) URL, its preview is read (never blocks).
    func messageStored(_ message: Message) {
        guard message.type == .text, message.deletedAt == nil, let url = PreviewURL.first(in: message.text) else { return }
        if case .dropped = sink.yield(Job(message: message, url: url, text: url.absoluteString)) {
            metrics.increment("parley_link_previews_total", labels: ["outcome": "dropped"])
        }
    }

    /// Runs the workers until graceful shutdown.
    public func run() async throws {
        await withDiscardingTaskGroup { group in
            for _ in 0..<max(1, concurrency) {
                group.addTask { [self] in
                    for await job in jobs {
                        await handle(job)
                    }
                }
            }
            try? await gracefulShutdown()
            sink.finish()
        }
    }

    private func handle(_ job: Job) async {
        let now = Date()
        let key = job.url.absoluteString
        let cached = cache.withLock { cache -> (preview: LinkPreview?, at: Date)? in
            if cache.count > 10_000 { cache = cache.filter { now.timeIntervalSince($0.value.at) < cacheLifetime } }
            guard let entry = cache[key], now.timeIntervalSince(entry.at) < cacheLifetime else { return nil }
            return entry
        }
        let preview: LinkPreview?
        if let cached {
            metrics.increment("parley_link_previews_total", labels: ["outcome": "cached"])
            preview = cached.preview.map { var copy = $0; copy.url = job.text; return copy }
        } else {
            let (fetching, joined) = inFlight.withLock { flights -> (Task<LinkPreview?, Never>, Bool) in
                if let running = flights[key] { return (running, true) }
                let task = Task { await self.fetch(job) }
                flights[key] = task
                return (task, false)
            }
            if joined {
                // Counted when it joins: the outcome is the other fetch's, as from the cache.
                metrics.increment("parley_link_previews_total", labels: ["outcome": "cached"])
                preview = await fetching.value.map { var copy = $0; copy.url = job.text; return copy }
            } else {
                preview = await fetching.value
                // The cache first, then the flight gone: a job in between finds one of them.
                cache.withLock { $0[key] = (preview, now) }
                inFlight.withLock { $0[key] = nil }
            }
        }
        guard let preview, let handler = handler.function else { return }
        do {
            try await handler(preview, job.message)
        } catch {
            logger.warning("Could not store a link preview", metadata: ["message": "\(job.message.id)", "error": "\(error)"])
        }
    }

    private func fetch(_ job: Job) async -> LinkPreview? {
        do {
            let page = try await fetcher.fetch(job.url)
            let read = PreviewHTML.parse(page.html, charset: page.charset, base: page.url)
            guard read.title != nil || read.description != nil else {
                metrics.increment("parley_link_previews_total", labels: ["outcome": "empty"])
                return nil
            }
            metrics.increment("parley_link_previews_total", labels: ["outcome": "ok"])
            return LinkPreview(
                url: job.text, title: read.title, description: read.description, imageUrl: read.imageURL, siteName: read.siteName)
        } catch let failure as PreviewFetchFailure {
            let outcome = switch failure {
            case .refusedAddress: "refused"
            case .unresolved: "unresolved"
            case .notHTML: "not_html"
            case .badRedirect: "bad_redirect"
            case .timeout: "timeout"
            case .network: "error"
            }
            metrics.increment("parley_link_previews_total", labels: ["outcome": outcome])
            return nil
        } catch {
            metrics.increment("parley_link_previews_total", labels: ["outcome": "error"])
            return nil
        }
    }
}
