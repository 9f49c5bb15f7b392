import Foundation
import ParleyProtocol

/// One record of the cluster's wire: what a node tells the others through PostgreSQL's
/// NOTIFY, one line per record, records packed into shared notifications.
///
/// The line format is `KIND ORIGIN FIELDS…` separated by single spaces, the frame (compact
/// JSON, which has no raw line break) last so it may hold spaces. A `Q` record of a traced
/// send writes its origin as `NODE;TRACEPARENT` (the W3C trace context of the sender's
/// fan-out span), so the receiving node's span joins the trace; a node that does not trace
/// reads the whole field as an origin that is not its own, and applies the record as usual.
///
/// | kind | record | fields |
/// |---|---|---|
/// | `U` | ``users(origin:users:frame:)`` | users (comma-separated), frame |
/// | `Q` | ``sequenced(origin:conversation:seq:users:frame:)`` | conversation, seq, users, frame |
/// | `O` | ``organization(origin:organization:excluding:frame:)`` | organization, excluded users or `-`, frame |
/// | `X` | ``deactivated(origin:user:organization:)`` | user, organization |
/// | `P` | ``presence(origin:user:organization:online:)`` | user, organization, `1` or `0` |
/// | `D` | ``nodeDied(origin:node:)`` | the dead node |
/// | `S` | ``spilled(origin:id:)`` | the spill table's row id |
/// | `B` | ``blocksChanged(origin:blocker:blocked:)`` | blocker, blocked |
///
/// Nodes of one cluster may run two versions during a rolling deploy: the format is the one
/// the previous version wrote, and a line this version cannot read is refused and counted,
/// never half-applied.
enum ClusterRecord: Equatable, Sendable {
    /// A frame for some users' connections.
    case users(origin: String, users: [EntityID], frame: String)
    /// An event of a conversation's sequence, for every node's orderer; `trace` is the
    /// sender's W3C `traceparent` while tracing is on.
    case sequenced(origin: String, conversation: EntityID, seq: Int64, users: [EntityID], frame: String, trace: String? = nil)
    /// A frame for an organization's connections, except some users'.
    case organization(origin: String, organization: EntityID, excluding: [EntityID], frame: String)
    /// A user was deactivated: refuse their token, close their connections.
    case deactivated(origin: String, user: EntityID, organization: EntityID)
    /// A user came online on the origin node, or went offline there.
    case presence(origin: String, user: EntityID, organization: EntityID, online: Bool)
    /// A node stopped beating; its users are online there no more.
    case nodeDied(origin: String, node: String)
    /// A record too large for a notification, kept in the spill table under `id`.
    case spilled(origin: String, id: Int64)
    /// A block between two users started or ended: forget what is known of their blocks.
    case blocksChanged(origin: String, blocker: EntityID, blocked: EntityID)

    /// Why a line was refused.
    struct Malformed: Error, Equatable, CustomStringConvertible {
        let reason: String
        var description: String { reason }
    }

    /// The node that wrote it.
    var origin: String {
        switch self {
        case .users(let origin, _, _), .sequenced(let origin, _, _, _, _, _), .organization(let origin, _, _, _),
            .deactivated(let origin, _, _), .presence(let origin, _, _, _), .nodeDied(let origin, _), .spilled(let origin, _),
            .blocksChanged(let origin, _, _):
            origin
        }
    }

    /// Whether a node id can travel in a record (no separator in it).
    static func isValidNodeId(_ id: String) -> Bool {
        !id.isEmpty && !id.contains(" ") && !id.contains("\n") && !id.contains(",") && !id.contains(";")
    }

