import Foundation
import Logging
import NIOCore
import NIOWebSocket
import ParleyProtocol
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// How a node joins the others on one PostgreSQL.
public struct ClusterConfiguration: Sendable {
    /// The database every node shares.
    public var postgres: PostgresClient.Configuration
    /// This node's name (unique among live nodes); random by default.
    public var nodeId: String = "node-" + UUID().uuidString.prefix(8).lowercased()
    /// How often this node says it is alive (and looks for dead nodes).
    public var heartbeatInterval: Duration = .seconds(2)
    /// A node silent this long is dead: its connections are expired and its users announced
    /// offline (unless online elsewhere).
    public var deadAfter: Duration = .seconds(10)
    /// The LISTEN/NOTIFY channel.
    public var channel: String = "parley_cluster"

    public init(postgres: PostgresClient.Configuration) {
        self.postgres = postgres
    }

    /// The cluster on the database a `postgres://` URL names.
    public init(url: String) throws {
        self.init(postgres: try PostgresStore.configuration(url: url))
    }
}

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
    private let configuration: ClusterConfiguration
    private let client: PostgresClient
    private let fanOut: FanOut
    private let logger: Logger
    /// Users online on other nodes, and on which.
    private let remote = Mutex<[EntityID: Set<String>]>([:])
    /// What this node has written to `parley_node_users`.
    private let recorded = Mutex<Set<EntityID>>([])
    private let presenceGate = ConcurrencyGate(limit: 1)
    /// Records waiting for the publisher, which takes them all at once (one batch per wake).
    private let queued = Mutex<[String]>([])
    private let wake: AsyncStream<Void>
    private let wakeSink: AsyncStream<Void>.Continuation
    private let ready = Mutex<Bool>(false)
    /// Called with users whose node died and who are online nowhere else.
    private let onUsersLost = Mutex<(@Sendable ([Identity]) async -> Void)?>(nil)
    private let onDeactivated = Mutex<(@Sendable (EntityID, EntityID) -> Void)?>(nil)
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
        let client = PostgresClient(configuration: postgres, backgroundLogger: logger)
        self.client = client
        poolRunner = Task { await client.run() }
        (wake, wakeSink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// What to do about users whose node died (announce them offline).
    public func onUsersLost(_ handler: @escaping @Sendable ([Identity]) async -> Void) {
        onUsersLost.withLock { $0 = handler }
    }

    /// Called with each user another node deactivated.
    public func onUserDeactivated(_ handler: @escaping @Sendable (EntityID, EntityID) -> Void) {
        onDeactivated.withLock { $0 = handler }
    }

    public func userDeactivated(_ userId: EntityID, organizationId: EntityID) {
        send("X \(nodeId) \(userId) \(organizationId)")
    }

    // MARK: FanOutRelay

    public func isOnlineElsewhere(_ userId: EntityID) -> Bool {
        remote.withLock { !($0[userId]?.isEmpty ?? true) }
    }

    public func forward(_ frame: ByteBuffer, to userIds: [EntityID]) {
        let elsewhere = remote.withLock { remote in userIds.filter { remote[$0] != nil } }
        guard !elsewhere.isEmpty else { return }
        send("U \(nodeId) \(elsewhere.map(\.description).joined(separator: ",")) \(String(buffer: frame))")
    }

    /// Every event of a conversation's sequence goes to the other nodes, whoever this node
    /// believes is online there: a user who has just connected to another node may not be
    /// known here yet (their presence is on its way), and skipping them would leave their
    /// socket without the message until their next catch-up. It also gives every node's
    /// orderer every seq, so none waits on a gap that was only a skipped forward. Packed into
    /// shared notifications, it costs little; the receiving node keeps its own connections.
    public func forward(_ frame: ByteBuffer, to userIds: [EntityID], conversation conversationId: EntityID, seq: Int64) {
        guard !userIds.isEmpty else { return }
        send("Q \(nodeId) \(conversationId) \(seq) \(userIds.map(\.description).joined(separator: ",")) \(String(buffer: frame))")
    }

    public func forward(_ frame: ByteBuffer, toOrganization organizationId: EntityID, excluding excluded: Set<EntityID>) {
        let excludedList = excluded.isEmpty ? "-" : excluded.map(\.description).joined(separator: ",")
        send("O \(nodeId) \(organizationId) \(excludedList) \(String(buffer: frame))")
    }

    public func userCameOnline(_ identity: Identity) async -> Bool {
        await reconcile(identity)
        return isOnlineElsewhere(identity.userId)
    }

    public func userWentOffline(_ identity: Identity) async -> Bool {
        await reconcile(identity)
        return isOnlineElsewhere(identity.userId)
    }

    /// Makes this node's presence rows match its connections for one user (serialized, so a
    /// quick connect-disconnect-connect never leaves the table wrong).
    private func reconcile(_ identity: Identity) async {
        await presenceGate.acquire()
        await writePresence(identity)
        await presenceGate.release()
    }

    private func writePresence(_ identity: Identity) async {
        let here = fanOut.isOnlineHere(identity.userId)
        guard here != recorded.withLock({ $0.contains(identity.userId) }) else { return }
        do {
            let user = identity.userId.description, organization = identity.organizationId.description
            if here {
                try await client.query("""
                    INSERT INTO parley_node_users (node_id, user_id, organization_id) VALUES (\(nodeId), \(user), \(organization))
                    ON CONFLICT DO NOTHING
                    """, logger: logger)
                recorded.withLock { _ = $0.insert(identity.userId) }
            } else {
                try await client.query(
                    "DELETE FROM parley_node_users WHERE node_id = \(nodeId) AND user_id = \(user)", logger: logger)
                recorded.withLock { _ = $0.remove(identity.userId) }
            }
            // Sent before the connection's `hello`: other nodes learn of it as soon as possible.
            await notify("P \(nodeId) \(user) \(organization) \(here ? 1 : 0)")
        } catch {
            logger.warning("Could not record presence in the cluster", metadata: ["error": "\(error)"])
        }
    }

    /// Most records waiting at once; beyond it new ones are dropped and counted (clients repair
    /// a missed event from the store when they see the seq gap).
    static let queueLimit = 100_000

    private func send(_ record: String) {
        let accepted = queued.withLock { queue in
            guard queue.count < Self.queueLimit else { return false }
            queue.append(record)
            return true
        }
        if accepted { wakeSink.yield() } else { stats.increment("parley_cluster_records_dropped_total") }
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
            try await connection.query("BEGIN", logger: logger)
            do {
                try await connection.query("SELECT pg_advisory_xact_lock(7412019)", logger: logger)
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
                try await connection.query("COMMIT", logger: logger)
            } catch {
                try? await connection.query("ROLLBACK", logger: logger)
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
        try? await client.query("DELETE FROM parley_node_users WHERE node_id = \(nodeId)", logger: logger)
        try? await client.query("DELETE FROM parley_nodes WHERE node_id = \(nodeId)", logger: logger)
        // Tell the others now rather than after deadAfter.
        await notifyPacked(fanOut.localUsers().map { "P \(nodeId) \($0.userId) \($0.organizationId) 0" })
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

    private func notify(_ payload: String) async {
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
                await notify("S \(nodeId) \(id)")
            }
            stats.increment("parley_cluster_spilled_total")
        } catch {
            logger.warning("Could not spill a cluster record", metadata: ["error": "\(error)"])
        }
    }

    /// Applies a notification's records.
    private func receive(_ payload: String) async {
        for line in payload.split(separator: "\n", omittingEmptySubsequences: true) {
            await apply(line)
        }
    }

    private func apply(_ line: Substring) async {
        let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[1] != nodeId else { return }
        let origin = String(parts[1])
        let rest = parts.count > 2 ? parts[2] : ""
        stats.increment("parley_cluster_records_received_total")
        switch parts[0] {
        case "U":
            let fields = rest.split(separator: " ", maxSplits: 1)
            guard fields.count == 2 else { return }
            let users = fields[0].split(separator: ",").compactMap { EntityID(String($0)) }
            fanOut.deliverHere(ByteBuffer(string: String(fields[1])), to: users)
        case "Q":
            // An event of a conversation's sequence: this node's orderer puts it in seq order
            // with the ones committed here and on every other node.
            let fields = rest.split(separator: " ", maxSplits: 3)
            guard fields.count == 4, let conversation = EntityID(String(fields[0])), let seq = Int64(fields[1]) else { return }
            let users = fields[2].split(separator: ",").compactMap { EntityID(String($0)) }
            fanOut.order.publish(conversation, .init(seq: seq, frame: ByteBuffer(string: String(fields[3])), recipients: users), fromAnotherNode: true)
        case "X":
            // Another node deactivated a user: refuse their token here too, close their sockets.
            let fields = rest.split(separator: " ")
            guard fields.count == 2, let user = EntityID(String(fields[0])), let organization = EntityID(String(fields[1])) else { return }
            onDeactivated.withLock { $0 }?(user, organization)
        case "O":
            let fields = rest.split(separator: " ", maxSplits: 2)
            guard fields.count == 3, let organization = EntityID(String(fields[0])) else { return }
            let excluded = fields[1] == "-" ? [] : Set(fields[1].split(separator: ",").compactMap { EntityID(String($0)) })
            fanOut.deliverHere(ByteBuffer(string: String(fields[2])), toOrganization: organization, excluding: excluded)
        case "P":
            let fields = rest.split(separator: " ")
            guard fields.count == 3, let user = EntityID(String(fields[0])) else { return }
            remote.withLock { remote in
                if fields[2] == "1" {
                    remote[user, default: []].insert(origin)
                } else {
                    remote[user]?.remove(origin)
                    if remote[user]?.isEmpty == true { remote[user] = nil }
                }
            }
        case "D":
            let dead = String(rest)
            remote.withLock { remote in
                for user in Array(remote.keys) {
                    remote[user]?.remove(dead)
                    if remote[user]?.isEmpty == true { remote[user] = nil }
                }
            }
        case "S":
            guard let id = Int64(rest) else { return }
            do {
                let rows = try await client.query("SELECT payload FROM parley_cluster_spill WHERE id = \(id)", logger: logger)
                for try await payload in rows.decode(String.self) {
                    await receive(payload)
                }
            } catch {
                logger.warning("Could not read a spilled cluster record", metadata: ["error": "\(error)"])
            }
        default:
            return
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
            try await connection.query("BEGIN", logger: logger)
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
                try await connection.query("COMMIT", logger: logger)
                return lost
            } catch {
                try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
        }
        guard !lost.isEmpty else { return }
        let deadNodes = Set(lost.map(\.node))
        for node in deadNodes {
            logger.warning("Expired a dead node", metadata: ["node": "\(node)"])
            send("D \(nodeId) \(node)")
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
        if !orphans.isEmpty, let handler = onUsersLost.withLock({ $0 }) {
            await handler(Array(orphans.values))
        }
    }
}
