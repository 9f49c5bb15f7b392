import Foundation
import GRDB
import ParleyStorage

extension SQLiteStore {
    /// The store's identity (one row, made by a migration).
    public func storeIdentity() async throws -> String {
        try await writer.read { db in
            guard let id = try String.fetchOne(db, sql: "SELECT store_id FROM store_identity WHERE id = 1") else {
                throw StoreIdentityMissing()
            }
            return id
        }
    }

    /// Writes a new identity (after a restore) and returns it.
    public func renewStoreIdentity() async throws -> String {
        let id = StoreIdentity.make()
        try await writer.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO store_identity (id, store_id) VALUES (1, ?)", arguments: [id])
        }
        return id
    }
}
