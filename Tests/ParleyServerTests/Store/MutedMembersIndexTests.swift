import Foundation
import GRDB
@testable import ParleyServer
@testable import ParleyStorage
@testable import ParleyRules
import ParleyTestSupport
import Testing
@testable import ParleySQLite

/// Push reads a conversation's muted members for every message: through the partial index it
/// reads only the muted ones, not every member of the group (the primary key would read all).
@Suite struct MutedMembersIndexTests {
    @Test func theMutedMembersAreReadThroughTheirIndex() async throws {
        let server = try await TestServer.start()
        defer { Task { await server.stop() } }
        let store = try #require(server.app.store as? SQLiteStore)
        let plan = try await store.writer.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + SQLiteTransaction.mutedMembersSQL, arguments: ["c", 0])
                .map { $0["detail"] as String? ?? "" }.joined(separator: "; ")
        }
        #expect(plan.contains("participants_muted"), "\(plan)")
    }
}
