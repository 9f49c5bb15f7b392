import Foundation
import ParleyProtocol
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing

/// The cluster's wire as typed records: every kind written and read back the same, the line
/// format the previous version wrote, and every malformed line refused whole and counted.
@Suite struct ClusterRecordTests {
    static let user = EntityID(), other = EntityID(), organization = EntityID(), conversation = EntityID()
    static let frame = #"{"type":"message.created","data":{"text":"two words, and more"}}"#
    static let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    static let every: [ClusterRecord] = [
        .users(origin: "node-a", users: [user, other], frame: frame),
        .sequenced(origin: "node-a", conversation: conversation, seq: 42, users: [user], frame: frame),
        .sequenced(origin: "node-a", conversation: conversation, seq: 43, users: [user], frame: frame, trace: traceparent),
        .organization(origin: "node-a", organization: organization, excluding: [], frame: frame),
        .organization(origin: "node-a", organization: organization, excluding: [user, other], frame: frame),
        .deactivated(origin: "node-b", user: user, organization: organization),
        .presence(origin: "node-b", user: user, organization: organization, online: true),
        .presence(origin: "node-b", user: user, organization: organization, online: false),
        .nodeDied(origin: "node-b", node: "node-c"),
        .spilled(origin: "node-b", id: 7),
        .blocksChanged(origin: "node-a", blocker: user, blocked: other),
    ]

    @Test(arguments: every)
    func eachRecordReadsBackAsWritten(_ record: ClusterRecord) throws {
        let line = try #require(record.encoded())
        #expect(try ClusterRecord.decode(Substring(line)).get() == record)
        #expect(!line.contains("\n"))
    }

    /// The format is the one nodes of the previous version write (a rolling deploy mixes them).
    @Test func theLinesAreThePreviousVersionsFormat() {
        let u = Self.user, o = Self.other, org = Self.organization, c = Self.conversation
        #expect(ClusterRecord.users(origin: "n1", users: [u, o], frame: "{} x").encoded() == "U n1 \(u),\(o) {} x")
        #expect(ClusterRecord.sequenced(origin: "n1", conversation: c, seq: 3, users: [u], frame: "{}").encoded() == "Q n1 \(c) 3 \(u) {}")
        #expect(ClusterRecord.organization(origin: "n1", organization: org, excluding: [], frame: "{}").encoded() == "O n1 \(org) - {}")
        #expect(ClusterRecord.deactivated(origin: "n1", user: u, organization: org).encoded() == "X n1 \(u) \(org)")
        #expect(ClusterRecord.presence(origin: "n1", user: u, organization: org, online: true).encoded() == "P n1 \(u) \(org) 1")
        #expect(ClusterRecord.nodeDied(origin: "n1", node: "n2").encoded() == "D n1 n2")
        #expect(ClusterRecord.spilled(origin: "n1", id: 12).encoded() == "S n1 12")
        #expect(ClusterRecord.blocksChanged(origin: "n1", blocker: u, blocked: o).encoded() == "B n1 \(u) \(o)")
    }

    /// A traced send's record carries the sender's trace context after its origin, where a
    /// node that does not trace reads an origin that is not its own; a context that is not one
    /// is left behind, and the record still applies.
    @Test func aTracedRecordCarriesItsContextAfterTheOrigin() throws {
        let c = Self.conversation, u = Self.user, tp = Self.traceparent
        let traced = ClusterRecord.sequenced(origin: "n1", conversation: c, seq: 3, users: [u], frame: "{} x", trace: tp)
        #expect(traced.encoded() == "Q n1;\(tp) \(c) 3 \(u) {} x")
        #expect(traced.origin == "n1")
        #expect(try ClusterRecord.decode("Q n1;NOT_A_TRACE \(c) 3 \(u) {}").get()
            == .sequenced(origin: "n1", conversation: c, seq: 3, users: [u], frame: "{}"))
        #expect(try ClusterRecord.decode("Q n1; \(c) 3 \(u) {}").get().origin == "n1")
        // A context that could break the line is not written with it.
        #expect(ClusterRecord.sequenced(origin: "n1", conversation: c, seq: 3, users: [u], frame: "{}", trace: "a b").encoded()
            == "Q n1 \(c) 3 \(u) {}")
        // A node id never holds the separator.
        #expect(ClusterRecord.nodeDied(origin: "n1", node: "a;b").encoded() == nil)
        #expect(ClusterRecord.decode("Q ;\(tp) \(c) 3 \(u) {}") == .failure(.init(reason: "no origin node")))
    }

    /// What cannot travel as one line is not written: a line break in a frame, a node id with
    /// a separator, a frame for nobody.
    @Test func whatCannotBeOneLineIsNotWritten() {
        #expect(ClusterRecord.users(origin: "n1", users: [Self.user], frame: "{\n}").encoded() == nil)
        #expect(ClusterRecord.users(origin: "n 1", users: [Self.user], frame: "{}").encoded() == nil)
        #expect(ClusterRecord.users(origin: "n1", users: [], frame: "{}").encoded() == nil)
        #expect(ClusterRecord.nodeDied(origin: "n1", node: "a,b").encoded() == nil)
        #expect(ClusterRecord.spilled(origin: "", id: 1).encoded() == nil)
    }

    /// Each malformed line is refused with its reason, never half-applied.
    @Test(arguments: [
        ("", "no origin node"), ("U", "no origin node"), ("Z n1 x", "unknown kind Z"),
        ("U n1", "U wants 2 fields, has 0"), ("U n1 not-an-id {}", "user is not an id"),
        ("U n1 ,  {}", "user is not an id"),
        ("Q n1 \(conversation) zero \(user) {}", "Q's seq is not a positive number"),
        ("Q n1 \(conversation) 0 \(user) {}", "Q's seq is not a positive number"),
        ("Q n1 \(conversation) 5 {}", "Q wants 4 fields, has 3"),
        ("O n1 nope - {}", "organization is not an id"),
        ("X n1 \(user)", "X wants 2 fields, has 1"), ("X n1 \(user) \(organization) extra", "X wants 2 fields, has 3"),
        ("P n1 \(user) \(organization) 2", "P's state is not 1 or 0"),
        ("P n1 \(user) \(organization)  1", "P wants 3 fields, has 4"),
        ("D n1", "D wants 1 fields, has 0"), ("S n1 x", "S's row is not a positive number"), ("S n1 -4", "S's row is not a positive number"),
    ])
    func malformedLinesAreRefused(line: String, reason: String) {
        guard case .failure(let refused) = ClusterRecord.decode(Substring(line)) else {
            Issue.record("accepted: \(line)")
            return
        }
        #expect(refused.reason == reason, "\(line)")
    }

    /// A node refuses a notification's malformed lines, counts them, and applies its good ones.
    @Test(.needsPostgres) func aNodeCountsMalformedRecordsAndAppliesTheRest() async throws {
        let node = try await TestServer.start(store: .postgres, configure: ClusterTests.fastCluster)
        defer { Task { await node.stop() } }
        let cluster = try #require(node.app.cluster)
        try await cluster.waitUntilListening()
        let stranger = EntityID()
        await cluster.notify([
            "U node-elsewhere nonsense {}", "Q node-elsewhere", "P node-elsewhere \(stranger) \(Self.organization) 1", "garbage",
        ].joined(separator: "\n"))
        try await waitFor("the good record applied") { cluster.isOnlineElsewhere(stranger) }
        try await waitFor("the bad ones counted") { cluster.stats.value("parley_cluster_records_malformed_total") == 3 }
        #expect(cluster.stats.value("parley_cluster_records_received_total") >= 1)
    }
}
