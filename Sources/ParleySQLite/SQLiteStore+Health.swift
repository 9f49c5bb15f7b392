import Foundation
import GRDB
import ParleyStorage

extension SQLiteStore {
    /// Below this much free space on the database's file system the store reports itself
    /// unable to write: SQLite can still squeeze small writes into WAL space it allocated
    /// before (so a small probe could pass while a message fails), and an operator wants the
    /// warning before the last byte.
    public static let minimumFreeBytes: UInt64 = 1 << 20

    /// Checks the free space, then writes and removes a row about the size of a long message
    /// in one transaction (it needs fresh pages: it fails while the file cannot grow).
    public func probeWrite(now: Date) async throws {
        let directory = (writer.path as NSString).deletingLastPathComponent
        var stats = statvfs()
        if statvfs(directory, &stats) == 0 {
            let free = UInt64(stats.f_bavail) * UInt64(stats.f_frsize)
            if free < Self.minimumFreeBytes {
                throw DatabaseError(resultCode: .SQLITE_FULL, message: "only \(free) bytes free on the database's file system")
            }
        }
        try await writer.write { db in
            try db.execute(
                sql: "INSERT INTO parley_health (checked_at, filler) VALUES (?, zeroblob(8192))", arguments: [now.millisecondsSince1970])
            try db.execute(sql: "DELETE FROM parley_health WHERE id = ?", arguments: [db.lastInsertedRowID])
        }
    }
}
