import Foundation
import ParleyProtocol

/// Row values both stores write and read alike: a direct pair's key, a list of ids as JSON, a
/// thread's summary from its counters.
package enum StoreRows {
    /// What makes a direct conversation one per pair: the pair's ids, sorted, joined by ":".
    package static func directKey(_ pair: [EntityID]) -> String {
        pair.map(\.description).sorted().joined(separator: ":")
    }

    /// Ids as a JSON array (nil when there are none): UUIDs, nothing to escape.
    package static func idList(_ ids: [EntityID]) -> String? {
        ids.isEmpty ? nil : "[\"" + ids.map(\.description).joined(separator: "\",\"") + "\"]"
    }

    /// A root's thread summary from its columns; nil before the first reply.
    package static func thread(replies: Int64?, at lastReplyAt: Int64?, seq lastReplySeq: Int64?) -> ThreadSummary? {
        guard let replies, replies > 0, let lastReplyAt, let lastReplySeq else { return nil }
        return ThreadSummary(replyCount: Int(replies), lastReplyAt: Date(millisecondsSince1970: lastReplyAt), lastReplySeq: lastReplySeq)
    }
}
