import Foundation
import Logging
import NIOCore
import ParleyProtocol
import PostgresNIO
import Synchronization
import Tracing

/// What arrives from the other nodes: one ``ClusterRecord`` per line, decoded whole (a line
/// that does not decode is refused and counted, never half-applied).
extension ClusterNode {
    /// Applies a notification's records.
    func receive(_ payload: String) async {
        for line in payload.split(separator: "\n", omittingEmptySubsequences: true) {
            await apply(line)
        }
    }

    func apply(_ line: Substring) async {
        let record: ClusterRecord
        switch ClusterRecord.decode(line) {
        case .success(let decoded): record = decoded
        case .failure(let malformed):
            // A node of another version, or a corrupted notification: refused whole, counted.
            stats.increment("parley_cluster_records_malformed_total")
            logger.warning("Refused a malformed cluster record", metadata: ["reason": "\(malformed)", "record": "\(line.prefix(80))"])
            return
        }
        guard record.origin != nodeId else { return }
        stats.increment("parley_cluster_records_received_total")
        switch record {
        case .users(_, let users, let frame):
            fanOut.deliverHere(ByteBuffer(string: frame), to: users)
        case .sequenced(let origin, let conversation, let seq, let users, let frame, let trace):
            // An event of a conversation's sequence: this node's orderer puts it in seq order
            // with the ones committed here and on every other node. A traced send's span
            // continues here, under the sender's fan-out on the origin node.
            let span = trace.flatMap { ServerTracing.start("cluster.deliver", kind: .consumer, context: ServerTracing.context(traceparent: $0)) }
            if let span {
                span.attributes["parley.origin"] = origin
                span.attributes["parley.seq"] = Int(seq)
                span.attributes["parley.recipients"] = users.count
            }
            fanOut.order.publish(conversation, .init(seq: seq, frame: ByteBuffer(string: frame), recipients: users), fromAnotherNode: true)
            span?.end()
        case .deactivated(_, let user, let organization):
            // Another node deactivated a user: refuse their token here too, close their sockets.
            onDeactivated.function?(user, organization)
        case .blocksChanged(_, let blocker, let blocked):
            // Another node stored a block or its end: what this node knows of the two is stale.
            onBlocksChanged.function?(blocker, blocked)
        case .organization(_, let organization, let excluded, let frame):
            fanOut.deliverHere(ByteBuffer(string: frame), toOrganization: organization, excluding: Set(excluded))
        case .presence(let origin, let user, _, let online):
            remote.withLock { remote in
                if online {
                    remote[user, default: []].insert(origin)
                } else {
                    remote[user]?.remove(origin)
                    if remote[user]?.isEmpty == true { remote[user] = nil }
                }
            }
        case .nodeDied(_, let dead):
            remote.withLock { remote in
                for user in Array(remote.keys) {
                    remote[user]?.remove(dead)
                    if remote[user]?.isEmpty == true { remote[user] = nil }
                }
            }
        case .spilled(_, let id):
            do {
                let rows = try await client.query("SELECT payload FROM parley_cluster_spill WHERE id = \(id)", logger: logger)
                for try await payload in rows.decode(String.self) {
                    await receive(payload)
                }
            } catch {
                logger.warning("Could not read a spilled cluster record", metadata: ["error": "\(error)"])
            }
        }
    }
}
