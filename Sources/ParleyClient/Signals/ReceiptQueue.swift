import ParleyProtocol

/// Read and delivered watermarks waiting to be sent, collapsed to the highest per conversation:
/// many "this message is visible" become one `read`.
package struct ReceiptQueue: Sendable, Equatable {
    private(set) var read: [EntityID: Int64] = [:]
    private(set) var delivered: [EntityID: Int64] = [:]
    /// What was last acknowledged by the server, so nothing is sent twice.
    private var sentRead: [EntityID: Int64] = [:]
    private var sentDelivered: [EntityID: Int64] = [:]

    /// An empty queue, with nothing sent yet.
    package init() {}

    /// The user has seen everything up to `seq`.
    package mutating func markRead(_ conversationId: EntityID, upTo seq: Int64) {
        guard seq > max(read[conversationId] ?? 0, sentRead[conversationId] ?? 0) else { return }
        read[conversationId] = seq
    }

    /// This device holds everything up to `seq`.
    package mutating func markDelivered(_ conversationId: EntityID, upTo seq: Int64) {
        guard seq > max(delivered[conversationId] ?? 0, sentDelivered[conversationId] ?? 0) else { return }
        delivered[conversationId] = seq
    }

    /// Whether anything waits.
    package var isEmpty: Bool { read.isEmpty && delivered.isEmpty }

    /// Takes what waits: one read and one delivered per conversation at most.
    package mutating func drain() -> (read: [EntityID: Int64], delivered: [EntityID: Int64]) {
        defer {
            read = [:]
            delivered = [:]
        }
        // A read implies delivered: do not send a delivered that the read covers.
        let deliveredOnly = delivered.filter { id, seq in seq > (read[id] ?? 0) }
        return (read, deliveredOnly)
    }

    /// The server took these; later marks at or below them are no-ops.
    package mutating func acknowledged(read: [EntityID: Int64], delivered: [EntityID: Int64]) {
        for (id, seq) in read {
            sentRead[id] = max(sentRead[id] ?? 0, seq)
            sentDelivered[id] = max(sentDelivered[id] ?? 0, seq)
        }
        for (id, seq) in delivered { sentDelivered[id] = max(sentDelivered[id] ?? 0, seq) }
        // Marks queued while these were on their way, at or below them, are covered: sending
        // them now would be a lower (or the same) seq after a higher one.
        self.read = self.read.filter { id, seq in seq > (sentRead[id] ?? 0) }
        self.delivered = self.delivered.filter { id, seq in seq > (sentDelivered[id] ?? 0) }
    }

    /// Sending failed: put them back (collapsing with anything marked since).
    package mutating func requeue(read failedRead: [EntityID: Int64], delivered failedDelivered: [EntityID: Int64]) {
        for (id, seq) in failedRead { markRead(id, upTo: seq) }
        for (id, seq) in failedDelivered { markDelivered(id, upTo: seq) }
    }
}
