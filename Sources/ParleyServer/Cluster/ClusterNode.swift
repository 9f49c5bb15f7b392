import Foundation
import Logging
import NIOCore
import NIOWebSocket
import ParleyProtocol
import PostgresNIO
import ServiceLifecycle
import Synchronization
import ParleyStorage
import ParleyRules

/// This node's link to the other `parley serve` processes on the same PostgreSQL.
///
/// Events cross nodes through `LISTEN/NOTIFY`: each delivery whose recipients are online on
/// another node becomes a one-line record (`U origin ids frame`); every event of a
/// conversation's sequence goes to every node, whoever is known online there, as
/// `Q origin conversation seq ids frame`, which the receiving node's ``ConversationOrder``
/// puts in seq order with its own and hands to its own connections); records are packed into
/// notifications below PostgreSQL's 8,000-byte limit, and a record too big for one goes into
/// a spill table with only its id notified. Presence is a table of (node, user) rows plus a
/// replica in memory kept current by `P` records; nodes heartbeat into `parley_nodes`, and a
/// node silent for `deadAfter` is expired by whichever node notices first. If the listening
/// connection drops, notifications may have been missed: after it is back, this node closes
/// its WebSockets with 1012 so clients reconnect and catch up from the store.
public final class ClusterNode: FanOutRelay, Service, Sendable {
    /// This node's name.
    public let nodeId: String
    let configuration: ClusterConfiguration
    let client: PostgresClient
    let fanOut: FanOut
    let logger: Logger
    /// Users online on other nodes, and on which.
    let remote = Mutex<[EntityID: Set<String>]>([:])
    /// What this node has written to `parley_node_users`.
    let recorded = Mutex<Set<EntityID>>([])
    let presenceGate = ConcurrencyGate(limit: 1)
    /// Records waiting for the publisher, which takes them all at once (one batch per wake).
    let queued = Mutex<[String]>([])
    let wake: AsyncStream<Void>
    let wakeSink: AsyncStream<Void>.Continuation
    let ready = Mutex<Bool>(false)
    /// Called with users whose node died and who are online nowhere else.
    let onUsersLost = HandlerSlot<@Sendable ([Identity]) async -> Void>()
    let onDeactivated = HandlerSlot<@Sendable (EntityID, EntityID) -> Void>()
    let onBlocksChanged = HandlerSlot<@Sendable (EntityID, EntityID) -> Void>()
    /// Counters: records sent, received, spilled; listener restarts.
    public let stats = Metrics()
    /// Runs the connection pool from creation until the node leaves.
    private let poolRunner: Task<Void, Never>
    static let maxPayload = 7_800

