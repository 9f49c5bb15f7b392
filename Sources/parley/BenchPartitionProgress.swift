import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ParleyClient
import ParleyProtocol

extension Partition {
    /// The conversation's progress over the run, sampled while the schedule waits, and how long
    /// each node took after a fault to store its clients' messages again.
    final class Progress {
        let nodes: [URL]
        let token: String
        let conversation: EntityID
        /// The senders whose clients talk to each node.
        let senders: [Set<EntityID>]
        private var lastSeq: Int64 = -1
        private var movedAt = Date()
        private var sampledAt = Date.distantPast
        /// The longest time the last seq stood still, in seconds.
        private(set) var longestStall = 0.0
        /// The same since ``beginWindow()`` (one fault and its recovery).
        private(set) var windowStall = 0.0

        init(nodes: [URL], token: String, conversation: EntityID, senders: [Set<EntityID>]) {
            self.nodes = nodes
            self.token = token
            self.conversation = conversation
            self.senders = senders
        }

        /// Reads the last seq through the first node that answers (none may, mid-fault).
        func sample() async {
            sampledAt = Date()
            for node in nodes {
                // A second at most: a node cut from its database may not answer at all.
                var request = URLRequest(url: node.appendingPathComponent("api/v1/conversations/\(conversation)"))
                request.timeoutInterval = 1
                request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
                guard let (data, _) = try? await URLSession.shared.data(for: request),
                      let seq = try? WireCoding.makeDecoder().decode(Conversation.self, from: data).lastSeq else { continue }
                if seq != lastSeq {
                    lastSeq = seq
                    movedAt = Date()
                }
                break
            }
            longestStall = max(longestStall, Date().timeIntervalSince(movedAt))
            windowStall = max(windowStall, Date().timeIntervalSince(movedAt))
        }

        /// Starts measuring one fault's longest stall.
        func beginWindow() { windowStall = 0 }

        /// Waits until `deadline`, or less if the clients are done, sampling twice a second.
        func hold(until deadline: Date, while running: () -> Bool) async throws {
            while Date() < deadline, running(), !StopSignals.any {
                if Date().timeIntervalSince(sampledAt) >= 0.5 { await sample() }
                try await Task.sleep(for: .milliseconds(50))
            }
        }

        /// The last seq now, read through whichever node answers.
        func currentSeq() async -> Int64? {
            await sample()
            return lastSeq >= 0 ? lastSeq : nil
        }

        /// Seconds from now (a fault's end) until a message after `seq` from a client of `node`
        /// is stored: how long the node took to write again. nil when the clients finished
        /// first (nothing left to send), `limit` when it did not write again within it.
        func recovery(of node: Int, after seq: Int64, limit: Double, while running: () -> Bool) async throws -> Double? {
            let healed = Date()
            var after = seq
            while running(), !StopSignals.any {
                let waited = Date().timeIntervalSince(healed)
                if waited >= limit { return limit }
                for url in nodes {
                    let api = ParleyAPI(baseURL: url, token: token)
                    guard let page = try? await api.messages(conversation, after: after, limit: 100) else { continue }
                    if page.messages.contains(where: { senders[node].contains($0.senderId) }) { return Date().timeIntervalSince(healed) }
                    // Only the other node's clients so far: read on from there.
                    if page.messages.count == 100, let last = page.messages.last?.seq { after = last }
                    break
                }
                if Date().timeIntervalSince(sampledAt) >= 0.5 { await sample() }
                try await Task.sleep(for: .milliseconds(100))
            }
            return nil
        }
    }
}