    /// Whether a trace context can travel in an origin field: a W3C `traceparent` is lowercase
    /// hex and dashes; anything else is left behind, never a reason to refuse the record.
    static func isValidTrace(_ trace: Substring) -> Bool {
        !trace.isEmpty && trace.count <= 128 && trace.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) || $0 == 45 }
    }

    /// The line; nil when it cannot be written as one (a line break in the frame, a node id with
    /// a separator), which the sender counts and drops.
    func encoded() -> String? {
        let line: String
        switch self {
        case .users(let origin, let users, let frame):
            guard !users.isEmpty else { return nil }
            line = "U \(origin) \(Self.list(users)) \(frame)"
        case .sequenced(let origin, let conversation, let seq, let users, let frame, let trace):
            guard !users.isEmpty else { return nil }
            let traced = trace.map { Self.isValidTrace($0[...]) ? "\(origin);\($0)" : origin } ?? origin
            line = "Q \(traced) \(conversation) \(seq) \(Self.list(users)) \(frame)"
        case .organization(let origin, let organization, let excluded, let frame):
            line = "O \(origin) \(organization) \(excluded.isEmpty ? "-" : Self.list(excluded)) \(frame)"
        case .deactivated(let origin, let user, let organization):
            line = "X \(origin) \(user) \(organization)"
        case .presence(let origin, let user, let organization, let online):
            line = "P \(origin) \(user) \(organization) \(online ? 1 : 0)"
        case .nodeDied(let origin, let node):
            guard Self.isValidNodeId(node) else { return nil }
            line = "D \(origin) \(node)"
        case .spilled(let origin, let id):
            line = "S \(origin) \(id)"
        case .blocksChanged(let origin, let blocker, let blocked):
            line = "B \(origin) \(blocker) \(blocked)"
        }
        guard Self.isValidNodeId(origin), !line.contains("\n") else { return nil }
        return line
    }

    /// The record of a line, or why it is refused.
    /// `text` split at an ASCII separator, empty pieces kept, as substrings of it.
    private static func split(_ text: Substring, _ separator: Unicode.Scalar, maxSplits: Int) -> [Substring] {
        text.utf8.split(separator: UInt8(ascii: separator), maxSplits: maxSplits, omittingEmptySubsequences: false).map { Substring($0) }
    }

    static func decode(_ line: Substring) -> Result<ClusterRecord, Malformed> {
        // Split on ASCII bytes, not characters: every record of the cluster is read here.
        let parts = split(line, " ", maxSplits: 2)
        guard parts.count >= 2 else { return .failure(Malformed(reason: "no origin node")) }
        // The origin, and the trace context a traced send's record carries after it.
        let originField = split(parts[1], ";", maxSplits: 1)
        guard isValidNodeId(String(originField[0])) else { return .failure(Malformed(reason: "no origin node")) }
        let origin = String(originField[0])
        let trace = originField.count > 1 && isValidTrace(originField[1]) ? String(originField[1]) : nil
        let rest = parts.count > 2 ? parts[2] : ""
        func id(_ text: Substring, _ what: String) throws(Malformed) -> EntityID {
            guard let id = EntityID(utf8: text.utf8) else { throw Malformed(reason: "\(what) is not an id") }
            return id
        }
        func ids(_ text: Substring, _ what: String) throws(Malformed) -> [EntityID] {
            let items = text.utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
            guard !items.isEmpty else { throw Malformed(reason: "no \(what)") }
            var found: [EntityID] = []
            found.reserveCapacity(items.count)
            for item in items {
                guard let id = EntityID(utf8: item) else { throw Malformed(reason: "\(what) is not an id") }
                found.append(id)
            }
            return found
        }
        func fields(_ count: Int, frameLast: Bool) throws(Malformed) -> [Substring] {
            let found = split(rest, " ", maxSplits: frameLast ? count - 1 : Int.max)
            guard found.count == count, !found.contains(where: \.isEmpty) else {
                throw Malformed(reason: "\(parts[0]) wants \(count) fields, has \(rest.isEmpty ? 0 : found.count)")
            }
            return found
        }
        do throws(Malformed) {
            switch parts[0] {
            case "U":
                let f = try fields(2, frameLast: true)
                return .success(.users(origin: origin, users: try ids(f[0], "user"), frame: String(f[1])))
            case "Q":
                let f = try fields(4, frameLast: true)
                guard let seq = Int64(f[1]), seq > 0 else { throw Malformed(reason: "Q's seq is not a positive number") }
                return .success(.sequenced(
                    origin: origin, conversation: try id(f[0], "conversation"), seq: seq, users: try ids(f[2], "user"), frame: String(f[3]),
                    trace: trace))
            case "O":
                let f = try fields(3, frameLast: true)
                var excluded: [EntityID] = []
                if f[1] != "-" { excluded = try ids(f[1], "excluded user") }
                return .success(.organization(origin: origin, organization: try id(f[0], "organization"), excluding: excluded, frame: String(f[2])))
            case "X":
                let f = try fields(2, frameLast: false)
                return .success(.deactivated(origin: origin, user: try id(f[0], "user"), organization: try id(f[1], "organization")))
            case "P":
                let f = try fields(3, frameLast: false)
                guard f[2] == "1" || f[2] == "0" else { throw Malformed(reason: "P's state is not 1 or 0") }
                return .success(.presence(origin: origin, user: try id(f[0], "user"), organization: try id(f[1], "organization"), online: f[2] == "1"))
            case "D":
                let f = try fields(1, frameLast: false)
                guard isValidNodeId(String(f[0])) else { throw Malformed(reason: "D's node is not a node id") }
                return .success(.nodeDied(origin: origin, node: String(f[0])))
            case "S":
                let f = try fields(1, frameLast: false)
                guard let row = Int64(f[0]), row > 0 else { throw Malformed(reason: "S's row is not a positive number") }
                return .success(.spilled(origin: origin, id: row))
            case "B":
                let f = try fields(2, frameLast: false)
                return .success(.blocksChanged(origin: origin, blocker: try id(f[0], "blocker"), blocked: try id(f[1], "blocked")))
            default:
                throw Malformed(reason: "unknown kind \(parts[0].prefix(8))")
            }
        } catch {
            return .failure(error)
        }
    }

    private static func list(_ ids: [EntityID]) -> String { ids.map(\.description).joined(separator: ",") }
}