    /// A node over the shared database; `run()` (as a service) connects it.
    public init(configuration: ClusterConfiguration, fanOut: FanOut, logger: Logger) {
        self.configuration = configuration
        nodeId = configuration.nodeId
        self.fanOut = fanOut
        self.logger = logger
        var postgres = configuration.postgres
        postgres.options.maximumConnections = max(postgres.options.maximumConnections, 4)
        let client = PostgresClient(
            configuration: postgres, backgroundLogger: QuietedLogMessages.quieting([QuietedLogMessages.leaseBeforeRun], in: logger))
        self.client = client
        poolRunner = Task { await client.run() }
        (wake, wakeSink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// What to do about users whose node died (announce them offline).
    public func onUsersLost(_ handler: @escaping @Sendable ([Identity]) async -> Void) {
        onUsersLost.set(handler)
    }

    /// Called with each user another node deactivated.
    public func onUserDeactivated(_ handler: @escaping @Sendable (EntityID, EntityID) -> Void) {
        onDeactivated.set(handler)
    }

    /// Called with each block (blocker, blocked) another node started or ended.
    public func onBlocksChanged(_ handler: @escaping @Sendable (EntityID, EntityID) -> Void) {
        onBlocksChanged.set(handler)
    }

    /// Tells every other node (a `B` record) that a block started or ended.
    public func blocksChanged(blocker: EntityID, blocked: EntityID) {
        send(.blocksChanged(origin: nodeId, blocker: blocker, blocked: blocked))
    }

    /// Tells every other node (an `X` record) to refuse the user's token and close their
    /// connections.
    public func userDeactivated(_ userId: EntityID, organizationId: EntityID) {
        send(.deactivated(origin: nodeId, user: userId, organization: organizationId))
    }

    // MARK: Running

    /// Connects, joins, and runs the listener, the publisher and the heartbeat until shutdown;
    /// then leaves (its presence rows are deleted, its users announced offline by the others).
    public func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.listen() }
            group.addTask { await self.publish() }
            group.addTask { await self.heartbeat() }
            try? await gracefulShutdown()
            await leave()
            group.cancelAll()
        }
        poolRunner.cancel()
    }

    /// Waits until the listener is subscribed (tests and start-up ordering).
    public func waitUntilListening(timeout: Duration = .seconds(10)) async throws {
        let deadline = ContinuousClock.now + timeout
        while !ready.withLock({ $0 }) {
            guard ContinuousClock.now < deadline else { throw ServerStartError("The cluster listener did not start") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Creates the cluster tables if needed, registers this node and loads who is online
    /// elsewhere. Called once before the server accepts connections.
    public func join() async throws {
        try await client.withConnection { connection in
            try await connection.checkedQuery("BEGIN", logger)
            do {
                try await connection.checkedQuery("SELECT pg_advisory_xact_lock(7412019)", logger)
                try await connection.query("""
                    CREATE TABLE IF NOT EXISTS parley_nodes (
                        node_id TEXT PRIMARY KEY, started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
                        heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now())
                    """, logger: logger)
                try await connection.query("""
                    CREATE TABLE IF NOT EXISTS parley_node_users (
                        node_id TEXT NOT NULL, user_id TEXT NOT NULL, organization_id TEXT NOT NULL,
                        PRIMARY KEY (node_id, user_id))
                    """, logger: logger)
                try await connection.query(
                    "CREATE INDEX IF NOT EXISTS parley_node_users_user ON parley_node_users (user_id)", logger: logger)
                try await connection.query("""
                    CREATE TABLE IF NOT EXISTS parley_cluster_spill (
                        id BIGSERIAL PRIMARY KEY, payload TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now())
                    """, logger: logger)
                try await connection.checkedQuery("COMMIT", logger)
            } catch {
                _ = try? await connection.checkedQuery("ROLLBACK", logger)
                throw error
            }
        }
        try await client.query("""
            INSERT INTO parley_nodes (node_id) VALUES (\(nodeId))
            ON CONFLICT (node_id) DO UPDATE SET heartbeat_at = now()
            """, logger: logger)
        try await loadRemotePresence()
        logger.info("Joined the cluster", metadata: ["node": "\(nodeId)"])
    }

    /// Replaces the replica with the table's rows of the other live nodes.
    private func loadRemotePresence() async throws {
        var fresh: [EntityID: Set<String>] = [:]
        let rows = try await client.query(
            "SELECT node_id, user_id FROM parley_node_users WHERE node_id <> \(nodeId)", logger: logger)
        for try await (node, user) in rows.decode((String, String).self) {
            if let id = EntityID(user) { fresh[id, default: []].insert(node) }
        }
        remote.withLock { $0 = fresh }
    }

    private func leave() async {
        _ = try? await client.query("DELETE FROM parley_node_users WHERE node_id = \(nodeId)", logger: logger)
        _ = try? await client.query("DELETE FROM parley_nodes WHERE node_id = \(nodeId)", logger: logger)
        // Tell the others now rather than after deadAfter.
        await notifyPacked(fanOut.localUsers().compactMap {
            ClusterRecord.presence(origin: nodeId, user: $0.userId, organization: $0.organizationId, online: false).encoded()
        })
    }

    /// LISTENs on a pooled connection; reconnects with backoff when it drops.
    private func listen() async {
        var restarts = 0
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: configuration.channel) { notifications in
                        if restarts > 0 {
                            // Something may have been missed while deaf: refresh presence and
                            // make this node's clients catch up from the store.
                            try await loadRemotePresence()
                            stats.increment("parley_cluster_listener_restarts_total")
                            logger.warning("Cluster listener reconnected; asking clients to resync")
                            fanOut.closeAll(WebSocketErrorCode(codeNumber: 1012), reason: "cluster link restarted; reconnect")
                        }
                        ready.withLock { $0 = true }
                        for try await notification in notifications {
                            await receive(notification.payload)
                        }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("Cluster listener lost", metadata: ["error": "\(error)"])
            }
            ready.withLock { $0 = false }
            restarts += 1
            try? await Task.sleep(for: .milliseconds(min(2000, 100 * restarts)))
        }
    }

    /// Sends queued records, packed into as few notifications as fit: under load one
    /// notification carries many deliveries.
    private func publish() async {
        for await _ in wake {
            let batch = queued.withLock { queue in
                defer { queue.removeAll(keepingCapacity: true) }
                return queue
            }
            if !batch.isEmpty { await notifyPacked(batch) }
        }
    }

    private func notifyPacked(_ records: [String]) async {
        var payload = ""
        for record in records {
            if record.utf8.count > Self.maxPayload {
                await spill(record)
                continue
            }
            if !payload.isEmpty, payload.utf8.count + 1 + record.utf8.count > Self.maxPayload {
                await notify(payload)
                payload = ""
            }
            payload += payload.isEmpty ? record : "\n" + record
        }
        if !payload.isEmpty { await notify(payload) }
    }

    /// Notifies one record at once (presence, a spill's id), outside the packed queue.
    func notify(_ record: ClusterRecord) async {
        guard let line = record.encoded() else {
            stats.increment("parley_cluster_records_unencodable_total")
            return
        }
        await notify(line)
    }

    func notify(_ payload: String) async {
        do {
            try await client.query("SELECT pg_notify(\(configuration.channel), \(payload))", logger: logger)
            stats.increment("parley_cluster_notifications_sent_total")
        } catch {
            stats.increment("parley_cluster_notify_failures_total")
            logger.warning("Could not notify the cluster", metadata: ["error": "\(error)"])
        }
    }

    private func spill(_ record: String) async {
        do {
            let rows = try await client.query(
                "INSERT INTO parley_cluster_spill (payload) VALUES (\(record)) RETURNING id", logger: logger)
            for try await id in rows.decode(Int64.self) {
                await notify(ClusterRecord.spilled(origin: nodeId, id: id))
            }
            stats.increment("parley_cluster_spilled_total")
        } catch {
            logger.warning("Could not spill a cluster record", metadata: ["error": "\(error)"])
        }
    }

    /// Says this node is alive; expires dead nodes; trims the spill table.
    private func heartbeat() async {
        let deadAfterSeconds = Int(configuration.deadAfter.timeInterval.rounded(.up))
        while !Task.isCancelled {
            try? await Task.sleep(for: configuration.heartbeatInterval)
            if Task.isCancelled { return }
            do {
                var alive = false
                let rows = try await client.query(
                    "UPDATE parley_nodes SET heartbeat_at = now() WHERE node_id = \(nodeId) RETURNING node_id", logger: logger)
                for try await _ in rows.decode(String.self) { alive = true }
                if !alive { try await rejoin() }
                try await expireDeadNodes(olderThanSeconds: deadAfterSeconds)
                try await client.query(
                    "DELETE FROM parley_cluster_spill WHERE created_at < now() - interval '5 minutes'", logger: logger)
            } catch {
                logger.warning("Cluster heartbeat failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// This node was expired by the others (a long pause): register it and its users again.
    private func rejoin() async throws {
        logger.warning("This node was expired by the cluster; rejoining")
        try await client.query("INSERT INTO parley_nodes (node_id) VALUES (\(nodeId)) ON CONFLICT DO NOTHING", logger: logger)
        recorded.withLock { $0.removeAll() }
        for (userId, organizationId) in fanOut.localUsers() {
            await reconcile(Identity(userId: userId, organizationId: organizationId))
        }
    }

    /// Deletes nodes silent for too long with their presence rows (in one transaction, so one
    /// node does it), tells the others, and hands over the users now online nowhere.
    private func expireDeadNodes(olderThanSeconds seconds: Int) async throws {
        let lost: [(node: String, user: String, organization: String)] = try await client.withConnection { connection in
            try await connection.checkedQuery("BEGIN", logger)
            do {
                var dead: [String] = []
                let nodes = try await connection.query(
                    "DELETE FROM parley_nodes WHERE heartbeat_at < now() - make_interval(secs => \(Double(seconds))) RETURNING node_id",
                    logger: logger)
                for try await node in nodes.decode(String.self) { dead.append(node) }
                var lost: [(String, String, String)] = []
                if !dead.isEmpty {
                    let users = try await connection.query(
                        "DELETE FROM parley_node_users WHERE node_id = ANY(\(dead)) RETURNING node_id, user_id, organization_id",
                        logger: logger)
                    for try await row in users.decode((String, String, String).self) { lost.append(row) }
                    for node in dead { lost.append((node, "", "")) }
                }
                try await connection.checkedQuery("COMMIT", logger)
                return lost
            } catch {
                _ = try? await connection.checkedQuery("ROLLBACK", logger)
                throw error
            }
        }
        guard !lost.isEmpty else { return }
        let deadNodes = Set(lost.map(\.node))
        for node in deadNodes {
            logger.warning("Expired a dead node", metadata: ["node": "\(node)"])
            send(.nodeDied(origin: nodeId, node: node))
            stats.increment("parley_cluster_nodes_expired_total")
        }
        remote.withLock { remote in
            for user in Array(remote.keys) {
                remote[user]?.subtract(deadNodes)
                if remote[user]?.isEmpty == true { remote[user] = nil }
            }
        }
        var orphans: [EntityID: Identity] = [:]
        for row in lost {
            guard let user = EntityID(row.user), let organization = EntityID(row.organization), !fanOut.isOnline(user) else { continue }
            orphans[user] = Identity(userId: user, organizationId: organization)
        }
        if !orphans.isEmpty, let handler = onUsersLost.function {
            await handler(Array(orphans.values))
        }
    }
}
