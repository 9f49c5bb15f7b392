import Foundation
import PostgresNIO
import ParleyStorage
import ParleyPostgres

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

    /// The cluster on this database, with the default name, intervals and channel.
    public init(postgres: PostgresClient.Configuration) {
        self.postgres = postgres
    }

    /// The cluster on the database a `postgres://` URL names.
    public init(url: String) throws {
        self.init(postgres: try PostgresStore.configuration(url: url))
    }
}
