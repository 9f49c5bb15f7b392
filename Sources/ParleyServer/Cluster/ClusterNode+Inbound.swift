import Foundation
import Logging
import NIOCore
import ParleyProtocol
import PostgresNIO
import Synchronization

/// What arrives from the other nodes: one line per record, by its first letter. `U` a frame
/// for users, `Q` an event of a conversation's sequence (through this node's orderer), `O` a
/// frame for an organization, `X` a deactivation, `P` presence, `D` a dead node, `S` a record
/// too large for NOTIFY, spilled to a table.
extension ClusterNode {
    /// Applies a notification's records.
    func receive(_ payload: String) async {
        for line in payload.split(separator: "\n", omittingEmptySubsequences: true) {
            await apply(line)
        }
    }

    func apply(_ line: Substring) async {
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
            onDeactivated.function?(user, organization)
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
}
