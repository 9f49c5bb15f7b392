import Foundation
import Logging
import ParleyProtocol
import ServiceLifecycle
import Synchronization
import ParleyStorage

/// Sends APNs notifications for committed messages, in the background.
///
/// `messageCommitted` only enqueues (a bounded queue: when full the oldest waiting event is
/// dropped and counted), so a send's reply never waits for APNs. One loop decides who is
/// offline and coalesces bursts; deliveries run with bounded concurrency. A device APNs calls
/// gone is removed from the store.
public final class PushService: Service, Sendable {
    enum Event: Sendable {
        case committed(Message, participants: [EntityID])
        case flush(PushCoalescer.Key)
    }

    private let configuration: APNsConfiguration
    private let client: APNsClient
    private let store: any ParleyStore
    private let isConnected: @Sendable (EntityID) async -> Bool
    private let metrics: Metrics
    private let logger: Logger
    private let clock: ServerClock
    private let events: AsyncStream<Event>
    private let sink: AsyncStream<Event>.Continuation
    private let coalescer: Mutex<PushCoalescer>

    /// A push service over the store; `isConnected` tells whether a user has a live connection
    /// anywhere (such users get no notification).
    public init(
        configuration: APNsConfiguration, store: any ParleyStore, isConnected: @escaping @Sendable (EntityID) async -> Bool,
        metrics: Metrics, logger: Logger, clock: ServerClock = .system
    ) async throws {
        self.configuration = configuration
        self.store = store
        self.isConnected = isConnected
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
        client = try await APNsClient(configuration: configuration, metrics: metrics, logger: logger, now: clock.now)
        (events, sink) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(configuration.queueLimit))
        coalescer = Mutex(PushCoalescer(window: configuration.coalesceWindow.timeInterval))
    }

    /// A message was committed: notify its offline recipients (never blocks).
    public func messageCommitted(_ message: Message, participants: [EntityID]) {
        guard message.type != .system else { return }
        enqueue(.committed(message, participants: participants))
    }

    private func enqueue(_ event: Event) {
        if case .dropped = sink.yield(event) {
            metrics.increment("parley_push_dropped_total")
        }
    }

    /// Runs the loop until graceful shutdown; notifications still waiting then are dropped
    /// (the messages are in the store: apps catch up when opened).
    public func run() async throws {
        let gate = ConcurrencyGate(limit: configuration.maxConcurrentRequests)
        await withDiscardingTaskGroup { group in
            for await event in events.cancelOnGracefulShutdown() {
                switch event {
                case .committed(let message, let participants):
                    // Thread replies reach the thread's members; a mute holds back all but mentions.
                    let recipients: [EntityID]
                    do {
                        recipients = try await store.pushRecipients(of: message, among: participants, now: clock.now())
                    } catch {
                        metrics.increment("parley_push_notifications_total", labels: ["outcome": "error"])
                        logger.warning("Could not read who to notify", metadata: ["message": "\(message.id)", "error": "\(error)"])
                        continue
                    }
                    for recipient in recipients {
                        if await isConnected(recipient) {
                            metrics.increment("parley_push_skipped_total", labels: ["why": "connected"])
                            continue
                        }
                        let key = PushCoalescer.Key(userId: recipient, conversationId: message.conversationId)
                        let now = clock.now()
                        switch coalescer.withLock({ $0.offer(message, for: key, now: now) }) {
                        case .sendNow(let notice):
                            await gate.acquire()
                            group.addTask { [self] in
                                await deliver(notice, to: recipient)
                                await gate.release()
                            }
                        case .scheduleFlush(let date):
                            metrics.increment("parley_push_coalesced_total")
                            group.addTask { [self, clock] in
                                await clock.sleepUntil(date)
                                if !Task.isCancelled { enqueue(.flush(key)) }
                            }
                        case .merged:
                            metrics.increment("parley_push_coalesced_total")
                        }
                    }
                case .flush(let key):
                    let now = clock.now()
                    guard let notice = coalescer.withLock({ $0.flush(key, now: now) }) else { continue }
                    if await isConnected(key.userId) {
                        metrics.increment("parley_push_skipped_total", labels: ["why": "connected"])
                        continue
                    }
                    await gate.acquire()
                    group.addTask { [self] in
                        await deliver(notice, to: key.userId)
                        await gate.release()
                    }
                }
            }
            group.cancelAll()
        }
        await client.shutdown()
    }

    /// Sends one notice to every device of a user; removes devices APNs calls gone.
    private func deliver(_ notice: PushCoalescer.Notice, to userId: EntityID) async {
        do {
            // The message as it is now: one deleted while its notice waited (by its sender, an
            // admin, retention or erasure) shows none of its words, and alone notifies
            // nobody; an edit shows its new words.
            var notice = notice
            let messageId = notice.message.id
            if let current = try await store.reading({ tx in try await tx.message(messageId) }) {
                notice.message = current
            }
            if notice.message.deletedAt != nil, notice.count == 1 {
                metrics.increment("parley_push_skipped_total", labels: ["why": "deleted"])
                return
            }
            let devices = try await store.devices(userId: userId).filter { $0.platform == "ios" }
            guard !devices.isEmpty else {
                metrics.increment("parley_push_skipped_total", labels: ["why": "no_device"])
                return
            }
            let sender = try await store.user(id: notice.message.senderId)
            // From the counters: a member of thousands of conversations costs one aggregate.
            let badge = try await store.totalUnread(userId: userId)
            let payload = try PushPayload.encode(notice, senderName: sender?.displayName ?? "New message", badge: badge)
            for device in devices {
                let outcome = await client.send(APNsRequest(
                    deviceToken: device.token, environment: device.environment, payload: payload,
                    collapseId: notice.message.conversationId.description))
                if case .deviceGone = outcome {
                    _ = try? await store.unregisterDevice(token: device.token, userId: userId)
                    metrics.increment("parley_push_devices_removed_total")
                }
            }
        } catch {
            metrics.increment("parley_push_notifications_total", labels: ["outcome": "error"])
            logger.warning("Could not prepare a notification", metadata: ["user": "\(userId)", "error": "\(error)"])
        }
    }
}

enum PushPayload {
    /// The contract's JSON for a notice.
    static func encode(_ notice: PushCoalescer.Notice, senderName: String, badge: Int) throws -> [UInt8] {
        let payload = PushNotificationPayload(message: notice.message, senderName: senderName, badge: badge, messageCount: notice.count)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return Array(try encoder.encode(payload))
    }
}
