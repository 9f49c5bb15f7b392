import Foundation
import Logging
import NIOCore
import ParleyProtocol
import PostgresNIO
import Synchronization
import ParleyRules

/// What the fan-out asks of the cluster (``FanOutRelay``): who is online elsewhere, frames
/// forwarded to the nodes that need them, and presence written for the others to see.
extension ClusterNode {
    /// Whether the presence replica has the user online on another node.
    public func isOnlineElsewhere(_ userId: EntityID) -> Bool {
        remote.withLock { !($0[userId]?.isEmpty ?? true) }
    }

    /// Sends the frame as a `U` record for those of the users known online on another node.
    public func forward(_ frame: ByteBuffer, to userIds: [EntityID]) {
        let elsewhere = remote.withLock { remote in userIds.filter { remote[$0] != nil } }
        guard !elsewhere.isEmpty else { return }
        send(.users(origin: nodeId, users: elsewhere, frame: String(buffer: frame)))
    }

    /// Every event of a conversation's sequence goes to the other nodes, whoever this node
    /// believes is online there: a user who has just connected to another node may not be
    /// known here yet (their presence is on its way), and skipping them would leave their
    /// socket without the message until their next catch-up. It also gives every node's
    /// orderer every seq, so none waits on a gap that was only a skipped forward. Packed into
    /// shared notifications, it costs little; the receiving node keeps its own connections.
    public func forward(_ frame: ByteBuffer, to userIds: [EntityID], conversation conversationId: EntityID, seq: Int64) {
        guard !userIds.isEmpty else { return }
        send(.sequenced(
            origin: nodeId, conversation: conversationId, seq: seq, users: userIds, frame: String(buffer: frame),
            trace: ServerTracing.currentTraceparent()))
    }

    /// Sends the frame to every other node as an `O` record, for the organization's connections
    /// except `excluded`.
    public func forward(_ frame: ByteBuffer, toOrganization organizationId: EntityID, excluding excluded: Set<EntityID>) {
        send(.organization(origin: nodeId, organization: organizationId, excluding: Array(excluded), frame: String(buffer: frame)))
    }

    /// Updates this node's presence row for the user; returns whether they are online elsewhere.
    public func userCameOnline(_ identity: Identity) async -> Bool {
        await reconcile(identity)
        return isOnlineElsewhere(identity.userId)
    }

    /// Updates this node's presence row for the user; returns whether they are online elsewhere.
    public func userWentOffline(_ identity: Identity) async -> Bool {
        await reconcile(identity)
        return isOnlineElsewhere(identity.userId)
    }

    /// Makes this node's presence rows match its connections for one user (serialized, so a
    /// quick connect-disconnect-connect never leaves the table wrong).
    func reconcile(_ identity: Identity) async {
        await presenceGate.acquire()
        await writePresence(identity)
        await presenceGate.release()
    }

    func writePresence(_ identity: Identity) async {
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
            // Sent as soon as the row is written (the connection's `hello` may already be out):
            // other nodes learn of it as soon as possible.
            await notify(ClusterRecord.presence(origin: nodeId, user: identity.userId, organization: identity.organizationId, online: here))
        } catch {
            logger.warning("Could not record presence in the cluster", metadata: ["error": "\(error)"])
        }
    }

    /// Most records waiting at once; beyond it new ones are dropped and counted (clients repair
    /// a missed event from the store when they see the seq gap).
    static let queueLimit = 100_000

    func send(_ record: ClusterRecord) {
        guard let line = record.encoded() else {
            stats.increment("parley_cluster_records_unencodable_total")
            logger.error("A cluster record cannot be written as one line; dropped", metadata: ["origin": "\(record.origin)"])
            return
        }
        let accepted = queued.withLock { queue in
            guard queue.count < Self.queueLimit else { return false }
            queue.append(line)
            return true
        }
        if accepted { wakeSink.yield() } else { stats.increment("parley_cluster_records_dropped_total") }
    }
}
