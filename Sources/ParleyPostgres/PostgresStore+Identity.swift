import Foundation
import Logging
import PostgresNIO
import ParleyStorage

extension PostgresStore {
    /// The store's identity (one row, made by a migration).
    public func storeIdentity() async throws -> String {
        let logger = self.logger
        return try await single { c in
            guard let row = try await c.first("SELECT store_id FROM store_identity WHERE id = 1", logger) else {
                throw StoreIdentityMissing()
            }
            return try row.decode(String.self)
        }
    }

    /// Writes a new identity (after a restore) and returns it.
    public func renewStoreIdentity() async throws -> String {
        let logger = self.logger
        let id = StoreIdentity.make()
        try await single { c in
            try await c.run(
                """
                INSERT INTO store_identity (id, store_id) VALUES (1, \(id))
                ON CONFLICT (id) DO UPDATE SET store_id = EXCLUDED.store_id
                """, logger)
        }
        return id
    }
}
