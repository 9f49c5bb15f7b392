import Foundation
import ParleyProtocol
@testable import ParleyServer
import Testing

/// The cluster wire's edges (`Cluster/ClusterRecord.swift`) beyond the common cases: lines a
/// bug or another version could write (an empty list item, an overflowing number, the wrong
/// separator, a field too many or too few) are refused whole with their reason, frames keep
/// every space, and only a well-formed trace context travels with a record.
@Suite struct ClusterRecordEdgeTests {
    static let user = EntityID(), other = EntityID(), organization = EntityID(), conversation = EntityID()
    static let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    static func reason(_ line: String) -> String? {
        guard case .failure(let refused) = ClusterRecord.decode(Substring(line)) else { return nil }
        return refused.reason
    }

    /// Each refused, with the reason the malformed-records counter logs.
    @Test(arguments: [
        ("B n1 \(user)", "B wants 2 fields, has 1"), ("B n1 \(user) nope", "blocked is not an id"), ("B n1 nope \(user)", "blocker is not an id"),
        ("O n1 \(organization) {}", "O wants 3 fields, has 2"), ("O n1 \(organization) \(user),nope {}", "excluded user is not an id"),
        ("O n1 \(organization) \(user),,\(other) {}", "excluded user is not an id"), ("U n1 \(user),,\(other) {}", "user is not an id"),
        ("U n1 \(user), {}", "user is not an id"), ("Q n1 \(conversation) 9223372036854775808 \(user) {}", "Q's seq is not a positive number"),
        ("Q n1 \(conversation) -3 \(user) {}", "Q's seq is not a positive number"), ("Q n1 nope 3 \(user) {}", "conversation is not an id"),
        ("S n1 0", "S's row is not a positive number"), ("S n1 99999999999999999999", "S's row is not a positive number"),
        ("S n1 1 2", "S wants 1 fields, has 2"), ("D n1 a,b", "D's node is not a node id"), ("D n1 a;b", "D's node is not a node id"),
        ("D n1 a b", "D wants 1 fields, has 2"), ("P n1 \(user) \(organization)", "P wants 3 fields, has 2"),
        ("P n1 \(user) \(organization) true", "P's state is not 1 or 0"), ("X n1 nope \(organization)", "user is not an id"),
        ("X n1 \(user) nope", "organization is not an id"), ("u n1 \(user) {}", "unknown kind u"),
        ("QUERYING_EVERYTHING n1 x", "unknown kind QUERYING"), ("U  n1 \(user) {}", "no origin node"), ("U n1,n2 \(user) {}", "no origin node"),
    ])
    func malformedLinesAreRefusedWithTheirReason(line: String, reason: String) {
        #expect(Self.reason(line) == reason, "\(line)")
    }

    /// A frame is everything after its fields, spaces and all; an empty one is no frame.
    @Test func framesKeepEverySpace() throws {
        let frame = #"{"data":{"text":"  two  spaces ,and\ta tab "}}"#
        let record = ClusterRecord.users(origin: "n1", users: [Self.user], frame: frame)
        let line = try #require(record.encoded())
        #expect(try ClusterRecord.decode(Substring(line)).get() == record)
        #expect(Self.reason("U n1 \(Self.user) ") != nil, "an empty frame is refused")
        let organization = ClusterRecord.organization(origin: "n1", organization: Self.organization, excluding: [Self.user], frame: "a - b")
        #expect(try ClusterRecord.decode(Substring(try #require(organization.encoded()))).get() == organization)
    }

    /// The largest numbers a record carries read back exactly.
    @Test func theLargestNumbersReadBack() throws {
        for record in [
            ClusterRecord.spilled(origin: "n1", id: .max),
            .sequenced(origin: "n1", conversation: Self.conversation, seq: .max, users: [Self.user], frame: "{}"),
        ] {
            #expect(try ClusterRecord.decode(Substring(try #require(record.encoded()))).get() == record)
        }
    }

    /// Only lowercase hex and dashes, up to 128 of them, travel as a trace context; anything
    /// else is left behind by the writer and ignored by the reader, and the record applies.
    @Test(arguments: [
        (traceparent, true), (traceparent.uppercased(), false), (String(repeating: "a", count: 128), true),
        (String(repeating: "a", count: 129), false), ("00-xyz-01", false), ("", false), ("a,b", false),
    ])
    func onlyAWellFormedTraceTravels(trace: String, travels: Bool) throws {
        let record = ClusterRecord.sequenced(origin: "n1", conversation: Self.conversation, seq: 7, users: [Self.user], frame: "{}", trace: trace)
        let line = try #require(record.encoded())
        #expect(line.hasPrefix(travels ? "Q n1;\(trace) " : "Q n1 "), "\(line)")
        let read = ClusterRecord.decode("Q n1;\(trace) \(Self.conversation) 7 \(Self.user) {}")
        if case .success(.sequenced(let origin, _, let seq, _, _, let carried)) = read {
            #expect(origin == "n1" && seq == 7)
            #expect(carried == (travels ? trace : nil))
        } else {
            Issue.record("refused: \(read)")
        }
    }

    /// Another kind's origin field may carry a context too (a newer writer): its origin is
    /// read, the rest ignored.
    @Test func anOriginFieldWithAContextOnAnotherKindStillReads() throws {
        let read = try ClusterRecord.decode("P n1;\(Self.traceparent) \(Self.user) \(Self.organization) 1").get()
        #expect(read == .presence(origin: "n1", user: Self.user, organization: Self.organization, online: true))
        #expect(read.origin == "n1")
    }

    /// What the reader would refuse, the writer does not write: node ids with a separator or a
    /// line break, in the origin or as the dead node.
    @Test(arguments: ["", "a b", "a,b", "a;b", "a\nb"])
    func nodeIdsWithASeparatorAreNotWritten(node: String) {
        #expect(!ClusterRecord.isValidNodeId(node))
        #expect(ClusterRecord.nodeDied(origin: "n1", node: node).encoded() == nil)
        #expect(ClusterRecord.deactivated(origin: node, user: Self.user, organization: Self.organization).encoded() == nil)
        #expect(ClusterRecord.spilled(origin: node, id: 1).encoded() == nil)
    }
}
