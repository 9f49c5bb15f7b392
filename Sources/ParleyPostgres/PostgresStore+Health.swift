import Foundation
import PostgresNIO
import ParleyStorage

extension PostgresStore {
    /// A row about the size of a long message, written and removed in one transaction (WAL
    /// and data pages are written: it fails on a full disk or a read-only database).
    public func probeWrite(now: Date) async throws {
        let logger = self.logger
        // A ByteBuffer binds as bytea ([UInt8] binds as "char"[], which the column refuses).
        let filler = ByteBuffer(repeating: 0, count: 8192)
        // Watched like a send's transaction: a probe stranded on a closed connection would
        // leave /ready waiting on it.
        try await client.withConnection { c in
            try await stranded.run(on: c) {
                try await c.inTransaction(logger: logger) { c in
                    let row = try await c.first(
                        "INSERT INTO parley_health (checked_at, filler) VALUES (\(now.millisecondsSince1970), \(filler)) RETURNING id", logger)
                    if let id = try row?.decode(Int64.self) {
                        try await c.run("DELETE FROM parley_health WHERE id = \(id)", logger)
                    }
                }
            }
        }
    }
}
